/* The plugin helper header <backplane/plugin_util.h> on its own, as a plugin uses it (no
 * libbackplane): every helper against a host that records the last error, each with
 * its success and its error paths and the exact message a plugin's users see. The same
 * header compiled as C++17 (test_plugin_util_cxx.cpp, when a C++ compiler is there)
 * runs its own checks from here. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* An allocator that fails on demand, for bp_plugin_calloc's error path. */
static bool calloc_fails;
static void *test_calloc_hook(size_t n, size_t size) {
    return calloc_fails ? NULL : calloc(n, size);
}
#define BP_PLUGIN_CALLOC test_calloc_hook
#include <backplane/plugin_util.h>

#include "recording_host.h"
#include "test_plugin_util_cxx.h"

/* ---- the host ---- */

static const bp_host_services *const host = &recording_host;

static int reset(void **state) {
    (void)state;
    last_error[0] = '\0';
    errors_set = 0;
    calloc_fails = false;
    return 0;
}

#define ASSERT_ERROR(call, status, message)                                                \
    do {                                                                                   \
        assert_int_equal((call), (status));                                                \
        assert_string_equal(last_error, (message));                                        \
    } while (0)

/* ---- errors ---- */

static void test_fail_names_the_device(void **state) {
    (void)state;
    ASSERT_ERROR(bp_plugin_fail(host, BP_ERR_BACKEND, "opencl", 2, "%s failed (%d)", "step", -5),
                 BP_ERR_BACKEND, "opencl:2: step failed (-5)");
    /* Below 0: the backend alone. */
    ASSERT_ERROR(bp_plugin_fail(host, BP_ERR_UNSUPPORTED, "hpu", -1, "no %s", "timer"),
                 BP_ERR_UNSUPPORTED, "hpu: no timer");
    ASSERT_ERROR(bp_plugin_fail(host, BP_ERR_INTERNAL, "xpu", 0, "plain"), BP_ERR_INTERNAL,
                 "xpu:0: plain");
}

static void test_fail_cuts_a_long_message(void **state) {
    (void)state;
    char longer[BP_PLUGIN_MESSAGE_MAX + 32];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_int_equal(bp_plugin_fail(host, BP_ERR_BACKEND, "t", -1, "%s", longer),
                     BP_ERR_BACKEND);
    /* "t: " and the message cut to BP_PLUGIN_MESSAGE_MAX - 1 characters. */
    assert_int_equal(strlen(last_error), 3 + BP_PLUGIN_MESSAGE_MAX - 1);
    assert_memory_equal(last_error, "t: xxx", 6);
}

static void test_plugin_calloc(void **state) {
    (void)state;
    unsigned char *p = bp_plugin_calloc(host, "opencl", 1, 64, "a stream");
    assert_non_null(p);
    for (int i = 0; i < 64; i++)
        assert_int_equal(p[i], 0);
    free(p);
    assert_int_equal(errors_set, 0);
    calloc_fails = true;
    assert_null(bp_plugin_calloc(host, "opencl", 1, 64, "a stream"));
    assert_string_equal(last_error, "opencl:1: out of host memory for a stream");
    assert_null(bp_plugin_calloc(host, "cpu", -1, 8, "an event"));
    assert_string_equal(last_error, "cpu: out of host memory for an event");
}

/* ---- the device table ---- */

static void test_check_index(void **state) {
    (void)state;
    assert_int_equal(bp_plugin_check_index(host, "opencl", 0, 2, "OpenCL", NULL), BP_OK);
    assert_int_equal(bp_plugin_check_index(host, "opencl", 1, 2, "OpenCL", NULL), BP_OK);
    assert_int_equal(errors_set, 0);
    ASSERT_ERROR(bp_plugin_check_index(host, "opencl", 2, 2, "OpenCL", NULL), BP_ERR_NOT_FOUND,
                 "opencl: device index 2 out of range (2 OpenCL devices)");
    ASSERT_ERROR(bp_plugin_check_index(host, "cpu", -1, 1, "cpu", NULL), BP_ERR_NOT_FOUND,
                 "cpu: device index -1 out of range (1 cpu device)");
    ASSERT_ERROR(bp_plugin_check_index(host, "cuda", 0, 0, "CUDA", NULL), BP_ERR_NOT_FOUND,
                 "cuda: device index 0 out of range (0 CUDA devices)");
    ASSERT_ERROR(bp_plugin_check_index(host, "hpu", 5, 1, "hpu", "BP_HPU_DEVICES sets the count"),
                 BP_ERR_NOT_FOUND,
                 "hpu: device index 5 out of range (1 hpu device; BP_HPU_DEVICES sets the count)");
}

