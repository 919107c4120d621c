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
    /* A gate and work launched through the NULL stream land on s: s is held, and the
     * default stream is not. */
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, NULL));
    for (int i = 0; i < 8; i++)
        BP_ASSERT_OK(bp_memory_set_async(cpu, dev, i, N, NULL));
    bp_status q = bp_stream_query(s);
    bp_stream_guard_end(&g);
    assert_int_equal(q, BP_ERR_NOT_READY);
    bp_stream *def = NULL;
    BP_ASSERT_OK(bp_stream_default(cpu, &def));
    BP_ASSERT_OK(bp_stream_synchronize(def)); /* would hang if the gate were on it */
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(s));
    bp_conf_gate_destroy(&gate, 1);
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

/* ---- the backend's own current device (bp_device_backend_current), on bp-broken ---- */

#define BROKEN_ENV "BP_PLUGIN_PATH=" BP_TEST_PLUGIN_DIR "/broken"

static bp_device *open_device(const char *name) {
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open(name, &dev) == BP_OK);
    return dev;
}

/* The device the backend of `dev` reports current, asserting that it reports one. */
static bp_device *backend_current(bp_device *dev) {
    bp_device *current = (bp_device *)&current; /* must be overwritten */
    CHILD_CHECK(bp_device_backend_current(dev, &current) == BP_OK);
    return current;
}

static void child_backend_current_errors(void *arg) {
    bp_device *cpu = open_device("cpu"), *b0 = open_device("broken:0");
    bp_device *out = cpu;
    CHILD_CHECK(bp_device_backend_current(NULL, &out) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "device is NULL") && out == NULL);
    CHILD_CHECK(bp_device_backend_current(b0, NULL) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "out_device is NULL"));
    /* The cpu backend has no guard table: it does not report a current device. */
    out = cpu;
    CHILD_CHECK(bp_device_backend_current(cpu, &out) == BP_ERR_UNSUPPORTED);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "backend 'cpu'") && out == NULL);
    /* No guard has made a broken device current on this thread yet. */
    out = cpu;
    CHILD_CHECK(bp_device_backend_current(b0, &out) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "backend 'broken' has no device current") &&
                out == NULL);
}

static void test_backend_current_errors(void **state) {
    const char *const env[] = {BROKEN_ENV, "BP_BROKEN_DEFECT=", NULL};
    assert_int_equal(bp_test_run_child(child_backend_current_errors, NULL, env), 0);
}

struct current_seen {
    bp_device *device;
    bp_status before, inside;
    bp_device *seen;
};

/* A fresh thread has no current device in the backend until its own guard. */
static void *current_on_thread(void *p) {
    struct current_seen *c = p;
    bp_device *ignored = NULL;
    c->before = bp_device_backend_current(c->device, &ignored);
    bp_device_guard g;
    c->inside = bp_device_guard_begin(&g, c->device);
    if (c->inside == BP_OK)
        c->inside = bp_device_backend_current(c->device, &c->seen);
    bp_device_guard_end(&g);
    return NULL;
}

static void child_backend_follows_guards(void *arg) {
    bp_device *cpu = open_device("cpu"), *b0 = open_device("broken:0"),
              *b1 = open_device("broken:1");
    bp_device_guard outer, inner, across;
    CHILD_CHECK(bp_device_guard_begin(&outer, b1) == BP_OK);
    CHILD_CHECK(backend_current(b0) == b1); /* any device of the backend asks it */
    CHILD_CHECK(bp_device_guard_begin(&inner, b0) == BP_OK);
    CHILD_CHECK(backend_current(b1) == b0);
    /* A guard of another backend leaves this one's notion alone; its end tells the
     * restored device's backend again. */
    CHILD_CHECK(bp_device_guard_begin(&across, cpu) == BP_OK);
    CHILD_CHECK(backend_current(b0) == b0);
    bp_device_guard_end(&across);
    CHILD_CHECK(backend_current(b0) == b0);
    /* The end of a guard restores a device of the same backend: set_current again. */
    bp_device_guard_end(&inner);
    CHILD_CHECK(bp_current_device() == b1 && backend_current(b0) == b1);

    /* Stream guards too, in the other direction. */
    bp_stream *s0 = NULL;
    CHILD_CHECK(bp_stream_create(b0, 0, &s0) == BP_OK);
    bp_stream_guard sg;
    CHILD_CHECK(bp_stream_guard_begin(&sg, s0) == BP_OK);
    CHILD_CHECK(backend_current(b0) == b0);
    bp_stream_guard_end(&sg);
    CHILD_CHECK(backend_current(b0) == b1);
    CHILD_CHECK(bp_stream_destroy(s0) == BP_OK);

    /* Per thread: another thread starts with none and sets its own. */
    struct current_seen seen = {.device = b0};
    pthread_t t;
    CHILD_CHECK(pthread_create(&t, NULL, current_on_thread, &seen) == 0);
    pthread_join(t, NULL);
    CHILD_CHECK(seen.before == BP_ERR_NOT_FOUND);
    CHILD_CHECK(seen.inside == BP_OK && seen.seen == b0);
    CHILD_CHECK(backend_current(b0) == b1);

    /* Ending the outermost guard leaves the backend's notion as it was (as a CUDA
     * context stays current). */
    bp_device_guard_end(&outer);
    CHILD_CHECK(backend_current(b0) == b1);
}

static void test_backend_follows_guards(void **state) {
    const char *const env[] = {BROKEN_ENV, "BP_BROKEN_DEFECT=", NULL};
    assert_int_equal(bp_test_run_child(child_backend_follows_guards, NULL, env), 0);
}

/* With its guard_no_restore defect, bp-broken ignores the switch back to device 0:
 * what bp_device_backend_current exists to reveal. */
static void child_backend_ignores_restore(void *arg) {
    bp_device *b0 = open_device("broken:0"), *b1 = open_device("broken:1");
    bp_device_guard outer, inner;
    CHILD_CHECK(bp_device_guard_begin(&outer, b0) == BP_OK);
    CHILD_CHECK(bp_device_guard_begin(&inner, b1) == BP_OK);
    bp_device_guard_end(&inner);
    CHILD_CHECK(bp_current_device() == b0);
    CHILD_CHECK(backend_current(b0) == b1);
    bp_device_guard_end(&outer);
}

static void test_backend_current_reveals_ignored_restore(void **state) {
    const char *const env[] = {BROKEN_ENV, "BP_BROKEN_DEFECT=guard_no_restore", NULL};
    assert_int_equal(bp_test_run_child(child_backend_ignores_restore, NULL, env), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* First: their children must not inherit an initialised registry. */
        cmocka_unit_test(test_device_guard_across_backends),
        cmocka_unit_test(test_backend_current_errors),
        cmocka_unit_test(test_backend_follows_guards),
        cmocka_unit_test(test_backend_current_reveals_ignored_restore),
        cmocka_unit_test(test_defaults_without_guard),
        cmocka_unit_test(test_stream_guard_nests_and_restores),
        cmocka_unit_test(test_guard_errors_leave_state_alone),
        cmocka_unit_test(test_scoped_guard_restores_on_return),
        cmocka_unit_test(test_null_stream_means_current),
        cmocka_unit_test(test_guards_are_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
