/* rmsnorm, layernorm and rope on the cpu device against the float64 references of
 * op_reference.h computed from the rounded inputs, within the error bounds of
 * tolerances.h (the norms accumulate rows of length D; rope accumulates nothing).
 * Covers optional weight/bias, zero-size and size-1 shapes, non-contiguous
 * inputs and outputs, rows enough for the worker pool, large positions, and the
 * argument errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_check.h"

/* ---- rmsnorm and layernorm ---- */

/* The reference of rmsnorm (layer = 0) or layernorm; w and b may be NULL. */
static bp_ref_result norm_ref(int layer, const double *x, int64_t n, int64_t d, const double *w,
                              const double *b, float eps) {
    return layer ? bp_ref_layernorm(x, n, d, w, b, eps) : bp_ref_rmsnorm(x, n, d, w, eps);
}

static bp_status run_norm(int layer, bp_tensor *x, bp_tensor *w, bp_tensor *b, float eps,
                          bp_tensor **out) {
    return layer ? bp_layernorm(x, w, b, eps, out) : bp_rmsnorm(x, w, eps, out);
}

static bp_status run_norm_out(int layer, bp_tensor *x, bp_tensor *w, bp_tensor *b, float eps,
                              bp_tensor *out) {
    return layer ? bp_layernorm_out(x, w, b, eps, out) : bp_rmsnorm_out(x, w, eps, out);
}

static const bp_ref_shape norm_cases[] = {
    {3, {3, 5, 8}}, {2, {1, 1}}, {2, {0, 4}}, {2, {4, 0}}, {2, {33, 65}}, {1, {257}},
    {2, {64, 1030}}, /* the worker pool */
};

static void test_norms(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 10;
    const char *names[] = {"rmsnorm", "layernorm"};
    for (int layer = 0; layer < 2; layer++)
        for (int t = 0; t < 3; t++) {
            bp_dtype dt = bp_test_float_dtypes[t];
            for (size_t c = 0; c < sizeof norm_cases / sizeof *norm_cases; c++) {
                bp_ref_shape s = norm_cases[c];
                int64_t d = s.d[s.ndim - 1], n = bp_ref_numel(s);
                /* affine: bit 0 weight, bit 1 bias (layernorm only) */
                for (int affine = 0; affine < (layer ? 4 : 2); affine++) {
                    double *vx, *vw = NULL, *vb = NULL;
                    /* an offset mean, so that layernorm's centring matters */
                    bp_tensor *x = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++, -1, 3, &vx);
                    bp_tensor *w = affine & 1 ? bp_test_random_tensor(dev, dt, 1, &d, seed++, 0.5,
                                                                      1.5, &vw)
                                              : NULL;
                    bp_tensor *b = affine & 2 ? bp_test_random_tensor(dev, dt, 1, &d, seed++, -1,
                                                                      1, &vb)
                                              : NULL;
                    float eps = affine & 1 ? 1e-5f : 1e-6f;
                    bp_ref_result want = norm_ref(layer, vx, n, d, vw, vb, eps);
                    bp_tensor *out = NULL;
                    BP_ASSERT_OK(run_norm(layer, x, w, b, eps, &out));
                    bp_test_assert_shape(out, s);
                    bp_test_check_tensor(names[layer], out, want, n);
                    bp_tensor *out2 = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++, 1, 2,
                                                            NULL);
                    BP_ASSERT_OK(run_norm_out(layer, x, w, b, eps, out2));
                    bp_test_check_tensor(names[layer], out2, want, n);
                    bp_tensor_release(out2);
                    bp_tensor_release(out);
                    bp_tensor_release(x);
                    bp_tensor_release(w);
                    bp_tensor_release(b);
                    free(vx);
                    free(vw);
                    free(vb);
                    bp_ref_free(&want);
                }
            }
        }
}

/* A transposed x, a weight and bias sliced out of a wider tensor, a transposed out. */
static void test_norms_strided(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int layer = 0; layer < 2; layer++)
        for (int t = 0; t < 3; t++) {
            bp_dtype dt = bp_test_float_dtypes[t];
            double *vbase, *vwide;
            bp_tensor *base = bp_test_random_tensor(dev, dt, 2, (int64_t[]){12, 5},
                                                    60 + (uint64_t)t, -2, 2, &vbase);
            bp_tensor *wide = bp_test_random_tensor(dev, dt, 1, (int64_t[]){30}, 70 + (uint64_t)t,
                                                    0.5, 1.5, &vwide);
            bp_tensor *x, *w, *b, *out_base, *out_t;
            BP_ASSERT_OK(bp_tensor_transpose(base, 0, 1, &x)); /* [5, 12] */
            BP_ASSERT_OK(bp_tensor_narrow(wide, 0, 3, 12, &w));
            BP_ASSERT_OK(bp_tensor_narrow(wide, 0, 17, 12, &b));
            double *vx = bp_test_view_values(x, base, vbase);
            bp_ref_result want = norm_ref(layer, vx, 60, 12, vwide + 3, layer ? vwide + 17 : NULL, 1e-5f);
            BP_ASSERT_OK(bp_tensor_empty(dev, dt, 2, (int64_t[]){12, 5}, &out_base));
            BP_ASSERT_OK(bp_tensor_transpose(out_base, 0, 1, &out_t));
            BP_ASSERT_OK(run_norm_out(layer, x, w, layer ? b : NULL, 1e-5f, out_t));
            bp_test_check_tensor(layer ? "layernorm" : "rmsnorm", out_t, want, 60);
            bp_tensor *all[] = {base, wide, x, w, b, out_base, out_t};
            for (size_t k = 0; k < sizeof all / sizeof *all; k++)
                bp_tensor_release(all[k]);
            free(vbase);
            free(vwide);
            free(vx);
            bp_ref_free(&want);
        }
}

