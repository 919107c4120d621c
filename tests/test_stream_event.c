/* Streams and events through the public API, on the built-in cpu device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define BIG (32u << 20) /* bytes of one large copy */
#define BIG_REPEAT 8

static void *dev_alloc(bp_device *dev, size_t size) {
    void *p = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, size, NULL, &p));
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 256, 0);
    return p;
}

static void *host_alloc(bp_device *dev, size_t size) {
    void *p = NULL;
    BP_ASSERT_OK(bp_host_alloc(dev, size, &p));
    assert_non_null(p);
    return p;
}

/* Fails at the first byte that differs, naming its offset. */
static void assert_bytes(const void *got, const void *want, size_t size) {
    const unsigned char *g = got, *w = want;
    for (size_t i = 0; i < size; i++)
        if (g[i] != w[i])
            fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, g[i], w[i]);
}

static void assert_filled(const void *got, int value, size_t size) {
    const unsigned char *g = got;
    for (size_t i = 0; i < size; i++)
        if (g[i] != (unsigned char)value)
            fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, g[i], (unsigned char)value);
}

static void test_stream_create_destroy(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    assert_non_null(s);
    assert_ptr_equal(bp_stream_device(s), dev);
    int priority = 42;
    BP_ASSERT_OK(bp_stream_get_priority(s, &priority));
    assert_int_equal(priority, 0);
    BP_ASSERT_OK(bp_stream_query(s)); /* nothing enqueued yet */
    BP_ASSERT_OK(bp_stream_synchronize(s));
    BP_ASSERT_OK(bp_stream_destroy(s));
    BP_ASSERT_OK(bp_stream_destroy(NULL));

    /* Many streams at once, each with its own worker. */
    bp_stream *many[16];
    for (int i = 0; i < 16; i++)
        BP_ASSERT_OK(bp_stream_create(dev, 0, &many[i]));
    for (int i = 0; i < 16; i++)
        assert_ptr_not_equal(many[i], many[(i + 1) % 16]);
    for (int i = 0; i < 16; i++)
        BP_ASSERT_OK(bp_stream_destroy(many[i]));
}

static void test_default_stream(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s1 = NULL, *s2 = NULL;
    BP_ASSERT_OK(bp_stream_default(dev, &s1));
    BP_ASSERT_OK(bp_stream_default(dev, &s2));
    assert_non_null(s1);
    assert_ptr_equal(s1, s2);
    assert_ptr_equal(bp_stream_device(s1), dev);
    BP_ASSERT_ERR(bp_stream_destroy(s1), BP_ERR_INVALID_ARGUMENT, "default stream");

    /* Still alive and working after the refused destroy. */
    unsigned char *buf = dev_alloc(dev, 4096);
    BP_ASSERT_OK(bp_memory_set_async(dev, buf, 0x5a, 4096, s1));
    BP_ASSERT_OK(bp_stream_synchronize(s1));
    assert_filled(buf, 0x5a, 4096);
    BP_ASSERT_OK(bp_memory_free(dev, buf));
}

static void test_priority_clamps(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_device_props props = {.struct_size = sizeof props};
    BP_ASSERT_OK(bp_device_get_props(dev, &props));
    assert_true(props.stream_priority_greatest <= props.stream_priority_least);
    assert_true(props.stream_priority_greatest < props.stream_priority_least); /* cpu: -1..0 */

    struct {
        int asked, expected;
    } cases[] = {
        {0, 0},
        {-1000, props.stream_priority_greatest},
        {1000, props.stream_priority_least},
        {props.stream_priority_greatest, props.stream_priority_greatest},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bp_stream *s = NULL;
        int got = 12345;
        BP_ASSERT_OK(bp_stream_create(dev, cases[i].asked, &s));
        BP_ASSERT_OK(bp_stream_get_priority(s, &got));
        if (got != cases[i].expected)
            fail_msg("priority %d became %d, expected %d", cases[i].asked, got, cases[i].expected);
        BP_ASSERT_OK(bp_stream_destroy(s));
    }
}

/* A stream runs its work in order: each block of `log` must hold the value the shared
 * scratch buffer had right after the memset enqueued just before its copy. */
