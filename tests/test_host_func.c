/* bp_stream_launch_host_func: its errors, and its ordering on every kind of backend:
 * cpu (its worker queue), hpu and opencl (their own host-function queues), and the
 * core's fallback for a plugin without enqueue_host, on testdev (synchronous streams)
 * and on bp-broken built without it (asynchronous streams). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SIZE 4096

/* Devices the ordering tests run on; one that is absent (no OpenCL platform) is skipped. */
static const char *const device_names[] = {"cpu", "hpu", "opencl", "testdev", "broken"};
#define NDEVICES (sizeof device_names / sizeof device_names[0])

static bp_device *open_or_skip(const char *name) {
    bp_device *dev = NULL;
    if (bp_device_open(name, &dev) != BP_OK) {
        print_message("%s: not available here (%s)\n", name, bp_last_error());
        return NULL;
    }
    return dev;
}

static void count_call(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void test_errors(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_stream *s = NULL, *dead = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &s));
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &dead));
    BP_ASSERT_OK(bp_stream_destroy(dead));
    atomic_int calls = 0;

    BP_ASSERT_ERR(bp_stream_launch_host_func(s, NULL, NULL), BP_ERR_INVALID_ARGUMENT,
                  "fn is NULL");
    BP_ASSERT_ERR(bp_stream_launch_host_func(dead, count_call, &calls), BP_ERR_INVALID_ARGUMENT,
                  "destroyed");
    int not_a_stream[16] = {0};
    BP_ASSERT_ERR(bp_stream_launch_host_func((bp_stream *)not_a_stream, count_call, &calls),
                  BP_ERR_INVALID_ARGUMENT, "is not a stream");

    /* A region records kernels only. */
    BP_ASSERT_OK(bp_region_begin(s, NULL));
    BP_ASSERT_ERR(bp_stream_launch_host_func(s, count_call, &calls), BP_ERR_INVALID_STATE,
                  "recording a region");
    BP_ASSERT_OK(bp_region_end(s, NULL));
    BP_ASSERT_OK(bp_stream_launch_host_func(s, count_call, &calls));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_int_equal(atomic_load(&calls), 1); /* only the launch that succeeded ran */

    /* The fallback's errors are the same. */
    bp_device *t0 = open_or_skip("testdev");
    assert_non_null(t0);
    bp_stream *ts = NULL;
    BP_ASSERT_OK(bp_stream_default(t0, &ts));
    BP_ASSERT_ERR(bp_stream_launch_host_func(ts, NULL, NULL), BP_ERR_INVALID_ARGUMENT,
                  "fn is NULL");
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* NULL is the thread's current stream of its current device. */
static void test_null_stream_is_current(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    bp_stream *s = NULL, *def = NULL;
    BP_ASSERT_OK(bp_stream_create(cpu, 0, &s));
    BP_ASSERT_OK(bp_stream_default(cpu, &def));
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    bp_stream_guard g;
    BP_ASSERT_OK(bp_stream_guard_begin(&g, s));
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, NULL));
    bp_stream_guard_end(&g);
    assert_int_equal(bp_stream_query(s), BP_ERR_NOT_READY);
    BP_ASSERT_OK(bp_stream_synchronize(def)); /* not held */
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(s));
    bp_conf_gate_destroy(&gate, 1);

    /* Without a guard: the current device's current stream. */
    bp_stream *current = bp_current_stream(bp_current_device());
    assert_non_null(current);
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, NULL));
    assert_int_equal(bp_stream_query(current), BP_ERR_NOT_READY);
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(current));
    bp_conf_gate_destroy(&gate, 1);
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* What the host functions of the ordering test see and do. */
typedef struct probe {
    unsigned char *host; /* SIZE bytes of host memory */
    int expect;          /* the byte fn must find there */
    int write;           /* the byte fn writes there */
    atomic_int seen_wrong;
    atomic_int calls;
} probe;

