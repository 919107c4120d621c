/* Conformance group "host_funcs": bp_stream_launch_host_func on the device's streams.
 *
 * It runs on every backend: natively through the plugin's enqueue_host, or through the
 * library's fallback for a plugin without one, where a call that enqueues work after a
 * host function blocks until the function has run. So no test enqueues work behind a
 * gate that only the test thread would open; behind a gate it only queries, records
 * events and synchronizes (after opening). Host functions of different streams may run
 * one after another (CUDA's may), so no test waits for one stream's host function while
 * another stream's is held. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "gate.h"
#include "work.h"

#define BYTES 4096

/* What check_then_write sees and does. */
typedef struct probe {
    unsigned char *host; /* BYTES of host memory */
    int expect;          /* the byte it must find there: what the work before it wrote */
    int write;           /* the byte it writes there before the work after it runs */
    atomic_int wrong_at; /* first wrong byte + 1, 0 if none */
    atomic_int calls;
} probe;

static void check_then_write(void *arg) {
    probe *p = arg;
    for (size_t i = 0; i < BYTES; i++)
        if (p->host[i] != (unsigned char)p->expect) {
            atomic_store(&p->wrong_at, (int)i + 1);
            break;
        }
    memset(p->host, p->write, BYTES);
    atomic_fetch_add(&p->calls, 1);
}

/* fn sees what the work before it copied to the host; a copy enqueued after it into the
 * same host memory lands after fn's own write. */
static void test_order(void **state) {
    (void)state;
    bp_stream *s = bp_conf_stream();
    uint64_t rng = bp_conf_test_seed();
    probe p;
    memset(&p, 0, sizeof p);
    int after = 0;
    bp_conf_two_bytes(&rng, &p.expect, &after);
    p.write = after % 255 + 1; /* any byte but `after` */
    void *d = bp_conf_alloc(BYTES, s);
    p.host = bp_conf_host_buffer(BYTES);
    memset(p.host, 0, BYTES);
    BP_CONF_OK(bp_memory_set_async(bp_conf.device, d, p.expect, BYTES, s));
    BP_CONF_OK(bp_memory_copy_async(p.host, NULL, d, bp_conf.device, BYTES, s));
    BP_CONF_OK(bp_stream_launch_host_func(s, check_then_write, &p));
    BP_CONF_OK(bp_memory_set_async(bp_conf.device, d, after, BYTES, s));
    BP_CONF_OK(bp_memory_copy_async(p.host, NULL, d, bp_conf.device, BYTES, s));
    BP_CONF_OK(bp_stream_synchronize(s));
    int calls = atomic_load(&p.calls), wrong = atomic_load(&p.wrong_at);
    size_t bad = 0;
    bool final = bp_conf_all_bytes(p.host, BYTES, after, &bad);
    unsigned got = p.host[bad];
    free(p.host);
    BP_CONF_OK(bp_memory_free(bp_conf.device, d));
    BP_CONF_OK(bp_stream_destroy(s));
    if (calls != 1)
        fail_msg("the host function ran %d times, expected once", calls);
    if (wrong)
        fail_msg("the host function saw byte %d wrong: the copy before it had not completed",
                 wrong - 1);
    if (!final)
        fail_msg("byte %zu is 0x%02x, expected 0x%02x: the copy after the host function ran "
                 "before it", bad, got, (unsigned char)after);
}

/* Held on a gate: the stream and an event recorded after the gate are not done, and say
 * so without an error message; after the gate opens, they are. */
static void test_held_until_released(void **state) {
    (void)state;
    bp_stream *s = bp_conf_stream();
    bp_event *ev = NULL;
    BP_CONF_OK(bp_event_create(bp_conf.device, BP_EVENT_DEFAULT, &ev));
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_CONF_OK(bp_conf_gate_hold(&gate, s));
    bp_status rec = bp_event_record(ev, s);
    bp_clear_error();
    bp_status sq = bp_stream_query(s);
    bp_status eq = rec == BP_OK ? bp_event_query(ev) : BP_ERR_NOT_READY;
    bool message = bp_last_error()[0] != '\0';
    /* Opens the gate and waits for its host function to return, before any check can
     * end the test (the gate lives on this frame). */
    bp_conf_gate_destroy(&gate, 1);
    BP_CONF_OK(rec);
    if (sq != BP_ERR_NOT_READY)
        fail_msg("bp_stream_query returned %s while a host function held the stream, expected "
                 "BP_ERR_NOT_READY", bp_status_str(sq));
    if (eq != BP_ERR_NOT_READY)
        fail_msg("bp_event_query returned %s for an event recorded behind a held host function, "
                 "expected BP_ERR_NOT_READY", bp_status_str(eq));
    if (message)
        fail_msg("BP_ERR_NOT_READY set the error message '%s'", bp_last_error());
    BP_CONF_OK(bp_event_synchronize(ev));
    BP_CONF_OK(bp_stream_synchronize(s));
    BP_CONF_OK(bp_stream_query(s));
    BP_CONF_OK(bp_event_query(ev));
    BP_CONF_OK(bp_event_destroy(ev));
    BP_CONF_OK(bp_stream_destroy(s));
}