static void test_in_order_execution(void **state) {
    (void)state;
    enum { STEPS = 300, BLOCK = 4096 }; /* 600 tasks: more than one ring's worth */
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    unsigned char *scratch = dev_alloc(dev, BLOCK);
    unsigned char *log = dev_alloc(dev, (size_t)STEPS * BLOCK);
    unsigned char *out = host_alloc(dev, (size_t)STEPS * BLOCK);
    memset(out, 0, (size_t)STEPS * BLOCK);

    for (int i = 0; i < STEPS; i++) {
        BP_ASSERT_OK(bp_memory_set_async(dev, scratch, (i * 7 + 1) & 0xff, BLOCK, s));
        BP_ASSERT_OK(bp_memory_copy_async(log + (size_t)i * BLOCK, dev, scratch, dev, BLOCK, s));
    }
    BP_ASSERT_OK(bp_memory_copy_async(out, NULL, log, dev, (size_t)STEPS * BLOCK, s));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    BP_ASSERT_OK(bp_stream_query(s));
    for (int i = 0; i < STEPS; i++)
        assert_filled(out + (size_t)i * BLOCK, (i * 7 + 1) & 0xff, BLOCK);

    /* A mixed chain host->device->device->host with partial overwrites. */
    enum { N = 1 << 20 };
    unsigned char *src = host_alloc(dev, N), *dst = host_alloc(dev, N), *want = malloc(N);
    assert_non_null(want);
    unsigned char *d1 = dev_alloc(dev, N), *d2 = dev_alloc(dev, N);
    bp_test_fill_random(src, N, 11);
    memset(dst, 0, N);
    BP_ASSERT_OK(bp_memory_set_async(dev, d1, 0x11, N, s));
    BP_ASSERT_OK(bp_memory_copy_async(d1, dev, src, NULL, N, s));
    BP_ASSERT_OK(bp_memory_set_async(dev, d1, 0x22, N / 2, s));
    BP_ASSERT_OK(bp_memory_copy_async(d2, dev, d1, dev, N, s));
    BP_ASSERT_OK(bp_memory_set_async(dev, d2 + N / 4, 0x33, N / 8, s));
    BP_ASSERT_OK(bp_memory_copy_async(dst, NULL, d2, dev, N, s));
    memcpy(want, src, N);
    memset(want, 0x22, N / 2);
    memset(want + N / 4, 0x33, N / 8);
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_bytes(dst, want, N);

    free(want);
    BP_ASSERT_OK(bp_memory_free(dev, d1));
    BP_ASSERT_OK(bp_memory_free(dev, d2));
    BP_ASSERT_OK(bp_host_free(dev, src));
    BP_ASSERT_OK(bp_host_free(dev, dst));
    BP_ASSERT_OK(bp_memory_free(dev, scratch));
    BP_ASSERT_OK(bp_memory_free(dev, log));
    BP_ASSERT_OK(bp_host_free(dev, out));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

static void test_zero_size_work(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    unsigned char *d = dev_alloc(dev, 256);
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x44, 256, s));
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, NULL, NULL, 0, s));
    BP_ASSERT_OK(bp_memory_copy_async(NULL, dev, d, dev, 0, s));
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x00, 0, s));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_filled(d, 0x44, 256); /* the empty operations touched nothing */
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* The stream is held on a gate, so its work is still queued for certain. */
static void test_query_not_ready_then_ok(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    unsigned char *src = host_alloc(dev, BIG);
    unsigned char *d = dev_alloc(dev, BIG);
    bp_test_fill_random(src, BIG, 21);
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0, BIG, s));

    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, s));
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, src, NULL, BIG, s));
    bp_clear_error();
    assert_int_equal(bp_stream_query(s), BP_ERR_NOT_READY);
    assert_string_equal(bp_last_error(), ""); /* NOT_READY is not a failure */
    bp_conf_gate_wait_entered(&gate, 1);
    assert_filled(d, 0, BIG); /* the memset before the gate ran, the copy after did not */
    assert_int_equal(bp_stream_query(s), BP_ERR_NOT_READY);
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(s));
    BP_ASSERT_OK(bp_stream_query(s));
    assert_bytes(d, src, BIG);
    bp_conf_gate_destroy(&gate, 1);

    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_host_free(dev, src));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* Synchronizing the device waits for the work of every stream. */