static void check_then_write(void *arg) {
    probe *p = arg;
    for (size_t i = 0; i < SIZE; i++)
        if (p->host[i] != (unsigned char)p->expect) {
            atomic_store(&p->seen_wrong, 1);
            break;
        }
    memset(p->host, p->write, SIZE);
    atomic_fetch_add(&p->calls, 1);
}

/* fn sees what the work before it copied to the host; the work after it (a copy into
 * the same host memory) lands after fn's own write. */
static void order_on(bp_device *dev) {
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    void *d = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, SIZE, s, &d));
    probe p = {.expect = 0x5a, .write = 0x33};
    BP_ASSERT_OK(bp_host_alloc(dev, SIZE, (void **)&p.host));
    memset(p.host, 0, SIZE);
    /* No gate: with the fallback, the enqueues after a host function wait for it. */
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x5a, SIZE, s));
    BP_ASSERT_OK(bp_memory_copy_async(p.host, NULL, d, dev, SIZE, s));
    BP_ASSERT_OK(bp_stream_launch_host_func(s, check_then_write, &p));
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x77, SIZE, s));
    BP_ASSERT_OK(bp_memory_copy_async(p.host, NULL, d, dev, SIZE, s));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_int_equal(atomic_load(&p.calls), 1);
    assert_int_equal(atomic_load(&p.seen_wrong), 0);
    for (size_t i = 0; i < SIZE; i++)
        if (p.host[i] != 0x77)
            fail_msg("%s: byte %zu is 0x%02x: the copy after the host function ran before it",
                     bp_device_name(dev), i, p.host[i]);
    BP_ASSERT_OK(bp_host_free(dev, p.host));
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

static void test_order(void **state) {
    (void)state;
    for (size_t i = 0; i < NDEVICES; i++) {
        bp_device *dev = open_or_skip(device_names[i]);
        if (dev)
            order_on(dev);
    }
}

/* Held on a gate: the stream, an event recorded after the gate and the device are not
 * done, on every backend (the fallback's record does not block); then they are. */
static void held_on(bp_device *dev) {
    bp_stream *s = NULL;
    bp_event *ev = NULL, *t0 = NULL, *t1 = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &ev));
    bp_device_props props = {.struct_size = sizeof props};
    BP_ASSERT_OK(bp_device_get_props(dev, &props));
    bool timing = props.capabilities & BP_CAP_TIMED_EVENTS;
    if (timing) {
        BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t0));
        BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t1));
        BP_ASSERT_OK(bp_event_record(t0, s));
    }
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, s));
    BP_ASSERT_OK(bp_event_record(ev, s));
    if (timing)
        BP_ASSERT_OK(bp_event_record(t1, s));
    bp_clear_error();
    assert_int_equal(bp_stream_query(s), BP_ERR_NOT_READY);
    assert_int_equal(bp_event_query(ev), BP_ERR_NOT_READY);
    assert_string_equal(bp_last_error(), "");
    if (timing) {
        float ms = -1.0f;
        BP_ASSERT_ERR(bp_event_elapsed_ms(t0, t1, &ms), BP_ERR_NOT_READY, "not completed");
    }
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_device_synchronize(dev));
    BP_ASSERT_OK(bp_stream_query(s));
    BP_ASSERT_OK(bp_event_query(ev));
    bp_conf_gate_destroy(&gate, 1);
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_event_destroy(t0));
    BP_ASSERT_OK(bp_event_destroy(t1));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

static void test_held_on_gate(void **state) {
    (void)state;
    for (size_t i = 0; i < NDEVICES; i++) {
        bp_device *dev = open_or_skip(device_names[i]);
        if (dev)
            held_on(dev);
    }
}

/* Many host functions on several streams: each stream's run in launch order. */
enum { STREAMS = 3, CALLS = 300 };

