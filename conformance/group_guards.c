/* Conformance group "guards": device and stream guards nest and restore, are per
 * thread, the scoped macros restore on every exit, and the backend's own notion of the
 * current device follows the guards and is per thread.
 *
 * A mismatch seen while guards are active is recorded (thread_report.h) and reported
 * only after the guards are ended, so that a failing test does not leave a guard in
 * force for the tests after it on the same thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "late.h"
#include "thread_report.h"

#define FILL_BYTES ((size_t)1 << 20)
/* Copies of bp_conf_slow_fill before a late write where the device cannot hold it. */
#define FALLBACK_ROUNDS 16
#define MAX_DEPTH 8

static const char *name_of(const bp_device *d) {
    return d ? bp_device_name(d) : "(none)";
}

static void expect_current_device(bp_conf_report *r, bp_device *want, const char *when) {
    bp_device *got = bp_current_device();
    if (got != want)
        bp_conf_report_fail(r, "%s: bp_current_device() is %s, expected %s", when, name_of(got),
                            name_of(want));
}

static void expect_current_stream(bp_conf_report *r, bp_stream *want, const char *when) {
    bp_stream *got = bp_current_stream(bp_conf.device);
    if (got != want)
        bp_conf_report_fail(r, "%s: bp_current_stream(%s) is %p, expected %p", when,
                            bp_conf.device_name, (void *)got, (void *)want);
}

static bp_stream *default_stream(void) {
    bp_stream *s = NULL;
    BP_CONF_OK(bp_stream_default(bp_conf.device, &s));
    return s;
}

/* Nested device guards over the device (and a second one of its type when there is
 * one): each begin makes its device current, each end restores the one before. */
static void test_nesting_restores(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device, *other = bp_conf_second_device();
    if (!other)
        other = dev;
    bp_device *base = bp_current_device();
    bp_stream *def = default_stream();
    bp_device *order[] = {dev, other, dev, other, other};
    enum { DEPTH = sizeof order / sizeof order[0] };
    bp_device_guard guards[DEPTH];
    bp_conf_report r = {0};
    char when[96];
    int depth = 0;
    for (; depth < DEPTH; depth++) {
        if (!BP_CONF_REPORT_OK(&r, bp_device_guard_begin(&guards[depth], order[depth])))
            break;
        snprintf(when, sizeof when, "inside guard %d (of %s)", depth + 1, name_of(order[depth]));
        expect_current_device(&r, order[depth], when);
        /* A device guard does not change the device's current stream. */
        expect_current_stream(&r, def, when);
    }
    while (depth > 0) {
        bp_device_guard_end(&guards[--depth]);
        bp_device *want = depth > 0 ? order[depth - 1] : base;
        snprintf(when, sizeof when, "after ending guard %d", depth + 1);
        expect_current_device(&r, want, when);
        bp_device_guard_end(&guards[depth]); /* idempotent */
        snprintf(when, sizeof when, "after ending guard %d a second time", depth + 1);
        expect_current_device(&r, want, when);
    }
    bp_conf_report_check(&r, "nested device guards");
}

/* A stream guard makes its stream current (and its device); calls with a NULL stream
 * go to it. The stream holds a late write first (late.h: behind a gate the test opens
 * after the guard's calls), so an upload or copy that went to another stream would run
 * before that write and be overwritten by it, or copy what it had not written yet.
 * Bytes are set with uploads, not memset: a memset defect fails memory.memset, not
 * this test. */
