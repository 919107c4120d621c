/* Tensors: creation, accessors, views (narrow, split, transpose, permute, unsqueeze,
 * reshape), storage sharing and reference counting, and every error path, on the
 * built-in cpu device through the public API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* A contiguous f32 tensor holding 0, 1, 2, ... */
static bp_tensor *arange(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)i;
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(bp_test_cpu(), BP_DTYPE_F32, ndim, shape, v, &t));
    free(v);
    return t;
}

/* The f32 tensor's values in row-major order (malloc'ed). */
static float *values(const bp_tensor *t) {
    int64_t n = bp_tensor_numel(t);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    BP_ASSERT_OK(bp_tensor_to_host(t, v, (size_t)n * sizeof *v));
    return v;
}

static void assert_layout(const bp_tensor *t, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset) {
    assert_int_equal(bp_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++) {
        assert_int_equal(bp_tensor_size(t, d), shape[d]);
        assert_int_equal(bp_tensor_stride(t, d), strides[d]);
    }
    assert_int_equal(bp_tensor_storage_offset(t), offset);
}

static uint64_t allocated_bytes(void) {
    bp_memory_stats s = {.struct_size = sizeof s};
    BP_ASSERT_OK(bp_memory_get_stats(bp_test_cpu(), &s));
    return s.allocated_bytes;
}

/* ---- creation and accessors ---- */

static void test_empty_layout(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_BF16, 3, (int64_t[]){2, 3, 4}, &t));
    assert_layout(t, 3, (int64_t[]){2, 3, 4}, (int64_t[]){12, 4, 1}, 0);
    assert_int_equal(bp_tensor_dtype(t), BP_DTYPE_BF16);
    assert_int_equal(bp_tensor_numel(t), 24);
    assert_ptr_equal(bp_tensor_device(t), dev);
    assert_non_null(bp_tensor_data(t));
    assert_true(bp_tensor_is_contiguous(t));
    assert_int_equal(bp_tensor_shape(t)[1], 3);
    /* Negative dims count from the end; out-of-range dims read as 0. */
    assert_int_equal(bp_tensor_size(t, -1), 4);
    assert_int_equal(bp_tensor_stride(t, -3), 12);
    assert_int_equal(bp_tensor_size(t, 3), 0);
    assert_int_equal(bp_tensor_size(t, -4), 0);
    assert_int_equal(bp_tensor_stride(t, 7), 0);
    bp_tensor_release(t);

    /* A scalar has one element; a zero-size tensor has no data and is contiguous. */
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_I64, 0, NULL, &t));
    assert_int_equal(bp_tensor_ndim(t), 0);
    assert_int_equal(bp_tensor_numel(t), 1);
    assert_non_null(bp_tensor_data(t));
    assert_true(bp_tensor_is_contiguous(t));
    bp_tensor_release(t);
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){0, 4}, &t));
    assert_layout(t, 2, (int64_t[]){0, 4}, (int64_t[]){4, 1}, 0);
    assert_int_equal(bp_tensor_numel(t), 0);
    assert_null(bp_tensor_data(t));
    assert_true(bp_tensor_is_contiguous(t));
    bp_tensor_release(t);
    /* Size-1 dims get the stride of the dims after them, as in PyTorch. */
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_U8, 3, (int64_t[]){3, 1, 5}, &t));
    assert_layout(t, 3, (int64_t[]){3, 1, 5}, (int64_t[]){5, 5, 1}, 0);
    bp_tensor_release(t);
}

static void test_accessors_null(void **state) {
    (void)state;
    assert_int_equal(bp_tensor_ndim(NULL), 0);
    assert_int_equal(bp_tensor_size(NULL, 0), 0);
    assert_int_equal(bp_tensor_stride(NULL, 0), 0);
    assert_null(bp_tensor_shape(NULL));
    assert_int_equal(bp_tensor_numel(NULL), 0);
    assert_int_equal(bp_tensor_storage_offset(NULL), 0);
    assert_null(bp_tensor_device(NULL));
    assert_null(bp_tensor_data(NULL));
    assert_false(bp_tensor_is_contiguous(NULL));
    assert_false(bp_tensor_shares_storage(NULL, NULL));
    assert_null(bp_tensor_retain(NULL));
    bp_tensor_release(NULL);
}

