/* cuda: a CUDA backend plugin on the CUDA Driver API (docs/backends/cuda.md): the GPU
 * core (backends/gpu) driven by the CUDA driver table (cu_driver.c). This file is the
 * plugin's entry. */
#include "cu_driver.h"

static bp_status cu_init(const bp_host_services *host, void **out_backend) {
    return gpu_backend_init(&cu_driver, host, out_backend);
}

static const bp_plugin_descriptor cu_descriptor = GPU_PLUGIN_DESCRIPTOR(CU_NAME, NULL, cu_init);

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &cu_descriptor;
}
