/* Status names, the thread-local last error, dtype names and sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "test_util.h"

static void test_status_names(void **state) {
    (void)state;
    assert_string_equal(bp_status_str(BP_OK), "BP_OK");
    assert_string_equal(bp_status_str(BP_ERR_INVALID_ARGUMENT), "BP_ERR_INVALID_ARGUMENT");
    assert_string_equal(bp_status_str(BP_ERR_NOT_FOUND), "BP_ERR_NOT_FOUND");
    assert_string_equal(bp_status_str(BP_ERR_UNSUPPORTED), "BP_ERR_UNSUPPORTED");
    assert_string_equal(bp_status_str(BP_ERR_OUT_OF_MEMORY), "BP_ERR_OUT_OF_MEMORY");
    assert_string_equal(bp_status_str(BP_ERR_DEVICE_LOST), "BP_ERR_DEVICE_LOST");
    assert_string_equal(bp_status_str(BP_ERR_ABI_MISMATCH), "BP_ERR_ABI_MISMATCH");
    assert_string_equal(bp_status_str(BP_ERR_NOT_READY), "BP_ERR_NOT_READY");
    assert_string_equal(bp_status_str(BP_ERR_INTERNAL), "BP_ERR_INTERNAL");
    assert_string_equal(bp_status_str(BP_ERR_BACKEND), "BP_ERR_BACKEND");
    assert_string_equal(bp_status_str(BP_ERR_INVALID_STATE), "BP_ERR_INVALID_STATE");
    assert_string_equal(bp_status_str((bp_status)12345), "BP_ERR_UNKNOWN");
}

static void *fail_on_other_thread(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    bp_status st = bp_device_open("nosuchtype:3", &dev);
    return (void *)(intptr_t)(st == BP_ERR_NOT_FOUND && strstr(bp_last_error(), "nosuchtype"));
}

static void test_last_error_is_per_thread(void **state) {
    (void)state;
    bp_clear_error();
    assert_string_equal(bp_last_error(), "");
    pthread_t t;
    void *ok = NULL;
    assert_int_equal(pthread_create(&t, NULL, fail_on_other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &ok), 0);
    assert_true(ok != NULL);
    /* The other thread's failure left this thread's message alone. */
    assert_string_equal(bp_last_error(), "");
    bp_device *dev = NULL;
    BP_ASSERT_ERR(bp_device_open("cpu:7", &dev), BP_ERR_NOT_FOUND, "cpu:7");
    bp_clear_error();
    assert_string_equal(bp_last_error(), "");
}

static void test_dtypes(void **state) {
    (void)state;
    static const struct { bp_dtype dt; const char *name; size_t size; } expected[] = {
        {BP_DTYPE_F32, "f32", 4}, {BP_DTYPE_F16, "f16", 2}, {BP_DTYPE_BF16, "bf16", 2},
        {BP_DTYPE_F64, "f64", 8}, {BP_DTYPE_I8, "i8", 1},   {BP_DTYPE_U8, "u8", 1},
        {BP_DTYPE_I32, "i32", 4}, {BP_DTYPE_I64, "i64", 8}, {BP_DTYPE_BOOL, "bool", 1},
    };
    assert_int_equal(sizeof expected / sizeof expected[0], BP_DTYPE_COUNT);
    for (size_t i = 0; i < BP_DTYPE_COUNT; i++) {
        assert_string_equal(bp_dtype_name(expected[i].dt), expected[i].name);
        assert_int_equal(bp_dtype_size(expected[i].dt), expected[i].size);
    }
    assert_string_equal(bp_dtype_name(BP_DTYPE_COUNT), "invalid");
    assert_int_equal(bp_dtype_size((bp_dtype)-1), 0);
}

static void test_version(void **state) {
    (void)state;
    assert_string_equal(bp_version(), BP_VERSION_STRING);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
