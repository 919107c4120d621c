/* matmul on the cpu device against the float64 reference of op_reference.h computed
 * from the rounded inputs, within the error bounds of tolerances.h (g(K) sum |a b|).
 * Covers every float dtype, shapes that are not multiples of the kernels' blocks, zero-
 * size and size-1 dims, transposes, batch broadcasting, non-contiguous inputs and
 * outputs (including strides BLAS cannot take), and every argument error with its
 * message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_check.h"

/* out has shape os and, within the bound of tolerances.h, the values want. */
static void check(const char *what, const bp_tensor *out, bp_ref_shape os, bp_ref_result want) {
    bp_test_assert_shape(out, os);
    bp_test_check_tensor(what, out, want, bp_ref_numel(os));
}

/* a @ b for random a of shape as and b of shape bs, in every float dtype. */
static void run_case(bp_ref_shape as, bp_ref_shape bs, int ta, int tb, uint64_t seed) {
    bp_device *cpu = bp_test_cpu();
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        double *av, *bv;
        bp_tensor *a = bp_test_random_tensor(cpu, dt, as.ndim, as.d, seed, -1, 1, &av);
        bp_tensor *b = bp_test_random_tensor(cpu, dt, bs.ndim, bs.d, seed + 1, -1, 1, &bv);
        bp_ref_shape os = bp_ref_matmul_shape(as, bs, ta, tb);
        bp_ref_result want = bp_ref_matmul(av, as, bv, bs, ta, tb);
        bp_tensor *out = NULL;
        BP_ASSERT_OK(bp_matmul(a, b, ta, tb, &out));
        char what[96];
        snprintf(what, sizeof what, "matmul seed %llu ta %d tb %d", (unsigned long long)seed, ta,
                 tb);
        check(what, out, os, want);
        bp_tensor_release(out);
        bp_tensor_release(a);
        bp_tensor_release(b);
        free(av);
        free(bv);
        bp_ref_free(&want);
    }
}

#define S2(x, y) ((bp_ref_shape){2, {x, y}})
#define S3(x, y, z) ((bp_ref_shape){3, {x, y, z}})
#define S4(w, x, y, z) ((bp_ref_shape){4, {w, x, y, z}})

static void test_shapes(void **state) {
    (void)state;
    run_case(S2(33, 65), S2(65, 17), 0, 0, 1);   /* no dim a multiple of a block */
    run_case(S2(1, 1), S2(1, 1), 0, 0, 2);
    run_case(S2(1, 70), S2(70, 1), 0, 0, 3);     /* a dot product */
    run_case(S2(9, 1), S2(1, 13), 0, 0, 4);      /* an outer product */
    run_case(S2(7, 300), S2(300, 9), 0, 0, 5);   /* K over several panels */
    run_case(S2(70, 130), S2(130, 150), 0, 0, 6); /* several tiles, one big BLAS call */
    run_case(S2(130, 20), S2(20, 260), 0, 0, 7);
}

static void test_zero_size(void **state) {
    (void)state;
    run_case(S2(0, 5), S2(5, 3), 0, 0, 10);
    run_case(S2(4, 5), S2(5, 0), 0, 0, 11);
    run_case(S2(4, 0), S2(0, 3), 0, 0, 12); /* K = 0: zeros */
    run_case(S3(0, 4, 5), S3(0, 5, 3), 0, 0, 13);
    run_case(S3(2, 4, 0), S2(0, 6), 0, 0, 14);
}

static void test_transposes(void **state) {
    (void)state;
    run_case(S2(65, 33), S2(65, 17), 1, 0, 20);
    run_case(S2(33, 65), S2(17, 65), 0, 1, 21);
    run_case(S2(65, 33), S2(17, 65), 1, 1, 22);
    run_case(S3(3, 40, 21), S3(3, 19, 40), 1, 1, 23);
    run_case(S2(1, 9), S2(1, 9), 1, 0, 24);
}

static void test_batched(void **state) {
    (void)state;
    run_case(S3(3, 33, 65), S3(3, 65, 17), 0, 0, 30);
    run_case(S4(2, 1, 5, 6), S3(3, 6, 4), 0, 0, 31);   /* -> [2, 3, 5, 4] */
    run_case(S2(5, 6), S3(4, 6, 7), 0, 0, 32);         /* a shared by every item */
    run_case(S3(4, 5, 6), S2(6, 7), 0, 0, 33);         /* b shared */
    run_case(S3(16, 9, 10), S3(16, 10, 11), 0, 0, 34); /* many small items: in parallel */
    run_case(S3(2, 70, 130), S3(1, 75, 130), 0, 1, 35);
}

