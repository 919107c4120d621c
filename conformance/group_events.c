/* Conformance group "events": record, query and synchronize before and after the work
 * completes, waits across streams and threads, re-recording, elapsed time.
 *
 * Each check that an event's completion means "the work is done" reads the data
 * through a stream that is not ordered after the writer, so only the event's answer
 * makes the read safe: a backend whose event reports completion early reads stale
 * data. Checks are one-directional: a device may finish work before the next call;
 * where a test needs work "still pending" it holds the stream on a gate (gate.h), and
 * the writes that "done" must cover are late (late.h): behind a gate the test opens
 * after a query, or one a thread opens a while later for a blocking call, which must
 * return only after the gate opened. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "expect.h"
#include "gate.h"
#include "hold.h"
#include "late.h"
#include "thread_report.h"
#include "work.h"

/* Bytes of the buffers the tests write. */
#define FILL_BYTES ((size_t)1 << 20)

/* Copies of bp_conf_slow_fill before a late write where the device cannot hold it
 * (late.h's fallback). */
#define FALLBACK_ROUNDS 8

/* bp_event_query through the signature bp_conf_poll_until_done takes. */
static bp_status query_event(void *event) {
    return bp_event_query(event);
}

static bp_event *new_event(unsigned flags) {
    bp_event *e = NULL;
    BP_CONF_OK(bp_event_create(bp_conf.device, flags, &e));
    return e;
}

/* An event never recorded is complete: query says so, synchronize returns, and a wait
 * on it holds nothing back. */
static void test_unrecorded_is_complete(void **state) {
    (void)state;
    bp_event *events[2] = {new_event(BP_EVENT_DEFAULT), NULL};
    if (bp_conf.props.capabilities & BP_CAP_TIMED_EVENTS)
        events[1] = new_event(BP_EVENT_TIMING);
    bp_stream *s = bp_conf_stream();
    uint64_t rng = bp_conf_test_seed();
    for (int i = 0; i < 2 && events[i]; i++) {
        BP_CONF_OK(bp_event_query(events[i]));
        BP_CONF_OK(bp_event_synchronize(events[i]));
        BP_CONF_OK(bp_stream_wait_event(s, events[i]));
        int value = (int)(bp_conf_rand(&rng) % 255) + 1;
        bp_conf_expect_memset_works(s, FILL_BYTES, value,
                                    "buffer set after waiting for an unrecorded event");
        BP_CONF_OK(bp_event_destroy(events[i]));
    }
    BP_CONF_OK(bp_stream_destroy(s));
}

/* A late write (held on a gate a thread opens a while later) fills X on stream A and E
 * is recorded after it; bp_event_synchronize returns only after the gate opened, and
 * then X read through a fresh stream B (not ordered after A) holds the result. An
 * early answer is caught unless the test thread stalls for BP_CONF_LATE_OPEN_MS. */
static void test_synchronize_waits_for_work(void **state) {
    (void)state;
    bp_stream *a = bp_conf_stream();
    bp_event *e = new_event(BP_EVENT_DEFAULT);
    bp_conf_overwrite w = bp_conf_overwrite_prepare(a, FILL_BYTES);
    bp_conf_overwrite_start(&w);
    bp_conf_overwrite_open_later(&w);
    bp_status st = bp_event_record(e, a);
    if (st == BP_OK)
        st = bp_event_synchronize(e);
    bool open_at_return = bp_conf_overwrite_finish(&w);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("bp_event_synchronize returned while a host function still held the work "
                 "before the record");
    bp_stream *b = bp_conf_stream();
    bp_conf_expect_overwritten(&w, b, "buffer read on another stream after bp_event_synchronize");
    BP_CONF_OK(bp_event_query(e));

    bp_conf_overwrite_free(&w);
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
}

/* An event recorded after a write held on a gate is not done (for certain: the test
 * opens the gate); polling bp_event_query until it says BP_OK: then the write before
 * the record is done. */
