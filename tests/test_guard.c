/* Device and stream guards: nesting, restore on every exit path, per-thread state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "test_util.h"

static bp_stream *default_stream(bp_device *dev) {
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_default(dev, &s));
    return s;
}

static void test_defaults_without_guard(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    assert_ptr_equal(bp_current_device(), cpu);
    assert_ptr_equal(bp_current_stream(cpu), default_stream(cpu));
    assert_null(bp_current_stream(NULL));
}

static void test_stream_guard_nests_and_restores(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_stream *a = NULL, *b = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &a));
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &b));

    bp_stream_guard outer, inner;
    BP_ASSERT_OK(bp_stream_guard_begin(&outer, a));
    assert_ptr_equal(bp_current_stream(cpu), a);
    BP_ASSERT_OK(bp_stream_guard_begin(&inner, b));
    assert_ptr_equal(bp_current_stream(cpu), b);
    bp_stream_guard_end(&inner);
    assert_ptr_equal(bp_current_stream(cpu), a);
    bp_stream_guard_end(&inner); /* idempotent */
    assert_ptr_equal(bp_current_stream(cpu), a);
    bp_stream_guard_end(&outer);
    assert_ptr_equal(bp_current_stream(cpu), default_stream(cpu));

    BP_ASSERT_OK(bp_stream_destroy(a));
    BP_ASSERT_OK(bp_stream_destroy(b));
}

static void test_guard_errors_leave_state_alone(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_device_guard dg;
    BP_ASSERT_ERR(bp_device_guard_begin(&dg, NULL), BP_ERR_INVALID_ARGUMENT, "device is NULL");
    bp_device_guard_end(&dg); /* inactive: no-op */
    assert_ptr_equal(bp_current_device(), cpu);
    BP_ASSERT_ERR(bp_device_guard_begin(NULL, cpu), BP_ERR_INVALID_ARGUMENT, "guard is NULL");

    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &s));
    BP_ASSERT_OK(bp_stream_destroy(s));
    bp_stream_guard sg;
    BP_ASSERT_ERR(bp_stream_guard_begin(&sg, s), BP_ERR_INVALID_ARGUMENT, "destroyed");
    bp_stream_guard_end(&sg);
    assert_ptr_equal(bp_current_stream(cpu), default_stream(cpu));
}

/* Leaves through an early return from inside a nested block: the scoped guard must
 * still restore. Returns what was current inside. */
static bp_stream *scoped_early_return(bp_stream *s, int depth) {
    bp_status st;
    BP_STREAM_GUARD(s, &st);
    if (st != BP_OK)
        return NULL;
    for (int i = 0;; i++) {
        if (i == depth)
            return bp_current_stream(bp_stream_device(s));
    }
}

static void test_scoped_guard_restores_on_return(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, -1, &s));
    assert_ptr_equal(scoped_early_return(s, 3), s);
    assert_ptr_equal(bp_current_stream(cpu), default_stream(cpu));
    {
        bp_status st;
        BP_DEVICE_GUARD(cpu, &st);
        BP_ASSERT_OK(st);
        assert_ptr_equal(bp_current_device(), cpu);
    }
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* A guarded stream is the one used by calls that take a NULL stream. */
static void test_null_stream_means_current(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &s));
    enum { N = 64 << 20 };
    void *dev = NULL;
    BP_ASSERT_OK(bp_memory_alloc(cpu, N, s, &dev));
    bp_stream_guard g;
    BP_ASSERT_OK(bp_stream_guard_begin(&g, s));
    /* Long work enqueued through the NULL stream lands on s. */
    for (int i = 0; i < 8; i++)
        BP_ASSERT_OK(bp_memory_set_async(cpu, dev, i, N, NULL));
    bp_status q = bp_stream_query(s);
    bp_stream_guard_end(&g);
    assert_true(q == BP_OK || q == BP_ERR_NOT_READY);
    BP_ASSERT_OK(bp_stream_synchronize(s));
    unsigned char last = 0;
    BP_ASSERT_OK(bp_memory_copy_async(&last, NULL, (char *)dev + N - 1, cpu, 1, s));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_int_equal(last, 7);
    BP_ASSERT_OK(bp_memory_free(cpu, dev));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

struct thread_arg {
    bp_stream *stream;
    int ok;
};

static void *guard_on_thread(void *p) {
    struct thread_arg *arg = p;
    bp_device *cpu = bp_stream_device(arg->stream);
    bp_stream_guard g;
    arg->ok = bp_stream_guard_begin(&g, arg->stream) == BP_OK &&
              bp_current_stream(cpu) == arg->stream;
    bp_stream_guard_end(&g);
    return NULL;
}

static void test_guards_are_per_thread(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_stream *mine = NULL, *theirs = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &mine));
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &theirs));
    bp_stream_guard g;
    BP_ASSERT_OK(bp_stream_guard_begin(&g, mine));
    struct thread_arg arg = {theirs, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, guard_on_thread, &arg), 0);
    pthread_join(t, NULL);
    assert_true(arg.ok);
    assert_ptr_equal(bp_current_stream(cpu), mine);
    bp_stream_guard_end(&g);
    BP_ASSERT_OK(bp_stream_destroy(mine));
    BP_ASSERT_OK(bp_stream_destroy(theirs));
}

static void child_guard_across_devices(void *arg) {
    (void)arg;
    bp_device *cpu = NULL, *t1 = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    CHILD_CHECK(bp_device_open("testdev:1", &t1) == BP_OK);
    bp_device_guard outer, inner;
    CHILD_CHECK(bp_device_guard_begin(&outer, t1) == BP_OK);
    CHILD_CHECK(bp_current_device() == t1);
    CHILD_CHECK(bp_device_guard_begin(&inner, cpu) == BP_OK);
    CHILD_CHECK(bp_current_device() == cpu);
    bp_device_guard_end(&inner);
    CHILD_CHECK(bp_current_device() == t1);
    bp_device_guard_end(&outer);
    CHILD_CHECK(bp_current_device() == cpu);
}

static void test_device_guard_across_backends(void **state) {
    (void)state;
    const char *const env[] = {"BP_PLUGIN_PATH=" BP_TEST_PLUGIN_DIR "/good", NULL};
    assert_int_equal(bp_test_run_child(child_guard_across_devices, NULL, env), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* First: its child must not inherit an initialised registry. */
        cmocka_unit_test(test_device_guard_across_backends),
        cmocka_unit_test(test_defaults_without_guard),
        cmocka_unit_test(test_stream_guard_nests_and_restores),
        cmocka_unit_test(test_guard_errors_leave_state_alone),
        cmocka_unit_test(test_scoped_guard_restores_on_return),
        cmocka_unit_test(test_null_stream_means_current),
        cmocka_unit_test(test_guards_are_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
