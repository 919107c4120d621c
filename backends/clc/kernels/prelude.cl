/* clc kernels: what every program starts with.
 *
 * Build options (clc.h: source builds and SPIR-V modules): BP_DT is the program's dtype (bp_dtype's values),
 * BP_ESIZE an element size in bytes for the dtype-blind programs, BP_FP64 1 when the
 * device has cl_khr_fp64.
 *
 * A tensor argument is a buffer plus a tdesc, passed by value: the element offset of
 * element [0, ..., 0] in the buffer, and the shape and strides in elements. Kernels
 * index their output linearly; the host has aligned every operand to the output's
 * dims (broadcast dims have stride 0) and merged dims that are contiguous in every
 * operand, so most tensors arrive with one dim. */
#if BP_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_F64 3
#define DT_I8 4
#define DT_U8 5
#define DT_I32 6
#define DT_I64 7
#define DT_BOOL 8

#define MAXD 8

typedef struct tdesc {
    long off;
    long ndim;
    long shape[MAXD];
    long stride[MAXD];
} tdesc;

/* Offset (in elements) of the element at linear index i of the tensor's shape. */
inline long tpos(const tdesc *t, long i) {
    long off = t->off;
    if (t->ndim == 1)
        return off + i * t->stride[0];
    for (int d = (int)t->ndim - 1; d >= 0; d--) {
        long s = t->shape[d];
        long q = i / s;
        off += (i - q * s) * t->stride[d];
        i = q;
    }
    return off;
}

/* ---- the half types, stored as ushort bits ---- */

/* bf16 is the top half of an f32. */
inline float bf16_load(ushort b) {
    return as_float((uint)b << 16);
}

/* Round to nearest even; a NaN stays a (quiet) NaN. */
inline ushort bf16_store(float f) {
    uint x = as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (ushort)(x >> 16);
}

/* IEEE half, converted in software so no cl_khr_fp16 is needed. */
inline float f16_load(ushort h) {
    uint sign = (uint)(h & 0x8000u) << 16;
    uint e = (h >> 10) & 0x1fu;
    uint m = h & 0x3ffu;
    if (e == 0x1fu)
        return as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0u) {
        float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}

/* Round to nearest even, overflow to infinity, gradual underflow. */
inline ushort f16_store(float f) {
    uint x = as_uint(f);
    uint sign = (x >> 16) & 0x8000u;
    uint a = x & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (ushort)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* 65520 and up round to infinity */
        return (ushort)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* a half subnormal (or zero): units of 2^-24 */
        float units = as_float(a) * 16777216.0f; /* exact: a power-of-two scale */
        return (ushort)(sign | (uint)rint(units)); /* rint rounds to nearest even */
    }
    uint r = a + 0xfffu + ((a >> 13) & 1u);
    return (ushort)(sign | ((r - (112u << 23)) >> 13));
}

/* ---- the program's dtype: T stored, LD/ST to and from the math type ---- */

#ifdef BP_DT
#if BP_DT == DT_F32
typedef float T;
#define LD(v) (v)
#define ST(v) (v)
#define IS_FLOAT 1
#elif BP_DT == DT_F16
typedef ushort T;
#define LD(v) f16_load(v)
#define ST(v) f16_store(v)
#define IS_FLOAT 1
#elif BP_DT == DT_BF16
typedef ushort T;
#define LD(v) bf16_load(v)
#define ST(v) bf16_store(v)
#define IS_FLOAT 1
#elif BP_DT == DT_F64
typedef double T;
#define IS_FLOAT 0
#elif BP_DT == DT_I8
typedef char T;
#define IS_FLOAT 0
#elif BP_DT == DT_U8 || BP_DT == DT_BOOL
typedef uchar T;
#define IS_FLOAT 0
#elif BP_DT == DT_I32
typedef int T;
typedef uint UT; /* integer math wraps in the unsigned type */
#define T_MIN INT_MIN
#define IS_FLOAT 0
#elif BP_DT == DT_I64
typedef long T;
typedef ulong UT;
#define T_MIN LONG_MIN
#define IS_FLOAT 0
#endif
#endif

/* ---- work-group reductions (RWG work-items, a power of two) ---- */

#ifdef RWG
/* The work-group's sum of v (every work-item gets it). */
inline float wg_sum(float v, __local float *part) {
    int l = (int)get_local_id(0);
    part[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = RWG / 2; s > 0; s >>= 1) {
        if (l < s)
            part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = part[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* The work-group's max of v; a NaN anywhere wins. */
inline float wg_max(float v, __local float *part) {
    int l = (int)get_local_id(0);
    part[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = RWG / 2; s > 0; s >>= 1) {
        if (l < s) {
            float o = part[l + s];
            if (o > part[l] || isnan(o))
                part[l] = o;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = part[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
#endif

/* Global sizes are rounded up to a multiple of the local size: work-items past n leave. */
#define GUARD(i, n) if ((i) >= (n)) return
