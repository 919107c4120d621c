/* Conformance group "allocator": the caching allocator under streams, on the device
 * under test. The allocator is the core's, but whether it is safe depends on the
 * backend: it moves a freed segment to another stream once an event recorded on the
 * old stream reports completion, and it takes raw segments from the backend's alloc.
 * A backend whose events complete early, or whose alloc hands out memory that is still
 * in use, makes two users share memory; these tests make that visible as wrong data.
 *
 * Each test makes the first user's last write late (late.h: held on a gate that the
 * test opens only after the block was freed, reallocated and written by the second
 * user), so the block is in use for certain when the allocator decides; if the memory
 * is shared too early, that write lands after the second user's and overwrites it. On
 * a correct backend the memory is reused only after the write, or not at all, and the
 * second user's data always survives. Where the device cannot hold work, the late write
 * is only slow (bp_conf_slow_fill): the defect is then caught only if it still runs.
 *
 * Users write with uploads from host memory or copies of device memory filled that way,
 * never memset, so that a memset defect fails memory.memset and not these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "late.h"
#include "work.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
/* Copies of bp_conf_slow_fill before the late write where the device cannot hold it:
 * tens of milliseconds on a cpu. */
#define FALLBACK_ROUNDS 12
/* The allocator's segment unit (hal/allocator.c): a block larger than this gets a
 * segment of its own, which is a backend allocation of its own. */
#define SEGMENT_UNIT (2 * MIB)

static const int first_value = 0x11, second_value = 0x22;

/* Downloads `n` bytes at `src` through `stream` into a fresh host buffer. */
static unsigned char *download_new(bp_stream *stream, const void *src, size_t n) {
    unsigned char *host = bp_conf_host_buffer(n);
    BP_CONF_OK(bp_conf_download(stream, src, n, host));
    return host;
}

/* Fails unless host[0, n) is all `value`; says what that means for the test. */
static void expect_all(const unsigned char *host, size_t n, int value, const char *what) {
    size_t bad = 0;
    if (!bp_conf_all_bytes(host, n, value, &bad))
        fail_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, bad, n, host[bad],
                 (unsigned)value);
}

/* Host memory for the copies a held stream may have pending: from bp_host_alloc, never
 * pageable, because a copy to or from pageable memory may block its caller until the
 * stream runs it (include/backplane/memory.h), and the test thread holds the stream.
 * Does not fail the test: NULL with the failure in *st (after a failure: NULL). */
static unsigned char *pinned_new(size_t size, bp_status *st) {
    void *host = NULL;
    if (*st == BP_OK)
        *st = bp_host_alloc(bp_conf.device, size, &host);
    return host;
}

static void pinned_free(unsigned char *host) {
    if (host)
        BP_CONF_OK(bp_host_free(bp_conf.device, host));
}

/* A late write of first_value over `size` bytes: the source it copies, and the gate. */
typedef struct late_first {
    void *source;
    bp_conf_late late;
} late_first;

static void late_first_init(late_first *f, bp_stream *s, size_t size) {
    f->source = bp_conf_filled_buffer(s, size, first_value);
    bp_conf_late_init(&f->late);
}

/* Enqueues on `s` the late write over p; nothing may fail the test before
 * late_first_release. */
static bp_status late_first_write(late_first *f, bp_stream *s, void *p, size_t size) {
    return bp_conf_late_write(&f->late, s, p, f->source, size, first_value, FALLBACK_ROUNDS);
}

/* Opens the gate (the late write may run now) and frees the source once `s`, the
 * stream of the write, has done it. */
static void late_first_release(late_first *f, bp_stream *s) {
    bp_conf_late_finish(&f->late);
    BP_CONF_OK(bp_stream_synchronize(s));
    BP_CONF_OK(bp_memory_free(bp_conf.device, f->source));
}

/* The first user of a block: allocates `size` bytes on `s`, writes first_value there
 * late (held until late_first_release), copies what s wrote into a fresh pinned host
 * buffer (*seen, which the caller frees with pinned_free) and frees the block while
 * the write is pending.
 * Returns the freed block's address, to compare with where the next allocation lands.
 * Nothing may fail the test before late_first_release; failures land in *st. */
