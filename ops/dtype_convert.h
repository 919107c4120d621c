/* Element conversions between the storage dtypes and float/double, for cpu kernels. */
#ifndef BP_DTYPE_CONVERT_H
#define BP_DTYPE_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <backplane/dtype.h>

static inline float bp_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest even; NaN stays NaN (quiet). */
static inline uint16_t bp_f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static inline float bp_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int shift = 0;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                shift++;
            }
            mant &= 0x3ffu;
            bits = sign | ((uint32_t)(127 - 15 + 1 - shift) << 23) | (mant << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest even, with overflow to infinity and gradual underflow. */
static inline uint16_t bp_f32_to_f16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t abs = bits & 0x7fffffffu;
    if (abs > 0x7f800000u)
        return sign | 0x7e00u; /* NaN */
    if (abs >= 0x477ff000u)   /* >= 65520 rounds to infinity */
        return sign | 0x7c00u;
    if (abs < 0x38800000u) {  /* below the smallest normal half: subnormal or zero */
        if (abs < 0x33000000u)
            return sign;
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exp; /* 14..24 */
        uint32_t half = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u)))
            half++;
        return sign | (uint16_t)half;
    }
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return sign | (uint16_t)((rounded - (112u << 23)) >> 13);
}

/* Loads element i of a contiguous or strided buffer as float / stores a float. */
static inline float bp_load_float(const void *base, bp_dtype dt, int64_t i) {
    switch (dt) {
    case BP_DTYPE_F32: return ((const float *)base)[i];
    case BP_DTYPE_F16: return bp_f16_to_f32(((const uint16_t *)base)[i]);
    case BP_DTYPE_BF16: return bp_bf16_to_f32(((const uint16_t *)base)[i]);
    case BP_DTYPE_F64: return (float)((const double *)base)[i];
    case BP_DTYPE_I8: return ((const int8_t *)base)[i];
    case BP_DTYPE_U8: return ((const uint8_t *)base)[i];
    case BP_DTYPE_I32: return (float)((const int32_t *)base)[i];
    case BP_DTYPE_I64: return (float)((const int64_t *)base)[i];
    case BP_DTYPE_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: return NAN;
    }
}

static inline void bp_store_float(void *base, bp_dtype dt, int64_t i, float v) {
    switch (dt) {
    case BP_DTYPE_F32: ((float *)base)[i] = v; break;
    case BP_DTYPE_F16: ((uint16_t *)base)[i] = bp_f32_to_f16(v); break;
    case BP_DTYPE_BF16: ((uint16_t *)base)[i] = bp_f32_to_bf16(v); break;
    case BP_DTYPE_F64: ((double *)base)[i] = v; break;
    case BP_DTYPE_I8: ((int8_t *)base)[i] = (int8_t)v; break;
    case BP_DTYPE_U8: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case BP_DTYPE_I32: ((int32_t *)base)[i] = (int32_t)v; break;
    case BP_DTYPE_I64: ((int64_t *)base)[i] = (int64_t)v; break;
    case BP_DTYPE_BOOL: ((uint8_t *)base)[i] = v != 0.0f; break;
    default: break;
    }
}

/* Float-dtype runs (f32, f16 or bf16) to and from f32 buffers, for kernels that work in
 * f32 tiles: dst[i] = element i of the n elements of `src` spaced `stride` apart. */
static inline void bp_load_f32(float *dst, const char *src, bp_dtype dt, int64_t n,
                               int64_t stride) {
    if (dt == BP_DTYPE_F32) {
        const float *s = (const float *)src;
        if (stride == 1)
            memcpy(dst, s, (size_t)n * sizeof *dst);
        else
            for (int64_t i = 0; i < n; i++)
                dst[i] = s[i * stride];
    } else {
        const uint16_t *s = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++)
            dst[i] = dt == BP_DTYPE_F16 ? bp_f16_to_f32(s[i * stride]) : bp_bf16_to_f32(s[i * stride]);
    }
}

/* The reverse: element i of the strided run at `dst` becomes src[i], rounded. */
static inline void bp_store_f32(char *dst, bp_dtype dt, int64_t stride, const float *src,
                                int64_t n) {
    if (dt == BP_DTYPE_F32) {
        float *d = (float *)dst;
        for (int64_t i = 0; i < n; i++)
            d[i * stride] = src[i];
    } else {
        uint16_t *d = (uint16_t *)dst;
        for (int64_t i = 0; i < n; i++)
            d[i * stride] = dt == BP_DTYPE_F16 ? bp_f32_to_f16(src[i]) : bp_f32_to_bf16(src[i]);
    }
}

#endif