static void test_device_synchronize(void **state) {
    (void)state;
    enum { STREAMS = 4 };
    bp_device *dev = bp_test_cpu();
    bp_stream *s[STREAMS];
    unsigned char *src = host_alloc(dev, BIG);
    unsigned char *d[STREAMS];
    bp_test_fill_random(src, BIG, 31);
    for (int i = 0; i < STREAMS; i++) {
        BP_ASSERT_OK(bp_stream_create(dev, 0, &s[i]));
        d[i] = dev_alloc(dev, BIG);
        BP_ASSERT_OK(bp_memory_set_async(dev, d[i], 0, BIG, s[i]));
        BP_ASSERT_OK(bp_memory_copy_async(d[i], dev, src, NULL, BIG, s[i]));
        BP_ASSERT_OK(bp_memory_set_async(dev, d[i], i + 1, 64, s[i]));
    }
    BP_ASSERT_OK(bp_device_synchronize(dev));
    for (int i = 0; i < STREAMS; i++) {
        BP_ASSERT_OK(bp_stream_query(s[i]));
        assert_filled(d[i], i + 1, 64);
        assert_bytes(d[i] + 64, src + 64, BIG - 64);
        BP_ASSERT_OK(bp_memory_free(dev, d[i]));
        BP_ASSERT_OK(bp_stream_destroy(s[i]));
    }
    BP_ASSERT_OK(bp_host_free(dev, src));
}

static void test_event_unrecorded(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_event *ev = NULL, *timed = NULL;
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &ev));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &timed));
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    assert_non_null(ev);

    BP_ASSERT_OK(bp_event_query(ev));
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_stream_wait_event(s, ev)); /* a no-op: nothing to wait for */
    unsigned char *d = dev_alloc(dev, 1024);
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x77, 1024, s));
    BP_ASSERT_OK(bp_stream_synchronize(s)); /* would hang if the wait blocked the worker */
    assert_filled(d, 0x77, 1024);

    float ms = -1.0f;
    BP_ASSERT_ERR(bp_event_elapsed_ms(timed, timed, &ms), BP_ERR_INVALID_ARGUMENT,
                  "never recorded");
    assert_true(ms == -1.0f);

    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_event_destroy(timed));
    BP_ASSERT_OK(bp_event_destroy(NULL));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

static void test_event_record_synchronize(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    bp_event *ev = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &ev));
    unsigned char *src = host_alloc(dev, BIG);
    unsigned char *d = dev_alloc(dev, BIG);
    bp_test_fill_random(src, BIG, 41);

    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, s));
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, src, NULL, BIG, s));
    BP_ASSERT_OK(bp_event_record(ev, s));
    bp_clear_error();
    assert_int_equal(bp_event_query(ev), BP_ERR_NOT_READY);
    assert_string_equal(bp_last_error(), "");
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_event_query(ev));
    assert_bytes(d, src, BIG); /* the work before the record is done */
    bp_conf_gate_destroy(&gate, 1);

    /* Re-recording on an idle stream completes at once. */
    BP_ASSERT_OK(bp_event_record(ev, s));
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_event_query(ev));

    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_host_free(dev, src));
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* Timing without comparing durations (which a loaded machine can reorder): three
 * events around a small and a large copy; each interval is positive and the whole is at
 * least each part, because the timestamps of one stream are taken in order. */
static void test_event_timing(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_device_props props = {.struct_size = sizeof props};
    BP_ASSERT_OK(bp_device_get_props(dev, &props));
    assert_true(props.capabilities & BP_CAP_TIMED_EVENTS);
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    unsigned char *src = host_alloc(dev, BIG);
    unsigned char *d = dev_alloc(dev, BIG);
    bp_test_fill_random(src, BIG, 51);

    bp_event *t[3];
    for (int i = 0; i < 3; i++)
        BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t[i]));
    BP_ASSERT_OK(bp_event_record(t[0], s));
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, src, NULL, 64 << 10, s));
    BP_ASSERT_OK(bp_event_record(t[1], s));
    for (int i = 0; i < BIG_REPEAT; i++)
        BP_ASSERT_OK(bp_memory_copy_async(d, dev, src, NULL, BIG, s));
    BP_ASSERT_OK(bp_event_record(t[2], s));
    BP_ASSERT_OK(bp_event_synchronize(t[2]));
    BP_ASSERT_OK(bp_event_query(t[0])); /* recorded earlier on the same stream */
    float small = -1.0f, large = -1.0f, whole = -1.0f;
    BP_ASSERT_OK(bp_event_elapsed_ms(t[0], t[1], &small));
    BP_ASSERT_OK(bp_event_elapsed_ms(t[1], t[2], &large));
    BP_ASSERT_OK(bp_event_elapsed_ms(t[0], t[2], &whole));
    print_message("elapsed: 64 KiB copy %.4f ms, %d x %u MiB copies %.3f ms\n", (double)small,
                  BIG_REPEAT, BIG >> 20, (double)large);
    assert_true(small > 0.0f);
    assert_true(large > 0.0f);
    assert_true(whole >= small && whole >= large);
    assert_bytes(d, src, BIG);
    for (int i = 0; i < 3; i++)
        BP_ASSERT_OK(bp_event_destroy(t[i]));

    /* elapsed_ms of an event to itself is zero. */
    bp_event *ev = NULL;
    float ms = -1.0f;
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &ev));
    BP_ASSERT_OK(bp_event_record(ev, s));
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_event_elapsed_ms(ev, ev, &ms));
    assert_true(ms == 0.0f);
    BP_ASSERT_OK(bp_event_destroy(ev));

    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_host_free(dev, src));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

