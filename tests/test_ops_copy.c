/* Ops fill, copy (cast) and cat, bp_tensor_contiguous and bp_tensor_to, on the cpu,
 * against the float64 references of op_reference.h (tolerances.h) for every dtype and
 * dtype pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_check.h"

#define NDTYPES BP_DTYPE_COUNT

/* Shapes every op is tried on: odd, size 1, scalar, empty. */
typedef struct shape_case {
    int ndim;
    int64_t shape[3];
} shape_case;

static const shape_case shapes[] = {
    {3, {3, 5, 7}}, {1, {1}}, {0, {0}}, {2, {0, 4}}, {2, {1, 9}},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static bp_ref_shape shape_of_case(const shape_case *c) {
    bp_ref_shape s = {.ndim = c->ndim};
    for (int d = 0; d < c->ndim; d++)
        s.d[d] = c->shape[d];
    return s;
}

/* A value range that converts without wrapping into both dtypes. */
static void value_range(bp_dtype from, bp_dtype to, double *lo, double *hi) {
    bool unsigned_side = from == BP_DTYPE_U8 || to == BP_DTYPE_U8;
    *lo = unsigned_side ? 0 : -100;
    *hi = 100;
}

/* ---- fill ---- */

static void test_fill_all_dtypes(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    const double fills[] = {3.75, 1, 0, 100.5};
    for (int k = 0; k < NDTYPES; k++) {
        bp_dtype dt = bp_test_all_dtypes[k];
        for (size_t s = 0; s < NSHAPES; s++) {
            for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
                bp_tensor *t = NULL;
                BP_ASSERT_OK(bp_tensor_empty(dev, dt, shapes[s].ndim, shapes[s].shape, &t));
                BP_ASSERT_OK(bp_fill(t, fills[f]));
                int64_t n = bp_tensor_numel(t);
                double *got = bp_test_tensor_values(t);
                bp_ref_result want = bp_ref_fill(n, fills[f], dt);
                bp_test_assert_close("fill", got, want, n, dt);
                free(got);
                bp_ref_free(&want);
                bp_tensor_release(t);
            }
        }
    }
    /* Negative values into signed and float dtypes; NaN stays NaN. */
    const bp_dtype signed_dts[] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16, BP_DTYPE_F64,
                                   BP_DTYPE_I8, BP_DTYPE_I32, BP_DTYPE_I64, BP_DTYPE_BOOL};
    for (size_t k = 0; k < sizeof signed_dts / sizeof signed_dts[0]; k++) {
        bp_tensor *t = NULL;
        BP_ASSERT_OK(bp_tensor_empty(dev, signed_dts[k], 1, (int64_t[]){5}, &t));
        BP_ASSERT_OK(bp_fill(t, -2.75));
        double *got = bp_test_tensor_values(t);
        for (int i = 0; i < 5; i++)
            assert_true(got[i] == bp_ref_round(-2.75, signed_dts[k]));
        free(got);
        bp_tensor_release(t);
    }
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F16, 1, (int64_t[]){3}, &t));
    BP_ASSERT_OK(bp_fill(t, NAN));
    double *got = bp_test_tensor_values(t);
    assert_true(isnan(got[0]) && isnan(got[2]));
    free(got);
    bp_tensor_release(t);
}

static void test_fill_view(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    /* Filling a strided view (a column band of a transposed tensor) changes only it. */
    for (int k = 0; k < NDTYPES; k++) {
        bp_dtype dt = bp_test_all_dtypes[k];
        bp_tensor *t = NULL, *tr = NULL, *v = NULL;
        BP_ASSERT_OK(bp_tensor_empty(dev, dt, 2, (int64_t[]){6, 5}, &t));
        BP_ASSERT_OK(bp_fill(t, 0));
        BP_ASSERT_OK(bp_tensor_transpose(t, 0, 1, &tr));
        BP_ASSERT_OK(bp_tensor_narrow(tr, 1, 2, 3, &v)); /* rows 2..4 of t */
        BP_ASSERT_OK(bp_fill(v, 7));
        double *got = bp_test_tensor_values(t);
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 5; c++)
                assert_true(got[r * 5 + c] == ((r >= 2 && r < 5) ? bp_ref_round(7, dt) : 0));
        free(got);
        bp_tensor_release(v);
        bp_tensor_release(tr);
        bp_tensor_release(t);
    }
}

