/* cuda kernels: device helpers of kernels/elementwise.cu.
 *
 *   - the float dtypes as stored (float, __half, __nv_bfloat16), loaded as float and
 *     stored from float rounding to nearest even, as the cpu kernels do;
 *   - the integer dtypes of arithmetic (int32_t, int64_t), computed in the type itself
 *     with results that wrap around, as the cpu kernels do;
 *   - 16-byte packs for vectorized loads and stores of contiguous operands;
 *   - grid-stride loops with int64 indices;
 *   - operand offsets of element i of a gpu_ew_layout;
 *   - warp and block reductions (sums and maxima). */
#ifndef CU_ELEMENTWISE_COMMON_CUH
#define CU_ELEMENTWISE_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "elementwise_args.h"

/* ---- the float dtypes ---- */

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) {
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

/* ---- the integer dtypes ----
 * Sums, differences and products wrap around (two's complement): they are computed in
 * the unsigned type, where overflow is defined, as the cpu kernels do. */

template <typename T> struct UnsignedOf;
template <> struct UnsignedOf<int32_t> { typedef uint32_t type; };
template <> struct UnsignedOf<int64_t> { typedef uint64_t type; };

template <typename T> __device__ __forceinline__ T wrap_add(T a, T b) {
    typedef typename UnsignedOf<T>::type U;
    return (T)((U)a + (U)b);
}
template <typename T> __device__ __forceinline__ T wrap_sub(T a, T b) {
    typedef typename UnsignedOf<T>::type U;
    return (T)((U)a - (U)b);
}
template <typename T> __device__ __forceinline__ T wrap_mul(T a, T b) {
    typedef typename UnsignedOf<T>::type U;
    return (T)((U)a * (U)b);
}

/* ---- the type a dtype computes in ----
 * Value<T>::type: float for the float dtypes, the integer itself for integers;
 * load_value gives a stored element as that type. */

template <typename T> struct Value { typedef float type; };
template <> struct Value<int32_t> { typedef int32_t type; };
template <> struct Value<int64_t> { typedef int64_t type; };

template <typename T> __device__ __forceinline__ float load_value(T v) { return to_f32(v); }
__device__ __forceinline__ int32_t load_value(int32_t v) { return v; }
__device__ __forceinline__ int64_t load_value(int64_t v) { return v; }

/* ---- 16-byte packs ---- */

/* PACK<T> elements of T in one aligned 16-byte load or store. */
template <typename T> struct alignas(16) Pack {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

__device__ __forceinline__ bool aligned16(const void *p) {
    return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

/* ---- grid-stride loops ---- */

__device__ __forceinline__ int64_t thread_index() {
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t thread_count() { return (int64_t)gridDim.x * blockDim.x; }

/* ---- offsets ---- */

/* a / b for a >= 0, b > 0, in 32 bits when both fit (64-bit division is much slower). */
__device__ __forceinline__ int64_t div_index(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0)
        return (int64_t)((uint32_t)a / (uint32_t)b);
    return a / b;
}

/* off[k] = offset in elements of element i (0 <= i < L.numel) in operand k, k < N. The
 * dims are unrolled so that L stays in the kernel's parameter space. */
template <int N>
__device__ __forceinline__ void layout_offsets(const gpu_ew_layout &L, int64_t i,
                                               int64_t (&off)[N]) {
#pragma unroll
    for (int k = 0; k < N; k++)
        off[k] = 0;
#pragma unroll
    for (int d = GPU_EW_MAX_DIMS - 1; d >= 0; d--) {
        if (d < L.ndim) {
            int64_t index = i; /* the outermost dim takes what is left */
            if (d > 0) {
                const int64_t q = div_index(i, L.shape[d]);
                index = i - q * L.shape[d];
                i = q;
            }
#pragma unroll
            for (int k = 0; k < N; k++)
                off[k] += index * L.strides[k][d];
        }
    }
}

/* ---- reductions ---- */

/* The max of a and b where a NaN in either wins, as the cpu kernels' running max. */
__device__ __forceinline__ float max_nan(float a, float b) { return b > a || isnan(b) ? b : a; }

/* What a reduction combines: a sum, the max that NaN wins, or the max that leaves NaN
 * out (fmaxf, one instruction). Integers: a sum that wraps around, or the max. */
enum { RED_SUM, RED_MAX, RED_FMAX };

template <int OP> __device__ __forceinline__ float combine(float a, float b) {
    return OP == RED_SUM ? a + b : OP == RED_MAX ? max_nan(a, b) : fmaxf(a, b);
}
template <int OP, typename I> __device__ __forceinline__ I combine_int(I a, I b) {
    static_assert(OP != RED_FMAX, "integers have no NaN");
    return OP == RED_SUM ? wrap_add(a, b) : b > a ? b : a;
}
template <int OP> __device__ __forceinline__ int32_t combine(int32_t a, int32_t b) {
    return combine_int<OP>(a, b);
}
template <int OP> __device__ __forceinline__ int64_t combine(int64_t a, int64_t b) {
    return combine_int<OP>(a, b);
}

/* What combine<OP> starts from: 0 for a sum, the lowest value for a max. */
template <typename V> __device__ __forceinline__ V lowest();
template <> __device__ __forceinline__ float lowest<float>() { return -INFINITY; }
template <> __device__ __forceinline__ int32_t lowest<int32_t>() { return INT32_MIN; }
template <> __device__ __forceinline__ int64_t lowest<int64_t>() { return INT64_MIN; }

template <int OP, typename V> __device__ __forceinline__ V identity() {
    return OP == RED_SUM ? (V)0 : lowest<V>();
}

/* Every lane of the warp gets the warp's reduction of v. */
template <int OP, typename V> __device__ __forceinline__ V warp_reduce(V v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = combine<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Every thread of the block gets the block's reduction of v. blockDim.x is a multiple of
 * 32; every thread of the block calls it; part holds 32 values of shared memory. */
template <int OP, typename V> __device__ __forceinline__ V block_reduce(V v, V *part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_reduce<OP>(v);
    __syncthreads(); /* an earlier reduction may still read part */
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < warps ? part[lane] : identity<OP, V>();
    return warp_reduce<OP>(v);
}

#endif
