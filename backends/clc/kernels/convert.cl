/* clc kernel of copy between dtypes, built per destination dtype (BP_DT); the
 * source dtype is an argument.
 *
 * As the cpu kernels: float sources widen exactly (to double with cl_khr_fp64, else
 * to float, which holds every f32/f16/bf16 value) and integer sources to long, so each
 * conversion rounds once. Into f16/bf16, a value is first rounded to f32 "to odd"
 * (truncate, then set the last bit when inexact): f32 keeps more than two extra bits,
 * so rounding that to nearest even is the single rounding of the exact value. Floats
 * to integers truncate toward zero through long (NaN gives 0, out of range
 * saturates), then wrap to the narrower type; anything to bool is != 0. */
#if BP_FP64
typedef double FV;
#else
typedef float FV;
#endif

inline float odd_float(FV d) {
#if BP_FP64
    float f = convert_float_rtz(d);
    if ((FV)f != d && !isnan(d))
        f = as_float(as_uint(f) | 1u);
    return f;
#else
    return d;
#endif
}

inline float odd_float_from_long(long v) {
    float f = convert_float_rtz(v);
    if (convert_long(f) != v)
        f = as_float(as_uint(f) | 1u);
    return f;
}

inline long trunc_long(FV d) {
    if (isnan(d))
        return 0;
    if (d >= (FV)9223372036854775808.0)
        return LONG_MAX;
    if (d <= -(FV)9223372036854775808.0)
        return LONG_MIN;
    return convert_long_rtz(d);
}

#if BP_DT == DT_F32
#define FROM_F(d) convert_float(d)
#define FROM_L(v) convert_float(v)
#elif BP_DT == DT_F16
#define FROM_F(d) f16_store(odd_float(d))
#define FROM_L(v) f16_store(odd_float_from_long(v))
#elif BP_DT == DT_BF16
#define FROM_F(d) bf16_store(odd_float(d))
#define FROM_L(v) bf16_store(odd_float_from_long(v))
#elif BP_DT == DT_F64
#define FROM_F(d) ((double)(d))
#define FROM_L(v) convert_double(v)
#elif BP_DT == DT_BOOL
#define FROM_F(d) ((uchar)((d) != 0))
#define FROM_L(v) ((uchar)((v) != 0))
#else
#define FROM_F(d) ((T)trunc_long(d))
#define FROM_L(v) ((T)(v))
#endif

__kernel void k_convert(__global T *out, tdesc od, __global const uchar *src, tdesc sd,
                        int sdt, long n) {
    long i = get_global_id(0);
    GUARD(i, n);
    long s = tpos(&sd, i);
    T r;
    switch (sdt) {
    case DT_F32: r = FROM_F((FV)((__global const float *)src)[s]); break;
    case DT_F16: r = FROM_F((FV)f16_load(((__global const ushort *)src)[s])); break;
    case DT_BF16: r = FROM_F((FV)bf16_load(((__global const ushort *)src)[s])); break;
#if BP_FP64
    case DT_F64: r = FROM_F(((__global const double *)src)[s]); break;
#endif
    case DT_I8: r = FROM_L((long)((__global const char *)src)[s]); break;
    case DT_U8: r = FROM_L((long)src[s]); break;
    case DT_I32: r = FROM_L((long)((__global const int *)src)[s]); break;
    case DT_I64: r = FROM_L(((__global const long *)src)[s]); break;
    default: r = FROM_L((long)(src[s] != 0)); break; /* bool */
    }
    out[tpos(&od, i)] = r;
}