static void test_fill_errors(void **state) {
    (void)state;
    BP_ASSERT_ERR(bp_fill(NULL, 1), BP_ERR_INVALID_ARGUMENT, "fill: tensor argument 0 is NULL");
}

/* ---- copy and cast ---- */

/* Element i of `want` (row-major over the transposed view [7, 5, 3] of [3, 5, 7]). */
static void transpose_values(const double *src, double *out) {
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 3; k++)
                out[(i * 5 + j) * 3 + k] = src[(k * 5 + j) * 7 + i];
}

static void test_cast_all_pairs(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    uint64_t seed = 1;
    for (int a = 0; a < NDTYPES; a++) {
        for (int b = 0; b < NDTYPES; b++) {
            bp_dtype from = bp_test_all_dtypes[a], to = bp_test_all_dtypes[b];
            double lo, hi;
            value_range(from, to, &lo, &hi);
            for (size_t s = 0; s < NSHAPES; s++) {
                const shape_case *sc = &shapes[s];
                double *vals = NULL;
                bp_tensor *src = bp_test_random_tensor(dev, from, sc->ndim, sc->shape, seed++, lo,
                                                       hi, &vals);
                bp_tensor *out = NULL;
                BP_ASSERT_OK(bp_cast(src, to, &out));
                assert_int_equal(bp_tensor_dtype(out), to);
                assert_true(bp_tensor_is_contiguous(out));
                assert_false(bp_tensor_shares_storage(src, out));
                bp_ref_shape shape = shape_of_case(sc);
                int64_t n = bp_ref_numel(shape);
                bp_ref_result want = bp_ref_copy(vals, shape, shape, to);
                double *got = bp_test_tensor_values(out);
                bp_test_assert_close("cast", got, want, n, to);
                free(got);
                bp_ref_free(&want);
                free(vals);
                bp_tensor_release(out);
                bp_tensor_release(src);
            }
        }
    }
}

static void test_copy_strided_sources(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int a = 0; a < NDTYPES; a++) {
        for (int b = 0; b < NDTYPES; b++) {
            bp_dtype from = bp_test_all_dtypes[a], to = bp_test_all_dtypes[b];
            double lo, hi, *vals = NULL;
            value_range(from, to, &lo, &hi);
            uint64_t seed = (uint64_t)(100 + a * NDTYPES + b);
            bp_tensor *src = bp_test_random_tensor(dev, from, 3, (int64_t[]){3, 5, 7}, seed, lo,
                                                   hi, &vals);
            /* Transposed source. */
            bp_tensor *tr = NULL, *dst = NULL;
            BP_ASSERT_OK(bp_tensor_transpose(src, 0, 2, &tr));
            BP_ASSERT_OK(bp_tensor_empty(dev, to, 3, (int64_t[]){7, 5, 3}, &dst));
            BP_ASSERT_OK(bp_copy(dst, tr));
            double want[105], *got = bp_test_tensor_values(dst);
            transpose_values(vals, want);
            for (int i = 0; i < 105; i++)
                want[i] = bp_ref_round(want[i], to);
            bp_test_assert_close("copy of transposed", got, bp_ref_exact(want), 105, to);
            free(got);
            bp_tensor_release(dst);
            /* Narrowed source: [3, 2, 7] from rows 1..2 of dim 1. */
            bp_tensor *nar = NULL;
            BP_ASSERT_OK(bp_tensor_narrow(src, 1, 1, 2, &nar));
            BP_ASSERT_OK(bp_cast(nar, to, &dst));
            got = bp_test_tensor_values(dst);
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 2; j++)
                    for (int k = 0; k < 7; k++)
                        want[(i * 2 + j) * 7 + k] =
                            bp_ref_round(vals[(i * 5 + j + 1) * 7 + k], to);
            bp_test_assert_close("copy of narrowed", got, bp_ref_exact(want), 42, to);
            free(got);
            bp_tensor_release(dst);
            bp_tensor_release(nar);
            bp_tensor_release(tr);
            bp_tensor_release(src);
            free(vals);
        }
    }
}