static void test_unavailable_reason(void **state) {
    (void)state;
    assert_string_equal(bp_plugin_unavailable_reason(0, "no ICD"), "no ICD");
    assert_null(bp_plugin_unavailable_reason(1, "no ICD")); /* devices: nothing to explain */
    assert_null(bp_plugin_unavailable_reason(0, ""));
    assert_null(bp_plugin_unavailable_reason(0, NULL));
}

static void test_props_begin_and_copy_out(void **state) {
    (void)state;
    bp_backend_device_props p;
    memset(&p, 0x5a, sizeof p);
    bp_backend_device_props host_props;
    memset(&host_props, 0, sizeof host_props);
    host_props.struct_size = sizeof host_props;
    assert_int_equal(bp_plugin_props_begin(host, "xpu", &host_props, &p), BP_OK);
    const bp_backend_device_props zero = {0};
    assert_memory_equal(&p, &zero, sizeof p);
    /* What the backend fills in reaches the host's struct, struct_size kept. */
    snprintf(p.description, sizeof p.description, "%s", "a device");
    p.total_memory = 1u << 20;
    bp_props_copy_out(&host_props, &p);
    assert_int_equal(host_props.struct_size, sizeof host_props);
    assert_string_equal(host_props.description, "a device");
    assert_int_equal(host_props.total_memory, 1u << 20);
    ASSERT_ERROR(bp_plugin_props_begin(host, "xpu", NULL, &p), BP_ERR_INVALID_ARGUMENT,
                 "xpu: get_props: props is NULL");
}

/* ---- the current device ---- */

static void *current_on_other_thread(void *arg) {
    int *seen = arg;
    /* A new thread has none, whatever the test's thread set. */
    seen[0] = bp_plugin_current_get(NULL, &seen[1]);
    bp_plugin_current_set(7);
    seen[2] = bp_plugin_current_get(NULL, &seen[3]);
    return NULL;
}

