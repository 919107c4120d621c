/* gpu kernels: the portability header. Every kernel source includes this instead of the
 * vendor's headers; it is the only file that names CUDA or HIP device APIs directly
 * (README.md in this directory has the rules for kernel authors).
 *
 *   GPU_NVIDIA / GPU_AMD    1 for the compiler that builds this pass: nvcc (CUDA) or
 *                           hipcc/clang in HIP mode for an amdgcn target
 *   GPU_WARP                lanes of a warp (NVIDIA: 32) or wavefront (AMD: 64 on CDNA,
 *                           gfx90a and gfx940; 32 on RDNA unless compiled for wave64)
 *   gpu_f16, gpu_bf16       the 2-byte float types as stored; gpu_to_f32(x) widens one,
 *                           gpu_f32_to_f16_rn / gpu_f32_to_bf16_rn round to nearest even
 *   gpu_shfl_xor(v, m, w)   v of lane (lane ^ m) within groups of w lanes (w a power of two
 *                           up to GPU_WARP; every lane of the warp takes part)
 *   gpu_any(p)              whether p holds in any lane of the warp (all lanes take part)
 *   gpu_syncwarp()          the warp's lanes see each other's shared memory writes
 *   gpu_double2float_rz, gpu_ll2float_rz   conversions rounding toward zero (HIP 5.2's
 *                           __double2float_rz and __ll2float_rz round to nearest)
 *   GPU_LAUNCH_BOUNDS(t, b) at most t threads a block and, on NVIDIA, registers for b blocks
 *                           a multiprocessor (AMD: t only; the compiler picks the waves)
 *
 * NVIDIA-only fast paths (mma.sync, ldmatrix, cp.async, PTX asm) are compiled under
 * `#if GPU_NVIDIA` and marked GPU_KERNEL_NV in the .def files. */
#ifndef GPU_KERNELS_GPU_PORT_H
#define GPU_KERNELS_GPU_PORT_H

#if defined(__HIP__)
#define GPU_AMD 1
#define GPU_NVIDIA 0
#elif defined(__CUDACC__)
#define GPU_AMD 0
#define GPU_NVIDIA 1
#else
#error "gpu_port.h: compile the kernels with nvcc or hipcc"
#endif

#include <stdint.h>

#if GPU_NVIDIA

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define GPU_WARP 32

typedef __half gpu_f16;
typedef __nv_bfloat16 gpu_bf16;

__device__ __forceinline__ float gpu_to_f32(gpu_f16 x) { return __half2float(x); }
__device__ __forceinline__ float gpu_to_f32(gpu_bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ gpu_f16 gpu_f32_to_f16_rn(float x) { return __float2half_rn(x); }
__device__ __forceinline__ gpu_bf16 gpu_f32_to_bf16_rn(float x) { return __float2bfloat16_rn(x); }

template <typename V> __device__ __forceinline__ V gpu_shfl_xor(V v, int mask, int width = GPU_WARP) {
    return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
__device__ __forceinline__ bool gpu_any(bool p) { return __any_sync(0xffffffffu, p) != 0; }
__device__ __forceinline__ void gpu_syncwarp() { __syncwarp(); }

__device__ __forceinline__ float gpu_double2float_rz(double d) { return __double2float_rz(d); }
__device__ __forceinline__ float gpu_ll2float_rz(long long v) { return __ll2float_rz(v); }

#define GPU_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)

#else /* GPU_AMD */

#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#define GPU_WARP __AMDGCN_WAVEFRONT_SIZE

typedef __half gpu_f16;
/* bf16 as stored: the high half of an f32 (HIP 5.2's hip_bfloat16 is a class whose
 * conversions are host-and-device code we do not need). */
struct gpu_bf16 {
    uint16_t bits;
};

__device__ __forceinline__ float gpu_to_f32(gpu_f16 x) { return __half2float(x); }
__device__ __forceinline__ float gpu_to_f32(gpu_bf16 x) {
    return __uint_as_float((uint32_t)x.bits << 16);
}
__device__ __forceinline__ gpu_f16 gpu_f32_to_f16_rn(float x) { return __float2half_rn(x); }
/* Round to nearest even; a NaN stays a (quiet) NaN. */
__device__ __forceinline__ gpu_bf16 gpu_f32_to_bf16_rn(float x) {
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return gpu_bf16{(uint16_t)((u >> 16) | 0x40u)};
    u += 0x7fffu + ((u >> 16) & 1u);
    return gpu_bf16{(uint16_t)(u >> 16)};
}

template <typename V> __device__ __forceinline__ V gpu_shfl_xor(V v, int mask, int width = GPU_WARP) {
    return __shfl_xor(v, mask, width);
}
__device__ __forceinline__ bool gpu_any(bool p) { return __any(p) != 0; }
/* A wavefront runs in lockstep; the fences keep the compiler (and the LDS counters) from
 * moving shared memory accesses across the point. */
__device__ __forceinline__ void gpu_syncwarp() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/* f one step toward zero when it is further from zero than the exact value (rounding to
 * nearest went away from zero); f is then finite and nonzero, or infinite. */
__device__ __forceinline__ float gpu_toward_zero(float f, bool away) {
    return away ? __uint_as_float(__float_as_uint(f) - 1u) : f;
}
__device__ __forceinline__ float gpu_double2float_rz(double d) {
    const float f = (float)d;
    return gpu_toward_zero(f, __builtin_fabs((double)f) > __builtin_fabs(d));
}
__device__ __forceinline__ float gpu_ll2float_rz(long long v) {
    const float f = (float)v; /* |f| <= 2^63 */
    bool away;
    if (f >= 9223372036854775808.0f)
        away = true;
    else if (f <= -9223372036854775808.0f)
        away = v != INT64_MIN;
    else
        away = v >= 0 ? (long long)f > v : (long long)f < v;
    return gpu_toward_zero(f, away);
}

#define GPU_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads)

#endif

#endif