static void test_elapsed_needs_timing(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    bp_event *plain = NULL, *timed = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &plain));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &timed));
    BP_ASSERT_OK(bp_event_record(plain, s));
    BP_ASSERT_OK(bp_event_record(timed, s));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    BP_ASSERT_OK(bp_event_query(plain));
    BP_ASSERT_OK(bp_event_query(timed));

    float ms = -1.0f;
    BP_ASSERT_ERR(bp_event_elapsed_ms(plain, timed, &ms), BP_ERR_INVALID_ARGUMENT,
                  "BP_EVENT_TIMING");
    BP_ASSERT_ERR(bp_event_elapsed_ms(timed, plain, &ms), BP_ERR_INVALID_ARGUMENT,
                  "BP_EVENT_TIMING");
    BP_ASSERT_ERR(bp_event_elapsed_ms(plain, plain, &ms), BP_ERR_INVALID_ARGUMENT,
                  "BP_EVENT_TIMING");
    assert_true(ms == -1.0f);
    BP_ASSERT_OK(bp_event_elapsed_ms(timed, timed, &ms));

    BP_ASSERT_OK(bp_event_destroy(plain));
    BP_ASSERT_OK(bp_event_destroy(timed));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* Fixture of the cross-stream tests: three streams, one event, a random source, a
 * zeroed destination on the host and a zeroed device buffer written by stream a. */
typedef struct cross_stream {
    bp_device *dev;
    bp_stream *a, *b, *c;
    bp_event *ev;
    unsigned char *src, *dst, *d;
} cross_stream;

static int cross_stream_setup(void **state) {
    static uint64_t seed = 61;
    cross_stream *x = calloc(1, sizeof *x);
    x->dev = bp_test_cpu();
    BP_ASSERT_OK(bp_stream_create(x->dev, 0, &x->a));
    BP_ASSERT_OK(bp_stream_create(x->dev, 0, &x->b));
    BP_ASSERT_OK(bp_stream_create(x->dev, 0, &x->c));
    BP_ASSERT_OK(bp_event_create(x->dev, BP_EVENT_TIMING, &x->ev));
    x->src = host_alloc(x->dev, BIG);
    x->dst = host_alloc(x->dev, BIG);
    x->d = dev_alloc(x->dev, BIG);
    bp_test_fill_random(x->src, BIG, seed++);
    memset(x->dst, 0, BIG);
    BP_ASSERT_OK(bp_memory_set_async(x->dev, x->d, 0, BIG, x->a));
    BP_ASSERT_OK(bp_stream_synchronize(x->a));
    *state = x;
    return 0;
}

static int cross_stream_teardown(void **state) {
    cross_stream *x = *state;
    BP_ASSERT_OK(bp_device_synchronize(x->dev));
    BP_ASSERT_OK(bp_memory_free(x->dev, x->d));
    BP_ASSERT_OK(bp_host_free(x->dev, x->src));
    BP_ASSERT_OK(bp_host_free(x->dev, x->dst));
    BP_ASSERT_OK(bp_event_destroy(x->ev)); /* NULL when the test destroyed it */
    BP_ASSERT_OK(bp_stream_destroy(x->a));
    BP_ASSERT_OK(bp_stream_destroy(x->b));
    BP_ASSERT_OK(bp_stream_destroy(x->c));
    free(x);
    return 0;
}

/* Stream B copies out what stream A writes; only the event orders the two. Run with
 * a plain event (the cpu backend records it without a task) and a timing one. */