/* Host functions of one stream run in launch order, with several streams at once. */
enum { STREAMS = 4, CALLS = 200 };

static void test_many_in_order(void **state) {
    (void)state;
    bp_stream *s[STREAMS];
    bp_conf_sequence seq[STREAMS];
    bp_conf_step *steps = calloc(STREAMS * CALLS, sizeof *steps);
    if (!steps)
        fail_msg("out of host memory");
    for (int k = 0; k < STREAMS; k++) {
        s[k] = bp_conf_stream();
        seq[k] = (bp_conf_sequence){0, 0};
    }
    bp_status st = BP_OK;
    for (int i = 0; i < CALLS && st == BP_OK; i++)
        for (int k = 0; k < STREAMS && st == BP_OK; k++) {
            steps[k * CALLS + i] = (bp_conf_step){&seq[k], i};
            st = bp_stream_launch_host_func(s[k], bp_conf_take_step, &steps[k * CALLS + i]);
        }
    BP_CONF_OK(bp_device_synchronize(bp_conf.device));
    free(steps);
    BP_CONF_OK(st);
    for (int k = 0; k < STREAMS; k++) {
        BP_CONF_OK(bp_stream_destroy(s[k]));
        if (seq[k].next != CALLS || seq[k].wrong)
            fail_msg("stream %d: %d of %d host functions ran out of order, the last index was %d",
                     k, seq[k].wrong, CALLS, seq[k].next - 1);
    }
}

/* A stream that waits for an event recorded after another stream's host function runs
 * its later work after that function: its copy into host memory lands last. */
static void write_byte(void *arg) {
    probe *p = arg;
    memset(p->host, p->write, BYTES);
}

static void test_event_after_host_func(void **state) {
    (void)state;
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream();
    bp_event *ev = NULL;
    BP_CONF_OK(bp_event_create(bp_conf.device, BP_EVENT_DEFAULT, &ev));
    uint64_t rng = bp_conf_test_seed();
    int value = 0;
    probe p;
    memset(&p, 0, sizeof p);
    bp_conf_two_bytes(&rng, &p.write, &value);
    void *d = bp_conf_filled_buffer(b, BYTES, value);
    p.host = bp_conf_host_buffer(BYTES);
    memset(p.host, 0, BYTES);
    BP_CONF_OK(bp_stream_launch_host_func(a, write_byte, &p));
    BP_CONF_OK(bp_event_record(ev, a));
    BP_CONF_OK(bp_stream_wait_event(b, ev));
    BP_CONF_OK(bp_memory_copy_async(p.host, NULL, d, bp_conf.device, BYTES, b));
    BP_CONF_OK(bp_stream_synchronize(b));
    BP_CONF_OK(bp_stream_synchronize(a));
    size_t bad = 0;
    bool final = bp_conf_all_bytes(p.host, BYTES, value, &bad);
    unsigned got = p.host[bad];
    free(p.host);
    BP_CONF_OK(bp_memory_free(bp_conf.device, d));
    BP_CONF_OK(bp_event_destroy(ev));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
    if (!final)
        fail_msg("byte %zu is 0x%02x, expected 0x%02x: stream b's copy ran before stream a's "
                 "host function, which its event wait must order it after", bad, got,
                 (unsigned char)value);
}

/* Destroying a stream first runs the host functions still queued on it. */
static void count_call(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void test_destroy_runs_them(void **state) {
    (void)state;
    bp_stream *s = bp_conf_stream();
    atomic_int calls = 0;
    for (int i = 0; i < 16; i++)
        BP_CONF_OK(bp_stream_launch_host_func(s, count_call, &calls));
    BP_CONF_OK(bp_stream_destroy(s));
    if (atomic_load(&calls) != 16)
        fail_msg("%d of 16 host functions had run when bp_stream_destroy returned",
                 atomic_load(&calls));
}

static const bp_conf_test tests[] = {
    {"order", test_order,
     "a host function sees the work before it; a copy after it lands after its write", NULL},
    {"held_until_released", test_held_until_released,
     "a stream held by a host function, and an event after it, are NOT_READY until it returns",
     NULL},
    {"many_in_order", test_many_in_order,
     "200 host functions on each of 4 streams run in launch order", NULL},
    {"event_after_host_func", test_event_after_host_func,
     "a stream waiting for an event recorded after a host function runs after it", NULL},
    {"destroy_runs_them", test_destroy_runs_them,
     "bp_stream_destroy returns after the stream's queued host functions ran", NULL},
};

const bp_conf_group bp_conf_group_host_funcs = {
    .name = "host_funcs",
    .summary = "host functions on streams: ordering with the stream's work, gates, events",
    .tests = tests,
    .n_tests = sizeof tests / sizeof tests[0],
};
