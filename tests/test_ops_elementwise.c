/* Elementwise ops on the cpu device against the float64 references of op_reference.h
 * computed from the rounded inputs, within the error bounds of tolerances.h (one f32
 * operation, or a transcendental's few ulps). Covers broadcasting, zero-size and size-1
 * shapes, non-contiguous inputs and outputs, in-place _out, the parallel path, and
 * every argument error with its message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_check.h"

static bool is_int(bp_dtype dt) { return dt == BP_DTYPE_I32 || dt == BP_DTYPE_I64; }

/* ---- binary arithmetic ---- */

typedef struct binop {
    bp_ref_binary_op ref;
    bool ints; /* also i32 and i64 */
} binop;

static const binop binops[] = {
    {BP_REF_ADD, true},
    {BP_REF_SUB, true},
    {BP_REF_MUL, true},
    {BP_REF_DIV, false},
};

static const bp_dtype arith_dtypes[] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16, BP_DTYPE_I32,
                                        BP_DTYPE_I64};

static void random_operands(bp_dtype dt, const binop *op, uint64_t seed, bp_ref_shape sa,
                            bp_ref_shape sb, bp_tensor **a, double **va, bp_tensor **b,
                            double **vb) {
    bp_device *dev = bp_test_cpu();
    double lo = is_int(dt) ? -1000 : -3, hi = is_int(dt) ? 1000 : 3;
    *a = bp_test_random_tensor(dev, dt, sa.ndim, sa.d, seed, lo, hi, va);
    /* divisors away from 0, so that the quotient's rounding stays small */
    *b = op->ref == BP_REF_DIV ? bp_test_random_tensor(dev, dt, sb.ndim, sb.d, seed + 1, 0.5, 3, vb)
                        : bp_test_random_tensor(dev, dt, sb.ndim, sb.d, seed + 1, lo, hi, vb);
}

static const bp_ref_shape binary_cases[][2] = {
    {{3, {3, 5, 7}}, {3, {3, 5, 7}}},
    {{2, {1, 1}}, {2, {1, 1}}},
    {{2, {0, 4}}, {2, {0, 4}}},
    {{2, {33, 65}}, {2, {33, 65}}},
    {{1, {257}}, {1, {257}}},
    {{3, {4, 1, 5}}, {2, {3, 1}}},
    {{3, {2, 3, 4}}, {1, {4}}},
    {{0, {0}}, {2, {3, 2}}},
    {{2, {0, 3}}, {2, {1, 3}}},
    {{2, {5, 1}}, {2, {1, 6}}},
    {{1, {1}}, {3, {2, 1, 3}}},
    {{2, {300, 257}}, {1, {257}}}, /* large enough for the worker pool, broadcast */
    {{2, {300, 257}}, {2, {300, 257}}},
};

static void test_binary_ops(void **state) {
    (void)state;
    uint64_t seed = 100;
    for (size_t o = 0; o < sizeof binops / sizeof *binops; o++) {
        const binop *op = &binops[o];
        const char *name = bp_ref_binary_name(op->ref);
        for (size_t t = 0; t < sizeof arith_dtypes / sizeof *arith_dtypes; t++) {
            bp_dtype dt = arith_dtypes[t];
            if (is_int(dt) && !op->ints)
                continue;
            for (size_t c = 0; c < sizeof binary_cases / sizeof *binary_cases; c++) {
                bp_ref_shape sa = binary_cases[c][0], sb = binary_cases[c][1];
                bp_ref_shape so = bp_ref_broadcast_shape((const bp_ref_shape[]){sa, sb}, 2);
                bp_tensor *a, *b, *out = NULL;
                double *va, *vb;
                random_operands(dt, op, seed++, sa, sb, &a, &va, &b, &vb);
                bp_ref_result want = bp_ref_binary(op->ref, dt, sa, va, sb, vb);
                BP_ASSERT_OK(bp_test_binary(op->ref, a, b, NULL, &out));
                bp_test_assert_shape(out, so);
                bp_test_check_tensor(name, out, want, bp_ref_numel(so));
                /* the _out form into a tensor full of stale values */
                bp_tensor *out2 = bp_test_random_tensor(bp_test_cpu(), dt, so.ndim, so.d, seed++,
                                                        1, 2, NULL);
                BP_ASSERT_OK(bp_test_binary(op->ref, a, b, out2, NULL));
                bp_test_check_tensor(name, out2, want, bp_ref_numel(so));
                bp_tensor_release(out2);
                bp_tensor_release(out);
                bp_tensor_release(a);
                bp_tensor_release(b);
                free(va);
                free(vb);
                bp_ref_free(&want);
            }
        }
    }
}