static void test_norm_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *x = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 8}, 1, -1, 1, NULL);
    bp_tensor *w5 = bp_test_random_tensor(dev, BP_DTYPE_F32, 1, (int64_t[]){5}, 2, -1, 1, NULL);
    bp_tensor *w8 = bp_test_random_tensor(dev, BP_DTYPE_F32, 1, (int64_t[]){8}, 3, -1, 1, NULL);
    bp_tensor *w18 = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){1, 8}, 4, -1, 1, NULL);
    bp_tensor *h8 = bp_test_random_tensor(dev, BP_DTYPE_F16, 1, (int64_t[]){8}, 5, -1, 1, NULL);
    bp_tensor *xi = bp_test_random_tensor(dev, BP_DTYPE_I32, 2, (int64_t[]){3, 8}, 6, -9, 9, NULL);
    bp_tensor *sc = bp_test_random_tensor(dev, BP_DTYPE_F32, 0, NULL, 7, -1, 1, NULL);
    bp_tensor *o = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){8, 3}, 8, -1, 1, NULL);
    bp_tensor *out = (bp_tensor *)&out;

    BP_ASSERT_ERR(bp_rmsnorm(x, w5, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: weight has shape [5], expected [8] (the last dim of x, which is "
                  "[3, 8])");
    assert_null(out);
    BP_ASSERT_ERR(bp_rmsnorm(x, w18, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: weight has shape [1, 8], expected [8]");
    BP_ASSERT_ERR(bp_layernorm(x, w8, w5, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "layernorm: bias has shape [5], expected [8]");
    BP_ASSERT_ERR(bp_layernorm(x, h8, NULL, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "layernorm: dtype mismatch: f32 and f16");
    BP_ASSERT_ERR(bp_rmsnorm(xi, NULL, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: dtype i32 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_rmsnorm(sc, NULL, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: x is a scalar");
    BP_ASSERT_ERR(bp_layernorm(x, NULL, NULL, -1.0f, &out), BP_ERR_INVALID_ARGUMENT,
                  "layernorm: eps must be finite and >= 0, got -1");
    BP_ASSERT_ERR(bp_rmsnorm(x, NULL, NAN, &out), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: eps must be finite and >= 0");
    BP_ASSERT_ERR(bp_rmsnorm(NULL, w8, 1e-5f, &out), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_layernorm(x, NULL, NULL, 1e-5f, NULL), BP_ERR_INVALID_ARGUMENT,
                  "layernorm: the out pointer is NULL");
    BP_ASSERT_ERR(bp_rmsnorm_out(x, NULL, 1e-5f, NULL), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: out is NULL");
    BP_ASSERT_ERR(bp_rmsnorm_out(x, w8, 1e-5f, o), BP_ERR_INVALID_ARGUMENT,
                  "rmsnorm: out has shape [8, 3], expected [3, 8]");
    BP_ASSERT_ERR(bp_layernorm_out(x, w8, NULL, 1e-5f, x), BP_ERR_INVALID_ARGUMENT,
                  "layernorm: out overlaps input 0");
    BP_ASSERT_ERR(bp_layernorm_out(w8, NULL, NULL, 1e-5f, w8), BP_ERR_INVALID_ARGUMENT,
                  "layernorm: out overlaps input 0");
    bp_tensor *all[] = {x, w5, w8, w18, h8, xi, sc, o};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        bp_tensor_release(all[k]);
}

/* ---- rope ---- */

static void check_rope(bp_tensor *x, const double *vx, bp_ref_shape s, const bp_rope_attrs *a,
                       uint64_t seed) {
    bp_ref_result want = bp_ref_rope(vx, s, a);
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_rope(x, a, &out));
    bp_test_assert_shape(out, s);
    bp_test_check_tensor("rope", out, want, bp_ref_numel(s));
    bp_tensor *out2 = bp_test_random_tensor(bp_test_cpu(), bp_tensor_dtype(x), s.ndim, s.d, seed,
                                            1, 2, NULL);
    BP_ASSERT_OK(bp_rope_out(x, a, out2));
    bp_test_check_tensor("rope", out2, want, bp_ref_numel(s));
    bp_tensor_release(out2);
    bp_tensor_release(out);
    bp_ref_free(&want);
}

static const bp_ref_shape rope_cases[] = {
    {4, {2, 3, 5, 8}}, {3, {1, 1, 2}}, {3, {3, 0, 4}}, {2, {4, 0}}, {3, {2, 7, 64}},
    {2, {64, 1030}}, /* the worker pool */
};

static void test_rope(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 400;
    const bp_rope_attrs variants[] = {
        {.theta = 10000.0f, .position_offset = 0, .interleaved = 0},
        {.theta = 10000.0f, .position_offset = 0, .interleaved = 1},
        {.theta = 500000.0f, .position_offset = 4000, .interleaved = 0},
        {.theta = 10000.0f, .position_offset = 8191, .interleaved = 7}, /* any nonzero */
    };
    for (int t = 0; t < 3; t++) {
        bp_dtype dt = bp_test_float_dtypes[t];
        for (size_t v = 0; v < sizeof variants / sizeof *variants; v++)
            for (size_t c = 0; c < sizeof rope_cases / sizeof *rope_cases; c++) {
                bp_ref_shape s = rope_cases[c];
                double *vx;
                bp_tensor *x = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++, -2, 2, &vx);
                check_rope(x, vx, s, &variants[v], seed++);
                bp_tensor_release(x);
                free(vx);
            }
    }
}

/* q laid out [B, S, H, D] and transposed to [B, H, S, D], as attention code does. */
static void test_rope_strided(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int t = 0; t < 3; t++)
        for (int inter = 0; inter < 2; inter++) {
            bp_dtype dt = bp_test_float_dtypes[t];
            double *vbase;
            bp_tensor *base = bp_test_random_tensor(dev, dt, 4, (int64_t[]){2, 9, 3, 16},
                                                    80 + (uint64_t)(t * 2 + inter), -2, 2, &vbase);
            bp_tensor *x;
            BP_ASSERT_OK(bp_tensor_transpose(base, 1, 2, &x));
            assert_false(bp_tensor_is_contiguous(x));
            double *vx = bp_test_view_values(x, base, vbase);
            bp_rope_attrs a = {.theta = 10000.0f, .position_offset = 17, .interleaved = inter};
            check_rope(x, vx, (bp_ref_shape){4, {2, 3, 9, 16}}, &a, 3);
            bp_tensor_release(x);
            bp_tensor_release(base);
            free(vbase);
            free(vx);
        }
}

static void test_rope_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    int64_t s238[3] = {2, 3, 8};
    bp_tensor *x = bp_test_random_tensor(dev, BP_DTYPE_F32, 3, s238, 1, -1, 1, NULL);
    bp_tensor *odd = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 7}, 2, -1, 1, NULL);
    bp_tensor *v = bp_test_random_tensor(dev, BP_DTYPE_F32, 1, (int64_t[]){8}, 3, -1, 1, NULL);
    bp_tensor *xi = bp_test_random_tensor(dev, BP_DTYPE_I64, 2, (int64_t[]){3, 8}, 4, -9, 9, NULL);
    bp_tensor *oh = bp_test_random_tensor(dev, BP_DTYPE_F16, 3, s238, 5, -1, 1, NULL);
    bp_rope_attrs a = {.theta = 10000.0f};
    bp_tensor *out = (bp_tensor *)&out;

    BP_ASSERT_ERR(bp_rope(odd, &a, &out), BP_ERR_INVALID_ARGUMENT,
                  "rope: the last dim of x (shape [3, 7]) must be even");
    assert_null(out);
    BP_ASSERT_ERR(bp_rope(v, &a, &out), BP_ERR_INVALID_ARGUMENT,
                  "rope: x has shape [8]; it needs at least 2 dims");
    BP_ASSERT_ERR(bp_rope(x, NULL, &out), BP_ERR_INVALID_ARGUMENT, "rope: attrs is NULL");
    BP_ASSERT_ERR(bp_rope(x, &(bp_rope_attrs){.theta = 0}, &out), BP_ERR_INVALID_ARGUMENT,
                  "rope: theta must be finite and > 0, got 0");
    BP_ASSERT_ERR(bp_rope(xi, &a, &out), BP_ERR_INVALID_ARGUMENT,
                  "rope: dtype i64 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_rope(NULL, &a, &out), BP_ERR_INVALID_ARGUMENT,
                  "rope: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_rope(x, &a, NULL), BP_ERR_INVALID_ARGUMENT, "rope: the out pointer is NULL");
    BP_ASSERT_ERR(bp_rope_out(x, &a, oh), BP_ERR_INVALID_ARGUMENT,
                  "rope: out has dtype f16, expected f32");
    BP_ASSERT_ERR(bp_rope_out(x, &a, x), BP_ERR_INVALID_ARGUMENT, "rope: out overlaps input 0");
    bp_tensor *all[] = {x, odd, v, xi, oh};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        bp_tensor_release(all[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_norms_strided),
        cmocka_unit_test(test_norm_errors),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_rope_strided),
        cmocka_unit_test(test_rope_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