static void test_copy_broadcast(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    const shape_case srcs[] = {{2, {3, 1}}, {1, {2}}, {0, {0}}, {1, {1}}, {3, {1, 3, 2}}};
    for (size_t s = 0; s < sizeof srcs / sizeof srcs[0]; s++) {
        const shape_case *sc = &srcs[s];
        double *vals = NULL;
        bp_tensor *src = bp_test_random_tensor(dev, BP_DTYPE_F32, sc->ndim, sc->shape,
                                               (uint64_t)(200 + s), -10, 10, &vals);
        bp_tensor *dst = NULL;
        BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_BF16, 3, (int64_t[]){4, 3, 2}, &dst));
        BP_ASSERT_OK(bp_copy(dst, src));
        double *got = bp_test_tensor_values(dst);
        bp_ref_result want = bp_ref_copy(vals, shape_of_case(sc), (bp_ref_shape){3, {4, 3, 2}},
                                   BP_DTYPE_BF16);
        bp_test_assert_close("broadcast copy", got, want, 24, BP_DTYPE_BF16);
        free(got);
        bp_ref_free(&want);
        free(vals);
        bp_tensor_release(dst);
        bp_tensor_release(src);
    }
}

static void test_copy_into_view(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    /* dst is column 1..2 of a [4, 4] i32 tensor, src a [4, 2] f64 tensor. */
    bp_tensor *base = NULL, *dst = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_I32, 2, (int64_t[]){4, 4}, &base));
    BP_ASSERT_OK(bp_fill(base, -1));
    BP_ASSERT_OK(bp_tensor_narrow(base, 1, 1, 2, &dst));
    double *vals = NULL;
    bp_tensor *src = bp_test_random_tensor(dev, BP_DTYPE_F64, 2, (int64_t[]){4, 2}, 300, -50, 50,
                                           &vals);
    BP_ASSERT_OK(bp_copy(dst, src));
    double *got = bp_test_tensor_values(base);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            assert_true(got[r * 4 + c] ==
                        (c == 1 || c == 2 ? trunc(vals[r * 2 + c - 1]) : -1.0));
    free(got);
    free(vals);
    bp_tensor_release(src);
    bp_tensor_release(dst);
    bp_tensor_release(base);
}

/* Conversions at the edges: rounding ties, overflow, truncation, bool, wide ints. */
static void test_conversion_edges(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *src = NULL, *out = NULL;
    float f32_in[6] = {65520.0f, 1.0f + 0x1p-11f, -3.7f, 0.0f, -0.0f, NAN};
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 1, (int64_t[]){6}, f32_in, &src));
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_F16, &out));
    double *got = bp_test_tensor_values(out);
    assert_true(isinf(got[0]) && got[0] > 0); /* rounds up past the largest half */
    assert_true(got[1] == 1.0);               /* a tie rounds to even */
    assert_true(isnan(got[5]));
    free(got);
    bp_tensor_release(out);
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_I32, &out));
    got = bp_test_tensor_values(out);
    assert_true(got[2] == -3.0 && got[3] == 0.0 && got[5] == 0.0); /* NaN gives 0 */
    free(got);
    bp_tensor_release(out);
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_BOOL, &out));
    got = bp_test_tensor_values(out);
    const double want_bool[6] = {1, 1, 1, 0, 0, 1};
    assert_memory_equal(got, want_bool, sizeof want_bool);
    free(got);
    bp_tensor_release(out);
    bp_tensor_release(src);

    /* i64 keeps all 64 bits through a same-dtype copy; narrower ints wrap; floats
     * round once (2^24 + 2^16 + 1 to bf16 rounds up, not to the even 2^24). */
    int64_t i64_in[3] = {(INT64_C(1) << 62) + 1, (INT64_C(1) << 32) + 5, (1 << 24) + (1 << 16) + 1};
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I64, 1, (int64_t[]){3}, i64_in, &src));
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_I64, &out));
    int64_t i64_out[3];
    BP_ASSERT_OK(bp_tensor_to_host(out, i64_out, sizeof i64_out));
    assert_memory_equal(i64_in, i64_out, sizeof i64_in);
    bp_tensor_release(out);
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_I32, &out));
    int32_t i32_out[3];
    BP_ASSERT_OK(bp_tensor_to_host(out, i32_out, sizeof i32_out));
    assert_int_equal(i32_out[1], 5);
    bp_tensor_release(out);
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_BF16, &out));
    got = bp_test_tensor_values(out);
    assert_true(got[2] == (double)((1 << 24) + (1 << 17)));
    free(got);
    bp_tensor_release(out);
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_F64, &out));
    got = bp_test_tensor_values(out);
    assert_true(got[0] == 0x1p62);
    free(got);
    bp_tensor_release(out);
    bp_tensor_release(src);

    /* f64 to f16 rounds once: 1 + 2^-11 + 2^-40 is just above a tie, so it rounds up. */
    double f64_in[1] = {1.0 + 0x1p-11 + 0x1p-40};
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F64, 1, (int64_t[]){1}, f64_in, &src));
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_F16, &out));
    got = bp_test_tensor_values(out);
    assert_true(got[0] == 1.0 + 0x1p-10);
    free(got);
    bp_tensor_release(out);
    bp_tensor_release(src);
}