/* Transposed and narrowed inputs, and a transposed output view. */
static void test_binary_strided(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (size_t o = 0; o < sizeof binops / sizeof *binops; o++) {
        const binop *op = &binops[o];
        const char *name = bp_ref_binary_name(op->ref);
        for (size_t t = 0; t < sizeof arith_dtypes / sizeof *arith_dtypes; t++) {
            bp_dtype dt = arith_dtypes[t];
            if (is_int(dt) && !op->ints)
                continue;
            for (int big = 0; big < 2; big++) {
                int64_t r = big ? 190 : 5, c = big ? 211 : 7;
                bp_ref_shape sbase_a = {2, {c, r}}, sbase_b = {2, {r, c + 3}};
                bp_tensor *base_a, *base_b;
                double *vbase_a, *vbase_b;
                random_operands(dt, op, 7 + big, sbase_a, sbase_b, &base_a, &vbase_a, &base_b,
                                &vbase_b);
                bp_tensor *a, *b; /* a = base_a^T [r, c], b = base_b[:, 2:2+c] */
                BP_ASSERT_OK(bp_tensor_transpose(base_a, 0, 1, &a));
                BP_ASSERT_OK(bp_tensor_narrow(base_b, 1, 2, c, &b));
                assert_false(bp_tensor_is_contiguous(a));
                assert_false(bp_tensor_is_contiguous(b));
                double *va = bp_test_view_values(a, base_a, vbase_a);
                double *vb = bp_test_view_values(b, base_b, vbase_b);
                bp_ref_shape so = {2, {r, c}};
                bp_ref_result want = bp_ref_binary(op->ref, dt, so, va, so, vb);

                bp_tensor *out = NULL;
                BP_ASSERT_OK(bp_test_binary(op->ref, a, b, NULL, &out));
                bp_test_check_tensor(name, out, want, r * c);

                bp_tensor *out_base, *out_t; /* a transposed output */
                BP_ASSERT_OK(bp_tensor_empty(dev, dt, 2, (int64_t[]){c, r}, &out_base));
                BP_ASSERT_OK(bp_tensor_transpose(out_base, 0, 1, &out_t));
                BP_ASSERT_OK(bp_test_binary(op->ref, a, b, out_t, NULL));
                bp_test_check_tensor(name, out_t, want, r * c);

                bp_tensor_release(out_t);
                bp_tensor_release(out_base);
                bp_tensor_release(out);
                bp_tensor_release(a);
                bp_tensor_release(b);
                bp_tensor_release(base_a);
                bp_tensor_release(base_b);
                free(vbase_a);
                free(vbase_b);
                free(va);
                free(vb);
                bp_ref_free(&want);
            }
        }
    }
}

/* out = a (and out = b) exactly, with the other operand broadcast. */
static void test_binary_in_place(void **state) {
    (void)state;
    for (size_t o = 0; o < sizeof binops / sizeof *binops; o++) {
        const binop *op = &binops[o];
        const char *name = bp_ref_binary_name(op->ref);
        for (size_t t = 0; t < sizeof arith_dtypes / sizeof *arith_dtypes; t++) {
            bp_dtype dt = arith_dtypes[t];
            if (is_int(dt) && !op->ints)
                continue;
            for (int into_b = 0; into_b < 2; into_b++) {
                bp_ref_shape sa = {2, {33, 65}}, sb = {1, {65}};
                if (into_b) {
                    sa = (bp_ref_shape){1, {65}};
                    sb = (bp_ref_shape){2, {33, 65}};
                }
                bp_tensor *a, *b;
                double *va, *vb;
                random_operands(dt, op, 40 + o * 10 + t * 2 + (uint64_t)into_b, sa, sb, &a, &va,
                                &b, &vb);
                bp_ref_shape so = {2, {33, 65}};
                bp_ref_result want = bp_ref_binary(op->ref, dt, sa, va, sb, vb);
                bp_tensor *target = into_b ? b : a;
                BP_ASSERT_OK(bp_test_binary(op->ref, a, b, target, NULL));
                bp_test_check_tensor(name, target, want, bp_ref_numel(so));
                bp_tensor_release(a);
                bp_tensor_release(b);
                free(va);
                free(vb);
                bp_ref_free(&want);
            }
        }
    }
}