static void *write_late_then_free(bp_stream *s, size_t size, late_first *f,
                                  unsigned char **seen, bp_status *st) {
    bp_device *dev = bp_conf.device;
    *st = BP_OK;
    *seen = pinned_new(size, st);
    BP_CONF_OK(*st);
    void *p = bp_conf_alloc(size, s);
    late_first_init(f, s, size);
    *st = late_first_write(f, s, p, size);
    if (*st == BP_OK)
        *st = bp_memory_copy_async(*seen, NULL, p, dev, size, s);
    if (*st == BP_OK)
        *st = bp_memory_free(dev, p);
    return p;
}

/* Allocates `size` bytes on `s` without failing the test (NULL on failure, with *st). */
static void *alloc_quietly(size_t size, bp_stream *s, bp_status *st) {
    void *q = NULL;
    if (*st == BP_OK)
        *st = bp_memory_alloc(bp_conf.device, size, s, &q);
    return q;
}

/* Enqueues on `s` a write of `value` over dst[0, size) from a pinned host buffer, which
 * the caller frees with pinned_free once `s` is synchronized (the upload reads it
 * asynchronously). Does not fail the test (a gate may be closed): does nothing after a
 * failure in *st, and returns NULL with the failure in *st. */
static unsigned char *write_async(bp_stream *s, void *dst, size_t size, int value,
                                  bp_status *st) {
    unsigned char *host = pinned_new(size, st);
    if (!host)
        return NULL;
    memset(host, value, size);
    *st = bp_memory_copy_async(dst, bp_conf.device, host, NULL, size, s);
    return host;
}

/* ---- stream_ordered_reuse ---- */

/* One round: `size` bytes written late by stream a, freed, then allocated on stream b
 * and written there at once. Returns whether b got a's block back. */
static bool reuse_round(size_t size) {
    bp_device *dev = bp_conf.device;
    BP_CONF_OK(bp_memory_empty_cache(dev)); /* b's block comes from a's pool or is new */
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream();
    unsigned char *seen_by_a;
    late_first f;
    bp_status st;
    void *p = write_late_then_free(a, size, &f, &seen_by_a, &st); /* a's write is held */

    void *q = alloc_quietly(size, b, &st);
    unsigned char *written = write_async(b, q, size, second_value, &st);
    late_first_release(&f, a);
    BP_CONF_OK(st);
    BP_CONF_OK(bp_stream_synchronize(b));
    pinned_free(written);

    char what[400];
    snprintf(what, sizeof what, "%zu bytes written late on stream A, then freed", size);
    expect_all(seen_by_a, size, first_value, what);
    unsigned char *got = download_new(b, q, size);
    snprintf(what, sizeof what,
             "a block of %zu bytes allocated on stream B %s a block stream A was still writing "
             "(0x%02x) when it was freed, and written on B (0x%02x): A's write landed after "
             "B's, so the block was handed to B before A's work was done (do the backend's "
             "events complete too early?)", size, q == p ? "reusing" : "next to", first_value,
             second_value);
    expect_all(got, size, second_value, what);
    free(got);
    pinned_free(seen_by_a);
    BP_CONF_OK(bp_memory_free(dev, q));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
    return q == p;
}

static void test_stream_ordered_reuse(void **state) {
    /* A block with a segment of its own and one carved from a shared segment, twice. */
    static const size_t sizes[] = {4 * MIB, 256 * KIB, 4 * MIB, 256 * KIB};
    int reused = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        reused += reuse_round(sizes[i]);
    print_message("the second stream got the first one's block back in %d of %zu rounds\n",
                  reused, sizeof sizes / sizeof sizes[0]);
    BP_CONF_OK(bp_memory_empty_cache(bp_conf.device));
}

/* ---- live_blocks_disjoint ---- */

#define LIVE_BLOCKS 24

