/* Conformance group "streams": stream creation, priorities, the default stream, query,
 * synchronize, in-order execution, many concurrent streams and event waits between
 * streams.
 *
 * The device may be much faster than the host (a GPU finishes a long chain before the
 * next call returns) or much slower; so every check is one-directional: "query said
 * done => the data is final", "after synchronize the data is final". A reader that must
 * not be ordered after the writer reads through a separate stream. Where a test needs
 * work "still pending", it holds the stream on a gate (gate.h) instead: while the gate
 * is closed, a correct device cannot have run what follows it (hold.h: skipped where
 * the library's host-function fallback would block the test thread). The checks that
 * "done means done" write late (late.h): behind a gate the test opens itself after a
 * query, or one a thread opens a while later for a blocking call, which must return
 * only after the gate opened. The tests decide their verdicts with stream query,
 * synchronize, memset and copies only (never event query or event synchronize, which
 * the events group checks). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "gate.h"
#include "hold.h"
#include "late.h"
#include "work.h"

/* Bytes of the buffers the tests write: large enough to be real work, small
 * enough to download quickly. */
#define FILL_BYTES ((size_t)1 << 20)

/* Copies of bp_conf_slow_fill for the checks that only need "some work". */
#define SLOW_ROUNDS 4

/* bp_stream_query through the signature bp_conf_poll_until_done takes. */
static bp_status query_stream(void *stream) {
    return bp_stream_query(stream);
}

/* The first test of the group to call bp_stream_query: a backend whose query hangs is
 * reported here (the runner names the test that was running at the timeout). */
