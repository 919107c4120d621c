/* The rocm plugin (backends/rocm, docs/backends/rocm.md) against the stand-in HIP
 * runtime (fake_libamdhip64.c, named by BP_ROCM_LIBRARY; tests/rocm/rocm.cmake): the
 * GPU core driven through the HIP table without an AMD GPU. The fake's devices are
 * host memory and its calls complete at once, so what these tests check is the table's
 * plumbing (arguments, directions, results and their texts), not a GPU's behaviour:
 * the device type and its alias, the description (arch without feature suffixes),
 * copies and memsets landing where they should, streams, events and host functions,
 * out of memory, a module the runtime refuses, and an op's launch reaching the runtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../test_util.h"

static bp_device *rocm(void) {
    bp_device *dev = NULL;
    BP_ASSERT_OK(bp_device_open("rocm:0", &dev));
    return dev;
}

/* A call that failed in the runtime: its status, and an error naming the runtime's
 * function and result (printed, for the log). */
static void expect_runtime_error(bp_status st, bp_status want, const char *call,
                                 const char *result) {
    if (st != want)
        fail_msg("%s, expected %s (%s)", bp_status_str(st), bp_status_str(want), bp_last_error());
    if (!bp_test_contains(bp_last_error(), call) || !bp_test_contains(bp_last_error(), result))
        fail_msg("'%s' lacks %s or %s", bp_last_error(), call, result);
    print_message("%s\n", bp_last_error());
}

static void test_alias_and_props(void **state) {
    (void)state;
    bp_device *by_alias = NULL;
    BP_ASSERT_OK(bp_device_open("hip:0", &by_alias));
    assert_ptr_equal(by_alias, rocm());
    bp_device_props p = {.struct_size = sizeof p};
    BP_ASSERT_OK(bp_device_get_props(by_alias, &p));
    assert_string_equal(p.type, "rocm");
    if (!bp_test_contains(p.description, "Fake AMD Instinct 0") ||
        !bp_test_contains(p.description, "gfx90a") || bp_test_contains(p.description, "sramecc"))
        fail_msg("description '%s': expected the fake's name and gfx90a without features",
                 p.description);
    assert_int_equal(p.total_memory, 64ull << 20);
    uint32_t want = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_PINNED_HOST;
    assert_int_equal(p.capabilities & want, want);
}

/* Host to device, a memset inside, device to device, device to host: each lands where
 * it should (the fake copies at once, so any swapped argument shows). */
static void test_copies_and_memset(void **state) {
    (void)state;
    enum { N = 4096 };
    bp_device *dev = rocm();
    unsigned char *src = malloc(N), *back = malloc(N), *want = malloc(N);
    assert_non_null(src);
    assert_non_null(back);
    assert_non_null(want);
    bp_test_fill_random(src, N, 7);
    void *a = NULL, *b = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, N, NULL, &a));
    BP_ASSERT_OK(bp_memory_alloc(dev, N, NULL, &b));
    BP_ASSERT_OK(bp_memory_copy_async(a, dev, src, NULL, N, NULL));
    BP_ASSERT_OK(bp_memory_set_async(dev, (char *)a + 100, 0x5a, 200, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(b, dev, a, dev, N, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(back, NULL, b, dev, N, NULL));
    BP_ASSERT_OK(bp_device_synchronize(dev));
    memcpy(want, src, N);
    memset(want + 100, 0x5a, 200);
    assert_memory_equal(back, want, N);
    BP_ASSERT_OK(bp_memory_free(dev, a));
    BP_ASSERT_OK(bp_memory_free(dev, b));
    free(src);
    free(back);
    free(want);
}

static void test_pinned_host_memory(void **state) {
    (void)state;
    bp_device *dev = rocm();
    void *host = NULL;
    BP_ASSERT_OK(bp_host_alloc(dev, 1 << 16, &host));
    assert_non_null(host);
    memset(host, 1, 1 << 16);
    BP_ASSERT_OK(bp_host_free(dev, host));
}

/* Two blocks of 40 MiB on the fake's 64 MiB: the second fails in the runtime (below the
 * device's total, so the allocator asks it), as BP_ERR_OUT_OF_MEMORY naming the call
 * and the runtime's result. */
static void test_out_of_memory(void **state) {
    (void)state;
    bp_device *dev = rocm();
    void *first = NULL, *second = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, (size_t)40 << 20, NULL, &first));
    expect_runtime_error(bp_memory_alloc(dev, (size_t)40 << 20, NULL, &second),
                         BP_ERR_OUT_OF_MEMORY, "hipMalloc", "hipErrorOutOfMemory: out of memory");
    assert_null(second);
    BP_ASSERT_OK(bp_memory_free(dev, first));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void set_flag(void *arg) {
    *(int *)arg = 1;
}