/* Sizes alternate between blocks larger than a segment (each a backend allocation of
 * its own) and small blocks carved from shared segments. */
static size_t live_size(int i) {
    static const size_t large[] = {SEGMENT_UNIT + 1,      3 * MIB,     SEGMENT_UNIT + 512,
                                   5 * MIB + 3,          4 * MIB,     6 * MIB};
    static const size_t small[] = {512, 1000, 4096, 65537, 300 * KIB, MIB};
    return i % 2 ? small[(i / 2) % 6] : large[(i / 2) % 6];
}

static void expect_disjoint(void *const *p, const size_t *size, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            uintptr_t a = (uintptr_t)p[i], b = (uintptr_t)p[j];
            if (a < b + size[j] && b < a + size[i])
                fail_msg("live blocks overlap: block %d (%zu bytes at %p) and block %d (%zu bytes "
                         "at %p); the backend's alloc handed out memory still in use", i, size[i],
                         p[i], j, size[j], p[j]);
        }
}

static void test_live_blocks_disjoint(void **state) {
    bp_device *dev = bp_conf.device;
    BP_CONF_OK(bp_memory_empty_cache(dev)); /* the large blocks reach the backend's alloc */
    bp_stream *s[2] = {bp_conf_stream(), bp_conf_stream()};
    void *p[LIVE_BLOCKS];
    size_t size[LIVE_BLOCKS];

    /* Half the blocks; then free and release a few (segments go back to the backend)
     * and allocate the rest, so the backend hands out memory beside live segments and
     * where freed ones were. */
    for (int i = 0; i < LIVE_BLOCKS / 2; i++) {
        size[i] = live_size(i);
        p[i] = bp_conf_alloc(size[i], s[i % 2]);
    }
    for (int i = 0; i < LIVE_BLOCKS / 2; i += 4)
        BP_CONF_OK(bp_memory_free(dev, p[i]));
    BP_CONF_OK(bp_memory_empty_cache(dev));
    for (int i = 0; i < LIVE_BLOCKS / 2; i += 4)
        p[i] = bp_conf_alloc(size[i], s[i % 2]);
    for (int i = LIVE_BLOCKS / 2; i < LIVE_BLOCKS; i++) {
        size[i] = live_size(i);
        p[i] = bp_conf_alloc(size[i], s[i % 2]);
    }
    expect_disjoint(p, size, LIVE_BLOCKS);

    /* Each block gets its own byte on its own stream; then every byte is read back. */
    unsigned char *written[LIVE_BLOCKS];
    bp_status st = BP_OK;
    for (int i = 0; i < LIVE_BLOCKS; i++)
        written[i] = write_async(s[i % 2], p[i], size[i], 0x40 + i, &st);
    BP_CONF_OK(st);
    BP_CONF_OK(bp_stream_synchronize(s[0]));
    BP_CONF_OK(bp_stream_synchronize(s[1]));
    for (int i = 0; i < LIVE_BLOCKS; i++)
        pinned_free(written[i]);
    for (int i = 0; i < LIVE_BLOCKS; i++) {
        unsigned char *got = download_new(s[i % 2], p[i], size[i]);
        size_t bad = 0;
        if (!bp_conf_all_bytes(got, size[i], 0x40 + i, &bad)) {
            int other = got[bad] - 0x40;
            if (other >= 0 && other < LIVE_BLOCKS)
                fail_msg("block %d (%zu bytes at %p): byte %zu is 0x%02x, the value of block %d "
                         "(%zu bytes at %p): the two share memory", i, size[i], p[i], bad,
                         got[bad], other, size[other], p[other]);
            fail_msg("block %d (%zu bytes at %p): byte %zu is 0x%02x, expected 0x%02x", i,
                     size[i], p[i], bad, got[bad], 0x40 + i);
        }
        free(got);
    }
    for (int i = 0; i < LIVE_BLOCKS; i++)
        BP_CONF_OK(bp_memory_free(dev, p[i]));
    BP_CONF_OK(bp_stream_destroy(s[0]));
    BP_CONF_OK(bp_stream_destroy(s[1]));
    BP_CONF_OK(bp_memory_empty_cache(dev));
}