static void test_query(void **state) {
    (void)state;
    bp_stream *s = bp_conf_stream(), *reader = bp_conf_stream();
    BP_CONF_OK(bp_stream_query(s)); /* a new stream has no work */

    /* The write waits behind a gate only the test opens: the stream is not done, for
     * certain (where the device cannot hold work, the write is only slow, and whether
     * it is still running is not asserted). */
    bp_conf_overwrite w = bp_conf_overwrite_prepare(s, FILL_BYTES);
    bp_conf_overwrite_start(&w);
    bp_clear_error();
    bp_status held = bp_stream_query(s);
    bool message = bp_last_error()[0] != '\0';
    bp_conf_overwrite_finish(&w); /* opens the gate before any check can end the test */
    if (bp_conf_overwrite_held(&w) && held != BP_ERR_NOT_READY)
        fail_msg("bp_stream_query returned %s while a host function held the stream, expected "
                 "BP_ERR_NOT_READY", bp_status_str(held));
    if (held == BP_ERR_NOT_READY && message)
        fail_msg("BP_ERR_NOT_READY set the error message '%s'", bp_last_error());
    bp_conf_poll_until_done(query_stream, s, "stream with a write held on a gate");
    /* The reader is not ordered after s: only the query's answer makes this safe. */
    bp_conf_expect_overwritten(&w, reader,
                               "buffer read on another stream after bp_stream_query said done");
    bp_conf_overwrite_free(&w);

    /* After synchronize (the gate opens a while later), query says done. */
    bp_conf_overwrite again = bp_conf_overwrite_prepare(s, FILL_BYTES);
    bp_conf_overwrite_start(&again);
    bp_conf_overwrite_open_later(&again);
    bp_status synced = bp_stream_synchronize(s);
    bp_conf_overwrite_finish(&again);
    BP_CONF_OK(synced);
    BP_CONF_OK(bp_stream_query(s));
    bp_conf_overwrite_free(&again);
    BP_CONF_OK(bp_stream_destroy(s));
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* Destroys stream s held on a gate that a thread opens a while later, with a memset of
 * `value` over block[0, n) behind the gate: destroy must wait for the gate and the
 * memset. Through the library's host-function fallback the memset blocks until the
 * gate opens: the check is then weaker, never wrong. */
static void destroy_held_stream(bp_stream *s, void *block, size_t n, int value) {
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    bp_status held = bp_conf_gate_hold(&gate, s);
    bp_conf_gate_opener opener;
    bp_conf_gate_open_later(&opener, &gate, BP_CONF_LATE_OPEN_MS);
    bp_status set = bp_memory_set_async(bp_conf.device, block, value, n, s);
    bp_status destroyed = bp_stream_destroy(s);
    bool open_at_return = bp_conf_gate_is_open(&gate);
    bp_conf_gate_opener_join(&opener);
    bp_conf_gate_destroy(&gate, held == BP_OK ? 1 : 0);
    BP_CONF_OK(held);
    BP_CONF_OK(set);
    BP_CONF_OK(destroyed);
    if (!open_at_return)
        fail_msg("bp_stream_destroy returned while a host function still held the stream");
}

/* Many create/destroy cycles, each destroying a stream that still has work queued:
 * destroy waits for the work, so the data is final when it returns. Every HELD_EVERY-th
 * stream is held on a gate first, so its work is queued for certain. */
static void test_create_destroy(void **state) {
    (void)state;
    enum { CYCLES = 64, HELD_EVERY = 32, BLOCK = 16 << 10 };
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    bp_stream *reader = bp_conf_stream();
    unsigned char *x = bp_conf_alloc((size_t)CYCLES * BLOCK, reader);
    unsigned char want[CYCLES];
    for (int i = 0; i < CYCLES; i++) {
        bp_stream *s = NULL;
        BP_CONF_OK(bp_stream_create(dev, 0, &s));
        if (!s || bp_stream_device(s) != dev)
            fail_msg("bp_stream_create returned stream %p whose device is not the device "
                     "under test",
                     (void *)s);
        want[i] = (unsigned char)(bp_conf_rand(&rng) % 255 + 1);
        void *block = x + (size_t)i * BLOCK;
        if (i % HELD_EVERY == 0) {
            destroy_held_stream(s, block, BLOCK, want[i]);
            bp_conf_expect_filled(reader, block, BLOCK, want[i],
                                  "block set by a held stream, read after destroying it");
        } else {
            BP_CONF_OK(bp_memory_set_async(dev, block, want[i], BLOCK, s));
            BP_CONF_OK(bp_stream_destroy(s));
        }
    }
    for (int i = 0; i < CYCLES; i++)
        bp_conf_expect_filled(reader, x + (size_t)i * BLOCK, BLOCK, want[i],
                              "block written by a destroyed stream");
    BP_CONF_OK(bp_memory_free(dev, x));
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* A long chain on one stream whose result depends on the order: each step overwrites a
 * shared scratch buffer and copies it into its own slot; then a mixed host/device chain
 * with partial overwrites. */
static void test_ordering(void **state) {
    (void)state;
    enum { STEPS = 256, BLOCK = 4096, N = 1 << 20 };
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    bp_stream *s = bp_conf_stream();

    unsigned char *scratch = bp_conf_alloc(BLOCK, s);
    unsigned char *slots = bp_conf_alloc((size_t)STEPS * BLOCK, s);
    unsigned char *want = malloc((size_t)STEPS * BLOCK);
    assert_non_null(want);
    for (int i = 0; i < STEPS; i++) {
        int v = (int)(bp_conf_rand(&rng) % 255) + 1;
        memset(want + (size_t)i * BLOCK, v, BLOCK);
        BP_CONF_OK(bp_memory_set_async(dev, scratch, v, BLOCK, s));
        BP_CONF_OK(bp_memory_copy_async(slots + (size_t)i * BLOCK, dev, scratch, dev, BLOCK, s));
    }
    bp_conf_expect_bytes(s, slots, want, (size_t)STEPS * BLOCK, "slots of the ordered chain");
    free(want);

    /* host -> device -> device -> host, with overwrites between the copies. */
    unsigned char *src = malloc(N), *expected = malloc(N);
    assert_non_null(src);
    assert_non_null(expected);
    bp_conf_random_bytes(src, N, bp_conf_rand(&rng));
    unsigned char *d1 = bp_conf_alloc(N, s), *d2 = bp_conf_alloc(N, s);
    BP_CONF_OK(bp_memory_set_async(dev, d1, 0x11, N, s));
    BP_CONF_OK(bp_memory_copy_async(d1, dev, src, NULL, N, s));
    BP_CONF_OK(bp_memory_set_async(dev, d1 + 3, 0x22, N / 2, s));
    BP_CONF_OK(bp_memory_copy_async(d2, dev, d1, dev, N, s));
    BP_CONF_OK(bp_memory_set_async(dev, d2 + N / 4 + 1, 0x33, N / 8, s));
    BP_CONF_OK(bp_memory_copy_async(d1, dev, d2 + 5, dev, N - 5, s));
    memcpy(expected, src, N);
    memset(expected + 3, 0x22, N / 2);
    memset(expected + N / 4 + 1, 0x33, N / 8);
    memmove(expected, expected + 5, N - 5);
    /* d1's last 5 bytes keep what the partial overwrite left there. */
    memcpy(expected + N - 5, src + N - 5, 5);
    bp_conf_expect_bytes(s, d1, expected, N, "result of the host/device chain");

    free(src);
    free(expected);
    BP_CONF_OK(bp_memory_free(dev, d1));
    BP_CONF_OK(bp_memory_free(dev, d2));
    BP_CONF_OK(bp_memory_free(dev, scratch));
    BP_CONF_OK(bp_memory_free(dev, slots));
    BP_CONF_OK(bp_stream_destroy(s));
}

/* Many streams, each running its own chain, enqueued step by step across all of them
 * so that they run concurrently. */
static void test_many_streams(void **state) {
    (void)state;
    enum { STREAMS = 32, N = 256 << 10 };
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    bp_stream *s[STREAMS];
    unsigned char *a[STREAMS], *b[STREAMS], *src[STREAMS], *dst[STREAMS], *want[STREAMS];
    int v[STREAMS], w[STREAMS];
    for (int i = 0; i < STREAMS; i++) {
        s[i] = bp_conf_stream();
        a[i] = bp_conf_alloc(N, s[i]);
        b[i] = bp_conf_alloc(N, s[i]);
        src[i] = malloc(N);
        dst[i] = calloc(1, N);
        want[i] = malloc(N);
        assert_true(src[i] && dst[i] && want[i]);
        bp_conf_random_bytes(src[i], N, bp_conf_rand(&rng));
        v[i] = (int)(bp_conf_rand(&rng) % 255) + 1;
        w[i] = (int)(bp_conf_rand(&rng) % 255) + 1;
        memcpy(want[i], src[i], N);
        memset(want[i] + i, v[i], N / 4);
        memset(want[i] + N / 2 + i, w[i], N / 8);
    }
    for (int i = 0; i < STREAMS; i++)
        BP_CONF_OK(bp_memory_copy_async(a[i], dev, src[i], NULL, N, s[i]));
    for (int i = 0; i < STREAMS; i++)
        BP_CONF_OK(bp_memory_set_async(dev, a[i] + i, v[i], N / 4, s[i]));
    for (int i = 0; i < STREAMS; i++)
        BP_CONF_OK(bp_memory_copy_async(b[i], dev, a[i], dev, N, s[i]));
    for (int i = 0; i < STREAMS; i++)
        BP_CONF_OK(bp_memory_set_async(dev, b[i] + N / 2 + i, w[i], N / 8, s[i]));
    for (int i = 0; i < STREAMS; i++)
        BP_CONF_OK(bp_memory_copy_async(dst[i], NULL, b[i], dev, N, s[i]));
    for (int i = 0; i < STREAMS; i++)
        BP_CONF_OK(bp_stream_synchronize(s[i]));
    for (int i = 0; i < STREAMS; i++)
        for (size_t j = 0; j < N; j++)
            if (dst[i][j] != want[i][j])
                fail_msg("stream %d of %d: byte %zu is 0x%02x, expected 0x%02x", i, STREAMS, j,
                         dst[i][j], want[i][j]);
    for (int i = 0; i < STREAMS; i++) {
        BP_CONF_OK(bp_memory_free(dev, a[i]));
        BP_CONF_OK(bp_memory_free(dev, b[i]));
        BP_CONF_OK(bp_stream_destroy(s[i]));
        free(src[i]);
        free(dst[i]);
        free(want[i]);
    }
}

static int clamp(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* Priorities at both ends of the device's range, 0 and beyond the range: the stream
 * reports the clamped value, and work on it runs correctly. */
static void test_priorities(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    int greatest = bp_conf.props.stream_priority_greatest;
    int least = bp_conf.props.stream_priority_least;
    if (greatest > least)
        fail_msg("stream_priority_greatest %d is above stream_priority_least %d (lower "
                 "numbers are higher priority)",
                 greatest, least);
    /* Out of range on both sides, without overflowing int. */
    int beyond_greatest = greatest > INT_MIN + 1000 ? greatest - 1000 : INT_MIN;
    int beyond_least = least < INT_MAX - 1000 ? least + 1000 : INT_MAX;
    const int asked[] = {least, greatest, 0, beyond_greatest, beyond_least};
    uint64_t rng = bp_conf_test_seed();
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        bp_stream *s = NULL;
        BP_CONF_OK(bp_stream_create(dev, asked[i], &s));
        int got = 0x5eed;
        BP_CONF_OK(bp_stream_get_priority(s, &got));
        int expected = clamp(asked[i], greatest, least);
        if (got != expected)
            fail_msg("a stream created with priority %d reports %d, expected %d (the range "
                     "is %d..%d)",
                     asked[i], got, expected, greatest, least);
        int value = (int)(bp_conf_rand(&rng) % 255) + 1;
        bp_conf_expect_memset_works(s, FILL_BYTES, value, "buffer set on a stream with a priority");
        BP_CONF_OK(bp_stream_destroy(s));
    }
}

/* bp_stream_synchronize returns only after a write held on a gate that a thread opens a
 * while later: then the gate is open and the write final, as seen from a stream that
 * is not ordered after it. A synchronize that returns early is caught unless the test
 * thread stalls for BP_CONF_LATE_OPEN_MS between the start and the synchronize. */
static void test_synchronize_waits(void **state) {
    (void)state;
    bp_stream *s = bp_conf_stream(), *reader = bp_conf_stream();
    bp_conf_overwrite w = bp_conf_overwrite_prepare(s, FILL_BYTES);
    bp_conf_overwrite_start(&w);
    bp_conf_overwrite_open_later(&w);
    bp_status synced = bp_stream_synchronize(s);
    bool open_at_return = bp_conf_overwrite_finish(&w);
    BP_CONF_OK(synced);
    if (!open_at_return)
        fail_msg("bp_stream_synchronize returned while a host function still held the stream");
    bp_conf_expect_overwritten(&w, reader,
                               "buffer read on another stream after bp_stream_synchronize");
    bp_conf_overwrite_free(&w);
    BP_CONF_OK(bp_stream_destroy(s));
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* bp_device_synchronize waits for the work of every stream of the device: each stream
 * is held on a gate with a memset behind it, and a thread opens the gate a while
 * later. When bp_device_synchronize returns, the gate must be open (a fact, whenever
 * the thread opens it) and every memset done. No allocation is in flight meanwhile,
 * so the check does not depend on the allocator's stream-ordered reuse. */
static void test_device_synchronize_waits(void **state) {
    (void)state;
    enum { STREAMS = 3 };
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    bp_stream *s[STREAMS], *reader = bp_conf_stream();
    void *x[STREAMS];
    int old_value[STREAMS], new_value[STREAMS];
    for (int i = 0; i < STREAMS; i++) {
        s[i] = bp_conf_stream();
        bp_conf_two_bytes(&rng, &old_value[i], &new_value[i]);
        x[i] = bp_conf_filled_buffer(s[i], FILL_BYTES, old_value[i]);
    }
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    int holders = 0;
    bp_status st = BP_OK;
    for (int i = 0; i < STREAMS && st == BP_OK; i++)
        if ((st = bp_conf_gate_hold(&gate, s[i])) == BP_OK)
            holders++;
    /* Through the library's host-function fallback the memsets block until the opener
     * opens the gate: the check is then weaker, never wrong. */
    bp_conf_gate_opener opener;
    bp_conf_gate_open_later(&opener, &gate, BP_CONF_LATE_OPEN_MS);
    for (int i = 0; i < STREAMS && st == BP_OK; i++)
        st = bp_memory_set_async(dev, x[i], new_value[i], FILL_BYTES, s[i]);
    bp_status synced = st == BP_OK ? bp_device_synchronize(dev) : st;
    bool open_at_return = bp_conf_gate_is_open(&gate);
    bp_conf_gate_opener_join(&opener);
    bp_conf_gate_destroy(&gate, holders);
    BP_CONF_OK(st);
    BP_CONF_OK(synced);
    if (!open_at_return)
        fail_msg("bp_device_synchronize returned while a host function still held %d streams "
                 "of the device", STREAMS);
    for (int i = 0; i < STREAMS; i++)
        bp_conf_expect_filled(reader, x[i], FILL_BYTES, new_value[i],
                              "buffer read on another stream after bp_device_synchronize");
    for (int i = 0; i < STREAMS; i++) {
        BP_CONF_OK(bp_memory_free(dev, x[i]));
        BP_CONF_OK(bp_stream_destroy(s[i]));
    }
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* Stream A writes X late (held on a gate a thread opens a while later) and records E;
 * stream B waits for E and copies X to Y. Only B is synchronized: it returns after the
 * gate opened, and Y holds A's result. A backend whose wait is a no-op copies X while
 * A is still held and fails (unless the test thread stalls for BP_CONF_LATE_OPEN_MS). */
static void test_wait_event_orders_streams(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream();
    bp_event *e = NULL;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &e));
    bp_conf_overwrite w = bp_conf_overwrite_prepare(a, FILL_BYTES);
    void *y = bp_conf_filled_buffer(b, FILL_BYTES, w.old_value);
    bp_conf_overwrite_start(&w);
    bp_conf_overwrite_open_later(&w);
    bp_status st = bp_event_record(e, a);
    if (st == BP_OK)
        st = bp_stream_wait_event(b, e);
    if (st == BP_OK)
        st = bp_memory_copy_async(y, dev, w.x, dev, FILL_BYTES, b);
    if (st == BP_OK)
        st = bp_stream_synchronize(b);
    bool open_at_return = bp_conf_overwrite_finish(&w);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("bp_stream_synchronize(B) returned while stream A, whose event B waits for, "
                 "was still held by a host function");
    bp_conf_expect_filled(b, y, FILL_BYTES, w.new_value,
                          "copy made on stream B after waiting for stream A's event");

    bp_conf_overwrite_free(&w);
    BP_CONF_OK(bp_memory_free(dev, y));
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
}

/* ---- work behind a held stream ---- */

/* The transfers of small_transfers_wait: each writes `new_value` over a destination
 * that holds `old_value`, in one direction, enqueued behind a gate. */
enum { TRANSFER_D2H, TRANSFER_H2D, TRANSFER_D2D, TRANSFER_MEMSET, TRANSFER_KINDS };
static const char *const transfer_names[TRANSFER_KINDS] = {
    "device-to-host copy", "host-to-device copy", "device-to-device copy", "memset"};

/* A host buffer of either kind: pageable (malloc) or from bp_host_alloc. */
static void *host_alloc_kind(size_t n, bool pinned) {
    if (!pinned)
        return bp_conf_host_buffer(n);
    void *p = NULL;
    BP_CONF_OK(bp_host_alloc(bp_conf.device, n, &p));
    return p;
}

static void host_free_kind(void *p, bool pinned) {
    if (pinned)
        BP_CONF_OK(bp_host_free(bp_conf.device, p));
    else
        free(p);
}

/* How long the opener of a pageable round waits before it opens the gate. */
enum { PAGEABLE_OPEN_MS = 200 };

/* One round of small_transfers_wait for `n` bytes and host memory of one kind: on s,
 * held on a gate, a copy in each direction and a memset; while the gate holds s,
 * every destination still holds its old bytes (read on the host, or through `reader`,
 * which is not ordered after s); once s is synchronized, the new ones.
 *
 * A copy to or from pageable host memory may block the caller until the stream has
 * run it (CUDA's cuMemcpyAsync does, include/backplane/memory.h): with pageable memory
 * a thread opens the gate after PAGEABLE_OPEN_MS, and the snapshot taken while the
 * gate was closed is checked only when the gate is still closed after it was taken
 * (then it was taken while the stream was held, whatever the load). With
 * bp_host_alloc memory nothing may block: the test itself opens the gate. */
static void transfers_behind_gate(bp_stream *s, bp_stream *reader, size_t n, bool pinned,
                                  uint64_t *rng) {
    bp_device *dev = bp_conf.device;
    int old_value, new_value;
    bp_conf_two_bytes(rng, &old_value, &new_value);
    unsigned char *host_dst = host_alloc_kind(n, pinned), *host_src = host_alloc_kind(n, pinned);
    memset(host_dst, old_value, n);
    memset(host_src, new_value, n);
    void *dev_src = bp_conf_filled_buffer(s, n, new_value);
    void *dst[TRANSFER_KINDS] = {host_dst};
    for (int k = TRANSFER_H2D; k < TRANSFER_KINDS; k++)
        dst[k] = bp_conf_filled_buffer(s, n, old_value);
    unsigned char *seen = bp_conf_host_buffer(n * TRANSFER_KINDS);

    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    bp_status st = bp_conf_gate_hold(&gate, s);
    bp_conf_gate_opener opener;
    bool opener_started = st == BP_OK && !pinned &&
                          bp_conf_gate_open_later(&opener, &gate, PAGEABLE_OPEN_MS);
    bp_status enq[TRANSFER_KINDS] = {BP_OK};
    if (st == BP_OK) {
        enq[TRANSFER_D2H] = bp_memory_copy_async(host_dst, NULL, dev_src, dev, n, s);
        enq[TRANSFER_H2D] = bp_memory_copy_async(dst[TRANSFER_H2D], dev, host_src, NULL, n, s);
        enq[TRANSFER_D2D] = bp_memory_copy_async(dst[TRANSFER_D2D], dev, dev_src, dev, n, s);
        enq[TRANSFER_MEMSET] = bp_memory_set_async(dev, dst[TRANSFER_MEMSET], new_value, n, s);
    }
    /* What each destination holds while s is held: the host buffer as it is, the
     * device buffers read through the reader. */
    memcpy(seen, host_dst, n);
    bp_status read = BP_OK;
    for (int k = TRANSFER_H2D; k < TRANSFER_KINDS && read == BP_OK; k++)
        read = bp_conf_download(reader, dst[k], n, seen + (size_t)k * n);
    bool held_while_seen = !bp_conf_gate_is_open(&gate);
    /* Opens the gate and waits for its host function to return, before any check can
     * end the test (the gate lives on this frame). */
    if (opener_started)
        bp_conf_gate_opener_join(&opener);
    bp_conf_gate_destroy(&gate, st == BP_OK ? 1 : 0);
    BP_CONF_OK(st);
    for (int k = 0; k < TRANSFER_KINDS; k++)
        if (enq[k] != BP_OK)
            fail_msg("enqueueing a %s of %zu bytes behind a held stream returned %s: %s",
                     transfer_names[k], n, bp_status_str(enq[k]), bp_last_error());
    BP_CONF_OK(read);
    for (int k = 0; k < TRANSFER_KINDS && held_while_seen; k++) {
        size_t bad = 0;
        if (!bp_conf_all_bytes(seen + (size_t)k * n, n, old_value, &bad))
            fail_msg("a %s of %zu bytes (%s host memory) enqueued behind a host function that "
                     "still held the stream had already written: byte %zu is 0x%02x, the old "
                     "0x%02x expected (the new is 0x%02x)",
                     transfer_names[k], n, pinned ? "bp_host_alloc" : "pageable", bad,
                     seen[(size_t)k * n + bad], (unsigned char)old_value,
                     (unsigned char)new_value);
    }
    BP_CONF_OK(bp_stream_synchronize(s));
    size_t bad = 0;
    if (!bp_conf_all_bytes(host_dst, n, new_value, &bad))
        fail_msg("after synchronize, byte %zu of a %zu-byte device-to-host copy is 0x%02x, "
                 "expected 0x%02x",
                 bad, n, host_dst[bad], (unsigned char)new_value);
    for (int k = TRANSFER_H2D; k < TRANSFER_KINDS; k++)
        bp_conf_expect_filled(reader, dst[k], n, new_value,
                              "destination of a transfer behind a released host function");
    free(seen);
    for (int k = TRANSFER_H2D; k < TRANSFER_KINDS; k++)
        BP_CONF_OK(bp_memory_free(dev, dst[k]));
    BP_CONF_OK(bp_memory_free(dev, dev_src));
    host_free_kind(host_dst, pinned);
    host_free_kind(host_src, pinned);
}

/* Work enqueued behind pending work waits for it whatever its size: transfers of 1, 4,
 * 64 bytes and more, in every direction and with both kinds of host memory, behind a
 * host function that holds the stream, have not run while it holds it. */
static void test_small_transfers_wait(void **state) {
    (void)state;
    BP_CONF_REQUIRE_NATIVE_HOST_FUNCS();
    static const size_t sizes[] = {1, 4, 64, 65, 4096, FILL_BYTES};
    uint64_t rng = bp_conf_test_seed();
    bp_stream *s = bp_conf_stream(), *reader = bp_conf_stream();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int pinned = 0; pinned < 2; pinned++)
            transfers_behind_gate(s, reader, sizes[i], pinned, &rng);
    BP_CONF_OK(bp_stream_destroy(s));
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* Stream A is held on a gate and records E; bp_stream_wait_event(B, E) returns while A
 * is still held (a wait that blocks the host hangs here, and the group's timeout fails
 * this test). Then B is not done, and a memset enqueued on B after the wait has not
 * run; once A is released and B synchronized, it has. The verdict uses only stream
 * query, synchronize, memset and copies, checked before. */
static void test_wait_event_does_not_block_host(void **state) {
    (void)state;
    BP_CONF_REQUIRE_NATIVE_HOST_FUNCS();
    bp_device *dev = bp_conf.device;
    uint64_t rng = bp_conf_test_seed();
    int old_value, new_value;
    bp_conf_two_bytes(&rng, &old_value, &new_value);
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream(), *reader = bp_conf_stream();
    bp_event *e = NULL;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &e));
    void *y = bp_conf_filled_buffer(b, FILL_BYTES, old_value);
    unsigned char *seen = bp_conf_host_buffer(FILL_BYTES);

    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    bp_status held = bp_conf_gate_hold(&gate, a);
    bp_status rec = held == BP_OK ? bp_event_record(e, a) : held;
    bp_status wait = rec == BP_OK ? bp_stream_wait_event(b, e) : rec;
    /* Reached only when the wait returned while A was held. */
    bp_clear_error();
    bp_status query = wait == BP_OK ? bp_stream_query(b) : wait;
    bool message = bp_last_error()[0] != '\0';
    bp_status set = query == BP_ERR_NOT_READY
                        ? bp_memory_set_async(dev, y, new_value, FILL_BYTES, b)
                        : BP_OK;
    bp_status read = set == BP_OK ? bp_conf_download(reader, y, FILL_BYTES, seen) : set;
    /* Opens the gate and waits for its host function to return, before any check can
     * end the test (the gate lives on this frame). */
    bp_conf_gate_destroy(&gate, held == BP_OK ? 1 : 0);
    BP_CONF_OK(held);
    BP_CONF_OK(rec);
    BP_CONF_OK(wait);
    if (query != BP_ERR_NOT_READY)
        fail_msg("bp_stream_query(B) returned %s while B waited for an event of stream A, "
                 "which a host function held: expected BP_ERR_NOT_READY",
                 bp_status_str(query));
    if (message)
        fail_msg("BP_ERR_NOT_READY set the error message '%s'", bp_last_error());
    BP_CONF_OK(set);
    BP_CONF_OK(read);
    size_t bad = 0;
    if (!bp_conf_all_bytes(seen, FILL_BYTES, old_value, &bad))
        fail_msg("a memset enqueued on B after B's wait for an event of held stream A had run "
                 "before A was released: byte %zu is 0x%02x, the old 0x%02x expected",
                 bad, seen[bad], (unsigned char)old_value);
    BP_CONF_OK(bp_stream_synchronize(b));
    BP_CONF_OK(bp_stream_query(b));
    bp_conf_expect_filled(reader, y, FILL_BYTES, new_value,
                          "buffer set on B after its wait, once A was released");
    free(seen);
    BP_CONF_OK(bp_memory_free(dev, y));
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
    BP_CONF_OK(bp_stream_destroy(reader));
}