static void test_query_complete_means_done(void **state) {
    (void)state;
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream();
    bp_event *e = new_event(BP_EVENT_DEFAULT);
    bp_conf_overwrite w = bp_conf_overwrite_prepare(a, FILL_BYTES);
    bp_conf_overwrite_start(&w);
    bp_status rec = bp_event_record(e, a);
    bp_clear_error();
    bp_status held = rec == BP_OK ? bp_event_query(e) : rec;
    bool message = bp_last_error()[0] != '\0';
    bp_conf_overwrite_finish(&w); /* opens the gate before any check can end the test */
    BP_CONF_OK(rec);
    /* Where the device cannot hold work the write is only slow: not asserted. */
    if (bp_conf_overwrite_held(&w) && held != BP_ERR_NOT_READY)
        fail_msg("bp_event_query returned %s for an event recorded behind a held host function, "
                 "expected BP_ERR_NOT_READY", bp_status_str(held));
    if (held == BP_ERR_NOT_READY && message)
        fail_msg("BP_ERR_NOT_READY set the error message '%s'", bp_last_error());
    bp_conf_poll_until_done(query_event, e, "event recorded after a write held on a gate");
    bp_conf_expect_overwritten(&w, b,
                               "buffer read on another stream after bp_event_query said done");

    bp_conf_overwrite_free(&w);
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
}

/* A chain of streams, each waiting for the previous one's event before it copies the
 * previous buffer on and writes its own part late; then a fan-in: one stream waits
 * for the events of two independent writers. Only the last stream is synchronized.
 * The late writes are held on a gate a thread opens a while later, so a wait that does
 * not hold its stream back copies a buffer whose part is not written yet (unless the
 * test thread stalls for BP_CONF_LATE_OPEN_MS). */