/* Sizes above the parallel grain, strided and contiguous. */
static void test_copy_large(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    double *vals = NULL;
    bp_tensor *src = bp_test_random_tensor(dev, BP_DTYPE_F32, 2, (int64_t[]){300, 517}, 400, -4,
                                           4, &vals);
    bp_tensor *tr = NULL, *h = NULL, *same = NULL;
    BP_ASSERT_OK(bp_tensor_transpose(src, 0, 1, &tr));
    BP_ASSERT_OK(bp_cast(tr, BP_DTYPE_F16, &h));
    double *got = bp_test_tensor_values(h), *want = malloc(300 * 517 * sizeof *want);
    for (int i = 0; i < 517; i++)
        for (int j = 0; j < 300; j++)
            want[i * 300 + j] = bp_ref_round(vals[j * 517 + i], BP_DTYPE_F16);
    bp_test_assert_close("large transposed cast", got, bp_ref_exact(want), 300 * 517, BP_DTYPE_F16);
    free(got);
    BP_ASSERT_OK(bp_cast(src, BP_DTYPE_F32, &same)); /* contiguous same-dtype: memcpy */
    got = bp_test_tensor_values(same);
    assert_memory_equal(got, vals, 300 * 517 * sizeof *got);
    free(got);
    BP_ASSERT_OK(bp_fill(tr, 2.5)); /* strided fill of all of src */
    got = bp_test_tensor_values(src);
    for (int i = 0; i < 300 * 517; i++)
        assert_true(got[i] == 2.5);
    free(got);
    free(want);
    free(vals);
    bp_tensor_release(same);
    bp_tensor_release(h);
    bp_tensor_release(tr);
    bp_tensor_release(src);
}

static void test_copy_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *a = NULL, *b = NULL, *v = NULL, *w = NULL, *out = (bp_tensor *)1;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){4, 3}, &a));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){2, 3}, &b));
    BP_ASSERT_ERR(bp_copy(a, b), BP_ERR_INVALID_ARGUMENT,
                  "copy: src of shape [2, 3] does not broadcast to dst shape [4, 3]");
    BP_ASSERT_ERR(bp_copy(b, a), BP_ERR_INVALID_ARGUMENT, "does not broadcast");
    BP_ASSERT_ERR(bp_copy(NULL, a), BP_ERR_INVALID_ARGUMENT, "copy: dst is NULL");
    BP_ASSERT_ERR(bp_copy(a, NULL), BP_ERR_INVALID_ARGUMENT, "copy: src is NULL");
    /* Overlap: rows 0..1 into rows 1..2 of the same tensor is refused; the same view
     * onto itself is allowed (nothing to do). */
    BP_ASSERT_OK(bp_tensor_narrow(a, 0, 0, 2, &v));
    BP_ASSERT_OK(bp_tensor_narrow(a, 0, 1, 2, &w));
    BP_ASSERT_ERR(bp_copy(w, v), BP_ERR_INVALID_ARGUMENT, "copy: out overlaps input 0");
    BP_ASSERT_OK(bp_copy(v, v));
    BP_ASSERT_OK(bp_copy(a, a));
    /* Zero-size copies succeed. */
    bp_tensor *e = NULL, *f = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_I8, 2, (int64_t[]){0, 4}, &e));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F16, 2, (int64_t[]){0, 4}, &f));
    BP_ASSERT_OK(bp_copy(f, e));
    bp_tensor_release(e);
    bp_tensor_release(f);

    BP_ASSERT_ERR(bp_cast(a, (bp_dtype)99, &out), BP_ERR_INVALID_ARGUMENT,
                  "cast: invalid dtype 99");
    assert_null(out);
    BP_ASSERT_ERR(bp_cast(NULL, BP_DTYPE_F32, &out), BP_ERR_INVALID_ARGUMENT, "cast: src is NULL");
    BP_ASSERT_ERR(bp_cast(a, BP_DTYPE_F32, NULL), BP_ERR_INVALID_ARGUMENT, "cast: out is NULL");
    bp_tensor_release(v);
    bp_tensor_release(w);
    bp_tensor_release(a);
    bp_tensor_release(b);
}