/* A random contiguous base tensor and its values. */
static bp_tensor *base_tensor(bp_dtype dt, bp_ref_shape s, uint64_t seed, double **vals) {
    return bp_test_random_tensor(bp_test_cpu(), dt, s.ndim, s.d, seed, -1, 1, vals);
}

/* matmul of views a and b into `out` (NULL: allocate), checked against the reference
 * of their gathered values. */
static void check_views(const char *what, bp_tensor *a, const bp_tensor *abase, const double *abv,
                        bp_tensor *b, const bp_tensor *bbase, const double *bbv, int ta, int tb,
                        bp_tensor *out) {
    double *av = bp_test_view_values(a, abase, abv), *bv = bp_test_view_values(b, bbase, bbv);
    bp_ref_shape as = bp_test_shape_of(a), bs = bp_test_shape_of(b);
    bp_ref_shape os = bp_ref_matmul_shape(as, bs, ta, tb);
    bp_ref_result want = bp_ref_matmul(av, as, bv, bs, ta, tb);
    bp_tensor *res = out;
    if (out)
        BP_ASSERT_OK(bp_matmul_out(a, b, ta, tb, out));
    else
        BP_ASSERT_OK(bp_matmul(a, b, ta, tb, &res));
    check(what, res, os, want);
    if (!out)
        bp_tensor_release(res);
    free(av);
    free(bv);
    bp_ref_free(&want);
}

static void test_strided_inputs(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        double *av, *bv;
        /* Column-major a (a transposed view) and a row-padded b (a narrowed view). */
        bp_tensor *abase = base_tensor(dt, S2(65, 33), 40, &av);
        bp_tensor *bbase = base_tensor(dt, S2(65, 30), 41, &bv);
        bp_tensor *a = NULL, *b = NULL;
        BP_ASSERT_OK(bp_tensor_transpose(abase, 0, 1, &a));
        BP_ASSERT_OK(bp_tensor_narrow(bbase, 1, 5, 17, &b));
        check_views("transposed a, narrowed b", a, abase, av, b, bbase, bv, 0, 0, NULL);
        check_views("transposed a with trans_a", a, abase, av, a, abase, av, 1, 0, NULL);
        bp_tensor_release(a);
        bp_tensor_release(b);
        bp_tensor_release(abase);
        bp_tensor_release(bbase);
        free(av);
        free(bv);

        /* Strides no BLAS layout takes: both matrix dims of a step over elements, and a
         * batch of b whose rows are permuted out of order. */
        abase = base_tensor(dt, S3(33, 65, 2), 42, &av);
        bbase = base_tensor(dt, S3(65, 3, 17), 43, &bv);
        bp_tensor *a3 = NULL;
        BP_ASSERT_OK(bp_tensor_narrow(abase, 2, 1, 1, &a3));
        BP_ASSERT_OK(bp_tensor_reshape(a3, 2, (const int64_t[]){33, 65}, &a));
        assert_int_equal(bp_tensor_stride(a, 0), 130);
        assert_int_equal(bp_tensor_stride(a, 1), 2);
        BP_ASSERT_OK(bp_tensor_permute(bbase, (const int[]){1, 0, 2}, &b)); /* [3, 65, 17] */
        check_views("odd strides a, permuted b", a, abase, av, b, bbase, bv, 0, 0, NULL);
        bp_tensor_release(a3);
        bp_tensor_release(a);
        bp_tensor_release(b);
        bp_tensor_release(abase);
        bp_tensor_release(bbase);
        free(av);
        free(bv);
    }
}

static void test_strided_outputs(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        double *av, *bv;
        bp_tensor *a = base_tensor(dt, S2(33, 65), 50, &av);
        bp_tensor *b = base_tensor(dt, S2(65, 17), 51, &bv);
        /* A column-major out (transposed view), a row-padded out (narrowed view), and
         * out as rows of a bigger tensor. */
        bp_tensor *big = NULL, *out_t = NULL, *out_n = NULL, *wide = NULL;
        BP_ASSERT_OK(bp_tensor_empty(cpu, dt, 2, (const int64_t[]){17, 33}, &big));
        BP_ASSERT_OK(bp_tensor_transpose(big, 0, 1, &out_t));
        check_views("column-major out", a, a, av, b, b, bv, 0, 0, out_t);
        BP_ASSERT_OK(bp_tensor_empty(cpu, dt, 2, (const int64_t[]){33, 40}, &wide));
        BP_ASSERT_OK(bp_tensor_narrow(wide, 1, 3, 17, &out_n));
        check_views("row-padded out", a, a, av, b, b, bv, 0, 0, out_n);
        bp_tensor_release(out_t);
        bp_tensor_release(out_n);
        bp_tensor_release(big);
        bp_tensor_release(wide);
        bp_tensor_release(a);
        bp_tensor_release(b);
        free(av);
        free(bv);
    }
}