static void test_cross_stream_wait(void **state) {
    (void)state;
    enum { STAGES = 4, PART = FILL_BYTES / STAGES, FAN = 2 };
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    bp_stream *s[STAGES];
    bp_event *e[STAGES];
    unsigned char *x[STAGES];
    void *part[STAGES], *fan_part[FAN]; /* what the late writes copy */
    unsigned char want[STAGES];
    int old_value, unused, fan_value[FAN];
    bp_conf_two_bytes(&rng, &old_value, &unused);
    for (int k = 0; k < STAGES; k++) {
        s[k] = bp_conf_stream();
        e[k] = new_event(BP_EVENT_DEFAULT);
        x[k] = bp_conf_filled_buffer(s[k], FILL_BYTES, old_value);
        do
            want[k] = (unsigned char)(bp_conf_rand(&rng) % 255 + 1);
        while (want[k] == old_value);
        part[k] = bp_conf_filled_buffer(s[k], PART, want[k]);
    }
    /* Part 0 of x[0] and x[1] holds want[0] until the fan-in's writes. */
    for (int k = 0; k < FAN; k++) {
        do
            fan_value[k] = (int)(bp_conf_rand(&rng) % 255) + 1;
        while (fan_value[k] == want[0] || fan_value[k] == want[k]);
        fan_part[k] = bp_conf_filled_buffer(s[k], PART, fan_value[k]);
    }

    /* Stage k: wait for stage k-1, copy its buffer, then write part k late. */
    bp_conf_late chain;
    bp_conf_late_init(&chain);
    bp_status st = BP_OK;
    for (int k = 0; k < STAGES && st == BP_OK; k++) {
        if (k > 0)
            st = bp_stream_wait_event(s[k], e[k - 1]);
        if (k > 0 && st == BP_OK)
            st = bp_memory_copy_async(x[k], dev, x[k - 1], dev, FILL_BYTES, s[k]);
        if (st == BP_OK)
            st = bp_conf_late_write(&chain, s[k], x[k] + (size_t)k * PART, part[k], PART,
                                    want[k], FALLBACK_ROUNDS);
        if (st == BP_OK)
            st = bp_event_record(e[k], s[k]);
    }
    bp_conf_late_open_later(&chain);
    if (st == BP_OK)
        st = bp_stream_synchronize(s[STAGES - 1]);
    bool open_at_return = bp_conf_late_finish(&chain);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("bp_stream_synchronize of the last stream of a chain returned while a host "
                 "function still held the chain");
    unsigned char *expected = malloc(FILL_BYTES);
    assert_non_null(expected);
    for (int k = 0; k < STAGES; k++)
        memset(expected + (size_t)k * PART, want[k], PART);
    bp_conf_expect_bytes(s[STAGES - 1], x[STAGES - 1], expected, FILL_BYTES,
                         "last buffer of a chain of streams ordered by events");
    free(expected);

    /* Fan-in: streams 0 and 1 write late and independently; stream 2 waits for both
     * events and copies part 0 of each buffer. */
    bp_conf_late fan;
    bp_conf_late_init(&fan);
    for (int k = 0; k < FAN && st == BP_OK; k++) {
        st = bp_conf_late_write(&fan, s[k], x[k], fan_part[k], PART, fan_value[k],
                                FALLBACK_ROUNDS * (k + 1));
        if (st == BP_OK)
            st = bp_event_record(e[k], s[k]);
        if (st == BP_OK)
            st = bp_stream_wait_event(s[2], e[k]);
    }
    for (int k = 0; k < FAN && st == BP_OK; k++)
        st = bp_memory_copy_async(x[2] + (size_t)k * PART, dev, x[k], dev, PART, s[2]);
    bp_conf_late_open_later(&fan);
    if (st == BP_OK)
        st = bp_stream_synchronize(s[2]);
    open_at_return = bp_conf_late_finish(&fan);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("bp_stream_synchronize of a stream that waited for the events of two held "
                 "streams returned while a host function still held them");
    for (int k = 0; k < FAN; k++)
        bp_conf_expect_filled(s[2], x[2] + (size_t)k * PART, PART, fan_value[k],
                              "copy made after waiting for the events of two streams");

    for (int k = 0; k < STAGES; k++)
        BP_CONF_OK(bp_stream_synchronize(s[k]));
    for (int k = 0; k < FAN; k++)
        BP_CONF_OK(bp_memory_free(dev, fan_part[k]));
    for (int k = 0; k < STAGES; k++) {
        BP_CONF_OK(bp_memory_free(dev, part[k]));
        BP_CONF_OK(bp_memory_free(dev, x[k]));
        BP_CONF_OK(bp_event_destroy(e[k]));
        BP_CONF_OK(bp_stream_destroy(s[k]));
    }
}

/* ---- an event recorded on one thread, waited for on another ---- */

/* Two rounds, each a handoff from the recorder to the waiter: in round 1 the waiter
 * orders a stream of its own after the event, in round 2 it waits on the host. They
 * are separate rounds because either wait, once done, would make the other trivially
 * satisfied. The recorder starts a round only after the waiter finished the last one.
 * The recorder's write is late, held on a gate a thread opens a while later: the
 * waiter's wait must end after the gate opened. */
enum { XT_ROUNDS = 2 };

typedef struct handoff {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int recorded_round, checked_round; /* the last round recorded / checked */
    bool record_ok;                    /* the last round's record was enqueued */
    bp_stream *writer;
    bp_event *event;
    void *x;
    int value[XT_ROUNDS + 1];  /* x before round 1, then what round r writes */
    void *source[XT_ROUNDS + 1]; /* device memory of value[r], what round r copies */
    bp_conf_late late;         /* this round's write: set up before recorded_round */
    bp_conf_report recorder_report, waiter_report;
} handoff;

