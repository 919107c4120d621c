/* sum, max, mean and softmax on the cpu device against the float64 references of
 * op_reference.h computed from the rounded inputs, within the error bounds of
 * tolerances.h (g(K) sum |x| over the reduced dim; softmax: its row's sum). Covers every dim (negative too), keepdim on and off, zero-size, size-1 and
 * scalar shapes, non-contiguous inputs, rows long enough for the worker pool and for
 * f32 rounding to matter, causal masks, large logits, and the argument errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_check.h"

/* ---- sum, max, mean ---- */

static const bp_dtype red_dtypes[] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16, BP_DTYPE_I32,
                                      BP_DTYPE_I64};

static bool is_int(bp_dtype dt) { return dt == BP_DTYPE_I32 || dt == BP_DTYPE_I64; }

/* Checks op k over dim `dim` of `a` (values v, logical shape s), both forms. */
static void check_reduce(bp_ref_reduce_op k, bp_tensor *a, const double *v, bp_ref_shape s,
                         int dim, int keepdim, uint64_t seed) {
    bp_dtype dt = bp_tensor_dtype(a);
    int d = s.ndim == 0 ? 0 : (dim < 0 ? dim + s.ndim : dim);
    bp_ref_shape so = bp_ref_reduced_shape(s, d, keepdim);
    bp_ref_result want = bp_ref_reduce(k, v, s, d, dt);
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_test_reduce(k, a, dim, keepdim, NULL, &out));
    bp_test_assert_shape(out, so);
    bp_test_check_tensor(bp_ref_reduce_name(k), out, want, bp_ref_numel(so));
    bp_tensor *out2 = bp_test_random_tensor(bp_test_cpu(), dt, so.ndim, so.d, seed, 1, 2, NULL);
    BP_ASSERT_OK(bp_test_reduce(k, a, dim, keepdim, out2, NULL));
    bp_test_check_tensor(bp_ref_reduce_name(k), out2, want, bp_ref_numel(so));
    bp_tensor_release(out2);
    bp_tensor_release(out);
    bp_ref_free(&want);
}

static const bp_ref_shape red_cases[] = {
    {3, {3, 5, 7}}, {2, {1, 1}}, {2, {0, 4}}, {2, {4, 0}}, {2, {33, 65}}, {1, {257}}, {0, {0}},
    {2, {64, 1030}}, /* the worker pool, along either dim */
};

static void test_reductions(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 1;
    for (int k = BP_REF_SUM; k <= BP_REF_MEAN; k++)
        for (size_t t = 0; t < sizeof red_dtypes / sizeof *red_dtypes; t++) {
            bp_dtype dt = red_dtypes[t];
            if (k == BP_REF_MEAN && is_int(dt))
                continue;
            for (size_t c = 0; c < sizeof red_cases / sizeof *red_cases; c++) {
                bp_ref_shape s = red_cases[c];
                double *v;
                bp_tensor *a = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++,
                                                     is_int(dt) ? -1000 : -1,
                                                     is_int(dt) ? 1000 : 1, &v);
                int nd = s.ndim ? s.ndim : 1;
                for (int dim = -nd; dim < nd; dim++)
                    for (int keepdim = 0; keepdim < 2; keepdim++) {
                        int d = dim < 0 ? dim + nd : dim;
                        if (k == BP_REF_MAX && s.ndim && s.d[d] == 0)
                            continue; /* an error, tested below */
                        check_reduce((bp_ref_reduce_op)k, a, v, s, dim, keepdim, seed++);
                    }
                bp_tensor_release(a);
                free(v);
            }
        }
}

/* A permuted (non-contiguous) input, reduced over each dim. */
static void test_reductions_strided(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int k = BP_REF_SUM; k <= BP_REF_MEAN; k++)
        for (size_t t = 0; t < sizeof red_dtypes / sizeof *red_dtypes; t++) {
            bp_dtype dt = red_dtypes[t];
            if (k == BP_REF_MEAN && is_int(dt))
                continue;
            double *vbase;
            bp_tensor *base = bp_test_random_tensor(dev, dt, 3, (int64_t[]){7, 5, 3}, 77 + t,
                                                    -100, 100, &vbase);
            bp_tensor *a;
            BP_ASSERT_OK(bp_tensor_permute(base, (const int[]){2, 0, 1}, &a));
            assert_false(bp_tensor_is_contiguous(a));
            double *v = bp_test_view_values(a, base, vbase);
            bp_ref_shape s = {3, {3, 7, 5}};
            for (int dim = 0; dim < 3; dim++)
                check_reduce((bp_ref_reduce_op)k, a, v, s, dim, dim == 1, 200 + (uint64_t)dim);
            bp_tensor_release(a);
            bp_tensor_release(base);
            free(vbase);
            free(v);
        }
}