static void test_empty_errors(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_tensor *t = (bp_tensor *)1;
    int64_t shape[2] = {2, 3};
    BP_ASSERT_ERR(bp_tensor_empty(NULL, BP_DTYPE_F32, 2, shape, &t), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_empty: device is NULL");
    assert_null(t);
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 2, shape, NULL), BP_ERR_INVALID_ARGUMENT,
                  "out_tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_empty(dev, (bp_dtype)42, 2, shape, &t), BP_ERR_INVALID_ARGUMENT,
                  "invalid dtype 42");
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 9, shape, &t), BP_ERR_INVALID_ARGUMENT,
                  "ndim 9 is out of range (0 to 8)");
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, -1, shape, &t), BP_ERR_INVALID_ARGUMENT,
                  "ndim -1");
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 2, NULL, &t), BP_ERR_INVALID_ARGUMENT,
                  "shape is NULL for ndim 2");
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 2, (int64_t[]){2, -3}, &t),
                  BP_ERR_INVALID_ARGUMENT, "dim 1 of shape [2, -3] is negative (-3)");
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 3, (int64_t[]){1LL << 40, 1LL << 40, 1 << 20},
                                  &t),
                  BP_ERR_INVALID_ARGUMENT, "overflows 64 bits");
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F64, 1, (int64_t[]){1LL << 62}, &t),
                  BP_ERR_INVALID_ARGUMENT,
                  "f64 tensor of shape [4611686018427387904] is too large");
    /* Out of memory: under a device limit. */
    BP_ASSERT_OK(bp_memory_set_limit(dev, 1 << 20));
    BP_ASSERT_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 1, (int64_t[]){1 << 20}, &t),
                  BP_ERR_OUT_OF_MEMORY, "limit");
    assert_null(t);
    BP_ASSERT_OK(bp_memory_set_limit(dev, 0));
}

static void test_host_round_trip(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    int32_t in[6] = {1, -2, 3, -4, 5, -6}, out[6] = {0};
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I32, 2, (int64_t[]){2, 3}, in, &t));
    BP_ASSERT_OK(bp_tensor_to_host(t, out, sizeof out));
    assert_memory_equal(in, out, sizeof in);
    /* A larger buffer is fine; a smaller one is an error naming both sizes. */
    int32_t big[8];
    BP_ASSERT_OK(bp_tensor_to_host(t, big, sizeof big));
    BP_ASSERT_ERR(bp_tensor_to_host(t, out, 8), BP_ERR_INVALID_ARGUMENT,
                  "host buffer has 8 bytes, the tensor needs 24 (6 i32 elements)");
    BP_ASSERT_ERR(bp_tensor_to_host(t, NULL, 24), BP_ERR_INVALID_ARGUMENT, "host_data is NULL");
    BP_ASSERT_ERR(bp_tensor_to_host(NULL, out, 24), BP_ERR_INVALID_ARGUMENT, "tensor is NULL");
    bp_tensor_release(t);

    BP_ASSERT_ERR(bp_tensor_from_host(dev, BP_DTYPE_I32, 1, (int64_t[]){2}, NULL, &t),
                  BP_ERR_INVALID_ARGUMENT, "bp_tensor_from_host: host_data is NULL");
    assert_null(t);
    BP_ASSERT_ERR(bp_tensor_from_host(dev, BP_DTYPE_I32, 1, (int64_t[]){2}, in, NULL),
                  BP_ERR_INVALID_ARGUMENT, "out_tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_from_host(dev, BP_DTYPE_I32, 1, (int64_t[]){-1}, in, &t),
                  BP_ERR_INVALID_ARGUMENT, "bp_tensor_from_host: bp_tensor_empty: dim 0");
    /* No elements: no data needed either way. */
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_I32, 2, (int64_t[]){0, 3}, NULL, &t));
    BP_ASSERT_OK(bp_tensor_to_host(t, NULL, 0));
    bp_tensor_release(t);
}