/* Sets *field to `round` and wakes the other thread. */
static void handoff_post(handoff *h, int *field, int round) {
    pthread_mutex_lock(&h->lock);
    *field = round;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

/* Waits until *field reaches `round`. */
static void handoff_wait(handoff *h, const int *field, int round) {
    pthread_mutex_lock(&h->lock);
    while (*field < round)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

static void *recorder_main(void *p) {
    handoff *h = p;
    bp_conf_report *r = &h->recorder_report;
    for (int round = 1; round <= XT_ROUNDS; round++) {
        bp_conf_late_init(&h->late);
        bool ok = !r->failure[0] &&
                  BP_CONF_REPORT_OK(r, bp_conf_late_write(&h->late, h->writer, h->x,
                                                          h->source[round], FILL_BYTES,
                                                          h->value[round], FALLBACK_ROUNDS)) &&
                  BP_CONF_REPORT_OK(r, bp_event_record(h->event, h->writer));
        bp_conf_late_open_later(&h->late);
        pthread_mutex_lock(&h->lock);
        h->record_ok = ok;
        pthread_mutex_unlock(&h->lock);
        handoff_post(h, &h->recorded_round, round); /* also after a failure: no deadlock */
        handoff_wait(h, &h->checked_round, round);
        bp_conf_late_finish(&h->late);
    }
    return NULL;
}

/* Downloads FILL_BYTES at src through `s` and records a failure unless they are all
 * `value`. */
static void check_on_thread(bp_conf_report *r, bp_stream *s, const void *src, int value,
                            const char *what) {
    unsigned char *host = malloc(FILL_BYTES);
    if (!host) {
        bp_conf_report_fail(r, "cannot allocate host memory");
        return;
    }
    size_t bad = 0;
    if (BP_CONF_REPORT_OK(r, bp_conf_download(s, src, FILL_BYTES, host)) &&
        !bp_conf_all_bytes(host, FILL_BYTES, value, &bad))
        bp_conf_report_fail(r, "%s: byte %zu is 0x%02x, expected 0x%02x", what, bad, host[bad],
                            (unsigned char)value);
    free(host);
}

/* Records a failure unless the recorder's gate is open: `what` returned after it. */
static void expect_released(handoff *h, const char *what) {
    if (!bp_conf_late_is_open(&h->late))
        bp_conf_report_fail(&h->waiter_report,
                            "%s returned while a host function still held the work before "
                            "the event's record", what);
}

/* Round 1: a stream wait on the event, then a copy on that stream, synchronized;
 * round 2: a host synchronize of the event, then a read through a stream of the
 * waiter's own. */
static void waiter_round(handoff *h, int round, bp_stream *b, void *y) {
    bp_conf_report *r = &h->waiter_report;
    bp_device *dev = bp_conf.device;
    if (round == 1) {
        if (BP_CONF_REPORT_OK(r, bp_stream_wait_event(b, h->event)) &&
            BP_CONF_REPORT_OK(r, bp_memory_copy_async(y, dev, h->x, dev, FILL_BYTES, b)) &&
            BP_CONF_REPORT_OK(r, bp_stream_synchronize(b))) {
            expect_released(h, "bp_stream_synchronize of a stream that waited for the event");
            check_on_thread(r, b, y, h->value[round],
                            "copy made on another thread's stream after waiting for the event");
        }
    } else if (BP_CONF_REPORT_OK(r, bp_event_synchronize(h->event))) {
        expect_released(h, "bp_event_synchronize");
        check_on_thread(r, b, h->x, h->value[round],
                        "buffer read on another thread after bp_event_synchronize");
    }
}

static void *waiter_main(void *p) {
    handoff *h = p;
    bp_conf_report *r = &h->waiter_report;
    bp_device *dev = bp_conf.device;
    bp_stream *b = NULL;
    void *y = NULL;
    bool ok = BP_CONF_REPORT_OK(r, bp_stream_create(dev, 0, &b)) &&
              BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, FILL_BYTES, b, &y));
    for (int round = 1; round <= XT_ROUNDS; round++) {
        handoff_wait(h, &h->recorded_round, round);
        pthread_mutex_lock(&h->lock);
        bool recorded = h->record_ok;
        pthread_mutex_unlock(&h->lock);
        if (ok && recorded && !r->failure[0])
            waiter_round(h, round, b, y);
        handoff_post(h, &h->checked_round, round);
    }
    if (y)
        BP_CONF_REPORT_OK(r, bp_memory_free(dev, y));
    BP_CONF_REPORT_OK(r, bp_stream_destroy(b));
    return NULL;
}

