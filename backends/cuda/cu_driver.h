/* cuda: the plugin's parts besides the GPU core (docs/backends/cuda.md):
 *
 *   cu_api.c        loading libcuda.so.1; every function through cuGetProcAddress
 *   cu_driver.c     the core's driver table (gpu_driver.h) on those functions
 *   cu_blaslt.c     cuBLASLt loaded with dlopen: the table's gemm provider (matmul)
 *   cu_backend.c    the plugin's entry: descriptor, init handing the table to the core
 *
 * Everything else (devices, streams, memory, modules, regions, the ops' launch code) is
 * the GPU core, backends/gpu. */
#ifndef BP_CU_DRIVER_H
#define BP_CU_DRIVER_H

#include "cu_api.h"
#include "gpu_core.h"
#include "gpu_driver.h"

#define CU_NAME "cuda"

extern const gpu_driver cu_driver;
extern const gpu_gemm_provider cu_blaslt_provider;

#endif