/* ---- contiguous and to ---- */

static void test_contiguous(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    double *vals = NULL;
    bp_tensor *t = bp_test_random_tensor(dev, BP_DTYPE_I32, 2, (int64_t[]){5, 3}, 500, -9,
                                         9, &vals);
    bp_tensor *c = NULL, *tr = NULL;
    BP_ASSERT_OK(bp_tensor_contiguous(t, &c));
    assert_ptr_equal(c, t); /* already contiguous: the same tensor, retained */
    bp_tensor_release(c);
    BP_ASSERT_OK(bp_tensor_transpose(t, 0, 1, &tr));
    BP_ASSERT_OK(bp_tensor_contiguous(tr, &c));
    assert_true(c != tr);
    assert_false(bp_tensor_shares_storage(c, t));
    assert_true(bp_tensor_is_contiguous(c));
    assert_int_equal(bp_tensor_dtype(c), BP_DTYPE_I32);
    double *got = bp_test_tensor_values(c);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            assert_true(got[i * 5 + j] == vals[j * 3 + i]);
    free(got);
    free(vals);
    bp_tensor_release(c);
    BP_ASSERT_ERR(bp_tensor_contiguous(NULL, &c), BP_ERR_INVALID_ARGUMENT, "tensor is NULL");
    assert_null(c);
    BP_ASSERT_ERR(bp_tensor_contiguous(t, NULL), BP_ERR_INVALID_ARGUMENT, "out_tensor is NULL");
    bp_tensor_release(tr);
    bp_tensor_release(t);
}

