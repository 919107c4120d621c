#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_test_util.h"

const bp_dtype bp_test_float_dtypes[3] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16};
const bp_dtype bp_test_all_dtypes[BP_DTYPE_COUNT] = {
    BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16, BP_DTYPE_F64, BP_DTYPE_I8,
    BP_DTYPE_U8,  BP_DTYPE_I32, BP_DTYPE_I64,  BP_DTYPE_BOOL,
};

/* Round to a float with `mantissa_bits` explicit bits and the given exponent range. */
static double round_to_format(double v, int mantissa_bits, int min_exp, double max_finite) {
    if (!isfinite(v) || v == 0)
        return v;
    int e;
    frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
    if (e - 1 < min_exp)
        e = min_exp + 1; /* subnormal: fixed quantum */
    double quantum = ldexp(1.0, e - 1 - mantissa_bits);
    double r = nearbyint(v / quantum) * quantum; /* default rounding mode: to nearest even */
    if (fabs(r) > max_finite)
        return copysign(INFINITY, v);
    return r;
}

double bp_test_round(double v, bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F32: return (double)(float)v;
    case BP_DTYPE_F16: return round_to_format(v, 10, -14, 65504.0);
    case BP_DTYPE_BF16: return round_to_format((double)(float)v, 7, -126, 3.3895313892515355e38);
    case BP_DTYPE_F64: return v;
    case BP_DTYPE_I8: return (double)(int8_t)trunc(v);
    case BP_DTYPE_U8: return (double)(uint8_t)trunc(v);
    case BP_DTYPE_I32: return (double)(int32_t)trunc(v);
    case BP_DTYPE_I64: return (double)(int64_t)trunc(v);
    case BP_DTYPE_BOOL: return v != 0;
    default: return NAN;
    }
}

static void store(void *buf, bp_dtype dtype, int64_t i, double v) {
    switch (dtype) {
    case BP_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case BP_DTYPE_F64: ((double *)buf)[i] = v; break;
    case BP_DTYPE_F16: {
        _Float16 h = (_Float16)v;
        memcpy((uint16_t *)buf + i, &h, 2);
        break;
    }
    case BP_DTYPE_BF16: {
        float f = (float)bp_test_round(v, BP_DTYPE_BF16);
        uint32_t bits;
        memcpy(&bits, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
        break;
    }
    case BP_DTYPE_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case BP_DTYPE_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case BP_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case BP_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case BP_DTYPE_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    default: break;
    }
}

static double load(const void *buf, bp_dtype dtype, int64_t i) {
    switch (dtype) {
    case BP_DTYPE_F32: return ((const float *)buf)[i];
    case BP_DTYPE_F64: return ((const double *)buf)[i];
    case BP_DTYPE_F16: {
        _Float16 h;
        memcpy(&h, (const uint16_t *)buf + i, 2);
        return (double)h;
    }
    case BP_DTYPE_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    case BP_DTYPE_I8: return ((const int8_t *)buf)[i];
    case BP_DTYPE_U8: return ((const uint8_t *)buf)[i];
    case BP_DTYPE_I32: return ((const int32_t *)buf)[i];
    case BP_DTYPE_I64: return (double)((const int64_t *)buf)[i];
    case BP_DTYPE_BOOL: return ((const uint8_t *)buf)[i] != 0;
    default: return NAN;
    }
}

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

bp_tensor *bp_test_random_tensor(bp_device *dev, bp_dtype dtype, int ndim, const int64_t *shape,
                                 uint64_t seed, double lo, double hi, double **values) {
    int64_t n = numel_of(ndim, shape);
    size_t elem = bp_dtype_size(dtype);
    void *buf = malloc(n > 0 ? (size_t)n * elem : 1);
    double *vals = malloc(n > 0 ? (size_t)n * sizeof *vals : sizeof *vals);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
        double v = dtype == BP_DTYPE_BOOL ? (double)(u < 0.5) : lo + (hi - lo) * u;
        if (dtype != BP_DTYPE_BOOL && dtype >= BP_DTYPE_I8)
            v = trunc(v);
        if (v == 0 && dtype != BP_DTYPE_BOOL)
            v = dtype >= BP_DTYPE_I8 ? 1 : 0.5 * (hi - lo) / 7 + lo / 13 + 0.01; /* no zeros */
        v = bp_test_round(v, dtype);
        store(buf, dtype, i, v);
        vals[i] = load(buf, dtype, i);
    }
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(dev, dtype, ndim, shape, buf, &t));
    free(buf);
    if (values)
        *values = vals;
    else
        free(vals);
    return t;
}

double *bp_test_tensor_values(const bp_tensor *t) {
    int64_t n = bp_tensor_numel(t);
    bp_dtype dtype = bp_tensor_dtype(t);
    size_t bytes = (size_t)n * bp_dtype_size(dtype);
    void *buf = malloc(bytes ? bytes : 1);
    BP_ASSERT_OK(bp_tensor_to_host(t, buf, bytes));
    double *vals = malloc(n > 0 ? (size_t)n * sizeof *vals : sizeof *vals);
    for (int64_t i = 0; i < n; i++)
        vals[i] = load(buf, dtype, i);
    free(buf);
    return vals;
}

void bp_test_assert_close(const char *what, const double *got, const double *want, int64_t n,
                          bp_dtype dtype, double terms) {
    bp_tolerance tol = bp_tolerance_for(dtype, terms);
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (isnan(w) && isnan(g))
            continue;
        if (isinf(w) && g == w)
            continue;
        double err = fabs(g - w);
        if (!(err <= tol.atol + tol.rtol * fabs(w)))
            fail_msg("%s (%s): element %lld is %.9g, expected %.9g (error %.3g > atol %.3g + "
                     "rtol %.3g * |expected|)", what, bp_dtype_name(dtype), (long long)i, g, w,
                     err, tol.atol, tol.rtol);
    }
}

int64_t bp_test_numel(bp_test_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++)
        n *= s.d[i];
    return n;
}

double *bp_test_alloc_values(int64_t n) {
    return malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
}

bp_test_shape bp_test_shape_of(const bp_tensor *t) {
    bp_test_shape s = {.ndim = bp_tensor_ndim(t)};
    for (int i = 0; i < s.ndim; i++)
        s.d[i] = bp_tensor_size(t, i);
    return s;
}

void bp_test_assert_shape(const bp_tensor *t, bp_test_shape s) {
    assert_int_equal(bp_tensor_ndim(t), s.ndim);
    for (int i = 0; i < s.ndim; i++)
        assert_int_equal(bp_tensor_size(t, i), s.d[i]);
}

void bp_test_check_tensor(const char *what, const bp_tensor *t, const double *want, int64_t n,
                          double terms) {
    assert_int_equal(bp_tensor_numel(t), n);
    double *got = bp_test_tensor_values(t);
    bp_test_assert_close(what, got, want, n, bp_tensor_dtype(t), terms);
    free(got);
}

double *bp_test_view_values(const bp_tensor *view, const bp_tensor *base, const double *base_vals) {
    int nd = bp_tensor_ndim(view);
    int64_t n = bp_tensor_numel(view);
    double *v = bp_test_alloc_values(n);
    int64_t idx[BP_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t off = bp_tensor_storage_offset(view) - bp_tensor_storage_offset(base);
        for (int d = 0; d < nd; d++)
            off += idx[d] * bp_tensor_stride(view, d);
        v[i] = base_vals[off];
        for (int d = nd - 1; d >= 0 && ++idx[d] == bp_tensor_size(view, d); d--)
            idx[d] = 0;
    }
    return v;
}