/* Integer arithmetic is exact, including values beyond float's 24 bits. */
static void test_integer_exact(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    int64_t big[4] = {(int64_t)1 << 53, -((int64_t)1 << 40) - 3, 123456789012345, 7};
    int64_t other[4] = {1, 5, -2, 3};
    bp_tensor *a, *b, *out = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I64, 1, (int64_t[]){4}, big, &a));
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I64, 1, (int64_t[]){4}, other, &b));
    BP_ASSERT_OK(bp_add(a, b, &out));
    int64_t got[4];
    BP_ASSERT_OK(bp_tensor_to_host(out, got, sizeof got));
    for (int i = 0; i < 4; i++)
        assert_int_equal(got[i], big[i] + other[i]);
    bp_tensor_release(out);
    BP_ASSERT_OK(bp_mul(a, b, &out));
    BP_ASSERT_OK(bp_tensor_to_host(out, got, sizeof got));
    for (int i = 0; i < 4; i++)
        assert_int_equal(got[i], big[i] * other[i]);
    bp_tensor_release(out);
    bp_tensor_release(a);
    bp_tensor_release(b);

    int32_t x[3] = {16777217, -2000000000, 46341}, y[3] = {2, 1, 46341};
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I32, 1, (int64_t[]){3}, x, &a));
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I32, 1, (int64_t[]){3}, y, &b));
    BP_ASSERT_OK(bp_sub(a, b, &out));
    int32_t got32[3];
    BP_ASSERT_OK(bp_tensor_to_host(out, got32, sizeof got32));
    assert_int_equal(got32[0], 16777215);
    assert_int_equal(got32[1], -2000000001);
    assert_int_equal(got32[2], 0);
    bp_tensor_release(out);
    bp_tensor_release(a);
    bp_tensor_release(b);
}

/* ---- unary ops ---- */

/* One unary op under test: `alpha` is scale's factor. */
typedef struct unop {
    bp_ref_unary_op op;
    double alpha;
} unop;

static const unop unops[] = {
    {BP_REF_EXP, 0},       {BP_REF_TANH, 0},         {BP_REF_SILU, 0},    {BP_REF_GELU, 0},
    {BP_REF_GELU_TANH, 0}, {BP_REF_SCALE, -0.37}, {BP_REF_SCALE, 3},
};

static const bp_ref_shape unary_cases[] = {
    {3, {3, 5, 7}}, {2, {1, 1}}, {2, {0, 4}}, {2, {33, 65}}, {1, {257}}, {0, {0}},
    {2, {180, 200}}, /* the worker pool */
};