static void test_cross_stream_wait(void **state) {
    cross_stream *x = *state;
    bp_event *plain = NULL;
    BP_ASSERT_OK(bp_event_create(x->dev, BP_EVENT_DEFAULT, &plain));
    bp_event *events[] = {plain, x->ev};
    for (int i = 0; i < 2; i++) {
        memset(x->dst, 0, BIG);
        BP_ASSERT_OK(bp_memory_set_async(x->dev, x->d, 0, BIG, x->a));
        bp_conf_gate gate;
        bp_conf_gate_init(&gate);
        BP_ASSERT_OK(bp_conf_gate_hold(&gate, x->a));
        BP_ASSERT_OK(bp_memory_copy_async(x->d, x->dev, x->src, NULL, BIG, x->a));
        BP_ASSERT_OK(bp_event_record(events[i], x->a));
        BP_ASSERT_OK(bp_stream_wait_event(x->b, events[i]));
        BP_ASSERT_OK(bp_memory_copy_async(x->dst, NULL, x->d, x->dev, BIG, x->b));
        assert_int_equal(bp_stream_query(x->b), BP_ERR_NOT_READY); /* a is held */
        assert_filled(x->dst, 0, BIG);
        bp_conf_gate_open(&gate);
        BP_ASSERT_OK(bp_stream_synchronize(x->b));
        bp_conf_gate_destroy(&gate, 1);
        /* B's copy ran after A's work even though only B was waited for. */
        BP_ASSERT_OK(bp_event_query(events[i]));
        BP_ASSERT_OK(bp_stream_query(x->a));
        assert_bytes(x->dst, x->src, BIG);
    }
    BP_ASSERT_OK(bp_event_destroy(plain));
}

/* Re-recording moves the marker, but a wait enqueued before keeps the earlier one:
 * C must wait for A's slow work even though the re-record on idle B completes first. */
static void test_rerecord_keeps_earlier_wait(void **state) {
    cross_stream *x = *state;
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, x->a));
    BP_ASSERT_OK(bp_memory_copy_async(x->d, x->dev, x->src, NULL, BIG, x->a));
    BP_ASSERT_OK(bp_event_record(x->ev, x->a));
    BP_ASSERT_OK(bp_stream_wait_event(x->c, x->ev));
    BP_ASSERT_OK(bp_event_record(x->ev, x->b));
    BP_ASSERT_OK(bp_event_synchronize(x->ev)); /* the latest record: B's, at once */
    BP_ASSERT_OK(bp_memory_copy_async(x->dst, NULL, x->d, x->dev, BIG, x->c));
    assert_int_equal(bp_stream_query(x->c), BP_ERR_NOT_READY); /* still waits for a */
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(x->c));
    assert_bytes(x->dst, x->src, BIG);
    bp_conf_gate_destroy(&gate, 1);
}

/* Destroying an event while a record and a wait on it are still queued: both
 * complete, and the waiting stream still sees the data. */
static void test_destroy_event_with_pending_wait(void **state) {
    cross_stream *x = *state;
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, x->a));
    BP_ASSERT_OK(bp_memory_copy_async(x->d, x->dev, x->src, NULL, BIG, x->a));
    BP_ASSERT_OK(bp_event_record(x->ev, x->a));
    BP_ASSERT_OK(bp_stream_wait_event(x->b, x->ev));
    BP_ASSERT_OK(bp_memory_copy_async(x->dst, NULL, x->d, x->dev, BIG, x->b));
    assert_int_equal(bp_stream_query(x->b), BP_ERR_NOT_READY);
    BP_ASSERT_OK(bp_event_destroy(x->ev));
    BP_ASSERT_ERR(bp_event_query(x->ev), BP_ERR_INVALID_ARGUMENT, "destroyed");
    x->ev = NULL;
    assert_int_equal(bp_stream_query(x->b), BP_ERR_NOT_READY);
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(x->b));
    assert_bytes(x->dst, x->src, BIG);
    bp_conf_gate_destroy(&gate, 1);
}