/* ---- views ---- */

static void test_narrow(void **state) {
    (void)state;
    bp_tensor *t = arange(2, (int64_t[]){4, 6}), *v = NULL, *w = NULL;
    BP_ASSERT_OK(bp_tensor_narrow(t, 1, 2, 3, &v));
    assert_layout(v, 2, (int64_t[]){4, 3}, (int64_t[]){6, 1}, 2);
    assert_true(bp_tensor_shares_storage(t, v));
    assert_false(bp_tensor_is_contiguous(v));
    assert_ptr_equal(bp_tensor_data(v), (float *)bp_tensor_data(t) + 2);
    float *got = values(v);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++)
            assert_true(got[r * 3 + c] == (float)(r * 6 + c + 2));
    free(got);
    /* A narrow of a narrow adds the offsets; a negative start counts from the end. */
    BP_ASSERT_OK(bp_tensor_narrow(v, -1, -3, 2, &w));
    assert_layout(w, 2, (int64_t[]){4, 2}, (int64_t[]){6, 1}, 2);
    bp_tensor_release(w);
    BP_ASSERT_OK(bp_tensor_narrow(v, 0, 1, 2, &w));
    assert_layout(w, 2, (int64_t[]){2, 3}, (int64_t[]){6, 1}, 8);
    bp_tensor_release(w);
    /* Empty narrows at either end. */
    BP_ASSERT_OK(bp_tensor_narrow(t, 0, 4, 0, &w));
    assert_int_equal(bp_tensor_numel(w), 0);
    assert_null(bp_tensor_data(w));
    bp_tensor_release(w);

    BP_ASSERT_ERR(bp_tensor_narrow(t, 2, 0, 1, &w), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_narrow: dim 2 is out of range for a tensor of 2 dims "
                  "(expected -2 to 1)");
    assert_null(w);
    BP_ASSERT_ERR(bp_tensor_narrow(t, 1, 7, 0, &w), BP_ERR_INVALID_ARGUMENT,
                  "start 7 is out of range for dim 1 of size 6 (expected -6 to 6)");
    BP_ASSERT_ERR(bp_tensor_narrow(t, 1, 4, 3, &w), BP_ERR_INVALID_ARGUMENT,
                  "start 4 + length 3 exceeds size 6 of dim 1");
    BP_ASSERT_ERR(bp_tensor_narrow(t, 1, 0, -1, &w), BP_ERR_INVALID_ARGUMENT,
                  "start 0 + length -1 exceeds size 6 of dim 1");
    BP_ASSERT_ERR(bp_tensor_narrow(NULL, 0, 0, 1, &w), BP_ERR_INVALID_ARGUMENT, "tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_narrow(t, 0, 0, 1, NULL), BP_ERR_INVALID_ARGUMENT, "out_view is NULL");
    bp_tensor *s = arange(0, NULL);
    BP_ASSERT_ERR(bp_tensor_narrow(s, 0, 0, 1, &w), BP_ERR_INVALID_ARGUMENT,
                  "dim 0 given but the tensor has 0 dims");
    bp_tensor_release(s);
    bp_tensor_release(v);
    bp_tensor_release(t);
}