static void test_errors(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_tensor *a = base_tensor(BP_DTYPE_F32, S2(3, 4), 60, NULL);
    bp_tensor *b = base_tensor(BP_DTYPE_F32, S2(5, 2), 61, NULL);
    bp_tensor *b4 = base_tensor(BP_DTYPE_F32, S2(4, 2), 62, NULL);
    bp_tensor *h = base_tensor(BP_DTYPE_F16, S2(4, 2), 63, NULL);
    bp_tensor *i32 = base_tensor(BP_DTYPE_I32, S2(4, 4), 64, NULL);
    bp_tensor *vec = base_tensor(BP_DTYPE_F32, (bp_ref_shape){1, {4}}, 65, NULL);
    bp_tensor *ba = base_tensor(BP_DTYPE_F32, S3(2, 3, 4), 66, NULL);
    bp_tensor *bb = base_tensor(BP_DTYPE_F32, S3(3, 4, 5), 67, NULL);
    bp_tensor *out = NULL;

    BP_ASSERT_ERR(bp_matmul(a, b, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: a is [3, 4] but b is [5, 2] (inner dimensions differ)");
    assert_null(out);
    BP_ASSERT_ERR(bp_matmul(a, b4, 1, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: a is [3, 4] but b is [4, 2] (inner dimensions differ: 3 from a "
                  "transposed vs 4 from b)");
    BP_ASSERT_ERR(bp_matmul(ba, bb, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: the batch dims of a [2, 3, 4] and b [3, 4, 5] do not broadcast "
                  "(dim -3: 2 vs 3)");
    BP_ASSERT_ERR(bp_matmul(a, h, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: dtype mismatch: f32 and f16");
    BP_ASSERT_ERR(bp_matmul(i32, i32, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: dtype i32 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_matmul(vec, b4, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: a is [4] (1-D) but matmul takes matrices of at least 2 dims");
    BP_ASSERT_ERR(bp_matmul(b4, vec, 0, 0, &out), BP_ERR_INVALID_ARGUMENT, "b is [4] (1-D)");
    BP_ASSERT_ERR(bp_matmul(NULL, b, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: tensor argument 0 is NULL");
    BP_ASSERT_ERR(bp_matmul(a, NULL, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "matmul: tensor argument 1 is NULL");
    BP_ASSERT_ERR(bp_matmul(a, b4, 0, 0, NULL), BP_ERR_INVALID_ARGUMENT,
                  "matmul: the out pointer is NULL");
    BP_ASSERT_ERR(bp_matmul_out(a, b4, 0, 0, NULL), BP_ERR_INVALID_ARGUMENT, "matmul: out is NULL");

    bp_tensor *wrong = NULL, *wrong_dt = NULL, *good = NULL;
    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_F32, 2, (const int64_t[]){3, 3}, &wrong));
    BP_ASSERT_ERR(bp_matmul_out(a, b4, 0, 0, wrong), BP_ERR_INVALID_ARGUMENT,
                  "matmul: out has shape [3, 3], expected [3, 2]");
    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_BF16, 2, (const int64_t[]){3, 2}, &wrong_dt));
    BP_ASSERT_ERR(bp_matmul_out(a, b4, 0, 0, wrong_dt), BP_ERR_INVALID_ARGUMENT,
                  "matmul: out has dtype bf16, expected f32");
    /* out may not overlap an input, not even as the same view. */
    bp_tensor *sq = base_tensor(BP_DTYPE_F32, S2(4, 4), 68, NULL);
    BP_ASSERT_ERR(bp_matmul_out(sq, sq, 0, 0, sq), BP_ERR_INVALID_ARGUMENT,
                  "matmul: out overlaps input 0");
    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_F32, 2, (const int64_t[]){3, 2}, &good));
    BP_ASSERT_OK(bp_matmul_out(a, b4, 0, 0, good));

    bp_tensor *all[] = {a, b, b4, h, i32, vec, ba, bb, wrong, wrong_dt, good, sq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        bp_tensor_release(all[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_zero_size),
        cmocka_unit_test(test_transposes),
        cmocka_unit_test(test_batched),
        cmocka_unit_test(test_strided_inputs),
        cmocka_unit_test(test_strided_outputs),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