/* The default stream is one stable stream of the device; it works and cannot be
 * destroyed. */
static void test_default_stream(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    bp_stream *d1 = NULL, *d2 = NULL;
    BP_CONF_OK(bp_stream_default(dev, &d1));
    BP_CONF_OK(bp_stream_default(dev, &d2));
    if (!d1 || d1 != d2)
        fail_msg("bp_stream_default returned %p, then %p: expected one stable stream",
                 (void *)d1, (void *)d2);
    if (bp_stream_device(d1) != dev)
        fail_msg("the default stream's device is not the device under test");
    if (bp_current_stream(dev) != d1)
        fail_msg("without a stream guard, the current stream is not the default stream");
    BP_CONF_ERR(bp_stream_destroy(d1), BP_ERR_INVALID_ARGUMENT);

    /* Still alive and in order after the refused destroy. */
    uint64_t rng = bp_conf_test_seed();
    int old_value, new_value;
    bp_conf_two_bytes(&rng, &old_value, &new_value);
    void *x = bp_conf_alloc(FILL_BYTES, d1);
    BP_CONF_OK(bp_memory_set_async(dev, x, old_value, FILL_BYTES, d1));
    BP_CONF_OK(bp_conf_slow_fill(d1, x, FILL_BYTES, new_value, SLOW_ROUNDS));
    bp_conf_expect_filled(d1, x, FILL_BYTES, new_value, "buffer written on the default stream");
    BP_CONF_OK(bp_memory_free(dev, x));
}