static void test_tensor_to_cpu(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    for (int a = 0; a < NDTYPES; a++) {
        for (int b = 0; b < NDTYPES; b++) {
            bp_dtype from = bp_test_all_dtypes[a], to = bp_test_all_dtypes[b];
            double lo, hi, *vals = NULL;
            value_range(from, to, &lo, &hi);
            bp_tensor *src = bp_test_random_tensor(dev, from, 2, (int64_t[]){4, 6},
                                                   (uint64_t)(600 + a * NDTYPES + b), lo, hi,
                                                   &vals);
            bp_tensor *tr = NULL, *out = NULL;
            BP_ASSERT_OK(bp_tensor_transpose(src, 0, 1, &tr));
            BP_ASSERT_OK(bp_tensor_to(tr, dev, to, &out));
            assert_int_equal(bp_tensor_dtype(out), to);
            assert_ptr_equal(bp_tensor_device(out), dev);
            assert_true(bp_tensor_is_contiguous(out));
            assert_false(bp_tensor_shares_storage(out, src)); /* always a copy */
            double want[24], *got = bp_test_tensor_values(out);
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 4; j++)
                    want[i * 4 + j] = bp_ref_round(vals[j * 6 + i], to);
            bp_test_assert_close("bp_tensor_to", got, bp_ref_exact(want), 24, to);
            free(got);
            free(vals);
            bp_tensor_release(out);
            bp_tensor_release(tr);
            bp_tensor_release(src);
        }
    }
    bp_tensor *t = NULL, *out = (bp_tensor *)1;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 1, (int64_t[]){2}, &t));
    BP_ASSERT_ERR(bp_tensor_to(t, NULL, BP_DTYPE_F32, &out), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_to: device is NULL");
    assert_null(out);
    BP_ASSERT_ERR(bp_tensor_to(NULL, dev, BP_DTYPE_F32, &out), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_to: tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_to(t, dev, (bp_dtype)-1, &out), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_to: invalid dtype -1");
    BP_ASSERT_ERR(bp_tensor_to(t, dev, BP_DTYPE_F32, NULL), BP_ERR_INVALID_ARGUMENT,
                  "out_tensor is NULL");
    bp_tensor_release(t);
}

/* Across devices, in a child with the testdev plugin (two devices with peer copy
 * and no kernels of their own): staged cpu <-> testdev copies, a peer copy, and
 * conversion on whichever side has a copy kernel. */
static void child_tensor_to_devices(void *arg) {
    (void)arg;
    bp_device *cpu = NULL, *t0 = NULL, *t1 = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    CHILD_CHECK(bp_device_open("testdev:0", &t0) == BP_OK);
    CHILD_CHECK(bp_device_open("tdev:1", &t1) == BP_OK);
    float in[15];
    for (int i = 0; i < 15; i++)
        in[i] = (float)i * 1.3f - 7.1f;
    bp_tensor *src = NULL, *tr = NULL, *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    CHILD_CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 2, (int64_t[]){3, 5}, in, &src) == BP_OK);
    CHILD_CHECK(bp_tensor_transpose(src, 0, 1, &tr) == BP_OK);
    /* cpu (strided) -> testdev:0 -> tdev:1 (peer) -> cpu as i32 (converted on the cpu). */
    CHILD_CHECK(bp_tensor_to(tr, t0, BP_DTYPE_F32, &a) == BP_OK);
    CHILD_CHECK(bp_tensor_device(a) == t0 && bp_tensor_is_contiguous(a));
    CHILD_CHECK(bp_tensor_to(a, t1, BP_DTYPE_F32, &b) == BP_OK);
    CHILD_CHECK(bp_tensor_device(b) == t1);
    CHILD_CHECK(bp_tensor_to(b, cpu, BP_DTYPE_I32, &c) == BP_OK);
    int32_t got_i[15];
    CHILD_CHECK(bp_tensor_to_host(c, got_i, sizeof got_i) == BP_OK);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            CHILD_CHECK(got_i[i * 3 + j] == (int32_t)in[j * 5 + i]);
    /* cpu -> testdev:0 as bf16: testdev has no copy kernel, so the cpu converts first. */
    CHILD_CHECK(bp_tensor_to(src, t0, BP_DTYPE_BF16, &d) == BP_OK);
    CHILD_CHECK(bp_tensor_dtype(d) == BP_DTYPE_BF16 && bp_tensor_device(d) == t0);
    uint16_t got_h[15];
    CHILD_CHECK(bp_tensor_to_host(d, got_h, sizeof got_h) == BP_OK);
    for (int i = 0; i < 15; i++) {
        uint32_t bits = (uint32_t)got_h[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        CHILD_CHECK(f == (float)bp_ref_round(in[i], BP_DTYPE_BF16));
    }
    bp_tensor *back = NULL;
    CHILD_CHECK(bp_tensor_to(d, cpu, BP_DTYPE_F64, &back) == BP_OK);
    double got_d[15];
    CHILD_CHECK(bp_tensor_to_host(back, got_d, sizeof got_d) == BP_OK);
    for (int i = 0; i < 15; i++)
        CHILD_CHECK(got_d[i] == bp_ref_round(in[i], BP_DTYPE_BF16));
    bp_tensor_release(back);
    /* A same-dtype duplicate on a device without kernels is a byte copy. */
    bp_tensor *dup = NULL;
    CHILD_CHECK(bp_tensor_to(a, t0, BP_DTYPE_F32, &dup) == BP_OK);
    CHILD_CHECK(!bp_tensor_shares_storage(dup, a));
    float got_f[15];
    CHILD_CHECK(bp_tensor_to_host(dup, got_f, sizeof got_f) == BP_OK);
    CHILD_CHECK(got_f[1] == in[5]);
    bp_tensor_release(dup);
    /* Neither testdev has a copy kernel: converting between them is unsupported. */
    CHILD_CHECK(bp_tensor_to(a, t1, BP_DTYPE_F16, &dup) == BP_ERR_UNSUPPORTED);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "bp_tensor_to: no kernel for op 'copy'"));
    CHILD_CHECK(dup == NULL);
    bp_tensor_release(d);
    bp_tensor_release(c);
    bp_tensor_release(b);
    bp_tensor_release(a);
    bp_tensor_release(tr);
    bp_tensor_release(src);
}