/* Streams with priorities, timing events, a wait, a host function: the fake completes
 * each at once, through the table's calls. */
static void test_streams_events_host_func(void **state) {
    (void)state;
    bp_device *dev = rocm();
    bp_stream *s = NULL, *t = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_stream_create(dev, -1, &t));
    bp_event *start = NULL, *end = NULL;
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &start));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &end));
    BP_ASSERT_OK(bp_event_record(start, s));
    int ran = 0;
    BP_ASSERT_OK(bp_stream_launch_host_func(s, set_flag, &ran));
    BP_ASSERT_OK(bp_event_record(end, s));
    BP_ASSERT_OK(bp_stream_wait_event(t, end));
    BP_ASSERT_OK(bp_stream_synchronize(t));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_int_equal(ran, 1);
    BP_ASSERT_OK(bp_event_query(end));
    BP_ASSERT_OK(bp_event_synchronize(end));
    float ms = -1.0f;
    BP_ASSERT_OK(bp_event_elapsed_ms(start, end, &ms));
    assert_true(ms >= 0.0f);
    BP_ASSERT_OK(bp_stream_query(s));
    BP_ASSERT_OK(bp_event_destroy(start));
    BP_ASSERT_OK(bp_event_destroy(end));
    BP_ASSERT_OK(bp_stream_destroy(s));
    BP_ASSERT_OK(bp_stream_destroy(t));
}

/* Run with FAKE_HIP_MODULE_ERROR=209 and a plugin that embeds (stand-in) images: the
 * device does not open, and the error names the call and the runtime's result. */
static void test_module_load_failure(void **state) {
    (void)state;
    bp_device *dev = NULL;
    expect_runtime_error(bp_device_open("rocm:0", &dev), BP_ERR_BACKEND, "hipModuleLoadData",
                         "hipErrorNoBinaryForGpu");
}

/* Run with a plugin that has kernels (the stand-in images will do): an op reaches
 * hipModuleGetFunction and hipModuleLaunchKernel, whose failure in the stand-in comes
 * back as the op's error, never as a silent result. */
static void test_launch_reaches_runtime(void **state) {
    (void)state;
    bp_device *dev = rocm();
    int64_t shape[1] = {1000};
    bp_tensor *a = NULL, *b = NULL, *c = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &a));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &b));
    expect_runtime_error(bp_add(a, b, &c), BP_ERR_BACKEND, "hipModuleLaunchKernel",
                         "hipErrorNotSupported");
    bp_tensor_release(a);
    bp_tensor_release(b);
}

/* The tests that need an environment of their own (rocm.cmake), each run alone by its
 * argument. */
static const struct {
    const char *argument;
    CMUnitTestFunction test;
} alone[] = {
    {"module", test_module_load_failure},
    {"launch", test_launch_reaches_runtime},
};

int main(int argc, char **argv) {
    for (size_t i = 0; argc > 1 && i < sizeof alone / sizeof alone[0]; i++)
        if (strcmp(argv[1], alone[i].argument) == 0) {
            const struct CMUnitTest tests[] = {{alone[i].argument, alone[i].test, NULL, NULL, NULL}};
            return cmocka_run_group_tests(tests, NULL, NULL);
        }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alias_and_props),
        cmocka_unit_test(test_copies_and_memset),
        cmocka_unit_test(test_pinned_host_memory),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_streams_events_host_func),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
