/* gpu: the GPU backend core as a vendor plugin sees it (docs/backends/cuda.md, "The GPU
 * core"). A plugin (backends/cuda, backends/rocm) is the core, linked in as a static
 * library (bp_gpu_plugin in backends/gpu/CMakeLists.txt), plus its driver table
 * (gpu_driver.h) and a small entry file:
 *
 *     static bp_status cu_init(const bp_host_services *host, void **out_backend) {
 *         return gpu_backend_init(&cu_driver, host, out_backend);
 *     }
 *     static const bp_plugin_descriptor cu_descriptor =
 *         GPU_PLUGIN_DESCRIPTOR("cuda", NULL, cu_init);
 *     BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
 *         return &cu_descriptor;
 *     }
 *
 * The core does the rest: devices, streams, events, memory, modules and launches,
 * regions captured into graphs, and the kernels of the elementwise, matmul and sdpa
 * ops, which it registers under the table's device_type. */
#ifndef BP_GPU_CORE_H
#define BP_GPU_CORE_H

#include <stddef.h>
#include <backplane/plugin.h>

#include "gpu_driver.h"

/* The plugin's version: GPU_KERNEL_TAG ("sm_80.sm_90.compute_90", "gfx90a.gfx940") is
 * defined by bp_gpu_plugin when a device compiler made the kernels. */
#define GPU_PLUGIN_VERSION "0.1.0"
#ifdef GPU_KERNEL_TAG
#define GPU_PLUGIN_VERSION_STRING GPU_PLUGIN_VERSION "+" GPU_KERNEL_TAG
#else
#define GPU_PLUGIN_VERSION_STRING GPU_PLUGIN_VERSION "+nokernels"
#endif

/* The plugin's init: loads the driver (drv->load), finds the devices, reads
 * BP_GPU_PORTABLE_KERNELS and registers the kernels. drv must outlive the backend. */
bp_status gpu_backend_init(const gpu_driver *drv, const bp_host_services *host,
                           void **out_backend);
/* The plugin's shutdown (every device closed before). */
void gpu_backend_shutdown(void *backend);

extern const bp_device_vtable gpu_device_vtable;
extern const bp_stream_vtable gpu_stream_vtable;
extern const bp_event_vtable gpu_event_vtable;
extern const bp_memory_vtable gpu_memory_vtable;
extern const bp_guard_vtable gpu_guard_vtable;
extern const bp_region_vtable gpu_region_vtable;

/* A plugin's descriptor: its name, aliases (a NULL-terminated array, or NULL) and init;
 * everything else is the core's. */
#define GPU_PLUGIN_DESCRIPTOR(plugin_name, plugin_aliases, plugin_init)                      \
    {                                                                                         \
        .struct_size = sizeof(bp_plugin_descriptor), .abi_major = BP_PLUGIN_ABI_MAJOR,        \
        .abi_minor = BP_PLUGIN_ABI_MINOR, .name = (plugin_name), .aliases = (plugin_aliases), \
        .version = GPU_PLUGIN_VERSION_STRING, .priority = 0, .init = (plugin_init),           \
        .shutdown = gpu_backend_shutdown, .device = &gpu_device_vtable,                       \
        .stream = &gpu_stream_vtable, .event = &gpu_event_vtable,                             \
        .memory = &gpu_memory_vtable, .guard = &gpu_guard_vtable,                             \
        .region = &gpu_region_vtable,                                                         \
    }

/* ---- for a gemm provider (gpu_driver.h) ---- */

/* The scratch a region gives each of its streams before capturing: what a provider may
 * ask gpu_stream_workspace for while the stream captures. */
#define GPU_WORKSPACE_BYTES ((size_t)32 << 20)
/* The driver's handle of s. */
void *gpu_stream_handle(const gpu_stream *s);
/* Scratch device memory of at least `size` bytes owned by s, for work enqueued on it
 * (grown when too small, after s's earlier work is done; kept until s is destroyed).
 * Not while s captures a region with a smaller one (BP_ERR_UNSUPPORTED). */
bp_status gpu_stream_workspace(gpu_stream *s, size_t size, void **out);
/* After work was enqueued on s (a region capturing it may launch a chunk). */
bp_status gpu_stream_enqueued(gpu_stream *s);

#endif