static void test_split(void **state) {
    (void)state;
    bp_tensor *t = arange(2, (int64_t[]){10, 2}), *parts[4];
    /* 10 into 3: the first 10 % 3 sections get one more (4, 3, 3). */
    BP_ASSERT_OK(bp_tensor_split(t, 3, 0, parts));
    const int64_t sizes[3] = {4, 3, 3}, offsets[3] = {0, 8, 14};
    for (int i = 0; i < 3; i++) {
        assert_layout(parts[i], 2, (int64_t[]){sizes[i], 2}, (int64_t[]){2, 1}, offsets[i]);
        assert_true(bp_tensor_shares_storage(t, parts[i]));
        bp_tensor_release(parts[i]);
    }
    /* More sections than elements: empty views at the end. */
    BP_ASSERT_OK(bp_tensor_split(t, 4, -1, parts));
    const int64_t sizes2[4] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(bp_tensor_size(parts[i], 1), sizes2[i]);
        assert_int_equal(bp_tensor_size(parts[i], 0), 10);
        bp_tensor_release(parts[i]);
    }
    /* One section is the whole tensor. */
    BP_ASSERT_OK(bp_tensor_split(t, 1, 1, parts));
    assert_layout(parts[0], 2, (int64_t[]){10, 2}, (int64_t[]){2, 1}, 0);
    bp_tensor_release(parts[0]);

    parts[0] = (bp_tensor *)1;
    BP_ASSERT_ERR(bp_tensor_split(t, 0, 0, parts), BP_ERR_INVALID_ARGUMENT,
                  "sections is 0, expected at least 1");
    BP_ASSERT_ERR(bp_tensor_split(t, 2, 5, parts), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_split: dim 5 is out of range");
    assert_null(parts[0]);
    assert_null(parts[1]);
    BP_ASSERT_ERR(bp_tensor_split(NULL, 2, 0, parts), BP_ERR_INVALID_ARGUMENT, "tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_split(t, 2, 0, NULL), BP_ERR_INVALID_ARGUMENT, "out_views is NULL");
    bp_tensor_release(t);
}

static void test_transpose_permute(void **state) {
    (void)state;
    bp_tensor *t = arange(3, (int64_t[]){2, 3, 4}), *v = NULL;
    BP_ASSERT_OK(bp_tensor_transpose(t, 0, -1, &v));
    assert_layout(v, 3, (int64_t[]){4, 3, 2}, (int64_t[]){1, 4, 12}, 0);
    assert_false(bp_tensor_is_contiguous(v));
    float *got = values(v);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++)
                assert_true(got[(i * 3 + j) * 2 + k] == (float)(k * 12 + j * 4 + i));
    free(got);
    bp_tensor_release(v);
    BP_ASSERT_OK(bp_tensor_transpose(t, 1, 1, &v));
    assert_layout(v, 3, (int64_t[]){2, 3, 4}, (int64_t[]){12, 4, 1}, 0);
    bp_tensor_release(v);

    BP_ASSERT_OK(bp_tensor_permute(t, (int[]){2, 0, -2}, &v));
    assert_layout(v, 3, (int64_t[]){4, 2, 3}, (int64_t[]){1, 12, 4}, 0);
    got = values(v);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++)
                assert_true(got[(i * 2 + j) * 3 + k] == (float)(j * 12 + k * 4 + i));
    free(got);
    bp_tensor_release(v);

    BP_ASSERT_ERR(bp_tensor_transpose(t, 0, 3, &v), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_transpose: dim 3 is out of range for a tensor of 3 dims");
    assert_null(v);
    BP_ASSERT_ERR(bp_tensor_permute(t, (int[]){0, 0, 1}, &v), BP_ERR_INVALID_ARGUMENT,
                  "dims [0, 0, 1] are not a permutation of 0..2 (dim 0 repeats)");
    BP_ASSERT_ERR(bp_tensor_permute(t, (int[]){0, 1, 3}, &v), BP_ERR_INVALID_ARGUMENT,
                  "bp_tensor_permute: dim 3 is out of range");
    BP_ASSERT_ERR(bp_tensor_permute(t, NULL, &v), BP_ERR_INVALID_ARGUMENT, "dims is NULL");
    BP_ASSERT_ERR(bp_tensor_permute(NULL, (int[]){0}, &v), BP_ERR_INVALID_ARGUMENT,
                  "tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_transpose(NULL, 0, 1, &v), BP_ERR_INVALID_ARGUMENT, "tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_transpose(t, 0, 1, NULL), BP_ERR_INVALID_ARGUMENT, "out_view is NULL");
    BP_ASSERT_ERR(bp_tensor_permute(t, (int[]){0, 1, 2}, NULL), BP_ERR_INVALID_ARGUMENT,
                  "out_view is NULL");
    bp_tensor_release(t);
}