static void test_unary_ops(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 500;
    for (size_t o = 0; o < sizeof unops / sizeof *unops; o++) {
        const unop *op = &unops[o];
        const char *name = bp_ref_unary_name(op->op);
        for (int t = 0; t < 3; t++) {
            bp_dtype dt = bp_test_float_dtypes[t];
            for (size_t c = 0; c < sizeof unary_cases / sizeof *unary_cases; c++) {
                bp_ref_shape s = unary_cases[c];
                int64_t n = bp_ref_numel(s);
                double *va;
                bp_tensor *a = bp_test_random_tensor(dev, dt, s.ndim, s.d, seed++, -4, 4, &va);
                bp_ref_result want = bp_ref_unary(op->op, va, n, op->alpha);
                bp_tensor *out = NULL;
                BP_ASSERT_OK(bp_test_unary(op->op, a, op->alpha, NULL, &out));
                bp_test_assert_shape(out, s);
                bp_test_check_tensor(name, out, want, n);
                BP_ASSERT_OK(bp_test_unary(op->op, a, op->alpha, a, NULL)); /* in place */
                bp_test_check_tensor(name, a, want, n);
                bp_tensor_release(out);
                bp_tensor_release(a);
                free(va);
                bp_ref_free(&want);
            }
            /* a transposed input */
            double *vbase;
            bp_tensor *base = bp_test_random_tensor(dev, dt, 2, (int64_t[]){9, 4}, seed++, -4, 4,
                                                    &vbase);
            bp_tensor *a, *out = NULL;
            BP_ASSERT_OK(bp_tensor_transpose(base, 0, 1, &a));
            double *va = bp_test_view_values(a, base, vbase);
            bp_ref_result want = bp_ref_unary(op->op, va, 36, op->alpha);
            BP_ASSERT_OK(bp_test_unary(op->op, a, op->alpha, NULL, &out));
            bp_test_check_tensor(name, out, want, 36);
            bp_tensor_release(out);
            bp_tensor_release(a);
            bp_tensor_release(base);
            free(vbase);
            free(va);
            bp_ref_free(&want);
        }
    }
}

/* Values where a careless formula loses precision or overflows. */
static void test_unary_extremes(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    float x[6] = {-100, -30, -8, 0, 30, 80};
    double xd[6];
    for (int i = 0; i < 6; i++)
        xd[i] = x[i];
    bp_tensor *a;
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 1, (int64_t[]){6}, x, &a));
    const bp_ref_unary_op extremes[] = {BP_REF_SILU, BP_REF_GELU, BP_REF_TANH};
    for (size_t o = 0; o < sizeof extremes / sizeof *extremes; o++) {
        bp_tensor *out = NULL;
        BP_ASSERT_OK(bp_test_unary(extremes[o], a, 0, NULL, &out));
        bp_ref_result want = bp_ref_unary(extremes[o], xd, 6, 0);
        bp_test_check_tensor(bp_ref_unary_name(extremes[o]), out, want, 6);
        bp_ref_free(&want);
        bp_tensor_release(out);
    }
    bp_tensor_release(a);
}

/* ---- where ---- */

static const bp_ref_shape where_cases[][3] = {
    {{3, {3, 5, 7}}, {3, {3, 5, 7}}, {3, {3, 5, 7}}},
    {{3, {3, 1, 5}}, {2, {4, 1}}, {1, {5}}},
    {{2, {1, 1}}, {0, {0}}, {2, {1, 1}}},
    {{2, {0, 4}}, {1, {4}}, {2, {1, 4}}},
    {{1, {257}}, {1, {1}}, {1, {257}}},
    {{2, {33, 65}}, {2, {33, 1}}, {2, {1, 65}}},
    {{2, {300, 257}}, {2, {300, 257}}, {1, {257}}},
};