static void test_cross_thread_wait(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    handoff h = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    bp_conf_two_bytes(&rng, &h.value[0], &h.value[1]);
    h.value[2] = h.value[0]; /* differs from round 1's, which x holds before round 2 */
    h.writer = bp_conf_stream();
    h.event = new_event(BP_EVENT_DEFAULT);
    h.x = bp_conf_filled_buffer(h.writer, FILL_BYTES, h.value[0]);
    for (int round = 1; round <= XT_ROUNDS; round++)
        h.source[round] = bp_conf_filled_buffer(h.writer, FILL_BYTES, h.value[round]);

    pthread_t recorder, waiter;
    assert_int_equal(pthread_create(&waiter, NULL, waiter_main, &h), 0);
    assert_int_equal(pthread_create(&recorder, NULL, recorder_main, &h), 0);
    pthread_join(recorder, NULL);
    pthread_join(waiter, NULL);
    bp_conf_report_check(&h.recorder_report, "recording thread");
    bp_conf_report_check(&h.waiter_report, "waiting thread");

    BP_CONF_OK(bp_stream_synchronize(h.writer));
    BP_CONF_OK(bp_memory_free(dev, h.x));
    for (int round = 1; round <= XT_ROUNDS; round++)
        BP_CONF_OK(bp_memory_free(dev, h.source[round]));
    BP_CONF_OK(bp_event_destroy(h.event));
    BP_CONF_OK(bp_stream_destroy(h.writer));
}

/* On `a`: a late write of `src` (all `value`) over x[0, FILL_BYTES) and a record of e;
 * then bp_event_synchronize(e), which must return only after the write's gate opened
 * (a thread opens it a while later), and x read through `reader` holds `value`. */
static void write_late_record_synchronize(bp_stream *a, bp_event *e, void *x, const void *src,
                                          int value, bp_stream *reader, const char *what) {
    bp_conf_late late;
    bp_conf_late_init(&late);
    bp_status st = bp_conf_late_write(&late, a, x, src, FILL_BYTES, value, FALLBACK_ROUNDS);
    if (st == BP_OK)
        st = bp_event_record(e, a);
    bp_conf_late_open_later(&late);
    if (st == BP_OK)
        st = bp_event_synchronize(e);
    bool open_at_return = bp_conf_late_finish(&late);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("%s: bp_event_synchronize returned while a host function still held the work "
                 "before the record", what);
    bp_conf_expect_filled(reader, x, FILL_BYTES, value, what);
}

/* Re-recording moves the marker to the new end of the stream; a wait enqueued before
 * the re-record keeps waiting for the earlier marker. The writes are late (held on
 * gates that a thread opens a while later). */
