/* Checking ops against their float64 references: op_check.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_check.h"

/* Fails the test unless `st` is BP_OK, naming the call and bp_last_error(). */
static void check_ok(bp_status st, const char *call) {
    if (st != BP_OK)
        fail_msg("%s -> %s: %s", call, bp_status_str(st), bp_last_error());
}

const bp_dtype bp_test_float_dtypes[3] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16};
const bp_dtype bp_test_all_dtypes[BP_DTYPE_COUNT] = {
    BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16, BP_DTYPE_F64, BP_DTYPE_I8,
    BP_DTYPE_U8,  BP_DTYPE_I32, BP_DTYPE_I64,  BP_DTYPE_BOOL,
};

static void store(void *buf, bp_dtype dtype, int64_t i, double v) {
    switch (dtype) {
    case BP_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case BP_DTYPE_F64: ((double *)buf)[i] = v; break;
    case BP_DTYPE_F16: {
        _Float16 h = (_Float16)bp_ref_round(v, BP_DTYPE_F16); /* exact: one rounding */
        memcpy((uint16_t *)buf + i, &h, 2);
        break;
    }
    case BP_DTYPE_BF16: {
        float f = (float)bp_ref_round(v, BP_DTYPE_BF16);
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

double *bp_test_random_values(void *buf, bp_dtype dtype, int64_t n, uint64_t seed, double lo,
                              double hi) {
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
        v = bp_ref_round(v, dtype);
        store(buf, dtype, i, v);
        vals[i] = load(buf, dtype, i);
    }
    return vals;
}

bp_tensor *bp_test_random_tensor(bp_device *dev, bp_dtype dtype, int ndim, const int64_t *shape,
                                 uint64_t seed, double lo, double hi, double **values) {
    int64_t n = numel_of(ndim, shape);
    void *buf = malloc(n > 0 ? (size_t)n * bp_dtype_size(dtype) : 1);
    double *vals = bp_test_random_values(buf, dtype, n, seed, lo, hi);
    bp_tensor *t = NULL;
    check_ok(bp_tensor_from_host(dev, dtype, ndim, shape, buf, &t), "bp_tensor_from_host");
    free(buf);
    if (values)
        *values = vals;
    else
        free(vals);
    return t;
}

bp_tensor *bp_test_tensor_from_values(bp_device *dev, bp_dtype dtype, int ndim,
                                      const int64_t *shape, const double *values) {
    int64_t n = numel_of(ndim, shape);
    void *buf = malloc(n > 0 ? (size_t)n * bp_dtype_size(dtype) : 1);
    for (int64_t i = 0; i < n; i++)
        store(buf, dtype, i, values[i]);
    bp_tensor *t = NULL;
    check_ok(bp_tensor_from_host(dev, dtype, ndim, shape, buf, &t), "bp_tensor_from_host");
    free(buf);
    return t;
}

double *bp_test_tensor_values(const bp_tensor *t) {
    int64_t n = bp_tensor_numel(t);
    bp_dtype dtype = bp_tensor_dtype(t);
    size_t bytes = (size_t)n * bp_dtype_size(dtype);
    void *buf = malloc(bytes ? bytes : 1);
    check_ok(bp_tensor_to_host(t, buf, bytes), "bp_tensor_to_host");
    double *vals = malloc(n > 0 ? (size_t)n * sizeof *vals : sizeof *vals);
    for (int64_t i = 0; i < n; i++)
        vals[i] = load(buf, dtype, i);
    free(buf);
    return vals;
}

/* 0 when got is within the bound of want, else how far it is off in multiples of the
 * bound (> 1), to pick the worst failure. A NaN where a number is expected (or the
 * reverse), a wrong inf and any difference from an exact result are infinitely far. */
static double badness(double got, double want, double bound) {
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got) ? 0 : INFINITY;
    if (isinf(want) || isinf(got))
        return got == want ? 0 : INFINITY;
    double err = fabs(got - want);
    if (err <= bound)
        return 0;
    return bound > 0 ? err / bound : INFINITY;
}

/* mag[i] of want, -1 (exact) without magnitudes. */
static double mag_of(bp_ref_result want, int64_t i) {
    return want.mag ? want.mag[i] : -1;
}

/* "[i, j, k]": the coordinates of row-major element `index` of `shape`. */
static void format_coords(char *buf, size_t size, const bp_ref_shape *shape, int64_t index) {
    int64_t coord[BP_MAX_DIMS];
    for (int d = shape->ndim - 1; d >= 0; d--) {
        coord[d] = shape->d[d] ? index % shape->d[d] : 0;
        index = shape->d[d] ? index / shape->d[d] : 0;
    }
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < shape->ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "",
                                (long long)coord[d]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

/* Counts the elements of got out of bounds, and gives the worst in *worst (-1: none). */
static int64_t count_bad(const double *got, bp_ref_result want, int64_t n, bp_dtype dtype,
                         int64_t *worst) {
    int64_t bad = 0;
    double worst_badness = 0;
    *worst = -1;
    for (int64_t i = 0; i < n; i++) {
        double b = badness(got[i], want.v[i], bp_error_bound(dtype, want.v[i], mag_of(want, i)));
        if (b > 0) {
            bad++;
            if (b > worst_badness) {
                *worst = i;
                worst_badness = b;
            }
        }
    }
    return bad;
}

int64_t bp_test_count_out_of_bounds(const double *got, bp_ref_result want, int64_t n,
                                    bp_dtype dtype) {
    int64_t worst;
    return count_bad(got, want, n, dtype, &worst);
}

/* The comparison of bp_test_assert_close; shape (may be NULL) only adds coordinates
 * to the message. Every element is looked at, so the message gives the worst. */
static void assert_close(const char *what, const double *got, bp_ref_result want, int64_t n,
                         const bp_ref_shape *shape, bp_dtype dtype, const char *file,
                         int line) {
    int64_t worst;
    int64_t bad = count_bad(got, want, n, dtype, &worst);
    if (bad == 0)
        return;
    char coords[160] = "", bound[160];
    if (shape)
        format_coords(coords, sizeof coords, shape, worst);
    double w = want.v[worst], m = mag_of(want, worst);
    if (m < 0)
        snprintf(bound, sizeof bound, "the result is exact");
    else
        snprintf(bound, sizeof bound, "bound %.3g = 2^-24 * g(K)*M %.3g + eps_out %.3g * "
                 "|expected| + floor %.3g", bp_error_bound(dtype, w, m), m, bp_eps_out(dtype),
                 bp_underflow_floor(dtype));
    print_error("ERROR: %s (%s): %lld of %lld elements out of bounds; worst: element %lld%s%s is "
                "%.9g, expected %.9g (error %.3g; %s)\n", what, bp_dtype_name(dtype),
                (long long)bad, (long long)n, (long long)worst, shape ? " at " : "", coords,
                got[worst], w, fabs(got[worst] - w), bound);
    _fail(file, line);
}

void bp_test_assert_close_at(const char *what, const double *got, bp_ref_result want, int64_t n,
                             bp_dtype dtype, const char *file, int line) {
    assert_close(what, got, want, n, NULL, dtype, file, line);
}

void bp_test_assert_close_shaped_at(const char *what, const double *got, bp_ref_result want,
                                    bp_ref_shape shape, bp_dtype dtype, const char *file,
                                    int line) {
    assert_close(what, got, want, bp_ref_numel(shape), &shape, dtype, file, line);
}

double *bp_test_alloc_values(int64_t n) {
    return malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
}

bp_ref_shape bp_test_shape_of(const bp_tensor *t) {
    bp_ref_shape s = {.ndim = bp_tensor_ndim(t)};
    for (int i = 0; i < s.ndim; i++)
        s.d[i] = bp_tensor_size(t, i);
    return s;
}

void bp_test_assert_shape(const bp_tensor *t, bp_ref_shape s) {
    assert_int_equal(bp_tensor_ndim(t), s.ndim);
    for (int i = 0; i < s.ndim; i++)
        assert_int_equal(bp_tensor_size(t, i), s.d[i]);
}

void bp_test_check_tensor_at(const char *what, const bp_tensor *t, bp_ref_result want, int64_t n,
                             const char *file, int line) {
    if (bp_tensor_numel(t) != n) {
        print_error("ERROR: %s: the result has %lld elements, expected %lld\n", what,
                    (long long)bp_tensor_numel(t), (long long)n);
        _fail(file, line);
    }
    double *got = bp_test_tensor_values(t);
    assert_close(what, got, want, n, NULL, bp_tensor_dtype(t), file, line);
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

bp_tensor *bp_test_alibi_slopes(bp_device *dev, int64_t heads, double **values) {
    float *f = malloc((size_t)(heads + 1) * sizeof *f);
    double *v = bp_test_alloc_values(heads);
    for (int64_t h = 0; h < heads; h++) {
        f[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)heads);
        v[h] = f[h];
    }
    bp_tensor *t = NULL;
    check_ok(bp_tensor_from_host(dev, BP_DTYPE_F32, 1, (const int64_t[]){heads}, f, &t),
             "bp_tensor_from_host");
    free(f);
    *values = v;
    return t;
}

/* ---- ops by their reference enums ---- */

bp_status bp_test_binary(bp_ref_binary_op op, bp_tensor *a, bp_tensor *b, bp_tensor *out,
                         bp_tensor **made) {
    switch (op) {
    case BP_REF_ADD: return out ? bp_add_out(a, b, out) : bp_add(a, b, made);
    case BP_REF_SUB: return out ? bp_sub_out(a, b, out) : bp_sub(a, b, made);
    case BP_REF_MUL: return out ? bp_mul_out(a, b, out) : bp_mul(a, b, made);
    default: return out ? bp_div_out(a, b, out) : bp_div(a, b, made);
    }
}

bp_status bp_test_unary(bp_ref_unary_op op, bp_tensor *a, double alpha, bp_tensor *out,
                        bp_tensor **made) {
    switch (op) {
    case BP_REF_EXP: return out ? bp_exp_out(a, out) : bp_exp(a, made);
    case BP_REF_TANH: return out ? bp_tanh_out(a, out) : bp_tanh(a, made);
    case BP_REF_SILU: return out ? bp_silu_out(a, out) : bp_silu(a, made);
    case BP_REF_GELU: return out ? bp_gelu_out(a, 0, out) : bp_gelu(a, 0, made);
    case BP_REF_GELU_TANH: return out ? bp_gelu_out(a, 1, out) : bp_gelu(a, 1, made);
    default: return out ? bp_scale_out(a, alpha, out) : bp_scale(a, alpha, made);
    }
}

bp_status bp_test_reduce(bp_ref_reduce_op op, bp_tensor *a, int dim, int keepdim, bp_tensor *out,
                         bp_tensor **made) {
    switch (op) {
    case BP_REF_SUM: return out ? bp_sum_out(a, dim, keepdim, out) : bp_sum(a, dim, keepdim, made);
    case BP_REF_MAX: return out ? bp_max_out(a, dim, keepdim, out) : bp_max(a, dim, keepdim, made);
    default: return out ? bp_mean_out(a, dim, keepdim, out) : bp_mean(a, dim, keepdim, made);
    }
}