static void test_destroyed_handles(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL, *live = NULL;
    bp_event *ev = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_stream_create(dev, 0, &live));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &ev));
    BP_ASSERT_OK(bp_stream_destroy(s));
    BP_ASSERT_OK(bp_event_destroy(ev));

    BP_ASSERT_ERR(bp_stream_synchronize(s), BP_ERR_INVALID_ARGUMENT, "destroyed");
    BP_ASSERT_ERR(bp_stream_query(s), BP_ERR_INVALID_ARGUMENT, "destroyed");
    BP_ASSERT_ERR(bp_stream_destroy(s), BP_ERR_INVALID_ARGUMENT, "destroyed");
    int priority = 0;
    BP_ASSERT_ERR(bp_stream_get_priority(s, &priority), BP_ERR_INVALID_ARGUMENT, "destroyed");
    assert_null(bp_stream_device(s));
    unsigned char *d = dev_alloc(dev, 512);
    BP_ASSERT_ERR(bp_memory_set_async(dev, d, 1, 512, s), BP_ERR_INVALID_ARGUMENT, "destroyed");

    BP_ASSERT_ERR(bp_event_record(ev, live), BP_ERR_INVALID_ARGUMENT, "destroyed");
    BP_ASSERT_ERR(bp_event_query(ev), BP_ERR_INVALID_ARGUMENT, "destroyed");
    BP_ASSERT_ERR(bp_event_synchronize(ev), BP_ERR_INVALID_ARGUMENT, "destroyed");
    BP_ASSERT_ERR(bp_event_destroy(ev), BP_ERR_INVALID_ARGUMENT, "destroyed");
    BP_ASSERT_ERR(bp_stream_wait_event(live, ev), BP_ERR_INVALID_ARGUMENT, "destroyed");
    float ms = 0;
    BP_ASSERT_ERR(bp_event_elapsed_ms(ev, ev, &ms), BP_ERR_INVALID_ARGUMENT, "destroyed");

    /* A live stream was not disturbed by any of it. */
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0x3c, 512, live));
    BP_ASSERT_OK(bp_stream_synchronize(live));
    assert_filled(d, 0x3c, 512);
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_stream_destroy(live));
}

static void test_null_arguments(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    bp_event *ev = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &ev));
    float ms = 0;
    int priority = 0;

    BP_ASSERT_ERR(bp_stream_create(NULL, 0, &s), BP_ERR_INVALID_ARGUMENT, "device");
    BP_ASSERT_ERR(bp_stream_create(dev, 0, NULL), BP_ERR_INVALID_ARGUMENT, "out_stream");
    BP_ASSERT_ERR(bp_stream_default(NULL, &s), BP_ERR_INVALID_ARGUMENT, "device");
    BP_ASSERT_ERR(bp_stream_default(dev, NULL), BP_ERR_INVALID_ARGUMENT, "out_stream");
    BP_ASSERT_ERR(bp_stream_synchronize(NULL), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_stream_query(NULL), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_stream_get_priority(NULL, &priority), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_stream_get_priority(s, NULL), BP_ERR_INVALID_ARGUMENT, "out_priority");
    BP_ASSERT_ERR(bp_stream_wait_event(NULL, ev), BP_ERR_INVALID_ARGUMENT, "stream");
    BP_ASSERT_ERR(bp_stream_wait_event(s, NULL), BP_ERR_INVALID_ARGUMENT, "event");
    assert_null(bp_stream_device(NULL));

    BP_ASSERT_ERR(bp_event_create(NULL, 0, &ev), BP_ERR_INVALID_ARGUMENT, "device");
    BP_ASSERT_ERR(bp_event_create(dev, 0, NULL), BP_ERR_INVALID_ARGUMENT, "out_event");
    BP_ASSERT_ERR(bp_event_create(dev, 0x80, &ev), BP_ERR_INVALID_ARGUMENT, "0x80");
    BP_ASSERT_ERR(bp_event_record(NULL, s), BP_ERR_INVALID_ARGUMENT, "event");
    BP_ASSERT_ERR(bp_event_record(ev, NULL), BP_ERR_INVALID_ARGUMENT, "stream");
    BP_ASSERT_ERR(bp_event_query(NULL), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_event_synchronize(NULL), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_event_elapsed_ms(NULL, ev, &ms), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_event_elapsed_ms(ev, NULL, &ms), BP_ERR_INVALID_ARGUMENT, "NULL");
    BP_ASSERT_ERR(bp_event_elapsed_ms(ev, ev, NULL), BP_ERR_INVALID_ARGUMENT, "out_ms");

    unsigned char *d = dev_alloc(dev, 256);
    BP_ASSERT_ERR(bp_memory_copy_async(NULL, dev, d, dev, 16, s), BP_ERR_INVALID_ARGUMENT,
                  "destination");
    BP_ASSERT_ERR(bp_memory_copy_async(d, dev, NULL, NULL, 16, s), BP_ERR_INVALID_ARGUMENT,
                  "source");
    BP_ASSERT_ERR(bp_memory_set_async(dev, NULL, 0, 16, s), BP_ERR_INVALID_ARGUMENT, "NULL");

    /* The handles used above are intact. */
    BP_ASSERT_OK(bp_event_record(ev, s));
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* Stream workers are named "bp-cpu-s<N>" so they can be told apart in a debugger. */
static void test_worker_thread_named(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    unsigned char *d = dev_alloc(dev, 64);
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 1, 64, s));
    BP_ASSERT_OK(bp_stream_synchronize(s)); /* the worker has run, so it named itself */

    int named = 0;
    DIR *dir = opendir("/proc/self/task");
    assert_non_null(dir);
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(comm, sizeof comm, f) && strncmp(comm, "bp-cpu-s", 8) == 0)
                named++;
            fclose(f);
        }
    }
    closedir(dir);
    assert_true(named >= 1);
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* Several threads submit to one stream and record, query and wait on one event. */
enum { SUBMITTERS = 4, SUBMITS = 500 };