static void test_rerecord(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    int v1, v2;
    bp_conf_two_bytes(&rng, &v1, &v2);
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream(), *c = bp_conf_stream();
    bp_stream *reader = bp_conf_stream();
    bp_event *e = new_event(BP_EVENT_DEFAULT);
    void *x = bp_conf_filled_buffer(a, FILL_BYTES, v2);
    void *y = bp_conf_filled_buffer(c, FILL_BYTES, v2);
    void *src1 = bp_conf_filled_buffer(a, FILL_BYTES, v1);
    void *src2 = bp_conf_filled_buffer(a, FILL_BYTES, v2);

    /* Forward: the second record covers the second piece of work. */
    write_late_record_synchronize(a, e, x, src1, v1, reader,
                                  "buffer after the first record completed");
    write_late_record_synchronize(a, e, x, src2, v2, reader,
                                  "buffer after a re-record on the same stream completed");

    /* Backward: C waits for A's record; re-recording E on idle B does not release C. */
    bp_conf_late late;
    bp_conf_late_init(&late);
    bp_status st = bp_conf_late_write(&late, a, x, src1, FILL_BYTES, v1, FALLBACK_ROUNDS);
    if (st == BP_OK)
        st = bp_event_record(e, a);
    if (st == BP_OK)
        st = bp_stream_wait_event(c, e);
    if (st == BP_OK)
        st = bp_event_record(e, b);
    if (st == BP_OK)
        st = bp_event_synchronize(e); /* the latest record, B's */
    if (st == BP_OK)
        st = bp_memory_copy_async(y, dev, x, dev, FILL_BYTES, c);
    bp_conf_late_open_later(&late);
    if (st == BP_OK)
        st = bp_stream_synchronize(c);
    bool open_at_return = bp_conf_late_finish(&late);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("bp_stream_synchronize of a stream that waited for an event of held stream "
                 "A returned before A was released, after the event was re-recorded on B");
    bp_conf_expect_filled(c, y, FILL_BYTES, v1,
                          "copy made after a wait enqueued before the event was re-recorded");

    BP_CONF_OK(bp_stream_synchronize(a));
    void *buffers[] = {x, y, src1, src2};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        BP_CONF_OK(bp_memory_free(dev, buffers[i]));
    BP_CONF_OK(bp_event_destroy(e));
    bp_stream *streams[] = {a, b, c, reader};
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        BP_CONF_OK(bp_stream_destroy(streams[i]));
}

/* An event recorded on stream B after B's wait for an event of stream A, which a
 * host function holds, is not done while A is held: the wait is part of B's work. Once
 * A is released and the event synchronized, query says done. */
static void test_query_sees_cross_stream_wait(void **state) {
    (void)state;
    BP_CONF_REQUIRE_NATIVE_HOST_FUNCS();
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream();
    bp_event *e = new_event(BP_EVENT_DEFAULT), *f = new_event(BP_EVENT_DEFAULT);
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    bp_status held = bp_conf_gate_hold(&gate, a);
    bp_status st = held == BP_OK ? bp_event_record(e, a) : held;
    if (st == BP_OK)
        st = bp_stream_wait_event(b, e);
    if (st == BP_OK)
        st = bp_event_record(f, b);
    bp_clear_error();
    bp_status query = st == BP_OK ? bp_event_query(f) : st;
    bool message = bp_last_error()[0] != '\0';
    /* Opens the gate and waits for its host function to return, before any check can
     * end the test (the gate lives on this frame). */
    bp_conf_gate_destroy(&gate, held == BP_OK ? 1 : 0);
    BP_CONF_OK(st);
    if (query != BP_ERR_NOT_READY)
        fail_msg("bp_event_query returned %s for an event recorded on B after B's wait for an "
                 "event of stream A, which a host function held: expected BP_ERR_NOT_READY",
                 bp_status_str(query));
    if (message)
        fail_msg("BP_ERR_NOT_READY set the error message '%s'", bp_last_error());
    BP_CONF_OK(bp_event_synchronize(f));
    BP_CONF_OK(bp_event_query(f));
    BP_CONF_OK(bp_event_query(e));
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_event_destroy(f));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
}

/* ---- elapsed time ---- */

/* How long the stream is held between the timing events, at least: long against any
 * timer's resolution, short for the suite. */
#define HOLD_MS 60

/* What a device's timer may lose or add at each end of an interval against the host's
 * CLOCK_MONOTONIC: a timer that counts in whole milliseconds (the coarsest we accept)
 * is off by less than 1 ms per end. */