static void test_unsqueeze(void **state) {
    (void)state;
    bp_tensor *t = arange(2, (int64_t[]){2, 3}), *v = NULL;
    BP_ASSERT_OK(bp_tensor_unsqueeze(t, 0, &v));
    assert_layout(v, 3, (int64_t[]){1, 2, 3}, (int64_t[]){6, 3, 1}, 0);
    bp_tensor_release(v);
    BP_ASSERT_OK(bp_tensor_unsqueeze(t, 1, &v));
    assert_layout(v, 3, (int64_t[]){2, 1, 3}, (int64_t[]){3, 3, 1}, 0);
    assert_true(bp_tensor_is_contiguous(v));
    bp_tensor_release(v);
    BP_ASSERT_OK(bp_tensor_unsqueeze(t, -1, &v));
    assert_layout(v, 3, (int64_t[]){2, 3, 1}, (int64_t[]){3, 1, 1}, 0);
    bp_tensor_release(v);
    BP_ASSERT_OK(bp_tensor_unsqueeze(t, -3, &v));
    assert_layout(v, 3, (int64_t[]){1, 2, 3}, (int64_t[]){6, 3, 1}, 0);
    bp_tensor_release(v);

    BP_ASSERT_ERR(bp_tensor_unsqueeze(t, 3, &v), BP_ERR_INVALID_ARGUMENT,
                  "dim 3 is out of range for a tensor of 2 dims (expected -3 to 2)");
    assert_null(v);
    BP_ASSERT_ERR(bp_tensor_unsqueeze(NULL, 0, &v), BP_ERR_INVALID_ARGUMENT, "tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_unsqueeze(t, 0, NULL), BP_ERR_INVALID_ARGUMENT, "out_view is NULL");
    bp_tensor *full = NULL;
    BP_ASSERT_OK(bp_tensor_empty(bp_test_cpu(), BP_DTYPE_F32, 8,
                                 (int64_t[]){1, 1, 1, 1, 1, 1, 1, 2}, &full));
    BP_ASSERT_ERR(bp_tensor_unsqueeze(full, 0, &v), BP_ERR_INVALID_ARGUMENT,
                  "already has the maximum of 8 dims");
    bp_tensor_release(full);
    bp_tensor_release(t);
}

/* Reshapes `t` to `shape` and checks whether the result is a view, and its values. */
static void check_reshape(bp_tensor *t, int ndim, const int64_t *shape, bool expect_view,
                          const int64_t *expect_strides) {
    bp_tensor *r = NULL;
    BP_ASSERT_OK(bp_tensor_reshape(t, ndim, shape, &r));
    assert_int_equal(bp_tensor_numel(r), bp_tensor_numel(t));
    assert_int_equal(bp_tensor_shares_storage(t, r), expect_view);
    if (expect_strides)
        for (int d = 0; d < ndim; d++)
            assert_int_equal(bp_tensor_stride(r, d), expect_strides[d]);
    if (!expect_view)
        assert_true(bp_tensor_is_contiguous(r));
    float *a = values(t), *b = values(r);
    assert_memory_equal(a, b, (size_t)bp_tensor_numel(t) * sizeof(float));
    free(a);
    free(b);
    bp_tensor_release(r);
}

static void test_reshape(void **state) {
    (void)state;
    bp_tensor *t = arange(3, (int64_t[]){2, 3, 4}), *v = NULL, *r = NULL;
    /* Contiguous: always a view, with -1 inferred. */
    check_reshape(t, 2, (int64_t[]){6, 4}, true, (int64_t[]){4, 1});
    check_reshape(t, 2, (int64_t[]){-1, 4}, true, (int64_t[]){4, 1});
    check_reshape(t, 4, (int64_t[]){2, 1, 12, 1}, true, NULL);
    check_reshape(t, 1, (int64_t[]){-1}, true, (int64_t[]){1});
    BP_ASSERT_OK(bp_tensor_reshape(t, 2, (int64_t[]){4, -1}, &r));
    assert_int_equal(bp_tensor_size(r, 1), 6);
    assert_ptr_equal(bp_tensor_data(r), bp_tensor_data(t));
    bp_tensor_release(r);

    /* Transposed last dims [2, 4, 3] (strides 12, 1, 4): splitting or adding size-1
     * dims stays a view; merging the swapped dims needs a copy. */
    BP_ASSERT_OK(bp_tensor_transpose(t, 1, 2, &v));
    check_reshape(v, 4, (int64_t[]){2, 4, 3, 1}, true, NULL);
    check_reshape(v, 4, (int64_t[]){2, 2, 2, 3}, true, (int64_t[]){12, 2, 1, 4});
    check_reshape(v, 2, (int64_t[]){2, 12}, false, NULL);
    check_reshape(v, 1, (int64_t[]){24}, false, NULL);
    bp_tensor_release(v);

    /* Narrowed columns [4, 3] of [4, 6] (strides 6, 1): rows split, merge copies. */
    bp_tensor *m = arange(2, (int64_t[]){4, 6});
    BP_ASSERT_OK(bp_tensor_narrow(m, 1, 1, 3, &v));
    check_reshape(v, 3, (int64_t[]){2, 2, 3}, true, (int64_t[]){12, 6, 1});
    check_reshape(v, 1, (int64_t[]){12}, false, NULL);
    bp_tensor_release(v);
    /* Narrowed rows stay contiguous: a view. */
    BP_ASSERT_OK(bp_tensor_narrow(m, 0, 1, 2, &v));
    check_reshape(v, 1, (int64_t[]){12}, true, (int64_t[]){1});
    bp_tensor_release(v);
    bp_tensor_release(m);

    /* Scalars and empty tensors. */
    bp_tensor *s = arange(0, NULL);
    check_reshape(s, 2, (int64_t[]){1, 1}, true, NULL);
    check_reshape(s, 0, NULL, true, NULL);
    bp_tensor_release(s);
    bp_tensor *e = arange(2, (int64_t[]){0, 4});
    BP_ASSERT_OK(bp_tensor_reshape(e, 3, (int64_t[]){4, 0, 2}, &r));
    assert_int_equal(bp_tensor_numel(r), 0);
    bp_tensor_release(r);
    BP_ASSERT_ERR(bp_tensor_reshape(e, 2, (int64_t[]){-1, 0}, &r), BP_ERR_INVALID_ARGUMENT,
                  "cannot reshape a tensor of shape [0, 4] (0 elements) into [-1, 0]");
    bp_tensor_release(e);

    BP_ASSERT_ERR(bp_tensor_reshape(t, 2, (int64_t[]){5, 5}, &r), BP_ERR_INVALID_ARGUMENT,
                  "cannot reshape a tensor of shape [2, 3, 4] (24 elements) into [5, 5] "
                  "(25 elements)");
    assert_null(r);
    BP_ASSERT_ERR(bp_tensor_reshape(t, 2, (int64_t[]){-1, 5}, &r), BP_ERR_INVALID_ARGUMENT,
                  "cannot reshape a tensor of shape [2, 3, 4] (24 elements) into [-1, 5]");
    BP_ASSERT_ERR(bp_tensor_reshape(t, 2, (int64_t[]){-1, -1}, &r), BP_ERR_INVALID_ARGUMENT,
                  "invalid shape [-1, -1] (only one dim may be -1)");
    BP_ASSERT_ERR(bp_tensor_reshape(t, 2, (int64_t[]){-2, -12}, &r), BP_ERR_INVALID_ARGUMENT,
                  "invalid shape [-2, -12] (negative dim)");
    BP_ASSERT_ERR(bp_tensor_reshape(t, 9, (int64_t[9]){0}, &r), BP_ERR_INVALID_ARGUMENT,
                  "ndim 9 is out of range (0 to 8)");
    BP_ASSERT_ERR(bp_tensor_reshape(t, 2, NULL, &r), BP_ERR_INVALID_ARGUMENT, "shape is NULL");
    BP_ASSERT_ERR(bp_tensor_reshape(NULL, 1, (int64_t[]){1}, &r), BP_ERR_INVALID_ARGUMENT,
                  "tensor is NULL");
    BP_ASSERT_ERR(bp_tensor_reshape(t, 1, (int64_t[]){24}, NULL), BP_ERR_INVALID_ARGUMENT,
                  "out_tensor is NULL");
    bp_tensor_release(t);
}

/* ---- storage sharing and reference counting ---- */

static void test_views_outlive_base(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_device_synchronize(bp_test_cpu()));
    uint64_t before = allocated_bytes();
    bp_tensor *t = arange(2, (int64_t[]){8, 16});
    assert_true(allocated_bytes() >= before + 8 * 16 * sizeof(float));
    uint64_t with_base = allocated_bytes();

    bp_tensor *row = NULL, *col = NULL, *tr = NULL;
    BP_ASSERT_OK(bp_tensor_narrow(t, 0, 3, 1, &row));
    BP_ASSERT_OK(bp_tensor_transpose(t, 0, 1, &tr));
    BP_ASSERT_OK(bp_tensor_narrow(tr, 0, 5, 1, &col));
    assert_int_equal(allocated_bytes(), with_base); /* views allocate nothing */
    assert_true(bp_tensor_shares_storage(row, col));
    assert_ptr_equal(bp_tensor_retain(row), row);
    bp_tensor_release(row); /* the extra reference */

    bp_tensor_release(t);
    bp_tensor_release(tr);
    assert_int_equal(allocated_bytes(), with_base); /* still used by row and col */
    float *r = values(row), *c = values(col);
    for (int i = 0; i < 16; i++)
        assert_true(r[i] == (float)(3 * 16 + i));
    for (int i = 0; i < 8; i++)
        assert_true(c[i] == (float)(i * 16 + 5));
    free(r);
    free(c);
    bp_tensor_release(row);
    assert_int_equal(allocated_bytes(), with_base);
    bp_tensor_release(col);
    BP_ASSERT_OK(bp_device_synchronize(bp_test_cpu()));
    assert_int_equal(allocated_bytes(), before);
}