typedef struct submitter_arg {
    bp_device *dev;
    bp_stream *stream;
    bp_event *event;
    unsigned char *buf;
    int id;
    bp_status status;
} submitter_arg;

static void *submitter(void *p) {
    submitter_arg *a = p;
    a->status = BP_OK;
    for (int i = 0; i < SUBMITS && a->status == BP_OK; i++) {
        a->status = bp_memory_set_async(a->dev, a->buf + a->id * SUBMITS + i, a->id + 1, 1,
                                        a->stream);
        if (a->status == BP_OK && i % 50 == 0)
            a->status = bp_event_record(a->event, a->stream);
        if (a->status == BP_OK && i % 50 == 25) {
            bp_status q = bp_event_query(a->event);
            a->status = q == BP_ERR_NOT_READY ? BP_OK : q;
        }
        if (a->status == BP_OK && i % 100 == 75)
            a->status = bp_event_synchronize(a->event);
    }
    return NULL;
}

static void test_concurrent_submitters(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_stream *s = NULL;
    bp_event *ev = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &ev));
    unsigned char *buf = dev_alloc(dev, SUBMITTERS * SUBMITS);
    BP_ASSERT_OK(bp_memory_set_async(dev, buf, 0, SUBMITTERS * SUBMITS, s));

    pthread_t threads[SUBMITTERS];
    submitter_arg args[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++) {
        args[i] = (submitter_arg){dev, s, ev, buf, i, BP_OK};
        assert_int_equal(pthread_create(&threads[i], NULL, submitter, &args[i]), 0);
    }
    for (int i = 0; i < SUBMITTERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        if (args[i].status != BP_OK)
            fail_msg("submitter %d: %s", i, bp_status_str(args[i].status));
    }
    BP_ASSERT_OK(bp_stream_synchronize(s));
    BP_ASSERT_OK(bp_event_query(ev));
    for (int i = 0; i < SUBMITTERS; i++)
        assert_filled(buf + i * SUBMITS, i + 1, SUBMITS);

    BP_ASSERT_OK(bp_memory_free(dev, buf));
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_stream_destroy(s));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_create_destroy),
        cmocka_unit_test(test_default_stream),
        cmocka_unit_test(test_priority_clamps),
        cmocka_unit_test(test_in_order_execution),
        cmocka_unit_test(test_zero_size_work),
        cmocka_unit_test(test_query_not_ready_then_ok),
        cmocka_unit_test(test_device_synchronize),
        cmocka_unit_test(test_event_unrecorded),
        cmocka_unit_test(test_event_record_synchronize),
        cmocka_unit_test(test_event_timing),
        cmocka_unit_test(test_elapsed_needs_timing),
        cmocka_unit_test_setup_teardown(test_cross_stream_wait, cross_stream_setup,
                                        cross_stream_teardown),
        cmocka_unit_test_setup_teardown(test_rerecord_keeps_earlier_wait, cross_stream_setup,
                                        cross_stream_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_event_with_pending_wait, cross_stream_setup,
                                        cross_stream_teardown),
        cmocka_unit_test(test_destroyed_handles),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_worker_thread_named),
        cmocka_unit_test(test_concurrent_submitters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