#define TIMER_SLACK_MS 2.0

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Elapsed time is the time in milliseconds between the moments the stream reached the
 * two events. Start is recorded, a host function holds the stream, end is recorded;
 * once the host function has started (so the stream has passed start), the host sleeps
 * and then releases it (so the stream reaches end after that). So the interval holds
 * the measured hold, and lies inside what the host measured from before record(start)
 * to after synchronize(end): held <= elapsed <= wall, each within TIMER_SLACK_MS. Seconds,
 * microseconds and timestamps taken when record() is called all fail. */
static void test_elapsed_is_stream_time(void **state) {
    (void)state;
    BP_CONF_REQUIRE_CAP(BP_CAP_TIMED_EVENTS);
    if (bp_conf.props.capabilities & BP_CAP_MODELLED_TIME)
        BP_CONF_SKIP("the device reports BP_CAP_MODELLED_TIME: its events carry a "
                     "performance model's time, which need not follow the host's clock");
    BP_CONF_REQUIRE_NATIVE_HOST_FUNCS();
    bp_stream *s = bp_conf_stream();
    bp_event *start = new_event(BP_EVENT_TIMING), *end = new_event(BP_EVENT_TIMING);
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    double wall_start = now_ms();
    bp_status st = bp_event_record(start, s);
    bp_status held = st == BP_OK ? bp_conf_gate_hold(&gate, s) : st;
    st = held == BP_OK ? bp_event_record(end, s) : held;
    double hold = 0.0;
    if (st == BP_OK) {
        bp_conf_gate_wait_entered(&gate, 1);
        double entered = now_ms();
        bp_conf_sleep_ms(HOLD_MS);
        hold = now_ms() - entered;
    }
    /* Opens the gate and waits for its host function to return, before any check can
     * end the test (the gate lives on this frame). */
    bp_conf_gate_destroy(&gate, held == BP_OK ? 1 : 0);
    BP_CONF_OK(st);
    BP_CONF_OK(bp_event_synchronize(end));
    double wall = now_ms() - wall_start;
    float elapsed = -1.0f;
    bp_status timed = bp_event_elapsed_ms(start, end, &elapsed);
    /* Freed before the verdict: a backend may declare this test an expected failure
     * (--xfail), and its run under LeakSanitizer must not leak. */
    BP_CONF_OK(bp_event_destroy(start));
    BP_CONF_OK(bp_event_destroy(end));
    BP_CONF_OK(bp_stream_destroy(s));
    BP_CONF_OK(timed);
    print_message("held %.3f ms, elapsed %.3f ms, host wall time %.3f ms\n", hold,
                  (double)elapsed, wall);
    if (!((double)elapsed >= hold - TIMER_SLACK_MS))
        fail_msg("elapsed time %g ms between two events, with the stream held for %.3f ms "
                 "between them (measured on the host): expected at least that, in "
                 "milliseconds, less %g ms of timer resolution (timestamps taken when "
                 "record() is called, or a unit other than ms?)",
                 (double)elapsed, hold, TIMER_SLACK_MS);
    if (!((double)elapsed <= wall + TIMER_SLACK_MS))
        fail_msg("elapsed time %g ms between two events, all of it inside %.3f ms of host "
                 "wall time: expected at most that, in milliseconds, plus %g ms of timer "
                 "resolution (a unit other than ms?)",
                 (double)elapsed, wall, TIMER_SLACK_MS);
}

/* Milliseconds between timing events recorded around two pieces of `rounds` of slow
 * work on s; a third event between the two must give a time between 0 and that. */