static void test_stream_guard(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    bp_device *base = bp_current_device();
    bp_stream *def = default_stream();
    bp_stream *s = bp_conf_stream(), *inner = bp_conf_stream(), *reader = bp_conf_stream();
    uint64_t rng = bp_conf_test_seed();
    int v1, v2;
    bp_conf_two_bytes(&rng, &v1, &v2);
    void *x = bp_conf_filled_buffer(s, FILL_BYTES, v1);
    void *y = bp_conf_filled_buffer(s, FILL_BYTES, v1);
    void *src = bp_conf_filled_buffer(s, FILL_BYTES, v1); /* what the late write copies */
    unsigned char *host_v2 = bp_conf_host_buffer(FILL_BYTES);
    memset(host_v2, v2, FILL_BYTES);
    bp_conf_late late;
    bp_conf_late_init(&late);

    bp_conf_report r = {0};
    BP_CONF_REPORT_OK(&r, bp_conf_late_write(&late, s, x, src, FILL_BYTES, v1, FALLBACK_ROUNDS));
    bp_stream_guard g, g_inner;
    void *z = NULL;
    if (BP_CONF_REPORT_OK(&r, bp_stream_guard_begin(&g, s))) {
        expect_current_stream(&r, s, "inside a stream guard");
        expect_current_device(&r, dev, "inside a stream guard");
        BP_CONF_REPORT_OK(&r, bp_memory_copy_async(x, dev, host_v2, NULL, FILL_BYTES, NULL));
        BP_CONF_REPORT_OK(&r, bp_memory_copy_async(y, dev, x, dev, FILL_BYTES, NULL));
        BP_CONF_REPORT_OK(&r, bp_memory_alloc(dev, FILL_BYTES, NULL, &z));
        if (z)
            BP_CONF_REPORT_OK(&r, bp_memory_copy_async(z, dev, y, dev, FILL_BYTES, NULL));
        if (BP_CONF_REPORT_OK(&r, bp_stream_guard_begin(&g_inner, inner))) {
            expect_current_stream(&r, inner, "inside a nested stream guard");
            bp_stream_guard_end(&g_inner);
            expect_current_stream(&r, s, "after ending a nested stream guard");
        }
        bp_stream_guard_end(&g);
        expect_current_stream(&r, def, "after ending the stream guard");
        expect_current_device(&r, base, "after ending the stream guard");
    }
    bp_conf_late_finish(&late); /* releases s before any check can end the test */
    bp_conf_report_check(&r, "stream guard");

    /* Wait for s and, in case the work went elsewhere, for every stream. */
    BP_CONF_OK(bp_stream_synchronize(s));
    BP_CONF_OK(bp_device_synchronize(dev));
    free(host_v2);
    bp_conf_expect_filled(reader, x, FILL_BYTES, v2, "upload with a NULL stream under a guard");
    bp_conf_expect_filled(reader, y, FILL_BYTES, v2, "copy with a NULL stream under a guard");
    bp_conf_expect_filled(reader, z, FILL_BYTES, v2,
                          "copy into memory allocated with a NULL stream under a guard");
    BP_CONF_OK(bp_memory_free(dev, x));
    BP_CONF_OK(bp_memory_free(dev, y));
    BP_CONF_OK(bp_memory_free(dev, z));
    BP_CONF_OK(bp_memory_free(dev, src));
    BP_CONF_OK(bp_stream_destroy(s));
    BP_CONF_OK(bp_stream_destroy(inner));
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* ---- guards are per thread ---- */

typedef struct per_thread {
    pthread_barrier_t both_guarded, main_checked;
    bp_device *expected_device; /* a new thread's current device: the process default */
    bp_device *guard_device;    /* the device the thread guards */
    bp_stream *def, *stream;    /* the device's default stream; the thread's stream */
    bp_conf_report report;
} per_thread;

static void *per_thread_main(void *p) {
    per_thread *t = p;
    bp_conf_report *r = &t->report;
    expect_current_device(r, t->expected_device, "a new thread, before any guard");
    expect_current_stream(r, t->def, "a new thread, before any guard");
    bp_device_guard dg;
    bp_stream_guard sg;
    bool device_ok = BP_CONF_REPORT_OK(r, bp_device_guard_begin(&dg, t->guard_device));
    bool stream_ok = BP_CONF_REPORT_OK(r, bp_stream_guard_begin(&sg, t->stream));
    pthread_barrier_wait(&t->both_guarded);
    if (stream_ok) {
        expect_current_stream(r, t->stream, "the thread's own stream guard, while the main "
                                            "thread holds another");
        expect_current_device(r, bp_conf.device, "the thread's own stream guard");
    }
    pthread_barrier_wait(&t->main_checked);
    if (stream_ok)
        bp_stream_guard_end(&sg);
    if (device_ok) {
        expect_current_device(r, t->guard_device, "after the thread's stream guard ended");
        bp_device_guard_end(&dg);
    }
    expect_current_device(r, t->expected_device, "after the thread's guards ended");
    expect_current_stream(r, t->def, "after the thread's guards ended");
    return NULL;
}

/* The main thread and a worker each hold guards of their own at the same time; neither
 * sees the other's. */
static void test_per_thread(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device, *other = bp_conf_second_device();
    bp_device *process_default = NULL;
    BP_CONF_OK(bp_device_default(&process_default));
    per_thread t = {
        .expected_device = process_default,
        .guard_device = other ? other : dev,
        .def = default_stream(),
        .stream = bp_conf_stream(),
    };
    bp_stream *mine = bp_conf_stream();
    pthread_barrier_init(&t.both_guarded, NULL, 2);
    pthread_barrier_init(&t.main_checked, NULL, 2);
    bp_conf_report r = {0};
    bp_stream_guard g;
    bool guarded = BP_CONF_REPORT_OK(&r, bp_stream_guard_begin(&g, mine));
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, per_thread_main, &t), 0);
    pthread_barrier_wait(&t.both_guarded);
    if (guarded) {
        expect_current_stream(&r, mine, "the main thread's guard, while another thread holds "
                                        "its own");
        expect_current_device(&r, dev, "the main thread's guard, while another thread holds "
                                        "a device guard");
    }
    pthread_barrier_wait(&t.main_checked);
    pthread_join(thread, NULL);
    if (guarded) {
        expect_current_stream(&r, mine, "the main thread's guard, after the other thread's "
                                        "guards ended");
        bp_stream_guard_end(&g);
    }
    expect_current_stream(&r, t.def, "after the main thread's guard ended");
    pthread_barrier_destroy(&t.both_guarded);
    pthread_barrier_destroy(&t.main_checked);
    bp_conf_report_check(&t.report, "the other thread");
    bp_conf_report_check(&r, "the main thread");
    BP_CONF_OK(bp_stream_destroy(t.stream));
    BP_CONF_OK(bp_stream_destroy(mine));
}

