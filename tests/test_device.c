/* Device names, enumeration, properties and the process default device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static void test_open_by_name_variants(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    static const char *const same[] = {"cpu", "CPU", "cpu:0", "Cpu:0", "cpu:000"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        bp_device *dev = NULL;
        BP_ASSERT_OK(bp_device_open(same[i], &dev));
        assert_ptr_equal(dev, cpu);
    }
    assert_string_equal(bp_device_name(cpu), "cpu:0");
}

static void test_bad_names(void **state) {
    (void)state;
    bp_device *dev = NULL;
    BP_ASSERT_ERR(bp_device_open(NULL, &dev), BP_ERR_INVALID_ARGUMENT, "name is NULL");
    BP_ASSERT_ERR(bp_device_open("cpu", NULL), BP_ERR_INVALID_ARGUMENT, "out_device is NULL");
    BP_ASSERT_ERR(bp_device_open("", &dev), BP_ERR_INVALID_ARGUMENT, "empty device name");
    BP_ASSERT_ERR(bp_device_open("cpu:", &dev), BP_ERR_INVALID_ARGUMENT, "malformed device index");
    BP_ASSERT_ERR(bp_device_open("cpu:x", &dev), BP_ERR_INVALID_ARGUMENT, "malformed device index");
    BP_ASSERT_ERR(bp_device_open("cpu:0:1", &dev), BP_ERR_INVALID_ARGUMENT, "malformed");
    /* The index is decimal digits, with an optional '-' and nothing else around them. */
    static const char *const malformed[] = {"cpu: 1", "cpu:1 ", "cpu:+1", "cpu:-", "cpu:--1",
                                            "cpu:1-", "cpu:0x1", "cpu:1e3", "cpu:\t1"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        BP_ASSERT_ERR(bp_device_open(malformed[i], &dev), BP_ERR_INVALID_ARGUMENT,
                      "malformed device index");
    BP_ASSERT_ERR(bp_device_open(" cpu", &dev), BP_ERR_INVALID_ARGUMENT, "malformed device name");
    BP_ASSERT_ERR(bp_device_open("c-pu", &dev), BP_ERR_INVALID_ARGUMENT, "malformed device name");
    char longname[200];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    BP_ASSERT_ERR(bp_device_open(longname, &dev), BP_ERR_INVALID_ARGUMENT, "too long");
    /* Unknown type: the message lists the types that exist. */
    BP_ASSERT_ERR(bp_device_open("tpu:1", &dev), BP_ERR_NOT_FOUND, "unknown device type 'tpu'");
    BP_ASSERT_ERR(bp_device_open("tpu:1", &dev), BP_ERR_NOT_FOUND, "types present: cpu");
#ifndef __aarch64__
    /* The arm plugin is built for aarch64 targets only (docs/backends/arm.md): elsewhere
     * "arm" is an unknown type like any other. */
    BP_ASSERT_ERR(bp_device_open("arm:0", &dev), BP_ERR_NOT_FOUND, "unknown device type 'arm'");
#endif
    /* Index out of range: the message gives the count. */
    BP_ASSERT_ERR(bp_device_open("cpu:1", &dev), BP_ERR_NOT_FOUND, "has 1 device(s), cpu:0 to cpu:0");
}

/* As the header promises: an index out of range is BP_ERR_NOT_FOUND "out of range" with
 * the count, however far out (negative, beyond int), never "malformed". */