/* A million-element row: a plain running f32 sum would exceed the tolerance here. */
static void test_long_rows(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int t = 0; t < 3; t++) {
        bp_dtype dt = bp_test_float_dtypes[t];
        bp_ref_shape s = {2, {2, 1 << 20}};
        double *v;
        bp_tensor *a = bp_test_random_tensor(dev, dt, s.ndim, s.d, 31 + (uint64_t)t, -1, 1, &v);
        check_reduce(BP_REF_SUM, a, v, s, 1, 0, 5);
        check_reduce(BP_REF_MEAN, a, v, s, -1, 1, 6);
        check_reduce(BP_REF_MAX, a, v, s, 1, 0, 7);
        bp_tensor_release(a);
        free(v);
    }
}

/* Exact integer sums beyond float's 24 bits, and NaN propagating through max. */
static void test_reduce_values(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    int64_t big[3] = {(int64_t)1 << 53, 1, -7};
    bp_tensor *a, *out = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I64, 1, (int64_t[]){3}, big, &a));
    BP_ASSERT_OK(bp_sum(a, 0, 0, &out));
    int64_t got;
    BP_ASSERT_OK(bp_tensor_to_host(out, &got, sizeof got));
    assert_int_equal(got, ((int64_t)1 << 53) - 6);
    bp_tensor_release(out);
    bp_tensor_release(a);

    float x[2][3] = {{1, NAN, 3}, {-INFINITY, -2, -INFINITY}};
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 2, (int64_t[]){2, 3}, x, &a));
    BP_ASSERT_OK(bp_max(a, 1, 0, &out));
    float m[2];
    BP_ASSERT_OK(bp_tensor_to_host(out, m, sizeof m));
    assert_true(isnan(m[0]));
    assert_true(m[1] == -2.0f);
    bp_tensor_release(out);
    bp_tensor_release(a);
}

