/* Listing the ops (bp_op_count / bp_op_name, and the host services op_count / op_name
 * of ABI 1.4) and the attribute size each kernel call carries (bp_kernel_call's
 * attrs_size, ABI 1.4). Cases that load a plugin run in a forked child
 * (bp_test_run_child) and check with CHILD_CHECK. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <backplane/backplane.h>
#include <backplane/ops.h>

#include "test_util.h"

#define PLUGIN_DIR(name) BP_TEST_PLUGIN_DIR "/" name

/* ---- bp_op_count / bp_op_name ---- */

static void test_every_op_listed_once(void **state) {
    (void)state;
    int n = bp_op_count();
    assert_true(n >= 22); /* the built-in ops of <backplane/ops.h> */
    for (int i = 0; i < n; i++) {
        const char *name = bp_op_name(i);
        assert_non_null(name);
        bp_op_id found = -1;
        BP_ASSERT_OK(bp_op_find(name, &found));
        assert_int_equal(found, i);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(bp_op_name(j), name);
    }
    const char *builtin[] = {"fill", "copy", "add", "softmax", "rope", "matmul", "sdpa"};
    for (size_t k = 0; k < sizeof builtin / sizeof builtin[0]; k++) {
        bp_op_id id = -1;
        BP_ASSERT_OK(bp_op_find(builtin[k], &id));
        assert_true(id >= 0 && id < n);
    }
}

static void test_out_of_range_is_null(void **state) {
    (void)state;
    int n = bp_op_count();
    assert_null(bp_op_name(n));
    assert_null(bp_op_name(-1));
    assert_null(bp_op_name(INT32_MAX));
    assert_null(bp_op_name(INT32_MIN));
}

static void test_defined_op_joins_the_list(void **state) {
    (void)state;
    int before = bp_op_count();
    bp_op_id id = -1;
    BP_ASSERT_OK(bp_op_define("t_listed", 0, &id));
    assert_int_equal(bp_op_count(), before + 1);
    assert_int_equal(id, before);
    assert_string_equal(bp_op_name(id), "t_listed");
    /* Defining it again adds nothing. */
    BP_ASSERT_OK(bp_op_define("t_listed", 0, &id));
    assert_int_equal(bp_op_count(), before + 1);
}

/* ---- the host services, as a plugin sees them ---- */

/* The op_list test plugin (tests/plugins/broken_plugin.c, OP_LIST) reports as its
 * unavailable reason what host->op_count and host->op_name gave its init; it must be
 * the public list. */
static void child_host_services_list(void *arg) {
    (void)arg;
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("op_list") "/libbp_oplist.so") == BP_OK);
    char want[1024];
    int n = bp_op_count();
    size_t used = (size_t)snprintf(want, sizeof want, "%d:", n);
    for (int i = 0; i < n && used < sizeof want; i++)
        used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", i ? "," : "",
                                 bp_op_name(i));
    CHILD_CHECK(used < sizeof want);
    snprintf(want + used, sizeof want - used, ";op_name(count)=NULL;op_name(-1)=NULL");
    bool found = false;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHILD_CHECK(bp_plugin_get_info(i, &info) == BP_OK);
        if (strcmp(info.name, "oplist") != 0)
            continue;
        found = true;
        CHILD_CHECK(info.state == BP_PLUGIN_LOADED);
        if (strcmp(info.unavailable_reason, want) != 0) {
            fprintf(stderr, "plugin saw: %s\npublic API: %s\n", info.unavailable_reason, want);
            CHILD_CHECK(!"the host services list differs from bp_op_count/bp_op_name");
        }
    }
    CHILD_CHECK(found);
}

static void test_host_services_list(void **state) {
    (void)state;
    assert_int_equal(bp_test_run_child(child_host_services_list, NULL, NULL), 0);
}

/* ---- attrs_size in the kernel call ---- */

typedef struct seen_call {
    int calls;
    int has_field;    /* BP_CALL_HAS(call, attrs_size) */
    int had_attrs;
    size_t attrs_size;
} seen_call;

static bp_status capture_kernel(const bp_kernel_call *call) {
    seen_call *seen = call->kernel_data;
    seen->calls++;
    seen->has_field = BP_CALL_HAS(call, attrs_size);
    seen->had_attrs = call->attrs != NULL;
    seen->attrs_size = seen->has_field ? call->attrs_size : (size_t)-1;
    return BP_OK; /* computes nothing: only the record matters here */
}