static void many_on(bp_device *dev) {
    bp_stream *s[STREAMS];
    bp_conf_sequence seq[STREAMS];
    bp_conf_step *steps = calloc(STREAMS * CALLS, sizeof *steps);
    assert_non_null(steps);
    for (int k = 0; k < STREAMS; k++) {
        BP_ASSERT_OK(bp_stream_create(dev, 0, &s[k]));
        seq[k] = (bp_conf_sequence){0, 0};
    }
    for (int i = 0; i < CALLS; i++)
        for (int k = 0; k < STREAMS; k++) {
            bp_conf_step *st = &steps[k * CALLS + i];
            *st = (bp_conf_step){&seq[k], i};
            BP_ASSERT_OK(bp_stream_launch_host_func(s[k], bp_conf_take_step, st));
        }
    BP_ASSERT_OK(bp_device_synchronize(dev));
    for (int k = 0; k < STREAMS; k++) {
        assert_int_equal(seq[k].next, CALLS);
        assert_int_equal(seq[k].wrong, 0);
        BP_ASSERT_OK(bp_stream_destroy(s[k]));
    }
    free(steps);
}

static void test_many_in_order(void **state) {
    (void)state;
    for (size_t i = 0; i < NDEVICES; i++) {
        bp_device *dev = open_or_skip(device_names[i]);
        if (dev)
            many_on(dev);
    }
}

/* Destroying a stream runs its host functions first. */
static void test_destroy_runs_pending(void **state) {
    (void)state;
    for (size_t i = 0; i < NDEVICES; i++) {
        bp_device *dev = open_or_skip(device_names[i]);
        if (!dev)
            continue;
        bp_stream *s = NULL;
        BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
        atomic_int calls = 0;
        for (int k = 0; k < 10; k++)
            BP_ASSERT_OK(bp_stream_launch_host_func(s, count_call, &calls));
        BP_ASSERT_OK(bp_stream_destroy(s));
        assert_int_equal(atomic_load(&calls), 10);
    }
}

/* A stream waiting on an event recorded after a host function of another stream does
 * not run its later work before that function returned. */
typedef struct flag_write {
    unsigned char *host;
} flag_write;

static void write_flag(void *arg) { memset(((flag_write *)arg)->host, 0x11, SIZE); }

static void test_cross_stream_after_host_func(void **state) {
    (void)state;
    for (size_t i = 0; i < NDEVICES; i++) {
        bp_device *dev = open_or_skip(device_names[i]);
        if (!dev)
            continue;
        bp_stream *a = NULL, *b = NULL;
        bp_event *ev = NULL;
        BP_ASSERT_OK(bp_stream_create(dev, 0, &a));
        BP_ASSERT_OK(bp_stream_create(dev, 0, &b));
        BP_ASSERT_OK(bp_event_create(dev, 0, &ev));
        void *d = NULL;
        BP_ASSERT_OK(bp_memory_alloc(dev, SIZE, b, &d));
        BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x66, SIZE, b));
        flag_write fw;
        BP_ASSERT_OK(bp_host_alloc(dev, SIZE, (void **)&fw.host));
        memset(fw.host, 0, SIZE);
        BP_ASSERT_OK(bp_stream_launch_host_func(a, write_flag, &fw));
        BP_ASSERT_OK(bp_event_record(ev, a));
        BP_ASSERT_OK(bp_stream_wait_event(b, ev));
        BP_ASSERT_OK(bp_memory_copy_async(fw.host, NULL, d, dev, SIZE, b));
        BP_ASSERT_OK(bp_stream_synchronize(b));
        for (size_t k = 0; k < SIZE; k++)
            if (fw.host[k] != 0x66)
                fail_msg("%s: byte %zu is 0x%02x: b's copy ran before a's host function",
                         device_names[i], k, fw.host[k]);
        BP_ASSERT_OK(bp_stream_synchronize(a));
        BP_ASSERT_OK(bp_host_free(dev, fw.host));
        BP_ASSERT_OK(bp_memory_free(dev, d));
        BP_ASSERT_OK(bp_event_destroy(ev));
        BP_ASSERT_OK(bp_stream_destroy(a));
        BP_ASSERT_OK(bp_stream_destroy(b));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_null_stream_is_current),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_held_on_gate),
        cmocka_unit_test(test_many_in_order),
        cmocka_unit_test(test_destroy_runs_pending),
        cmocka_unit_test(test_cross_stream_after_host_func),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