static void test_other_stream(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *side = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &side));
    bp_tensor *t = arange(1, (int64_t[]){1024});
    /* Used on a second stream, then released there: the storage is recorded as used
     * by that stream, and the next allocation still sees the right values. */
    bp_stream_guard guard;
    BP_ASSERT_OK(bp_stream_guard_begin(&guard, side));
    bp_tensor *u = NULL;
    BP_ASSERT_OK(bp_tensor_reshape(t, 2, (int64_t[]){32, 32}, &u));
    bp_tensor *tr = NULL, *c = NULL;
    BP_ASSERT_OK(bp_tensor_transpose(u, 0, 1, &tr));
    BP_ASSERT_OK(bp_tensor_contiguous(tr, &c)); /* a copy op on `side` */
    bp_tensor_release(t);
    bp_tensor_release(u);
    bp_tensor_release(tr);
    float *got = values(c);
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++)
            assert_true(got[i * 32 + j] == (float)(j * 32 + i));
    free(got);
    bp_tensor_release(c);
    bp_stream_guard_end(&guard);
    BP_ASSERT_OK(bp_stream_destroy(side));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_layout),
        cmocka_unit_test(test_accessors_null),
        cmocka_unit_test(test_empty_errors),
        cmocka_unit_test(test_host_round_trip),
        cmocka_unit_test(test_narrow),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_transpose_permute),
        cmocka_unit_test(test_unsqueeze),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_views_outlive_base),
        cmocka_unit_test(test_other_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