static void test_current_device(void **state) {
    (void)state;
    int index = 42;
    assert_int_equal(bp_plugin_current_get(NULL, &index), BP_ERR_NOT_FOUND);
    assert_int_equal(index, 42); /* untouched */
    assert_int_equal(bp_plugin_current_set(3), BP_OK);
    assert_int_equal(bp_plugin_current_get(NULL, &index), BP_OK);
    assert_int_equal(index, 3);
    assert_int_equal(bp_plugin_current_get(NULL, NULL), BP_ERR_NOT_FOUND);
    pthread_t t;
    int seen[4] = {-2, -2, -2, -2};
    assert_int_equal(pthread_create(&t, NULL, current_on_other_thread, seen), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(seen[0], BP_ERR_NOT_FOUND);
    assert_int_equal(seen[2], BP_OK);
    assert_int_equal(seen[3], 7);
    /* The other thread's set leaves this thread's device as it was. */
    assert_int_equal(bp_plugin_current_get(NULL, &index), BP_OK);
    assert_int_equal(index, 3);
    assert_int_equal(errors_set, 0); /* get_current never sets an error */
}

/* ---- memory ---- */

static void test_check_out_ptr(void **state) {
    (void)state;
    void *p = NULL;
    assert_int_equal(bp_plugin_check_out_ptr(host, "hpu", 0, &p), BP_OK);
    ASSERT_ERROR(bp_plugin_check_out_ptr(host, "hpu", 0, NULL), BP_ERR_INVALID_ARGUMENT,
                 "hpu:0: alloc: out_ptr is NULL");
}

static void test_check_copy(void **state) {
    (void)state;
    int a = 0, b = 0;
    assert_int_equal(bp_plugin_check_copy_kind(host, "xpu", 1, BP_COPY_HOST_TO_DEVICE), BP_OK);
    assert_int_equal(bp_plugin_check_copy_kind(host, "xpu", 1, BP_COPY_DEVICE_TO_HOST), BP_OK);
    assert_int_equal(bp_plugin_check_copy_kind(host, "xpu", 1, BP_COPY_DEVICE_TO_DEVICE), BP_OK);
    ASSERT_ERROR(bp_plugin_check_copy_kind(host, "xpu", 1, (bp_copy_kind)9),
                 BP_ERR_INVALID_ARGUMENT, "xpu:1: copy: unknown copy kind 9");
    assert_int_equal(bp_plugin_check_copy_pointers(host, "xpu", 1, &a, &b, 4), BP_OK);
    ASSERT_ERROR(bp_plugin_check_copy_pointers(host, "xpu", 1, NULL, &b, 4),
                 BP_ERR_INVALID_ARGUMENT, "xpu:1: copy of 4 bytes: the destination is NULL");
    ASSERT_ERROR(bp_plugin_check_copy_pointers(host, "xpu", 1, &a, NULL, 4),
                 BP_ERR_INVALID_ARGUMENT, "xpu:1: copy of 4 bytes: the source is NULL");
    ASSERT_ERROR(bp_plugin_check_copy_pointers(host, "xpu", 1, NULL, NULL, 8),
                 BP_ERR_INVALID_ARGUMENT, "xpu:1: copy of 8 bytes: the destination is NULL");
}

/* The copy functions record which one ran, on which stream, and fail when asked. */
static const char *copied;
static void *copied_on;
static bp_status copy_result;

static bp_status record_h2d(void *stream, void *dst, const void *src, size_t size) {
    copied = "h2d";
    copied_on = stream;
    return copy_result;
}
static bp_status record_d2h(void *stream, void *dst, const void *src, size_t size) {
    copied = "d2h";
    copied_on = stream;
    return copy_result;
}
static bp_status record_d2d(void *stream, void *dst, const void *src, size_t size) {
    copied = "d2d";
    copied_on = stream;
    return copy_result;
}

static void test_copy_by_kind(void **state) {
    (void)state;
    static const bp_plugin_copy_fns fns = {record_h2d, record_d2h, record_d2d};
    int stream = 0, a = 0, b = 0;
    const bp_copy_kind kinds[3] = {BP_COPY_HOST_TO_DEVICE, BP_COPY_DEVICE_TO_HOST,
                                   BP_COPY_DEVICE_TO_DEVICE};
    const char *names[3] = {"h2d", "d2h", "d2d"};
    copy_result = BP_OK;
    for (int k = 0; k < 3; k++) {
        copied = NULL;
        assert_int_equal(bp_plugin_copy_by_kind(host, "ocl", 0, &fns, &stream, &a, &b, 4,
                                                kinds[k]),
                         BP_OK);
        assert_string_equal(copied, names[k]);
        assert_ptr_equal(copied_on, &stream);
    }
    copy_result = BP_ERR_BACKEND; /* the function's status is the copy's */
    assert_int_equal(bp_plugin_copy_by_kind(host, "ocl", 0, &fns, &stream, &a, &b, 4,
                                            BP_COPY_DEVICE_TO_DEVICE),
                     BP_ERR_BACKEND);
    copied = NULL;
    /* Size 0 copies nothing and checks nothing. */
    assert_int_equal(bp_plugin_copy_by_kind(host, "ocl", 0, &fns, &stream, NULL, NULL, 0,
                                            (bp_copy_kind)7),
                     BP_OK);
    ASSERT_ERROR(bp_plugin_copy_by_kind(host, "ocl", 0, &fns, &stream, &a, NULL, 4,
                                        BP_COPY_HOST_TO_DEVICE),
                 BP_ERR_INVALID_ARGUMENT, "ocl:0: copy of 4 bytes: the source is NULL");
    /* Pointers are checked before the kind. */
    ASSERT_ERROR(bp_plugin_copy_by_kind(host, "ocl", 0, &fns, &stream, NULL, &b, 4,
                                        (bp_copy_kind)7),
                 BP_ERR_INVALID_ARGUMENT, "ocl:0: copy of 4 bytes: the destination is NULL");
    ASSERT_ERROR(bp_plugin_copy_by_kind(host, "ocl", 0, &fns, &stream, &a, &b, 4,
                                        (bp_copy_kind)7),
                 BP_ERR_INVALID_ARGUMENT, "ocl:0: copy: unknown copy kind 7");
    assert_null(copied);
}

/* ---- streams ---- */

typedef struct listed {
    int id;
    bp_plugin_link link; /* not first: CONTAINER_OF does the arithmetic */
} listed;

/* The ids in list order, as a string ("3 1"). */
static const char *ids(bp_plugin_list *l) {
    static char text[64];
    text[0] = '\0';
    pthread_mutex_lock(&l->lock);
    for (bp_plugin_link *k = l->head; k; k = k->next) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof text - n, "%s%d", n ? " " : "",
                 BP_PLUGIN_CONTAINER_OF(k, listed, link)->id);
    }
    pthread_mutex_unlock(&l->lock);
    return text;
}

