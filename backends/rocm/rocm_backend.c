/* rocm: a backend plugin for AMD GPUs on the HIP runtime (docs/backends/rocm.md): the
 * GPU core (backends/gpu) driven by the HIP table (hip_driver.c). Device type "rocm",
 * alias "hip". */
#include "gpu_core.h"
#include "hip_driver.h"

static bp_status rocm_init(const bp_host_services *host, void **out_backend) {
    return gpu_backend_init(&hip_driver, host, out_backend);
}

static const char *const rocm_aliases[] = {"hip", NULL};

static const bp_plugin_descriptor rocm_descriptor =
    GPU_PLUGIN_DESCRIPTOR("rocm", rocm_aliases, rocm_init);

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &rocm_descriptor;
}