static float time_work(bp_stream *s, void *x, int rounds) {
    bp_event *start = new_event(BP_EVENT_TIMING), *mid = new_event(BP_EVENT_TIMING);
    bp_event *end = new_event(BP_EVENT_TIMING);
    BP_CONF_OK(bp_event_record(start, s));
    BP_CONF_OK(bp_conf_slow_fill(s, x, FILL_BYTES, 1, rounds));
    BP_CONF_OK(bp_event_record(mid, s));
    BP_CONF_OK(bp_conf_slow_fill(s, x, FILL_BYTES, 2, rounds));
    BP_CONF_OK(bp_event_record(end, s));
    BP_CONF_OK(bp_event_synchronize(end));
    float whole = -1.0f, half = -1.0f;
    BP_CONF_OK(bp_event_elapsed_ms(start, end, &whole));
    BP_CONF_OK(bp_event_elapsed_ms(start, mid, &half));
    if (!(half >= 0.0f) || !(whole >= half))
        fail_msg("events recorded in the order start, mid, end give start->mid %g ms and "
                 "start->end %g ms: expected 0 <= start->mid <= start->end",
                 (double)half, (double)whole);
    BP_CONF_OK(bp_event_destroy(start));
    BP_CONF_OK(bp_event_destroy(mid));
    BP_CONF_OK(bp_event_destroy(end));
    return whole;
}

/* Elapsed time is non-negative and grows with the work: far more work (many times the
 * rounds) takes longer than the least of a few measurements of little work. */
static void test_elapsed_time(void **state) {
    (void)state;
    BP_CONF_REQUIRE_CAP(BP_CAP_TIMED_EVENTS);
    enum { SMALL = 1, LARGE = 32, TRIES = 3 };
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    void *x = bp_conf_alloc(FILL_BYTES, s);
    time_work(s, x, SMALL); /* warm-up: first-touch costs land outside the timing */
    float small = -1.0f;
    for (int i = 0; i < TRIES; i++) {
        float ms = time_work(s, x, SMALL);
        if (i == 0 || ms < small)
            small = ms;
    }
    float large = time_work(s, x, LARGE);
    print_message("elapsed: %d round(s) %.3f ms, %d rounds %.3f ms\n", SMALL, (double)small,
                  LARGE, (double)large);
    if (!(large > small))
        fail_msg("work of %d rounds took %g ms by its events, not more than work of %d round(s) "
                 "(%g ms)",
                 LARGE, (double)large, SMALL, (double)small);
    BP_CONF_OK(bp_memory_free(dev, x));
    BP_CONF_OK(bp_stream_destroy(s));
}

static const bp_conf_test tests[] = {
    {"unrecorded_is_complete", test_unrecorded_is_complete,
     "an event never recorded: query OK, synchronize returns, a wait on it is a no-op", NULL},
    {"synchronize_waits_for_work", test_synchronize_waits_for_work,
     "bp_event_synchronize returns only after a write before the record, held on a gate, is "
     "released; the write is final on another stream",
     NULL},
    {"query_complete_means_done", test_query_complete_means_done,
     "once bp_event_query says OK the work before the record is final on another stream", NULL},
    {"query_sees_cross_stream_wait", test_query_sees_cross_stream_wait,
     "an event recorded after a wait for an event of a held stream is NOT_READY until that "
     "stream is released",
     NULL},
    {"cross_stream_wait", test_cross_stream_wait,
     "a chain and a fan-in of streams ordered by events give the right bytes", NULL},
    {"cross_thread_wait", test_cross_thread_wait,
     "an event recorded on one thread orders a stream and the host on another thread", NULL},
    {"rerecord", test_rerecord,
     "re-recording moves the marker; a wait enqueued before keeps the earlier one", NULL},
    {"elapsed_is_stream_time", test_elapsed_is_stream_time,
     "elapsed time is the milliseconds between the moments the stream reached the events: "
     "at least a measured hold between them, at most the host's wall time around them",
     NULL},
    {"elapsed_time", test_elapsed_time,
     "elapsed time is >= 0, ordered, and larger for much more work", NULL},
};

const bp_conf_group bp_conf_group_events = {
    .name = "events",
    .summary = "event record, query, synchronize, cross-stream and cross-thread waits, timing",
    .tests = tests,
    .n_tests = sizeof tests / sizeof tests[0],
};
