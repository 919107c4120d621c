/* The arm backend: a plugin (libbp_arm.so) whose devices are groups of cores of the
 * aarch64 host it runs on (docs/backends/arm.md).
 *
 * Devices come from the topology (arm_topology.h: BP_ARM_SYSFS_ROOT, default
 * /sys/devices/system/cpu), fastest first; streams, events and memory are the CPU-class
 * kit's (cpukit.h), with the workers pinned to the device's cores; kernels are the
 * families' NEON/SVE kernels for the features found, else the host's reference kernels
 * (arm_kernels.c). BP_ARM_SVE_BITS sets the SVE vector length of every thread the
 * backend starts; a value the CPU cannot run leaves the backend with no devices. */
#include "arm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm_features.h"

#define ARM_SYSFS_DEFAULT "/sys/devices/system/cpu"

/* ---- devices ---- */

static int device_count(void *backend) {
    return ((arm_backend *)backend)->ndevices;
}

static const char *unavailable_reason(void *backend) {
    arm_backend *be = backend;
    return be->unavailable_reason[0] ? be->unavailable_reason : NULL;
}

static bp_status check_index(arm_backend *be, int index) {
    return bp_plugin_check_index(be->host, ARM_NAME, index, be->ndevices, "arm", NULL);
}

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    arm_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, ARM_NAME, props, &p);
    if (st != BP_OK)
        return st;
    const arm_device *dev = &be->devices[index];
    snprintf(p.description, sizeof p.description, "%s", dev->group.description);
    p.total_memory = dev->kit.total_memory;
    /* As the cpu backend: one memory space per device, priorities only recorded. */
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS;
    p.dtypes = be->dtypes;
    p.stream_priority_least = 0;
    p.stream_priority_greatest = -1;
    snprintf(p.features, sizeof p.features, "%s", be->features_text);
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status device_open(void *backend, int index, void **out_device) {
    arm_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = arm_device_start(&be->devices[index]);
    if (st == BP_OK)
        *out_device = &be->devices[index].kit;
    return st;
}

/* Its streams are gone already. */
static void device_close(void *device) {
    arm_device_stop((arm_device *)device);
}

/* ---- backend ---- */

static void free_backend(arm_backend *be) {
    arm_devices_fini(be);
    free(be->kernels);
    free(be);
}

static bp_status arm_init(const bp_host_services *host, void **out_backend) {
    if (host->abi_minor < 4 || !BP_HOST_HAS(host, register_kernel) ||
        !BP_HOST_HAS(host, run_reference_kernel) || !BP_HOST_HAS(host, op_name))
        return host->set_error(BP_ERR_ABI_MISMATCH,
                               "arm: the host speaks plugin ABI %u.%u; the arm backend needs "
                               "1.4 or newer (register_kernel, run_reference_kernel, op_count "
                               "and op_name; attrs_size in kernel calls)",
                               host->abi_major, host->abi_minor);
    arm_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "arm: cannot allocate the backend state (%zu bytes)", sizeof *be);
    be->host = host;
    arm_features_detect(&be->features);
    if (arm_sve_bits_choose(getenv("BP_ARM_SVE_BITS"), &be->features, &be->sve_bits_set,
                            be->unavailable_reason, sizeof be->unavailable_reason) != 0) {
        /* Fails closed: no devices, and the reason says why (bp-info shows it). */
        host->log(BP_LOG_WARN, ARM_NAME, "arm: no devices: %s", be->unavailable_reason);
        *out_backend = be;
        return BP_OK;
    }
    if (be->sve_bits_set)
        be->features.sve_bits = be->sve_bits_set;
    arm_features_format(&be->features, be->features_text, sizeof be->features_text);

    const char *root = getenv("BP_ARM_SYSFS_ROOT");
    arm_devices_init(be, root && *root ? root : ARM_SYSFS_DEFAULT);
    bp_status st = arm_kernels_register(be);
    if (st != BP_OK) {
        free_backend(be);
        return st;
    }
    host->log(BP_LOG_DEBUG, ARM_NAME, "arm: %d device%s, features: %s", be->ndevices,
              be->ndevices == 1 ? "" : "s", be->features_text);
    *out_backend = be;
    return BP_OK;
}

/* The host closed every device before. */
static void arm_shutdown(void *backend) {
    free_backend(backend);
}

static const bp_device_vtable arm_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = unavailable_reason,
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = cpukit_device_mem_info,
    .synchronize = cpukit_device_synchronize,
};

static const bp_plugin_descriptor arm_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = ARM_NAME,
    .aliases = NULL,
    .version = "0.1.0",
    .priority = 0,
    .init = arm_init,
    .shutdown = arm_shutdown,
    .device = &arm_device_vtable,
    .stream = &cpukit_stream_vtable,
    .event = &cpukit_event_vtable,
    .memory = &cpukit_memory_vtable, /* no peer copies between clusters (yet) */
    .guard = NULL,  /* no per-thread context to make current */
    .region = NULL,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &arm_descriptor;
}