static const bp_conf_test tests[] = {
    /* First: the group's first bp_stream_query call, so a hang is reported here. */
    {"query", test_query,
     "query on a new stream is OK; held on a host function it is NOT_READY, and once OK the "
     "data is final; after synchronize it is OK",
     NULL},
    {"create_destroy", test_create_destroy,
     "many create/destroy cycles; destroy waits for queued work", NULL},
    {"ordering", test_ordering, "a long in-order chain of memsets and copies gives the right bytes",
     NULL},
    {"many_streams", test_many_streams, "32 streams each running a chain concurrently are correct",
     NULL},
    {"priorities", test_priorities,
     "priorities in, at the ends of and beyond the device's range are clamped; work runs", NULL},
    {"synchronize_waits", test_synchronize_waits,
     "bp_stream_synchronize returns only after a write held on a gate is released; the write "
     "is final on another stream",
     NULL},
    {"device_synchronize_waits", test_device_synchronize_waits,
     "bp_device_synchronize returns only after held streams are released, and their work "
     "is final",
     NULL},
    {"wait_event_orders_streams", test_wait_event_orders_streams,
     "a stream that waits for another stream's event sees that stream's result", NULL},
    {"small_transfers_wait", test_small_transfers_wait,
     "copies in every direction (pageable and bp_host_alloc memory) and memsets of 1, 4, 64 "
     "bytes and more behind a held stream have not run until it is released",
     NULL},
    {"wait_event_does_not_block_host", test_wait_event_does_not_block_host,
     "bp_stream_wait_event on an event behind a held stream returns at once; the waiting "
     "stream is NOT_READY and its later work has not run until the event's stream is released",
     NULL},
    {"default_stream", test_default_stream,
     "the default stream is stable, usable and cannot be destroyed", NULL},
};

const bp_conf_group bp_conf_group_streams = {
    .name = "streams",
    .summary = "stream creation, priorities, query, synchronize, ordering and waits",
    .tests = tests,
    .n_tests = sizeof tests / sizeof tests[0],
};