/* ---- scoped guards ---- */

/* Leaves a scoped stream guard by an early return from inside a loop. Returns the
 * stream that was current inside. */
static bp_stream *scoped_stream_return(bp_stream *s, int depth) {
    bp_status st;
    BP_STREAM_GUARD(s, &st);
    if (st != BP_OK)
        return NULL;
    for (int i = 0;; i++)
        if (i == depth)
            return bp_current_stream(bp_stream_device(s));
}

/* Leaves a scoped device guard by goto. Returns the device that was current inside. */
static bp_device *scoped_device_goto(bp_device *d) {
    bp_device *seen = NULL;
    {
        bp_status st;
        BP_DEVICE_GUARD(d, &st);
        if (st != BP_OK)
            goto out;
        seen = bp_current_device();
        goto out;
    }
out:
    return seen;
}

static void test_scoped_macros(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device, *base = bp_current_device();
    bp_stream *def = default_stream(), *s = bp_conf_stream();
    bp_conf_report r = {0};

    bp_stream *inside = scoped_stream_return(s, 3);
    if (inside != s)
        bp_conf_report_fail(&r, "inside BP_STREAM_GUARD the current stream was %p, expected %p",
                            (void *)inside, (void *)s);
    expect_current_stream(&r, def, "after returning from inside BP_STREAM_GUARD");
    expect_current_device(&r, base, "after returning from inside BP_STREAM_GUARD");

    bp_device *seen = scoped_device_goto(dev);
    if (seen != dev)
        bp_conf_report_fail(&r, "inside BP_DEVICE_GUARD the current device was %s, expected %s",
                            name_of(seen), name_of(dev));
    expect_current_device(&r, base, "after leaving BP_DEVICE_GUARD by goto");

    for (int i = 0; i < 4; i++) {
        bp_status st;
        BP_STREAM_GUARD(s, &st);
        if (!BP_CONF_REPORT_OK(&r, st))
            break;
        expect_current_stream(&r, s, "inside BP_STREAM_GUARD in a loop body");
        if (i == 2)
            break;
    }
    expect_current_stream(&r, def, "after breaking out of a loop whose body holds "
                                   "BP_STREAM_GUARD");
    bp_conf_report_check(&r, "scoped guards");
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- the backend's own current device ---- */

typedef struct nest {
    bp_device_guard device_guards[MAX_DEPTH];
    bp_stream_guard stream_guards[MAX_DEPTH];
    bool is_stream[MAX_DEPTH];
    bp_device *device[MAX_DEPTH];
    int depth;
    bp_conf_report report;
} nest;

/* Records a failure unless the backend reports `want` as its current device on this
 * thread. */
static void expect_backend_current(bp_conf_report *r, bp_device *want, const char *when) {
    bp_device *got = NULL;
    bp_status st = bp_device_backend_current(bp_conf.device, &got);
    if (st != BP_OK)
        bp_conf_report_fail(r, "%s: bp_device_backend_current returned %s: %s", when,
                            bp_status_str(st), bp_last_error());
    else if (got != want)
        bp_conf_report_fail(r, "%s: the backend holds %s current, expected %s (the guard's)",
                            when, name_of(got), name_of(want));
}

static void nest_push(nest *n, bp_device *d, bp_stream *s) {
    int k = n->depth;
    bp_status st = s ? bp_stream_guard_begin(&n->stream_guards[k], s)
                     : bp_device_guard_begin(&n->device_guards[k], d);
    if (!bp_conf_report_ok(&n->report, st, s ? "bp_stream_guard_begin" : "bp_device_guard_begin"))
        return;
    n->is_stream[k] = s != NULL;
    n->device[k] = d;
    n->depth++;
    char when[96];
    snprintf(when, sizeof when, "inside a %s guard of %s at depth %d", s ? "stream" : "device",
             name_of(d), n->depth);
    expect_backend_current(&n->report, d, when);
}

static void nest_pop(nest *n) {
    int k = --n->depth;
    if (n->is_stream[k])
        bp_stream_guard_end(&n->stream_guards[k]);
    else
        bp_device_guard_end(&n->device_guards[k]);
    if (k == 0)
        return; /* the outermost end leaves the backend's notion as it was: not checked */
    char when[128];
    snprintf(when, sizeof when, "after ending the guard of %s at depth %d, inside the one of %s",
             name_of(n->device[k]), k + 1, name_of(n->device[k - 1]));
    expect_backend_current(&n->report, n->device[k - 1], when);
}

/* Skips the test unless the backend reports its current device (guard get_current). */
static void require_backend_current(void) {
    bp_device *probe = NULL;
    bp_status st = bp_device_backend_current(bp_conf.device, &probe);
    if (st == BP_ERR_UNSUPPORTED)
        BP_CONF_SKIP("the backend does not report its current device");
    if (st != BP_OK && st != BP_ERR_NOT_FOUND)
        fail_msg("bp_device_backend_current returned %s: %s", bp_status_str(st),
                 bp_last_error());
}

/* Nested guards over two devices of the type (the lower index outside, so that an end
 * switches back to a lower index), or one when there is no second device: inside each
 * guard the backend's current device is the guard's, and after each inner end it is
 * the outer guard's again. */
static void test_backend_follows_nested_guards(void **state) {
    (void)state;
    require_backend_current();

    bp_device *lo = bp_conf.device, *hi = bp_conf_second_device();
    if (!hi) {
        hi = lo;
        print_message("only one %s device: nesting over %s alone\n", bp_conf.props.type,
                      bp_conf.device_name);
    } else {
        bp_device_props p = {.struct_size = sizeof p};
        BP_CONF_OK(bp_device_get_props(hi, &p));
        if (p.index < bp_conf.props.index) {
            bp_device *t = lo;
            lo = hi;
            hi = t;
        }
    }
    bp_stream *hi_stream = NULL;
    BP_CONF_OK(bp_stream_create(hi, 0, &hi_stream));

    nest *n = calloc(1, sizeof *n);
    assert_non_null(n);
    nest_push(n, lo, NULL);
    nest_push(n, hi, NULL);
    nest_push(n, lo, NULL);
    nest_pop(n);            /* back to hi */
    nest_pop(n);            /* back to lo: a switch to a lower index */
    nest_push(n, hi, hi_stream);
    nest_push(n, lo, NULL);
    nest_pop(n);            /* back to hi */
    nest_pop(n);            /* back to lo */
    nest_push(n, hi, NULL);
    nest_pop(n);            /* back to lo */
    while (n->depth > 0)
        nest_pop(n);
    bp_conf_report report = n->report;
    free(n);
    BP_CONF_OK(bp_stream_destroy(hi_stream));
    bp_conf_report_check(&report, "nested guards");
}

/* ---- the backend's current device is per thread ---- */

/* One of two threads that each hold a different device current at the same time. Both
 * meet at `step` after every change and after every check, so each check runs while
 * the other thread's guard of the other device is in force, whatever the scheduling. */
typedef struct backend_thread {
    pthread_barrier_t *step;
    bp_device *first, *second; /* guarded in this order, the second inside the first */
    bp_conf_report report;
} backend_thread;

static void *backend_thread_main(void *p) {
    backend_thread *t = p;
    bp_conf_report *r = &t->report;
    char when[160];
    bp_device_guard outer, inner;
    bool outer_ok = BP_CONF_REPORT_OK(r, bp_device_guard_begin(&outer, t->first));
    pthread_barrier_wait(t->step);
    snprintf(when, sizeof when, "this thread's guard of %s, while the other thread's guard of "
             "%s is in force", name_of(t->first), name_of(t->second));
    if (outer_ok)
        expect_backend_current(r, t->first, when);
    pthread_barrier_wait(t->step);
    bool inner_ok = BP_CONF_REPORT_OK(r, bp_device_guard_begin(&inner, t->second));
    pthread_barrier_wait(t->step);
    snprintf(when, sizeof when, "after both threads switched, this one to %s and the other to "
             "%s", name_of(t->second), name_of(t->first));
    if (inner_ok)
        expect_backend_current(r, t->second, when);
    pthread_barrier_wait(t->step);
    if (inner_ok)
        bp_device_guard_end(&inner);
    pthread_barrier_wait(t->step);
    snprintf(when, sizeof when, "after both threads ended their inner guards, this one back "
             "to %s and the other to %s", name_of(t->first), name_of(t->second));
    if (outer_ok)
        expect_backend_current(r, t->first, when);
    pthread_barrier_wait(t->step);
    if (outer_ok)
        bp_device_guard_end(&outer);
    return NULL;
}

/* Two threads make different devices current through guards at the same time, check
 * the backend's current device, switch to each other's device and back, and check
 * again: the backend keeps one current device per thread. */
static void test_backend_current_per_thread(void **state) {
    (void)state;
    require_backend_current();
    bp_device *other = bp_conf_second_device();
    if (!other)
        BP_CONF_SKIP("only one %s device: two threads cannot hold different ones current",
                     bp_conf.props.type);
    pthread_barrier_t step;
    pthread_barrier_init(&step, NULL, 2);
    backend_thread t[2] = {{.step = &step, .first = bp_conf.device, .second = other},
                           {.step = &step, .first = other, .second = bp_conf.device}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, backend_thread_main, &t[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&step);
    bp_conf_report_check(&t[0].report, "the thread that guards the device under test first");
    bp_conf_report_check(&t[1].report, "the thread that guards the other device first");
}

static const bp_conf_test tests[] = {
    {"nesting_restores", test_nesting_restores,
     "nested device guards make their device current and each end restores the previous", NULL},
    {"stream_guard", test_stream_guard,
     "a stream guard makes its stream current; NULL-stream calls go to it; it restores", NULL},
    {"per_thread", test_per_thread,
     "guards of one thread do not change another thread's current device or stream", NULL},
    {"scoped_macros", test_scoped_macros,
     "BP_DEVICE_GUARD and BP_STREAM_GUARD restore on return, goto and break", NULL},
    {"backend_follows_nested_guards", test_backend_follows_nested_guards,
     "the backend's own current device follows nested guards, back to a lower index too", NULL},
    {"backend_current_per_thread", test_backend_current_per_thread,
     "two threads hold different devices current at once: the backend's current device is "
     "each thread's own", NULL},
};

const bp_conf_group bp_conf_group_guards = {
    .name = "guards",
    .summary = "device and stream guards: nesting, restore, per thread, the backend follows",
    .tests = tests,
    .n_tests = sizeof tests / sizeof tests[0],
};