/* Registers capture_kernel for `op` (f32) on testdev above its own kernels. */
static seen_call *capture(const char *op) {
    static seen_call slots[8];
    static int used;
    CHILD_CHECK(used < 8);
    seen_call *s = &slots[used++];
    CHILD_CHECK(bp_kernel_register("testdev", op, BP_DTYPE_F32, capture_kernel, s, 10) == BP_OK);
    return s;
}

static bp_tensor *tensor(bp_device *dev, int ndim, const int64_t *shape) {
    bp_tensor *t = NULL;
    CHILD_CHECK(bp_tensor_empty(dev, BP_DTYPE_F32, ndim, shape, &t) == BP_OK);
    return t;
}

static void expect_attrs(const seen_call *s, size_t size, const char *op) {
    if (s->calls != 1 || !s->has_field || s->had_attrs != (size != 0) || s->attrs_size != size) {
        fprintf(stderr, "%s: calls %d, has attrs_size %d, attrs %s, attrs_size %zu; expected %zu\n",
                op, s->calls, s->has_field, s->had_attrs ? "set" : "NULL", s->attrs_size, size);
        CHILD_CHECK(!"wrong attrs_size");
    }
}

static void child_attrs_size(void *arg) {
    (void)arg;
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("good") "/libbp_testdev.so") == BP_OK);
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("testdev:0", &dev) == BP_OK);
    seen_call *softmax = capture("softmax"), *sdpa = capture("sdpa"), *rope = capture("rope"),
              *fill = capture("fill"), *add = capture("add");

    const int64_t mat[2] = {2, 4}, rows[3] = {1, 2, 4}, heads[4] = {1, 1, 2, 4};
    bp_tensor *a = tensor(dev, 2, mat), *x = tensor(dev, 3, rows);
    bp_tensor *q = tensor(dev, 4, heads), *out = NULL;
    CHILD_CHECK(bp_softmax(a, 1.0f, 0, &out) == BP_OK);
    bp_tensor_release(out);
    bp_sdpa_attrs sa = {.scale = 0.5f};
    CHILD_CHECK(bp_sdpa(q, q, q, NULL, &sa, &out) == BP_OK);
    bp_tensor_release(out);
    bp_rope_attrs ra = {.theta = 10000.0f};
    CHILD_CHECK(bp_rope(x, &ra, &out) == BP_OK);
    bp_tensor_release(out);
    CHILD_CHECK(bp_fill(a, 1.0) == BP_OK);
    CHILD_CHECK(bp_add(a, a, &out) == BP_OK);
    bp_tensor_release(out);
    CHILD_CHECK(bp_device_synchronize(dev) == BP_OK);

    expect_attrs(softmax, sizeof(bp_softmax_attrs), "softmax");
    expect_attrs(sdpa, sizeof(bp_sdpa_attrs), "sdpa");
    expect_attrs(rope, sizeof(bp_rope_attrs), "rope");
    expect_attrs(fill, sizeof(bp_fill_attrs), "fill");
    expect_attrs(add, 0, "add");
    bp_tensor_release(a);
    bp_tensor_release(x);
    bp_tensor_release(q);
}

/* A record from a host older than ABI 1.4 ends before attrs_size: BP_CALL_HAS says so. */
static void test_call_has_guards_old_records(void **state) {
    (void)state;
    bp_kernel_call call;
    memset(&call, 0, sizeof call);
    call.struct_size = (uint32_t)offsetof(bp_kernel_call, attrs_size); /* a 1.3 record */
    assert_false(BP_CALL_HAS(&call, attrs_size));
    assert_true(BP_CALL_HAS(&call, kernel_data));
    call.struct_size = (uint32_t)sizeof call;
    assert_true(BP_CALL_HAS(&call, attrs_size));
}

static void test_kernel_sees_attrs_size(void **state) {
    (void)state;
    assert_int_equal(bp_test_run_child(child_attrs_size, NULL, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_listed_once),
        cmocka_unit_test(test_out_of_range_is_null),
        cmocka_unit_test(test_defined_op_joins_the_list),
        cmocka_unit_test(test_host_services_list),
        cmocka_unit_test(test_kernel_sees_attrs_size),
        cmocka_unit_test(test_call_has_guards_old_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