static void test_tensor_to_devices(void **state) {
    (void)state;
    const char *const env[] = {"BP_PLUGIN_PATH=" BP_TEST_PLUGIN_DIR "/good", "BP_CPU_FALLBACK=",
                               NULL};
    assert_int_equal(bp_test_run_child(child_tensor_to_devices, NULL, env), 0);
}

/* ---- cat ---- */

/* Checks bp_cat of `n` random parts (shapes[i]) along `dim` against a reference. */
static void check_cat(bp_dtype dt, int n, int ndim, const int64_t (*part_shapes)[3], int dim,
                      bool transpose_first) {
    bp_device *dev = bp_test_cpu();
    bp_tensor *parts[4] = {NULL}, *made[4] = {NULL};
    double *vals[4];
    bp_ref_shape part_refs[4];
    for (int i = 0; i < n; i++) {
        part_refs[i] = (bp_ref_shape){.ndim = ndim};
        memcpy(part_refs[i].d, part_shapes[i], (size_t)ndim * sizeof *part_shapes[i]);
        made[i] = bp_test_random_tensor(dev, dt, ndim, part_shapes[i], (uint64_t)(700 + i),
                                        dt == BP_DTYPE_U8 ? 0 : -50, 50, &vals[i]);
        parts[i] = bp_tensor_retain(made[i]);
    }
    if (transpose_first) {
        /* Part 0 is given as the transpose of a contiguous [s1, s0, s2] tensor. */
        int64_t tshape[3];
        memcpy(tshape, part_shapes[0], sizeof tshape);
        tshape[0] = part_shapes[0][1];
        tshape[1] = part_shapes[0][0];
        free(vals[0]);
        bp_tensor_release(parts[0]);
        bp_tensor_release(made[0]);
        made[0] = bp_test_random_tensor(dev, dt, ndim, tshape, 799, 0, 50, NULL);
        BP_ASSERT_OK(bp_tensor_transpose(made[0], 0, 1, &parts[0]));
        vals[0] = bp_test_tensor_values(parts[0]); /* its row-major values */
    }
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_cat(parts, n, dim, &out));
    bp_ref_shape out_shape = bp_ref_cat_shape(part_refs, n, dim);
    bp_test_assert_shape(out, out_shape);
    bp_ref_result want = bp_ref_cat((const double *const *)vals, part_refs, n, dim);
    double *got = bp_test_tensor_values(out);
    bp_test_assert_close("cat", got, want, bp_ref_numel(out_shape), dt);
    free(got);
    bp_ref_free(&want);
    for (int i = 0; i < n; i++) {
        free(vals[i]);
        bp_tensor_release(parts[i]);
        bp_tensor_release(made[i]);
    }
    bp_tensor_release(out);
}

static void test_cat(void **state) {
    (void)state;
    const int64_t dim0[3][3] = {{2, 5, 7}, {1, 5, 7}, {3, 5, 7}};
    const int64_t dim1[3][3] = {{3, 2, 7}, {3, 0, 7}, {3, 4, 7}};
    const int64_t dim2[3][3] = {{3, 5, 1}, {3, 5, 6}, {3, 5, 2}};
    for (int k = 0; k < NDTYPES; k++) {
        bp_dtype dt = bp_test_all_dtypes[k];
        check_cat(dt, 3, 3, dim0, 0, false);
        check_cat(dt, 3, 3, dim1, 1, false);
        check_cat(dt, 3, 3, dim2, -1, false);
        check_cat(dt, 3, 3, dim2, 2, true);
        check_cat(dt, 1, 3, dim0, 0, false);
    }
    const int64_t one_d[2][3] = {{0}, {5}};
    check_cat(BP_DTYPE_F32, 2, 1, one_d, 0, false);
}