static void test_list(void **state) {
    (void)state;
    bp_plugin_list l;
    assert_int_equal(bp_plugin_list_init(&l), 0);
    assert_string_equal(ids(&l), "");
    listed a = {1, {NULL}}, b = {2, {NULL}}, c = {3, {NULL}}, absent = {4, {NULL}};
    bp_plugin_list_add(&l, &a.link);
    bp_plugin_list_add(&l, &b.link);
    bp_plugin_list_add(&l, &c.link);
    assert_string_equal(ids(&l), "3 2 1"); /* the newest first */
    bp_plugin_list_remove(&l, &b.link);    /* in the middle */
    assert_string_equal(ids(&l), "3 1");
    bp_plugin_list_remove(&l, &absent.link); /* not linked: nothing */
    bp_plugin_list_remove(&l, &b.link);      /* already removed: nothing */
    assert_string_equal(ids(&l), "3 1");
    bp_plugin_list_remove(&l, &c.link); /* the head */
    assert_string_equal(ids(&l), "1");
    bp_plugin_list_remove(&l, &a.link); /* the last */
    assert_string_equal(ids(&l), "");
    assert_null(l.head);
    bp_plugin_list_add(&l, &b.link); /* taken again after emptying */
    assert_string_equal(ids(&l), "2");
    bp_plugin_list_fini(&l);
}

static void host_fn(void *arg) { (void)arg; }

static void test_check_host_fn(void **state) {
    (void)state;
    assert_int_equal(bp_plugin_check_host_fn(host, "opencl", 0, host_fn), BP_OK);
    ASSERT_ERROR(bp_plugin_check_host_fn(host, "opencl", 0, NULL), BP_ERR_INVALID_ARGUMENT,
                 "opencl:0: enqueue_host: fn is NULL");
    ASSERT_ERROR(bp_plugin_check_host_fn(host, "cpu", -1, NULL), BP_ERR_INVALID_ARGUMENT,
                 "cpu: enqueue_host: fn is NULL");
}

/* ---- kernels ---- */

static void test_numel_and_dtype_size(void **state) {
    (void)state;
    bp_tensor_desc t = {.ndim = 3, .shape = {2, 3, 4}};
    assert_int_equal(bp_plugin_numel(&t), 24);
    t.shape[1] = 0;
    assert_int_equal(bp_plugin_numel(&t), 0);
    t.ndim = 0;
    assert_int_equal(bp_plugin_numel(&t), 1); /* a scalar */
    const size_t want[BP_DTYPE_COUNT] = {
        [BP_DTYPE_F32] = 4, [BP_DTYPE_F16] = 2, [BP_DTYPE_BF16] = 2,
        [BP_DTYPE_F64] = 8, [BP_DTYPE_I8] = 1,  [BP_DTYPE_U8] = 1,
        [BP_DTYPE_I32] = 4, [BP_DTYPE_I64] = 8, [BP_DTYPE_BOOL] = 1,
    };
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        assert_int_equal(bp_plugin_dtype_size((bp_dtype)dt), want[dt]);
    assert_int_equal(bp_plugin_dtype_size((bp_dtype)BP_DTYPE_COUNT), 0);
    assert_int_equal(bp_plugin_dtype_size((bp_dtype)-1), 0);
}

/* A move that copies contiguous rows of i32 (the test's views are contiguous), or
 * fails at the call numbered `fail_at`. */
typedef struct mover {
    int calls;
    int fail_at;
} mover;

static bp_status move_rows(void *ctx, const bp_tensor_desc *dst, const bp_tensor_desc *src) {
    mover *m = ctx;
    if (++m->calls == m->fail_at)
        return record_error(BP_ERR_BACKEND, "move %d failed", m->calls);
    assert_int_equal(dst->ndim, 2);
    for (int64_t r = 0; r < src->shape[0]; r++)
        for (int64_t c = 0; c < src->shape[1]; c++)
            ((int32_t *)dst->data)[r * dst->strides[0] + c * dst->strides[1]] =
                ((const int32_t *)src->data)[r * src->strides[0] + c * src->strides[1]];
    return BP_OK;
}