static void test_where(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 900;
    for (int t = 0; t < BP_DTYPE_COUNT; t++) {
        bp_dtype dt = bp_test_all_dtypes[t];
        for (size_t c = 0; c < sizeof where_cases / sizeof *where_cases; c++) {
            bp_ref_shape sc = where_cases[c][0], sa = where_cases[c][1], sb = where_cases[c][2];
            bp_ref_shape so = bp_ref_broadcast_shape((const bp_ref_shape[]){sc, sa, sb}, 3);
            double *vc, *va, *vb;
            double lo = dt == BP_DTYPE_U8 ? 1 : -100, hi = 100;
            bp_tensor *cond = bp_test_random_tensor(dev, BP_DTYPE_BOOL, sc.ndim, sc.d, seed++, 0,
                                                    1, &vc);
            bp_tensor *a = bp_test_random_tensor(dev, dt, sa.ndim, sa.d, seed++, lo, hi, &va);
            bp_tensor *b = bp_test_random_tensor(dev, dt, sb.ndim, sb.d, seed++, lo, hi, &vb);
            int64_t n = bp_ref_numel(so);
            bp_ref_result want = bp_ref_where(sc, vc, sa, va, sb, vb);
            bp_tensor *out = NULL;
            BP_ASSERT_OK(bp_where(cond, a, b, &out));
            assert_int_equal(bp_tensor_dtype(out), dt);
            bp_test_assert_shape(out, so);
            bp_test_check_tensor("where", out, want, n);
            if (sa.ndim == so.ndim && bp_ref_numel(sa) == n) { /* in place into a */
                BP_ASSERT_OK(bp_where_out(cond, a, b, a));
                bp_test_check_tensor("where", a, want, n);
            }
            bp_tensor_release(out);
            bp_tensor_release(cond);
            bp_tensor_release(a);
            bp_tensor_release(b);
            free(vc);
            free(va);
            free(vb);
            bp_ref_free(&want);
        }
    }
    /* a transposed cond */
    double *vbase, *va, *vb;
    bp_tensor *base = bp_test_random_tensor(dev, BP_DTYPE_BOOL, 2, (int64_t[]){6, 4}, 3, 0, 1,
                                            &vbase);
    bp_tensor *cond, *out = NULL;
    BP_ASSERT_OK(bp_tensor_transpose(base, 0, 1, &cond));
    bp_tensor *a = bp_test_random_tensor(dev, BP_DTYPE_F16, 2, (int64_t[]){4, 6}, 4, -1, 1, &va);
    bp_tensor *b = bp_test_random_tensor(dev, BP_DTYPE_F16, 2, (int64_t[]){4, 6}, 5, -1, 1, &vb);
    double *vc = bp_test_view_values(cond, base, vbase), want[24];
    for (int i = 0; i < 24; i++)
        want[i] = vc[i] != 0 ? va[i] : vb[i];
    BP_ASSERT_OK(bp_where(cond, a, b, &out));
    bp_test_check_tensor("where", out, bp_ref_exact(want), 24);
    bp_tensor_release(out);
    bp_tensor_release(cond);
    bp_tensor_release(base);
    bp_tensor_release(a);
    bp_tensor_release(b);
    free(vbase);
    free(va);
    free(vb);
    free(vc);
}

/* ---- errors ---- */