static void test_cat_out_and_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *a = NULL, *b = NULL, *c = NULL, *i = NULL, *s = NULL, *out = (bp_tensor *)1;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 5}, &a));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){2, 4}, &b));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 2}, &c));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_I32, 2, (int64_t[]){3, 5}, &i));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 0, NULL, &s));
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){a, b}, 2, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "cat: tensor 1 has shape [2, 4] but tensor 0 has [3, 5] (all dims but dim 0 "
                  "must match)");
    assert_null(out);
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){a, i}, 2, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "cat: dtype mismatch: f32 and i32");
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){a, c}, 2, 2, &out), BP_ERR_INVALID_ARGUMENT,
                  "cat: dim 2 is out of range for a tensor of 2 dims");
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){a}, 0, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "cat: needs at least one tensor, got 0");
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){a, NULL}, 2, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "cat: tensor argument 1 is NULL");
    BP_ASSERT_ERR(bp_cat(NULL, 1, 0, &out), BP_ERR_INVALID_ARGUMENT, "cat: tensors is NULL");
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){s, s}, 2, 0, &out), BP_ERR_INVALID_ARGUMENT,
                  "cat: tensor 0 is a scalar");
    BP_ASSERT_ERR(bp_cat((bp_tensor *[]){a}, 1, 0, NULL), BP_ERR_INVALID_ARGUMENT,
                  "cat: out is NULL");

    /* cat_out into a view of a bigger tensor; a wrong out shape or an overlap fails. */
    bp_tensor *big = NULL, *view = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){3, 9}, &big));
    BP_ASSERT_OK(bp_fill(big, -1));
    BP_ASSERT_OK(bp_fill(a, 1));
    BP_ASSERT_OK(bp_fill(c, 2));
    BP_ASSERT_OK(bp_tensor_narrow(big, 1, 1, 7, &view));
    BP_ASSERT_OK(bp_cat_out((bp_tensor *[]){a, c}, 2, -1, view));
    double *got = bp_test_tensor_values(big);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 9; k++)
            assert_true(got[r * 9 + k] == (k == 0 || k == 8 ? -1 : k <= 5 ? 1 : 2));
    free(got);
    BP_ASSERT_ERR(bp_cat_out((bp_tensor *[]){a, c}, 2, 0, view), BP_ERR_INVALID_ARGUMENT,
                  "tensor 1 has shape [3, 2] but tensor 0 has [3, 5]");
    BP_ASSERT_ERR(bp_cat_out((bp_tensor *[]){a, a}, 2, 1, view), BP_ERR_INVALID_ARGUMENT,
                  "cat: out has shape [3, 7], expected [3, 10]");
    bp_tensor *left = NULL;
    BP_ASSERT_OK(bp_tensor_narrow(big, 1, 0, 5, &left));
    BP_ASSERT_ERR(bp_cat_out((bp_tensor *[]){left, c}, 2, 1, view), BP_ERR_INVALID_ARGUMENT,
                  "cat: out overlaps input 0");
    BP_ASSERT_ERR(bp_cat_out((bp_tensor *[]){a, c}, 2, 1, NULL), BP_ERR_INVALID_ARGUMENT,
                  "cat: out is NULL");
    bp_tensor_release(left);
    bp_tensor_release(view);
    bp_tensor_release(big);
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(c);
    bp_tensor_release(i);
    bp_tensor_release(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* First: the child must fork before this process opens any device. */
        cmocka_unit_test(test_tensor_to_devices),
        cmocka_unit_test(test_fill_all_dtypes),
        cmocka_unit_test(test_fill_view),
        cmocka_unit_test(test_fill_errors),
        cmocka_unit_test(test_cast_all_pairs),
        cmocka_unit_test(test_copy_strided_sources),
        cmocka_unit_test(test_copy_broadcast),
        cmocka_unit_test(test_copy_into_view),
        cmocka_unit_test(test_conversion_edges),
        cmocka_unit_test(test_copy_large),
        cmocka_unit_test(test_copy_errors),
        cmocka_unit_test(test_contiguous),
        cmocka_unit_test(test_tensor_to_cpu),
        cmocka_unit_test(test_cat),
        cmocka_unit_test(test_cat_out_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