static void test_reduce_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    int64_t s357[3] = {3, 5, 7};
    bp_tensor *a = bp_test_random_tensor(dev, BP_DTYPE_F32, 3, s357, 1, -1, 1, NULL);
    bp_tensor *e = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){0, 4}, 2, -1, 1, NULL);
    bp_tensor *i = bp_test_random_tensor(dev, BP_DTYPE_I32, 1, (int64_t[]){4}, 3, -9, 9, NULL);
    bp_tensor *d = bp_test_random_tensor(dev, BP_DTYPE_F64, 1, (int64_t[]){4}, 4, -9, 9, NULL);
    bp_tensor *c = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 1}, 5, -1, 1, NULL);
    bp_tensor *out = (bp_tensor *)&out;

    BP_ASSERT_ERR(bp_sum(a, 3, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "sum: dim 3 is out of range for a tensor of 3 dims (expected -3 to 2)");
    assert_null(out);
    BP_ASSERT_ERR(bp_mean(a, -4, 1, &out), BP_ERR_INVALID_ARGUMENT, "mean: dim -4 is out of range");
    BP_ASSERT_ERR(bp_max(e, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "max: dim 0 of a [0, 4] tensor is empty");
    BP_ASSERT_ERR(bp_mean(i, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "mean: dtype i32 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_sum(d, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "sum: dtype f64 is not supported (supported: f32, f16, bf16, i32, i64)");
    BP_ASSERT_ERR(bp_max(NULL, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "max: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_sum(a, 0, 0, NULL), BP_ERR_INVALID_ARGUMENT, "sum: the out pointer is NULL");
    BP_ASSERT_ERR(bp_sum_out(a, 0, 0, NULL), BP_ERR_INVALID_ARGUMENT, "sum: out is NULL");

    bp_tensor *o = bp_test_random_tensor(dev, BP_DTYPE_F32, 3, (int64_t[]){3, 1, 7}, 6, 1, 2, NULL);
    BP_ASSERT_ERR(bp_sum_out(a, 1, 0, o), BP_ERR_INVALID_ARGUMENT,
                  "sum: out has shape [3, 1, 7], expected [3, 7]");
    BP_ASSERT_OK(bp_sum_out(a, 1, 1, o));
    bp_tensor *oh = bp_test_random_tensor(dev, BP_DTYPE_F16, 2, (int64_t[]){3, 7}, 7, 1, 2, NULL);
    BP_ASSERT_ERR(bp_max_out(a, -2, 0, oh), BP_ERR_INVALID_ARGUMENT,
                  "max: out has dtype f16, expected f32");
    /* the input itself as out (reducing a dim of 1 with keepdim): not for reductions */
    BP_ASSERT_ERR(bp_sum_out(c, 1, 1, c), BP_ERR_INVALID_ARGUMENT, "sum: out overlaps input 0");

    bp_tensor *all[] = {a, e, i, d, c, o, oh};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        bp_tensor_release(all[k]);
}

/* ---- softmax ---- */

static void check_softmax(bp_tensor *a, const double *v, bp_ref_shape s, float scale, int causal,
                          uint64_t seed) {
    bp_ref_result want = bp_ref_softmax(v, s, scale, causal);
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_softmax(a, scale, causal, &out));
    bp_test_assert_shape(out, s);
    bp_test_check_tensor("softmax", out, want, bp_ref_numel(s));
    bp_tensor *out2 = bp_test_random_tensor(bp_test_cpu(), bp_tensor_dtype(a), s.ndim, s.d, seed,
                                            1, 2, NULL);
    BP_ASSERT_OK(bp_softmax_out(a, scale, causal, out2));
    bp_test_check_tensor("softmax", out2, want, bp_ref_numel(s));
    bp_tensor_release(out2);
    bp_tensor_release(out);
    bp_ref_free(&want);
}

static const bp_ref_shape softmax_cases[] = {
    {3, {3, 5, 7}}, {2, {1, 1}}, {2, {0, 4}}, {2, {4, 0}}, {2, {33, 65}}, {1, {257}}, {0, {0}},
    {2, {64, 1030}},
};

static const bp_ref_shape causal_cases[] = {
    {4, {2, 3, 5, 9}}, /* Sq < Sk */
    {3, {4, 6, 6}},    /* Sq == Sk */
    {2, {7, 3}},       /* Sq > Sk: rows past Sk see every key */
    {3, {2, 1, 1}},
    {3, {2, 40, 1030}},
};

static void test_softmax(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 3000;
    const float scales[] = {1.0f, 0.37f};
    for (int t = 0; t < 3; t++) {
        bp_dtype dt = bp_test_float_dtypes[t];
        for (int sc = 0; sc < 2; sc++) {
            for (size_t c = 0; c < sizeof softmax_cases / sizeof *softmax_cases; c++) {
                bp_ref_shape s = softmax_cases[c];
                double *v;
                bp_tensor *a = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++, -5, 5, &v);
                check_softmax(a, v, s, scales[sc], 0, seed++);
                bp_tensor_release(a);
                free(v);
            }
            for (size_t c = 0; c < sizeof causal_cases / sizeof *causal_cases; c++) {
                bp_ref_shape s = causal_cases[c];
                double *v;
                bp_tensor *a = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++, -5, 5, &v);
                check_softmax(a, v, s, scales[sc], 1, seed++);
                bp_tensor_release(a);
                free(v);
            }
        }
    }
}

/* Logits near 1000 overflow exp without the max subtracted; the result must stay
 * finite and match. */
static void test_softmax_large_logits(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int t = 0; t < 3; t++) {
        bp_dtype dt = bp_test_float_dtypes[t];
        bp_ref_shape s = {2, {6, 50}};
        double *v;
        bp_tensor *a = bp_test_random_tensor(dev, dt, s.ndim, s.d, 90 + (uint64_t)t, 990, 1010, &v);
        check_softmax(a, v, s, 1.0f, 0, 1);
        check_softmax(a, v, s, 1.0f, 1, 2);
        bp_tensor *out = NULL;
        BP_ASSERT_OK(bp_softmax(a, 1.0f, 0, &out));
        double *got = bp_test_tensor_values(out);
        for (int i = 0; i < 300; i++)
            assert_true(isfinite(got[i]));
        free(got);
        bp_tensor_release(out);
        bp_tensor_release(a);
        free(v);
    }
}

/* A row of -inf gives zeros (as a fully masked row would); a NaN poisons its row. */
static void test_softmax_special_rows(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    float x[3][4] = {{-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                     {1, NAN, 2, 3},
                     {-INFINITY, 0, -INFINITY, 0}};
    bp_tensor *a, *out = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 4}, x, &a));
    BP_ASSERT_OK(bp_softmax(a, 1.0f, 0, &out));
    double want[12] = {0, 0, 0, 0, NAN, NAN, NAN, NAN, 0, 0.5, 0, 0.5};
    bp_test_check_tensor("softmax", out, bp_ref_exact(want), 12);
    bp_tensor_release(out);
    bp_tensor_release(a);
}