static bp_tensor_desc matrix(int32_t *data, int64_t rows, int64_t cols) {
    bp_tensor_desc t = {.data = data, .dtype = BP_DTYPE_I32, .ndim = 2,
                        .shape = {rows, cols}, .strides = {cols, 1}};
    return t;
}

static void test_cat(void **state) {
    (void)state;
    int32_t a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, out[6] = {0};
    /* Along dim 1: a is 2x1, an empty 2x0 input is skipped, b is 2x2. */
    bp_tensor_desc ta = matrix(a, 2, 1), empty = matrix(NULL, 2, 0), tb = matrix(b, 2, 2);
    bp_tensor_desc tout = matrix(out, 2, 3);
    const bp_tensor_desc *inputs[3] = {&ta, &empty, &tb};
    const bp_tensor_desc *outputs[1] = {&tout};
    bp_cat_attrs attrs = {.dim = 1};
    bp_kernel_call call = {.struct_size = sizeof call, .op_name = "cat", .dtype = BP_DTYPE_I32,
                           .n_inputs = 3, .n_outputs = 1, .inputs = inputs,
                           .outputs = outputs, .attrs = &attrs};
    mover m = {0, 0};
    assert_int_equal(bp_plugin_cat(&call, move_rows, &m), BP_OK);
    assert_int_equal(m.calls, 2);
    const int32_t want[6] = {1, 3, 4, 2, 5, 6};
    assert_memory_equal(out, want, sizeof want);
    /* No attrs: along dim 0. */
    int32_t rows_out[6] = {0};
    bp_tensor_desc a_row = matrix(a, 1, 2), b_rows = matrix(b, 2, 2);
    bp_tensor_desc tall = matrix(rows_out, 3, 2);
    const bp_tensor_desc *row_inputs[2] = {&a_row, &b_rows};
    const bp_tensor_desc *row_outputs[1] = {&tall};
    call.inputs = row_inputs;
    call.n_inputs = 2;
    call.outputs = row_outputs;
    call.attrs = NULL;
    m.calls = 0;
    assert_int_equal(bp_plugin_cat(&call, move_rows, &m), BP_OK);
    const int32_t want_rows[6] = {1, 2, 3, 4, 5, 6};
    assert_memory_equal(rows_out, want_rows, sizeof want_rows);
    /* The first failing move stops the cat and is its result. */
    m = (mover){0, 1};
    ASSERT_ERROR(bp_plugin_cat(&call, move_rows, &m), BP_ERR_BACKEND, "move 1 failed");
    assert_int_equal(m.calls, 1);
}

/* ---- events ---- */

static void test_elapsed_recorded(void **state) {
    (void)state;
    assert_int_equal(bp_plugin_elapsed_recorded(host, "xpu", 0, true, true), BP_OK);
    ASSERT_ERROR(bp_plugin_elapsed_recorded(host, "xpu", 0, false, true),
                 BP_ERR_INVALID_ARGUMENT, "xpu:0: elapsed_ms: the start event was never recorded");
    ASSERT_ERROR(bp_plugin_elapsed_recorded(host, "xpu", 0, true, false),
                 BP_ERR_INVALID_ARGUMENT, "xpu:0: elapsed_ms: the end event was never recorded");
    ASSERT_ERROR(bp_plugin_elapsed_recorded(host, "opencl", 1, false, false),
                 BP_ERR_INVALID_ARGUMENT,
                 "opencl:1: elapsed_ms: the start event was never recorded");
}

static void test_elapsed_completed(void **state) {
    (void)state;
    assert_int_equal(bp_plugin_elapsed_completed(host, "hpu", -1, BP_OK, BP_OK), BP_OK);
    ASSERT_ERROR(bp_plugin_elapsed_completed(host, "hpu", -1, BP_ERR_NOT_READY, BP_OK),
                 BP_ERR_NOT_READY, "hpu: elapsed_ms: the start event has not completed");
    ASSERT_ERROR(bp_plugin_elapsed_completed(host, "hpu", -1, BP_OK, BP_ERR_NOT_READY),
                 BP_ERR_NOT_READY, "hpu: elapsed_ms: the end event has not completed");
    ASSERT_ERROR(bp_plugin_elapsed_completed(host, "opencl", 0, BP_ERR_NOT_READY,
                                             BP_ERR_NOT_READY),
                 BP_ERR_NOT_READY, "opencl:0: elapsed_ms: the start event has not completed");
    /* Other errors pass through with the message their query set. */
    last_error[0] = '\0';
    assert_int_equal(bp_plugin_elapsed_completed(host, "xpu", 0, BP_ERR_BACKEND, BP_OK),
                     BP_ERR_BACKEND);
    assert_int_equal(bp_plugin_elapsed_completed(host, "xpu", 0, BP_OK, BP_ERR_BACKEND),
                     BP_ERR_BACKEND);
    assert_string_equal(last_error, "");
}

