/* gpu kernels: the kernels of op "sdpa" (fused attention; the host's sdpa op launches
 * them).
 *
 *   sdpa_flash_<t>_d<d>    NVIDIA only (GPU_KERNEL_NV): f16/bf16, head dim 64 or 128, rows
 *                          of stride 1 and 16-byte aligned: FlashAttention-2 on tensor
 *                          cores (sdpa_flash.cuh)
 *   sdpa_generic_<t>_v<n>  portable: any dtype, head dim and strides, 32 * n output dims
 *                          per block (sdpa_generic.cuh)
 * Each takes one gpu_sdpa_args (sdpa_args.h) and a 1-D grid; the host sizes it. */
#include "gpu_port.h"

#include "sdpa_generic.cuh"
#if GPU_NVIDIA
#include "sdpa_flash.cuh"

#define FLASH_KERNEL(name, T, D)                                                              \
    extern "C" __global__ void __launch_bounds__(GPU_SDPA_FLASH_WARPS * 32, 2)                 \
        name(const gpu_sdpa_args a) {                                                          \
        extern __shared__ uint4 flash_smem[];                                                 \
        sdpa_flash::attention<T, D, GPU_SDPA_FLASH_WARPS,                                      \
                              GPU_SDPA_FLASH_ROWS / (GPU_SDPA_FLASH_WARPS * 16),                \
                              GPU_SDPA_FLASH_KEYS(D)>(a, (unsigned char *)flash_smem);         \
    }

FLASH_KERNEL(sdpa_flash_bf16_d64, gpu_bf16, 64)
FLASH_KERNEL(sdpa_flash_bf16_d128, gpu_bf16, 128)
FLASH_KERNEL(sdpa_flash_f16_d64, gpu_f16, 64)
FLASH_KERNEL(sdpa_flash_f16_d128, gpu_f16, 128)
#endif /* GPU_NVIDIA */

/* Blocks per multiprocessor the registers must allow (NVIDIA): vec 8 takes 84 KB of
 * shared memory (two blocks), the others less than half that. The block is
 * GPU_SDPA_GENERIC_WARPS groups of 32 lanes (sdpa_generic.cuh), whatever the warp size. */
#define GENERIC_KERNEL(name, T, VEC)                                                          \
    extern "C" __global__ void GPU_LAUNCH_BOUNDS(GPU_SDPA_GENERIC_WARPS * 32, VEC == 8 ? 2 : 4) \
        name(const gpu_sdpa_args a) {                                                          \
        extern __shared__ float generic_smem[];                                               \
        sdpa_generic::attention<T, VEC>(a, generic_smem);                                     \
    }

GENERIC_KERNEL(sdpa_generic_f32_v2, float, 2)
GENERIC_KERNEL(sdpa_generic_f32_v4, float, 4)
GENERIC_KERNEL(sdpa_generic_f32_v8, float, 8)
GENERIC_KERNEL(sdpa_generic_f16_v2, gpu_f16, 2)
GENERIC_KERNEL(sdpa_generic_f16_v4, gpu_f16, 4)
GENERIC_KERNEL(sdpa_generic_f16_v8, gpu_f16, 8)
GENERIC_KERNEL(sdpa_generic_bf16_v2, gpu_bf16, 2)
GENERIC_KERNEL(sdpa_generic_bf16_v4, gpu_bf16, 4)
GENERIC_KERNEL(sdpa_generic_bf16_v8, gpu_bf16, 8)