static void test_index_out_of_range(void **state) {
    (void)state;
    bp_device *dev = NULL;
    static const struct {
        const char *name, *index;
    } cases[] = {
        {"cpu:1", "1"},
        {"cpu:01", "01"}, /* leading zeros are allowed ("cpu:000" is cpu:0) */
        {"cpu:-1", "-1"},
        {"cpu:-0", "-0"}, /* a negative index is out of range, whatever its digits */
        {"cpu:99999999", "99999999"},
        {"CPU:2147483647", "2147483647"},
        {"cpu:2147483648", "2147483648"},
        {"cpu:99999999999", "99999999999"},
        {"cpu:-2147483649", "-2147483649"},
        {"cpu:123456789012345678901234567890123456789012345678901234",
         "123456789012345678901234567890123456789012345678901234"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char expected[160];
        snprintf(expected, sizeof expected, "index %s is out of range: backend 'cpu' has 1 "
                 "device(s), cpu:0 to cpu:0", cases[i].index);
        BP_ASSERT_ERR(bp_device_open(cases[i].name, &dev), BP_ERR_NOT_FOUND, expected);
    }
    /* An unknown type is reported as such, whatever the index. */
    BP_ASSERT_ERR(bp_device_open("tpu:99999999999", &dev), BP_ERR_NOT_FOUND,
                  "unknown device type 'tpu'");
}

static void test_enumeration(void **state) {
    (void)state;
    int count = bp_device_count();
    assert_true(count >= 1);
    bp_device *first = NULL;
    BP_ASSERT_OK(bp_device_get(0, &first));
    assert_ptr_equal(first, bp_test_cpu());
    for (int i = 0; i < count; i++) {
        bp_device *dev = NULL;
        BP_ASSERT_OK(bp_device_get(i, &dev));
        bp_device *again = NULL;
        BP_ASSERT_OK(bp_device_open(bp_device_name(dev), &again));
        assert_ptr_equal(dev, again);
    }
    bp_device *dev = NULL;
    BP_ASSERT_ERR(bp_device_get(count, &dev), BP_ERR_NOT_FOUND, "no device at ordinal");
    BP_ASSERT_ERR(bp_device_get(-1, &dev), BP_ERR_NOT_FOUND, "no device at ordinal -1");
    BP_ASSERT_ERR(bp_device_get(0, NULL), BP_ERR_INVALID_ARGUMENT, "NULL");
}

static void test_props(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_device_props props = {.struct_size = sizeof props};
    BP_ASSERT_OK(bp_device_get_props(cpu, &props));
    assert_string_equal(props.name, "cpu:0");
    assert_string_equal(props.type, "cpu");
    assert_int_equal(props.index, 0);
    assert_string_equal(props.backend_name, "cpu");
    assert_string_equal(props.backend_version, BP_VERSION_STRING);
    assert_true(strlen(props.description) > 0);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    assert_int_equal(props.total_memory, (uint64_t)pages * (uint64_t)page);
    assert_true(props.free_memory > 0 && props.free_memory <= props.total_memory);
    assert_true(props.capabilities & BP_CAP_ASYNC_STREAMS);
    assert_true(props.capabilities & BP_CAP_TIMED_EVENTS);
    assert_int_equal(props.dtypes, (1u << BP_DTYPE_COUNT) - 1);
    assert_true(props.stream_priority_greatest <= props.stream_priority_least);

    /* An older caller with a smaller struct gets only its fields written. */
    unsigned char buf[sizeof(bp_device_props) + 16];
    memset(buf, 0xAB, sizeof buf);
    bp_device_props *small = (bp_device_props *)buf;
    small->struct_size = (uint32_t)offsetof(bp_device_props, backend_name);
    BP_ASSERT_OK(bp_device_get_props(cpu, small));
    assert_string_equal(small->name, "cpu:0");
    for (size_t i = offsetof(bp_device_props, backend_name); i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xAB);

    bp_device_props bad = {.struct_size = 0};
    BP_ASSERT_ERR(bp_device_get_props(cpu, &bad), BP_ERR_INVALID_ARGUMENT, "struct_size");
    bad.struct_size = sizeof bad + 100;
    BP_ASSERT_ERR(bp_device_get_props(cpu, &bad), BP_ERR_INVALID_ARGUMENT, "struct_size");
    BP_ASSERT_ERR(bp_device_get_props(NULL, &props), BP_ERR_INVALID_ARGUMENT, "device is NULL");
}

static void test_synchronize(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_device_synchronize(bp_test_cpu()));
    BP_ASSERT_ERR(bp_device_synchronize(NULL), BP_ERR_INVALID_ARGUMENT, "NULL");
}

static void child_default_is(void *arg) {
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_default(&dev) == BP_OK);
    CHILD_CHECK(strcmp(bp_device_name(dev), (const char *)arg) == 0);
}

static void child_default_fails(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_default(&dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(strstr(bp_last_error(), "BP_DEVICE") != NULL);
    CHILD_CHECK(strstr(bp_last_error(), "types present: cpu") != NULL);
}

static void child_default_out_of_range(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_default(&dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(strcmp(bp_last_error(), "BP_DEVICE: device 'cpu:99999999999' not found: index "
                       "99999999999 is out of range: backend 'cpu' has 1 device(s), cpu:0 to "
                       "cpu:0") == 0);
}

static void test_default_device_from_environment(void **state) {
    (void)state;
    const char *const unset[] = {"BP_DEVICE=", NULL};
    assert_int_equal(bp_test_run_child(child_default_is, "cpu:0", unset), 0);
    const char *const upper[] = {"BP_DEVICE=CPU:0", NULL};
    assert_int_equal(bp_test_run_child(child_default_is, "cpu:0", upper), 0);
    const char *const bad[] = {"BP_DEVICE=warp9:2", NULL};
    assert_int_equal(bp_test_run_child(child_default_fails, NULL, bad), 0);
    const char *const far[] = {"BP_DEVICE=cpu:99999999999", NULL};
    assert_int_equal(bp_test_run_child(child_default_out_of_range, NULL, far), 0);
    const char *const plugin[] = {"BP_PLUGIN_PATH=" BP_TEST_PLUGIN_DIR "/good",
                                  "BP_DEVICE=tdev:1", NULL};
    assert_int_equal(bp_test_run_child(child_default_is, "testdev:1", plugin), 0);
}

/* Every capability bit has one distinct name; anything else has none. */
static void test_capability_names(void **state) {
    (void)state;
    static const uint32_t bits[] = {BP_CAP_ASYNC_STREAMS, BP_CAP_TIMED_EVENTS, BP_CAP_PEER_COPY,
                                    BP_CAP_REGIONS,       BP_CAP_PINNED_HOST,  BP_CAP_REGION_STREAMS,
                                    BP_CAP_MODELLED_TIME};
    enum { N = sizeof bits / sizeof bits[0] };
    for (size_t i = 0; i < N; i++) {
        const char *name = bp_capability_name(bits[i]);
        assert_non_null(name);
        assert_true(name[0] != '\0');
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(name, bp_capability_name(bits[j]));
    }
    assert_string_equal(bp_capability_name(BP_CAP_TIMED_EVENTS), "timed_events");
    assert_null(bp_capability_name(0));
    assert_null(bp_capability_name(BP_CAP_ASYNC_STREAMS | BP_CAP_PEER_COPY));
    assert_null(bp_capability_name(1u << 31));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* First: its children must not inherit an initialised registry. */
        cmocka_unit_test(test_default_device_from_environment),
        cmocka_unit_test(test_open_by_name_variants),
        cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_index_out_of_range),
        cmocka_unit_test(test_enumeration),
        cmocka_unit_test(test_props),
        cmocka_unit_test(test_synchronize),
        cmocka_unit_test(test_capability_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