/* ---- record_stream_keeps_alive ---- */

static void record_stream_round(size_t size) {
    bp_device *dev = bp_conf.device;
    BP_CONF_OK(bp_memory_empty_cache(dev));
    bp_stream *a = bp_conf_stream(), *b = bp_conf_stream();
    void *p = bp_conf_alloc(size, a);
    BP_CONF_OK(bp_memory_record_stream(dev, p, b));
    late_first f;
    late_first_init(&f, b, size);
    bp_status st = late_first_write(&f, b, p, size);
    if (st == BP_OK)
        st = bp_memory_free(dev, p); /* b's held write still writes p */

    void *q = alloc_quietly(size, a, &st);
    unsigned char *written = write_async(a, q, size, second_value, &st);
    late_first_release(&f, b);
    BP_CONF_OK(st);
    BP_CONF_OK(bp_stream_synchronize(a));
    pinned_free(written);
    char what[400];
    snprintf(what, sizeof what,
             "a block of %zu bytes %s one freed after bp_memory_record_stream while stream B "
             "still wrote it: B's write (0x%02x) landed after the new owner's (0x%02x)", size,
             q == p ? "reusing" : "next to", first_value, second_value);
    unsigned char *got = download_new(a, q, size);
    expect_all(got, size, second_value, what);
    free(got);
    BP_CONF_OK(bp_memory_free(dev, q));
    BP_CONF_OK(bp_stream_destroy(a));
    BP_CONF_OK(bp_stream_destroy(b));
}

static void test_record_stream_keeps_alive(void **state) {
    record_stream_round(4 * MIB);
    record_stream_round(256 * KIB);
    BP_CONF_OK(bp_memory_empty_cache(bp_conf.device));
}

/* ---- same_stream_reuse ---- */

static void same_stream_round(size_t size) {
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    unsigned char *before;
    late_first f;
    bp_status st;
    /* The block is reusable at once on s: stream order protects it. */
    void *p = write_late_then_free(s, size, &f, &before, &st);

    void *q = alloc_quietly(size, s, &st);
    unsigned char *written = write_async(s, q, size, second_value, &st);
    late_first_release(&f, s);
    BP_CONF_OK(st);
    unsigned char *after = download_new(s, q, size);
    pinned_free(written);
    char what[160];
    snprintf(what, sizeof what, "the first use of a block of %zu bytes, read before its free",
             size);
    expect_all(before, size, first_value, what);
    snprintf(what, sizeof what, "a block of %zu bytes %s one freed on the same stream", size,
             q == p ? "reusing" : "next to");
    expect_all(after, size, second_value, what);
    pinned_free(before);
    free(after);
    BP_CONF_OK(bp_memory_free(dev, q));
    BP_CONF_OK(bp_stream_destroy(s));
}

static void test_same_stream_reuse(void **state) {
    same_stream_round(4 * MIB);
    same_stream_round(256 * KIB);
    BP_CONF_OK(bp_memory_empty_cache(bp_conf.device));
}

static const bp_conf_test allocator_tests[] = {
    {"stream_ordered_reuse", test_stream_ordered_reuse,
     "a block freed while its stream still writes it is not handed to another stream before "
     "that write", NULL},
    {"live_blocks_disjoint", test_live_blocks_disjoint,
     "live blocks (several larger than a segment) never overlap and each keeps its own data",
     NULL},
    {"record_stream_keeps_alive", test_record_stream_keeps_alive,
     "after bp_memory_record_stream a freed block waits for the recorded stream's work", NULL},
    {"same_stream_reuse", test_same_stream_reuse,
     "a block freed and reallocated on one stream is used in stream order", NULL},
};

const bp_conf_group bp_conf_group_allocator = {
    .name = "allocator",
    .summary = "the caching allocator under streams never hands out memory still in use",
    .tests = allocator_tests,
    .n_tests = sizeof allocator_tests / sizeof allocator_tests[0],
    .timeout_s = 60,
};