static void test_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *a = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 4}, 1, -1, 1, NULL);
    bp_tensor *b5 = bp_test_random_tensor(dev, BP_DTYPE_F32, 1, (int64_t[]){5}, 2, -1, 1, NULL);
    bp_tensor *h = bp_test_random_tensor(dev, BP_DTYPE_F16, 2, (int64_t[]){3, 4}, 3, -1, 1, NULL);
    bp_tensor *d = bp_test_random_tensor(dev, BP_DTYPE_F64, 2, (int64_t[]){3, 4}, 4, -1, 1, NULL);
    bp_tensor *i = bp_test_random_tensor(dev, BP_DTYPE_I32, 2, (int64_t[]){3, 4}, 5, -9, 9, NULL);
    bp_tensor *u8 = bp_test_random_tensor(dev, BP_DTYPE_U8, 2, (int64_t[]){3, 4}, 6, 1, 9, NULL);
    bp_tensor *out = (bp_tensor *)&out; /* must be reset to NULL on failure */

    BP_ASSERT_ERR(bp_add(a, b5, &out), BP_ERR_INVALID_ARGUMENT, "add: shapes [3, 4] and [5]");
    assert_null(out);
    BP_ASSERT_ERR(bp_where(u8, a, a, &out), BP_ERR_INVALID_ARGUMENT,
                  "where: cond has dtype u8, expected bool");
    BP_ASSERT_ERR(bp_mul(a, h, &out), BP_ERR_INVALID_ARGUMENT, "mul: dtype mismatch: f32 and f16");
    BP_ASSERT_ERR(bp_sub(d, d, &out), BP_ERR_INVALID_ARGUMENT,
                  "sub: dtype f64 is not supported (supported: f32, f16, bf16, i32, i64)");
    BP_ASSERT_ERR(bp_div(i, i, &out), BP_ERR_INVALID_ARGUMENT,
                  "div: dtype i32 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_exp(i, &out), BP_ERR_INVALID_ARGUMENT, "exp: dtype i32 is not supported");
    BP_ASSERT_ERR(bp_gelu(d, 1, &out), BP_ERR_INVALID_ARGUMENT, "gelu: dtype f64 is not supported");
    BP_ASSERT_ERR(bp_scale(u8, 2, &out), BP_ERR_INVALID_ARGUMENT,
                  "scale: dtype u8 is not supported");

    bp_tensor *bools = bp_test_random_tensor(dev, BP_DTYPE_BOOL, 2, (int64_t[]){3, 4}, 7, 0, 1,
                                             NULL);
    BP_ASSERT_ERR(bp_where(bools, a, h, &out), BP_ERR_INVALID_ARGUMENT,
                  "where: dtype mismatch: f32 and f16");
    BP_ASSERT_ERR(bp_where(bools, a, b5, &out), BP_ERR_INVALID_ARGUMENT,
                  "where: shapes [3, 4] and [5] do not broadcast");

    /* NULLs */
    BP_ASSERT_ERR(bp_add(NULL, a, &out), BP_ERR_INVALID_ARGUMENT, "add: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_div(a, NULL, &out), BP_ERR_INVALID_ARGUMENT, "div: tensor argument 1 is NULL");
    BP_ASSERT_ERR(bp_add(a, a, NULL), BP_ERR_INVALID_ARGUMENT, "add: the out pointer is NULL");
    BP_ASSERT_ERR(bp_add_out(a, a, NULL), BP_ERR_INVALID_ARGUMENT, "add: out is NULL");
    BP_ASSERT_ERR(bp_tanh(NULL, &out), BP_ERR_INVALID_ARGUMENT, "tanh: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_where(NULL, a, a, &out), BP_ERR_INVALID_ARGUMENT,
                  "where: tensor argument 0 is NULL");

    /* wrong out */
    bp_tensor *o34h = bp_test_random_tensor(dev, BP_DTYPE_F16, 2, (int64_t[]){3, 4}, 8, 1, 2, NULL);
    bp_tensor *o43 = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){4, 3}, 9, 1, 2, NULL);
    BP_ASSERT_ERR(bp_add_out(a, a, o34h), BP_ERR_INVALID_ARGUMENT,
                  "add: out has dtype f16, expected f32");
    BP_ASSERT_ERR(bp_silu_out(a, o43), BP_ERR_INVALID_ARGUMENT,
                  "silu: out has shape [4, 3], expected [3, 4]");
    BP_ASSERT_ERR(bp_where_out(bools, a, a, o34h), BP_ERR_INVALID_ARGUMENT,
                  "where: out has dtype f16, expected f32");

    /* out overlapping an input without being that exact view */
    bp_tensor *wide = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 6}, 10, 1, 2,
                                            NULL);
    bp_tensor *left, *right, *t;
    BP_ASSERT_OK(bp_tensor_narrow(wide, 1, 0, 4, &left));
    BP_ASSERT_OK(bp_tensor_narrow(wide, 1, 2, 4, &right));
    BP_ASSERT_ERR(bp_add_out(left, a, right), BP_ERR_INVALID_ARGUMENT,
                  "add: out overlaps input 0 in memory");
    BP_ASSERT_ERR(bp_exp_out(left, right), BP_ERR_INVALID_ARGUMENT, "exp: out overlaps input 0");
    bp_tensor *sq = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){4, 4}, 11, 1, 2, NULL);
    BP_ASSERT_OK(bp_tensor_transpose(sq, 0, 1, &t)); /* same storage, other layout */
    BP_ASSERT_ERR(bp_mul_out(sq, sq, t), BP_ERR_INVALID_ARGUMENT, "mul: out overlaps input 0");

    bp_tensor *all[] = {a, b5, h, d, i, u8, bools, o34h, o43, wide, left, right, sq, t};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        bp_tensor_release(all[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_ops),
        cmocka_unit_test(test_binary_strided),
        cmocka_unit_test(test_binary_in_place),
        cmocka_unit_test(test_integer_exact),
        cmocka_unit_test(test_unary_ops),
        cmocka_unit_test(test_unary_extremes),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