/* A transposed input and a transposed output. */
static void test_softmax_strided(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int t = 0; t < 3; t++) {
        bp_dtype dt = bp_test_float_dtypes[t];
        double *vbase;
        bp_tensor *base = bp_test_random_tensor(dev, dt, 3, (int64_t[]){2, 11, 6}, 50 + (uint64_t)t,
                                                -4, 4, &vbase);
        bp_tensor *a, *out_base, *out_t;
        BP_ASSERT_OK(bp_tensor_transpose(base, 1, 2, &a)); /* [2, 6, 11] */
        double *v = bp_test_view_values(a, base, vbase);
        bp_ref_shape s = {3, {2, 6, 11}};
        check_softmax(a, v, s, 0.5f, 1, 9);
        bp_ref_result want = bp_ref_softmax(v, s, 0.5f, 1);
        BP_ASSERT_OK(bp_tensor_empty(dev, dt, 3, (int64_t[]){2, 11, 6}, &out_base));
        BP_ASSERT_OK(bp_tensor_transpose(out_base, 1, 2, &out_t));
        BP_ASSERT_OK(bp_softmax_out(a, 0.5f, 1, out_t));
        bp_test_check_tensor("softmax", out_t, want, bp_ref_numel(s));
        bp_tensor_release(out_t);
        bp_tensor_release(out_base);
        bp_tensor_release(a);
        bp_tensor_release(base);
        free(vbase);
        free(v);
        bp_ref_free(&want);
    }
}

static void test_softmax_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *a = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 4}, 1, -1, 1, NULL);
    bp_tensor *v = bp_test_random_tensor(dev, BP_DTYPE_F32, 1, (int64_t[]){4}, 2, -1, 1, NULL);
    bp_tensor *i = bp_test_random_tensor(dev, BP_DTYPE_I32, 2, (int64_t[]){3, 4}, 3, -9, 9, NULL);
    bp_tensor *o = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){4, 3}, 4, -1, 1, NULL);
    bp_tensor *oh = bp_test_random_tensor(dev, BP_DTYPE_BF16, 2, (int64_t[]){3, 4}, 5, -1, 1, NULL);
    bp_tensor *out = (bp_tensor *)&out;
    BP_ASSERT_ERR(bp_softmax(v, 1.0f, 1, &out), BP_ERR_INVALID_ARGUMENT,
                  "softmax: causal masking needs a tensor of at least 2 dims");
    assert_null(out);
    BP_ASSERT_ERR(bp_softmax(i, 1.0f, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "softmax: dtype i32 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_softmax(NULL, 1.0f, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "softmax: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_softmax(a, 1.0f, 0, NULL), BP_ERR_INVALID_ARGUMENT,
                  "softmax: the out pointer is NULL");
    BP_ASSERT_ERR(bp_softmax_out(a, 1.0f, 0, o), BP_ERR_INVALID_ARGUMENT,
                  "softmax: out has shape [4, 3], expected [3, 4]");
    BP_ASSERT_ERR(bp_softmax_out(a, 1.0f, 0, oh), BP_ERR_INVALID_ARGUMENT,
                  "softmax: out has dtype bf16, expected f32");
    BP_ASSERT_ERR(bp_softmax_out(a, 1.0f, 0, a), BP_ERR_INVALID_ARGUMENT,
                  "softmax: out overlaps input 0");
    bp_tensor *all[] = {a, v, i, o, oh};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        bp_tensor_release(all[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_reductions_strided),
        cmocka_unit_test(test_long_rows),
        cmocka_unit_test(test_reduce_values),
        cmocka_unit_test(test_reduce_errors),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_large_logits),
        cmocka_unit_test(test_softmax_special_rows),
        cmocka_unit_test(test_softmax_strided),
        cmocka_unit_test(test_softmax_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
