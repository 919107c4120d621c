/* The arm plugin (libbp_arm.so) as an application sees it; aarch64 builds only (under
 * qemu-user in the cross build). Each case loads the plugin in a forked child with its
 * own environment: BP_ARM_SVE_BITS failing closed, devices from a fixture topology,
 * "arm:5" on a two-cluster host, stream workers pinned to the device's cores with the
 * backend's SVE vector length, the features in the props, and the registration log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <asm/hwcap.h>
#include <linux/prctl.h>

#include "test_util.h"

#define FIXTURES BP_TEST_SOURCE_DIR "/fixtures/arm-sysfs/"
#define PLUGIN_PATH "BP_PLUGIN_PATH=" BP_ARM_PLUGIN_DIR

static void run_in_child(void (*fn)(void *), void *arg, const char *const *env) {
    assert_int_equal(bp_test_run_child(fn, arg, env), 0);
}

static bool has_sve(void) {
    return (getauxval(AT_HWCAP) & HWCAP_SVE) != 0;
}

/* The SVE length in bits a thread gets when it asks for `bits`. */
static void *try_length(void *arg) {
    unsigned *bits = arg;
    prctl(PR_SVE_SET_VL, *bits / 8u, 0, 0, 0);
    *bits = (unsigned)(prctl(PR_SVE_GET_VL, 0, 0, 0, 0) & PR_SVE_VL_LEN_MASK) * 8u;
    return NULL;
}

static unsigned length_given_for(unsigned bits) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, try_length, &bits), 0);
    pthread_join(t, NULL);
    return bits;
}

static const bp_plugin_info *arm_info(bp_plugin_info *info) {
    for (int i = 0; i < bp_plugin_count(); i++) {
        info->struct_size = sizeof *info;
        if (bp_plugin_get_info(i, info) == BP_OK && strcmp(info->name, "arm") == 0)
            return info;
    }
    return NULL;
}

/* ---- BP_ARM_SVE_BITS fails closed ---- */

static void child_sve_refused(void *arg) {
    const char *expected = arg;
    bp_plugin_info info;
    CHILD_CHECK(arm_info(&info) != NULL);
    CHILD_CHECK(info.state == BP_PLUGIN_LOADED && info.device_count == 0);
    if (!bp_test_contains(info.unavailable_reason, expected)) {
        fprintf(stderr, "unavailable_reason '%s' lacks '%s'\n", info.unavailable_reason,
                expected);
        _exit(1);
    }
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("arm:0", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "arm"));
}

static void refuse(const char *value, const char *expected) {
    char var[64];
    snprintf(var, sizeof var, "BP_ARM_SVE_BITS=%s", value);
    const char *env[] = {PLUGIN_PATH, var, NULL};
    run_in_child(child_sve_refused, (void *)expected, env);
}

static void test_sve_bits_malformed(void **state) {
    static const char *const bad[] = {"abc", "0", "96", "100", "4096", "256x", " 256", "-128",
                                      "0x100"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refuse(bad[i], "is not a multiple of 128 from 128 to 2048");
}

static void test_sve_bits_unsupported(void **state) {
    if (!has_sve()) {
        refuse("256", "this CPU has no SVE");
        return;
    }
    /* The first three lengths up to 2048 that this CPU cannot run (384 on most CPUs: not
     * a power of two). */
    int refused = 0;
    for (unsigned bits = 128; bits <= 2048 && refused < 3; bits += 128) {
        unsigned got = length_given_for(bits);
        if (got == bits)
            continue;
        char expected[96];
        snprintf(expected, sizeof expected, "cannot run SVE at %u bits", bits);
        char value[16];
        snprintf(value, sizeof value, "%u", bits);
        refuse(value, expected);
        refused++;
    }
    if (refused == 0) {
        print_message("skipped: this CPU runs every SVE length from 128 to 2048\n");
        skip();
    }
}

/* A length the CPU runs: the backend's threads (stream workers) get it; the caller's
 * own thread keeps its own. */
static void read_length(void *arg) {
    *(unsigned *)arg = (unsigned)(prctl(PR_SVE_GET_VL, 0, 0, 0, 0) & PR_SVE_VL_LEN_MASK) * 8u;
}

static void child_sve_applied(void *arg) {
    unsigned bits = *(const unsigned *)arg, before = 0, seen = 0;
    read_length(&before);
    bp_device *dev = NULL;
    bp_stream *s = NULL;
    CHILD_CHECK(bp_device_open("arm:0", &dev) == BP_OK);
    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
    char word[32];
    snprintf(word, sizeof word, "sve_bits=%u", bits);
    CHILD_CHECK(bp_test_contains(props.features, word));
    CHILD_CHECK(bp_stream_create(dev, 0, &s) == BP_OK);
    CHILD_CHECK(bp_stream_launch_host_func(s, read_length, &seen) == BP_OK);
    CHILD_CHECK(bp_stream_synchronize(s) == BP_OK);
    CHILD_CHECK(seen == bits);
    unsigned after = 0;
    read_length(&after);
    CHILD_CHECK(after == before);
    CHILD_CHECK(bp_stream_destroy(s) == BP_OK);
}

static void test_sve_bits_applied(void **state) {
    if (!has_sve()) {
        print_message("skipped: this CPU has no SVE\n");
        skip();
    }
    unsigned bits = 128; /* every SVE CPU runs 128 */
    const char *env[] = {PLUGIN_PATH, "BP_ARM_SVE_BITS=128", NULL};
    run_in_child(child_sve_applied, &bits, env);
}

/* ---- devices from a topology tree ---- */

static void child_rk3399(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(arm_info(&info) != NULL && info.device_count == 2);
    bp_device *dev = NULL;
    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_open("arm:0", &dev) == BP_OK);
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
    CHILD_CHECK(strcmp(props.description, "2x Cortex-A72 @ capacity 1024") == 0);
    CHILD_CHECK(bp_test_contains(props.features, "asimd"));
    CHILD_CHECK(props.capabilities & BP_CAP_ASYNC_STREAMS);
    CHILD_CHECK(bp_device_open("arm:1", &dev) == BP_OK);
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
    CHILD_CHECK(strcmp(props.description, "4x Cortex-A53 @ capacity 485") == 0);
    /* The usual unknown-index error. */
    CHILD_CHECK(bp_device_open("arm:5", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "index 5 is out of range"));
}

