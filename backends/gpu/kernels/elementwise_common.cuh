/* gpu kernels: device helpers of kernels/elementwise.cu.
 *
 *   - the float dtypes as stored (float, gpu_f16, gpu_bf16), loaded as float and
 *     stored from float rounding to nearest even, as the cpu kernels do;
 *   - the integer dtypes of arithmetic (int32_t, int64_t), computed in the type itself
 *     with results that wrap around, as the cpu kernels do;
 *   - 16-byte packs for vectorized loads and stores of contiguous operands;
 *   - grid-stride loops with int64 indices;
 *   - operand offsets of element i of a gpu_ew_layout;
 *   - warp and block reductions (sums and maxima), for warps of GPU_WARP lanes. */
#ifndef CU_ELEMENTWISE_COMMON_CUH
#define CU_ELEMENTWISE_COMMON_CUH

#include "gpu_port.h"

#include "elementwise_args.h"

/* ---- the float dtypes ---- */

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(gpu_f16 v) { return gpu_to_f32(v); }
__device__ __forceinline__ float to_f32(gpu_bf16 v) { return gpu_to_f32(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ gpu_f16 from_f32<gpu_f16>(float v) {
    return gpu_f32_to_f16_rn(v);
}
template <> __device__ __forceinline__ gpu_bf16 from_f32<gpu_bf16>(float v) {
    return gpu_f32_to_bf16_rn(v);
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

/* Every lane of a group of `width` lanes (a power of two up to GPU_WARP; a group is the
 * whole warp unless the block is smaller than a warp) gets the group's reduction of v. */
template <int OP, typename V>
__device__ __forceinline__ V warp_reduce(V v, int width = GPU_WARP) {
#pragma unroll
    for (int o = GPU_WARP / 2; o > 0; o >>= 1)
        if (o < width)
            v = combine<OP>(v, gpu_shfl_xor(v, o, width));
    return v;
}

/* Warps of a block of GPU_EW_MAX_BLOCK threads: each one's partial result in block_reduce,
 * which the first warp then reduces. */
#define BLOCK_WARPS_MAX (GPU_EW_MAX_BLOCK / GPU_WARP)
static_assert(BLOCK_WARPS_MAX <= GPU_WARP, "one warp reduces the warps' partial results");

/* Every thread of the block gets the block's reduction of v. Every thread of the block
 * calls it; part holds BLOCK_WARPS_MAX values of shared memory. Host: blockDim.x is a
 * power of two from 32 to GPU_EW_MAX_BLOCK (row_block in the host's elementwise code), so
 * a block smaller than a wavefront of 64 is one partial warp, which reduces over its
 * blockDim.x lanes (the lanes past it do not exist). */
template <int OP, typename V> __device__ __forceinline__ V block_reduce(V v, V *part) {
    const int width = GPU_WARP > 32 && (int)blockDim.x < GPU_WARP ? (int)blockDim.x : GPU_WARP;
    const int lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const int warps = (blockDim.x + GPU_WARP - 1) / GPU_WARP;
    v = warp_reduce<OP>(v, width);
    __syncthreads(); /* an earlier reduction may still read part */
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < warps ? part[lane] : identity<OP, V>();
    return warp_reduce<OP>(v, width);
}

#endif