/* Points are ints holding the status their query returns; the queries are counted. */
static bp_status point_status(void *ctx, void *point) {
    ++*(int *)ctx;
    bp_status st = *(bp_status *)point;
    if (st != BP_OK && st != BP_ERR_NOT_READY)
        record_error(st, "query failed");
    return st;
}

static void test_elapsed_ready(void **state) {
    (void)state;
    bp_status reached = BP_OK, pending = BP_ERR_NOT_READY, broken = BP_ERR_BACKEND;
    int queries = 0;
    assert_int_equal(bp_plugin_elapsed_ready(host, "ocl", 0, &reached, &reached, point_status,
                                             &queries),
                     BP_OK);
    assert_int_equal(queries, 2);
    queries = 0;
    ASSERT_ERROR(bp_plugin_elapsed_ready(host, "ocl", 0, NULL, &reached, point_status, &queries),
                 BP_ERR_INVALID_ARGUMENT, "ocl:0: elapsed_ms: the start event was never recorded");
    ASSERT_ERROR(bp_plugin_elapsed_ready(host, "ocl", 0, &reached, NULL, point_status, &queries),
                 BP_ERR_INVALID_ARGUMENT, "ocl:0: elapsed_ms: the end event was never recorded");
    assert_int_equal(queries, 0); /* nothing queried without both points */
    ASSERT_ERROR(bp_plugin_elapsed_ready(host, "ocl", 0, &pending, &reached, point_status,
                                         &queries),
                 BP_ERR_NOT_READY, "ocl:0: elapsed_ms: the start event has not completed");
    assert_int_equal(queries, 1); /* end is not queried after start */
    ASSERT_ERROR(bp_plugin_elapsed_ready(host, "ocl", 0, &reached, &pending, point_status,
                                         &queries),
                 BP_ERR_NOT_READY, "ocl:0: elapsed_ms: the end event has not completed");
    queries = 0;
    ASSERT_ERROR(bp_plugin_elapsed_ready(host, "ocl", 0, &broken, &reached, point_status,
                                         &queries),
                 BP_ERR_BACKEND, "query failed"); /* the query's own error */
    assert_int_equal(queries, 1);
}

/* ---- C++ ---- */

static void test_header_as_cxx(void **state) {
    (void)state;
#ifdef BP_TEST_PLUGIN_UTIL_CXX
    assert_int_equal(plugin_util_cxx_check(host), 0);
#else
    print_message("skipped: no C++ compiler: the header was not compiled as C++17\n");
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fail_names_the_device, reset),
        cmocka_unit_test_setup(test_fail_cuts_a_long_message, reset),
        cmocka_unit_test_setup(test_plugin_calloc, reset),
        cmocka_unit_test_setup(test_check_index, reset),
        cmocka_unit_test_setup(test_unavailable_reason, reset),
        cmocka_unit_test_setup(test_props_begin_and_copy_out, reset),
        cmocka_unit_test_setup(test_current_device, reset),
        cmocka_unit_test_setup(test_check_out_ptr, reset),
        cmocka_unit_test_setup(test_check_copy, reset),
        cmocka_unit_test_setup(test_copy_by_kind, reset),
        cmocka_unit_test_setup(test_check_host_fn, reset),
        cmocka_unit_test_setup(test_list, reset),
        cmocka_unit_test_setup(test_numel_and_dtype_size, reset),
        cmocka_unit_test_setup(test_cat, reset),
        cmocka_unit_test_setup(test_elapsed_recorded, reset),
        cmocka_unit_test_setup(test_elapsed_completed, reset),
        cmocka_unit_test_setup(test_elapsed_ready, reset),
        cmocka_unit_test_setup(test_header_as_cxx, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