static void test_devices_from_fixture(void **state) {
    const char *env[] = {PLUGIN_PATH, "BP_ARM_SYSFS_ROOT=" FIXTURES "board-rk3399", NULL};
    run_in_child(child_rk3399, NULL, env);
}

static void child_fallback(void *arg) {
    bp_test_capture_begin();
    int count = bp_device_count();
    char *log = bp_test_capture_end();
    CHILD_CHECK(count > 0);
    bp_plugin_info info;
    CHILD_CHECK(arm_info(&info) != NULL && info.device_count == 1);
    CHILD_CHECK(bp_test_contains(log, "garbage-capacity/cpu2/cpu_capacity: 'fast' is not"));
    CHILD_CHECK(bp_test_contains(log, "one device of all online cores"));
    free(log);
}

static void test_malformed_topology_falls_back(void **state) {
    const char *env[] = {PLUGIN_PATH, "BP_ARM_SYSFS_ROOT=" FIXTURES "garbage-capacity", NULL};
    run_in_child(child_fallback, NULL, env);
}

/* ---- stream workers pinned to the device's cores ---- */

static void read_affinity(void *arg) {
    sched_getaffinity(0, sizeof(cpu_set_t), arg);
}

/* arm:0 of the fixture is cpu1 alone (the big core), arm:1 cpu0. */
static void child_pinned(void *arg) {
    for (int index = 0; index < 2; index++) {
        char name[16];
        snprintf(name, sizeof name, "arm:%d", index);
        bp_device *dev = NULL;
        bp_stream *s = NULL;
        CHILD_CHECK(bp_device_open(name, &dev) == BP_OK);
        CHILD_CHECK(bp_stream_create(dev, 0, &s) == BP_OK);
        cpu_set_t seen;
        CPU_ZERO(&seen);
        CHILD_CHECK(bp_stream_launch_host_func(s, read_affinity, &seen) == BP_OK);
        CHILD_CHECK(bp_stream_synchronize(s) == BP_OK);
        CHILD_CHECK(CPU_COUNT(&seen) == 1 && CPU_ISSET(1 - index, &seen));
        CHILD_CHECK(bp_stream_destroy(s) == BP_OK);
    }
}

static void test_streams_pinned(void **state) {
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (!CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed)) {
        print_message("skipped: this process may not run on both cpu0 and cpu1\n");
        skip();
    }
    const char *env[] = {PLUGIN_PATH, "BP_ARM_SYSFS_ROOT=" FIXTURES "big-little-two-cores", NULL};
    run_in_child(child_pinned, NULL, env);
}

/* ---- the registration log ---- */

/* Every line "arm: kernel <op> <dtype>: <variant>" names a known op and dtype and a
 * variant, and each (op, dtype) the host has a reference kernel for is registered. */
static void child_registration_log(void *arg) {
    bp_test_capture_begin();
    CHILD_CHECK(bp_device_count() > 0);
    char *log = bp_test_capture_end();
    int lines = 0;
    for (const char *p = strstr(log, "arm: kernel "); p; p = strstr(p + 1, "arm: kernel ")) {
        char op[64], dtype[16], variant[64];
        CHILD_CHECK(sscanf(p, "arm: kernel %63s %15[^:]: %63s", op, dtype, variant) == 3);
        bp_op_id id;
        CHILD_CHECK(bp_op_find(op, &id) == BP_OK);
        bool known = false;
        for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
            known = known || strcmp(bp_dtype_name((bp_dtype)dt), dtype) == 0;
        CHILD_CHECK(known && variant[0] != '\0');
        lines++;
    }
    CHILD_CHECK(bp_test_contains(log, "arm: kernel add f32: "));
    CHILD_CHECK(bp_test_contains(log, "arm: kernel matmul bf16: "));
    CHILD_CHECK(lines >= 50);
    free(log);
}

static void test_registration_logged(void **state) {
    const char *env[] = {PLUGIN_PATH, "BP_LOG=debug", NULL};
    run_in_child(child_registration_log, NULL, env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sve_bits_malformed),
        cmocka_unit_test(test_sve_bits_unsupported),
        cmocka_unit_test(test_sve_bits_applied),
        cmocka_unit_test(test_devices_from_fixture),
        cmocka_unit_test(test_malformed_topology_falls_back),
        cmocka_unit_test(test_streams_pinned),
        cmocka_unit_test(test_registration_logged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
