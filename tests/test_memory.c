/* Device memory through the caching allocator, host memory and copies, on the
 * built-in cpu device, through the public API only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static void *dev_alloc(bp_device *dev, size_t size, bp_stream *stream) {
    void *p = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, size, stream, &p));
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 256, 0);
    return p;
}

static bp_stream *new_stream(bp_device *dev) {
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &s));
    return s;
}

/* Holds `stream` on `gate` (initialised here; the test opens and destroys it with one
 * holder) and enqueues after it a memset of `size` bytes at `ptr` to 0x77: work that is
 * certainly still queued until the test opens the gate. */
static void keep_busy(bp_device *dev, bp_stream *stream, bp_conf_gate *gate, void *ptr,
                      size_t size) {
    bp_conf_gate_init(gate);
    BP_ASSERT_OK(bp_conf_gate_hold(gate, stream));
    BP_ASSERT_OK(bp_memory_set_async(dev, ptr, 0x77, size, stream));
}

static void assert_bytes(const unsigned char *got, const unsigned char *want, size_t size) {
    for (size_t i = 0; i < size; i++)
        if (got[i] != want[i])
            fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, got[i], want[i]);
}

static char *hex(char *buf, size_t n, const void *p) {
    snprintf(buf, n, "0x%" PRIxPTR, (uintptr_t)p);
    return buf;
}

/* ---- basics ---- */

static void test_alloc_free_basic(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    void *p = dev_alloc(dev, 1000, NULL);
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.allocated_bytes, 1024); /* rounded to 512 */
    assert_int_equal(s1.reserved_bytes, 2 * MIB);
    assert_int_equal(s1.num_allocs - s0.num_allocs, 1);
    BP_ASSERT_OK(bp_memory_free(dev, p));
    bp_memory_stats s2 = bp_test_memory_stats(dev);
    assert_int_equal(s2.allocated_bytes, 0);
    assert_int_equal(s2.reserved_bytes, 2 * MIB); /* cached, not returned */
    assert_int_equal(s2.num_frees - s0.num_frees, 1);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_alignment(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    static const size_t sizes[] = {1, 255, 256, 257, 511, 512, 513, 4095, 4097, MIB - 1, MIB,
                                   MIB + 1, 2 * MIB + 3, 5 * MIB};
    enum { N = sizeof sizes / sizeof sizes[0] };
    void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = dev_alloc(dev, sizes[i], NULL); /* asserts 256-byte alignment */
        for (size_t j = 0; j < i; j++) {
            uintptr_t a = (uintptr_t)p[i], b = (uintptr_t)p[j];
            if (a < b + sizes[j] && b < a + sizes[i])
                fail_msg("blocks %zu and %zu overlap", i, j);
        }
    }
    for (size_t i = 0; i < N; i++)
        BP_ASSERT_OK(bp_memory_free(dev, p[i]));
    assert_int_equal(bp_test_memory_stats(dev).allocated_bytes, 0);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_copy_round_trip(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    static const size_t sizes[] = {1, 777, 64 * KIB, 3 * MIB + 5};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *in = malloc(n), *out = malloc(n);
        assert_non_null(in);
        assert_non_null(out);
        bp_test_fill_random(in, n, 42 + k);
        memset(out, 0, n);
        void *d1 = dev_alloc(dev, n, NULL), *d2 = dev_alloc(dev, n, NULL);
        BP_ASSERT_OK(bp_memory_copy_async(d1, dev, in, NULL, n, NULL));
        BP_ASSERT_OK(bp_memory_copy_async(d2, dev, d1, dev, n, NULL));
        BP_ASSERT_OK(bp_memory_copy_async(out, NULL, d2, dev, n, NULL));
        BP_ASSERT_OK(bp_stream_synchronize(bp_current_stream(dev)));
        assert_bytes(out, in, n);
        BP_ASSERT_OK(bp_memory_free(dev, d1));
        BP_ASSERT_OK(bp_memory_free(dev, d2));
        free(in);
        free(out);
    }
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* A copy within one allocation whose ranges overlap is a memmove: the core stages it
 * through one temporary block (one more num_allocs, none still allocated after), so
 * the backend never sees the overlap. Disjoint ranges, adjacent ones included, and
 * dst == src take no block; dst == src copies nothing. */
static void test_overlapping_copy(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    enum { N = 3 * MIB + 5 };
    static const struct {
        size_t dst, src, n;
        int staged;
    } cases[] = {
        {1, 0, N - 1, 1},        {0, 1, N - 1, 1},     {300, 45, MIB + 3, 1},
        {45, 300, MIB + 3, 1},   {MIB, 0, MIB, 0},     {0, MIB, MIB, 0},
        {77, 77, 1000, 0},       {MIB - 1, 0, MIB, 1},
    };
    unsigned char *want = malloc(N), *got = malloc(N);
    assert_non_null(want);
    assert_non_null(got);
    bp_test_fill_random(want, N, 11);
    unsigned char *d = dev_alloc(dev, N, NULL);
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, want, NULL, N, NULL));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bp_memory_stats before = bp_test_memory_stats(dev);
        BP_ASSERT_OK(bp_memory_copy_async(d + cases[k].dst, dev, d + cases[k].src, dev,
                                          cases[k].n, NULL));
        BP_ASSERT_OK(bp_stream_synchronize(bp_current_stream(dev)));
        memmove(want + cases[k].dst, want + cases[k].src, cases[k].n);
        bp_memory_stats after = bp_test_memory_stats(dev);
        assert_int_equal(after.num_allocs - before.num_allocs, cases[k].staged);
        assert_int_equal(after.allocated_bytes, before.allocated_bytes);
        memset(got, 0, N);
        BP_ASSERT_OK(bp_memory_copy_async(got, NULL, d, dev, N, NULL));
        BP_ASSERT_OK(bp_stream_synchronize(bp_current_stream(dev)));
        assert_bytes(got, want, N);
    }

    /* No memory for the temporary block: out of memory, with a message. */
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    BP_ASSERT_OK(bp_memory_set_limit(dev, bp_test_memory_stats(dev).reserved_bytes));
    BP_ASSERT_ERR(bp_memory_copy_async(d + 1, dev, d, dev, N - 1, NULL), BP_ERR_OUT_OF_MEMORY,
                  "staging a copy whose ranges overlap");
    BP_ASSERT_OK(bp_memory_set_limit(dev, 0));
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    free(want);
    free(got);
}

static void test_memset(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    enum { N = 10000 };
    unsigned char want[N], got[N];
    void *d = dev_alloc(dev, N, NULL);
    BP_ASSERT_OK(bp_memory_set_async(dev, d, 0xab, N, NULL));
    BP_ASSERT_OK(bp_memory_set_async(dev, (char *)d + 500, 0x11, 100, NULL));
    memset(want, 0xab, N);
    memset(want + 500, 0x11, 100);
    memset(got, 0, N);
    BP_ASSERT_OK(bp_memory_copy_async(got, NULL, d, dev, N, NULL));
    BP_ASSERT_OK(bp_stream_synchronize(bp_current_stream(dev)));
    assert_bytes(got, want, N);
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_zero_size_and_null_free(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    void *p = (void *)0x1;
    BP_ASSERT_OK(bp_memory_alloc(dev, 0, NULL, &p));
    assert_null(p);
    BP_ASSERT_OK(bp_memory_free(dev, NULL));
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.num_allocs, s0.num_allocs);
    assert_int_equal(s1.num_frees, s0.num_frees);
    assert_int_equal(s1.reserved_bytes, 0);
}

/* ---- misuse ---- */

static void test_double_free(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    char want[64], addr[32];
    void *p = dev_alloc(dev, 4096, NULL);
    BP_ASSERT_OK(bp_memory_free(dev, p));
    snprintf(want, sizeof want, "double free of %s on %s", hex(addr, sizeof addr, p),
             bp_device_name(dev));
    BP_ASSERT_ERR(bp_memory_free(dev, p), BP_ERR_INVALID_ARGUMENT, want);

    /* Freed blocks coalesce with their neighbours: still a double free. */
    void *a = dev_alloc(dev, 4096, NULL), *b = dev_alloc(dev, 4096, NULL);
    BP_ASSERT_OK(bp_memory_free(dev, b));
    snprintf(want, sizeof want, "double free of %s on %s", hex(addr, sizeof addr, b),
             bp_device_name(dev));
    BP_ASSERT_ERR(bp_memory_free(dev, b), BP_ERR_INVALID_ARGUMENT, want);

    /* A pointer inside a live block is not one the allocator handed out. */
    BP_ASSERT_ERR(bp_memory_free(dev, (char *)a + 1024), BP_ERR_INVALID_ARGUMENT,
                  "is not its start");
    assert_int_equal(bp_test_memory_stats(dev).allocated_bytes, 4096);
    BP_ASSERT_OK(bp_memory_free(dev, a));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_foreign_pointer(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    char want[128], addr[32];
    void *heap = malloc(4096);
    assert_non_null(heap);
    snprintf(want, sizeof want, "pointer %s was not allocated by backplane on %s (foreign pointer)",
             hex(addr, sizeof addr, heap), bp_device_name(dev));
    BP_ASSERT_ERR(bp_memory_free(dev, heap), BP_ERR_INVALID_ARGUMENT, want);
    BP_ASSERT_ERR(bp_memory_record_stream(dev, heap, bp_current_stream(dev)),
                  BP_ERR_INVALID_ARGUMENT, "foreign pointer");
    free(heap);
    int local = 0;
    BP_ASSERT_ERR(bp_memory_free(dev, &local), BP_ERR_INVALID_ARGUMENT, "foreign pointer");
    bp_memory_stats s = bp_test_memory_stats(dev);
    assert_int_equal(s.allocated_bytes, 0);
}

static void test_oversize(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    void *p = (void *)0x1;
    char want[96];
    snprintf(want, sizeof want, "out of memory on %s: requested %zu bytes", bp_device_name(dev),
             SIZE_MAX / 2);
    BP_ASSERT_ERR(bp_memory_alloc(dev, SIZE_MAX / 2, NULL, &p), BP_ERR_OUT_OF_MEMORY, want);
    assert_null(p);
    BP_ASSERT_ERR(bp_memory_alloc(dev, SIZE_MAX / 2, NULL, &p), BP_ERR_OUT_OF_MEMORY,
                  "exceeds the device's total memory");
    snprintf(want, sizeof want, "cannot allocate %zu bytes on %s", SIZE_MAX, bp_device_name(dev));
    BP_ASSERT_ERR(bp_memory_alloc(dev, SIZE_MAX, NULL, &p), BP_ERR_OUT_OF_MEMORY, want);
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.num_backend_allocs, s0.num_backend_allocs);
    assert_int_equal(s1.num_allocs, s0.num_allocs);
    assert_int_equal(s1.reserved_bytes, 0);
}

/* ---- stats and caching ---- */

static void test_stats(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    BP_ASSERT_OK(bp_memory_reset_peak(dev));
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    assert_int_equal(s0.peak_allocated_bytes, 0);
    assert_int_equal(s0.peak_reserved_bytes, 0);
    assert_int_equal(s0.limit_bytes, 0);

    void *small = dev_alloc(dev, 1000, NULL);
    void *large = dev_alloc(dev, 4 * MIB, NULL);
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.allocated_bytes, 1024 + 4 * MIB);
    assert_int_equal(s1.reserved_bytes, 2 * MIB + 4 * MIB);
    assert_int_equal(s1.num_segments, 2);
    assert_int_equal(s1.num_backend_allocs - s0.num_backend_allocs, 2);
    assert_int_equal(s1.num_allocs - s0.num_allocs, 2);
    assert_int_equal(s1.cache_hits - s0.cache_hits, 0);
    assert_int_equal(s1.peak_allocated_bytes, s1.allocated_bytes);
    assert_int_equal(s1.peak_reserved_bytes, s1.reserved_bytes);

    BP_ASSERT_OK(bp_memory_free(dev, large));
    bp_memory_stats s2 = bp_test_memory_stats(dev);
    assert_int_equal(s2.allocated_bytes, 1024);
    assert_int_equal(s2.reserved_bytes, 6 * MIB);
    assert_int_equal(s2.peak_allocated_bytes, 1024 + 4 * MIB);
    assert_int_equal(s2.num_frees - s0.num_frees, 1);

    BP_ASSERT_OK(bp_memory_reset_peak(dev));
    bp_memory_stats s3 = bp_test_memory_stats(dev);
    assert_int_equal(s3.peak_allocated_bytes, 1024);
    assert_int_equal(s3.peak_reserved_bytes, 6 * MIB);

    /* Same size on the same stream: served from the cache. */
    void *again = dev_alloc(dev, 4 * MIB, NULL);
    assert_ptr_equal(again, large);
    bp_memory_stats s4 = bp_test_memory_stats(dev);
    assert_int_equal(s4.cache_hits - s3.cache_hits, 1);
    assert_int_equal(s4.num_backend_allocs, s3.num_backend_allocs);
    assert_int_equal(s4.peak_allocated_bytes, 1024 + 4 * MIB);
    assert_int_equal(s4.num_allocs - s0.num_allocs, 3);

    /* A large block keeps a remainder of at most 1 MiB: 3 MiB occupies a 4 MiB one. */
    BP_ASSERT_OK(bp_memory_free(dev, again));
    void *three = dev_alloc(dev, 3 * MIB, NULL);
    assert_ptr_equal(three, large);
    assert_int_equal(bp_test_memory_stats(dev).allocated_bytes, 1024 + 4 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, three));
    BP_ASSERT_OK(bp_memory_free(dev, small));

    /* A caller built against an older, smaller struct gets only its fields. */
    struct {
        bp_memory_stats s;
        uint64_t canary;
    } old;
    memset(&old, 0xee, sizeof old);
    old.s.struct_size = offsetof(bp_memory_stats, peak_allocated_bytes);
    BP_ASSERT_OK(bp_memory_get_stats(dev, &old.s));
    assert_int_equal(old.s.allocated_bytes, 0);
    assert_int_equal(old.s.reserved_bytes, 6 * MIB);
    assert_int_equal(old.s.peak_allocated_bytes, 0xeeeeeeeeeeeeeeeeull);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_split_and_coalesce(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    char *a = dev_alloc(dev, 1000, NULL);
    char *b = dev_alloc(dev, 5000, NULL);
    bp_memory_stats s = bp_test_memory_stats(dev);
    assert_int_equal(s.num_segments, 1); /* both carved from one 2 MiB segment */
    assert_int_equal(s.reserved_bytes, 2 * MIB);
    assert_ptr_equal(b, a + 1024);
    BP_ASSERT_OK(bp_memory_free(dev, a));
    BP_ASSERT_OK(bp_memory_free(dev, b));
    /* Only a coalesced segment holds two 1 MiB blocks. */
    char *c = dev_alloc(dev, MIB, NULL);
    char *d = dev_alloc(dev, MIB, NULL);
    s = bp_test_memory_stats(dev);
    assert_int_equal(s.num_segments, 1);
    assert_ptr_equal(c, a);
    assert_ptr_equal(d, a + MIB);
    assert_int_equal(s.allocated_bytes, 2 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_memory_free(dev, c));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_same_stream_reuse(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_stream *s = new_stream(dev);
    void *p = dev_alloc(dev, 4096, s);
    /* Work still queued on s may use p: reuse on s is safe all the same. */
    bp_conf_gate gate;
    keep_busy(dev, s, &gate, p, 4096);
    BP_ASSERT_OK(bp_memory_free(dev, p));
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    void *q = dev_alloc(dev, 4096, s);
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_ptr_equal(q, p);
    assert_int_equal(s1.cache_hits - s0.cache_hits, 1);
    assert_int_equal(s1.num_backend_allocs, s0.num_backend_allocs);
    assert_int_equal(bp_stream_query(s), BP_ERR_NOT_READY);
    bp_conf_gate_destroy(&gate, 1);
    BP_ASSERT_OK(bp_memory_free(dev, q));
    BP_ASSERT_OK(bp_stream_destroy(s));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_cross_stream_reuse_waits(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_stream *a = new_stream(dev), *b = new_stream(dev);
    for (int round = 0; round < 2; round++) {
        /* A large segment, then a small one (1 MiB: two fill a segment). */
        size_t size = round == 0 ? 4 * MIB : MIB;
        void *p = dev_alloc(dev, size, a);
        bp_conf_gate gate;
        keep_busy(dev, a, &gate, p, size);
        BP_ASSERT_OK(bp_memory_free(dev, p));
        void *q = dev_alloc(dev, size, b);
        /* Fills the rest of q's small segment, so that b's own pool is empty again. */
        void *fill = round == 1 ? dev_alloc(dev, size, b) : NULL;
        /* a is held on the gate: p's memory is still in use there. */
        assert_int_equal(bp_stream_query(a), BP_ERR_NOT_READY);
        assert_ptr_not_equal(q, p);
        assert_ptr_not_equal(fill, p);
        bp_conf_gate_open(&gate);
        BP_ASSERT_OK(bp_stream_synchronize(a));
        bp_conf_gate_destroy(&gate, 1);
        bp_memory_stats s0 = bp_test_memory_stats(dev);
        void *r = dev_alloc(dev, size, b);
        bp_memory_stats s1 = bp_test_memory_stats(dev);
        assert_ptr_equal(r, p);
        assert_int_equal(s1.cache_hits - s0.cache_hits, 1);
        assert_int_equal(s1.num_backend_allocs, s0.num_backend_allocs);
        BP_ASSERT_OK(bp_memory_free(dev, q));
        BP_ASSERT_OK(bp_memory_free(dev, r));
        if (fill)
            BP_ASSERT_OK(bp_memory_free(dev, fill));
        BP_ASSERT_OK(bp_stream_synchronize(b));
        BP_ASSERT_OK(bp_memory_empty_cache(dev));
    }
    BP_ASSERT_OK(bp_stream_destroy(a));
    BP_ASSERT_OK(bp_stream_destroy(b));
}

static void test_record_stream_delays_reuse(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_stream *a = new_stream(dev), *b = new_stream(dev);
    void *p = dev_alloc(dev, 4 * MIB, a);
    BP_ASSERT_OK(bp_memory_record_stream(dev, p, b));
    BP_ASSERT_OK(bp_memory_record_stream(dev, p, b)); /* twice is once */
    BP_ASSERT_OK(bp_memory_record_stream(dev, p, a)); /* its own stream: no-op */
    bp_conf_gate gate;
    keep_busy(dev, b, &gate, p, 4 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, p));
    assert_int_equal(bp_test_memory_stats(dev).allocated_bytes, 0);
    void *q = dev_alloc(dev, 4 * MIB, a);
    assert_int_equal(bp_stream_query(b), BP_ERR_NOT_READY); /* held on the gate */
    assert_ptr_not_equal(q, p);
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_synchronize(b));
    bp_conf_gate_destroy(&gate, 1);
    void *r = dev_alloc(dev, 4 * MIB, a);
    assert_ptr_equal(r, p);
    BP_ASSERT_OK(bp_memory_free(dev, q));
    BP_ASSERT_OK(bp_memory_free(dev, r));
    BP_ASSERT_OK(bp_stream_destroy(a));
    BP_ASSERT_OK(bp_stream_destroy(b));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_record_stream_destroyed_stream(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_stream *b = new_stream(dev);
    void *p = dev_alloc(dev, 4096, NULL);
    BP_ASSERT_OK(bp_memory_record_stream(dev, p, b));
    bp_conf_gate gate;
    keep_busy(dev, b, &gate, p, 4096);
    bp_conf_gate_open(&gate); /* the memset after it may still be queued */
    BP_ASSERT_OK(bp_stream_destroy(b)); /* waits for b: nothing left to wait for */
    bp_conf_gate_destroy(&gate, 1);
    BP_ASSERT_OK(bp_memory_free(dev, p));
    void *q = dev_alloc(dev, 4096, NULL);
    assert_ptr_equal(q, p);
    BP_ASSERT_OK(bp_memory_free(dev, q));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

static void test_destroyed_stream_memory_reused(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_stream *a = new_stream(dev), *b = new_stream(dev);
    void *p = dev_alloc(dev, 4 * MIB, a);
    void *live = dev_alloc(dev, 4096, a);
    BP_ASSERT_OK(bp_memory_free(dev, p));
    BP_ASSERT_OK(bp_stream_destroy(a));
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    void *q = dev_alloc(dev, 4 * MIB, b);
    assert_ptr_equal(q, p);
    assert_int_equal(bp_test_memory_stats(dev).num_backend_allocs, s0.num_backend_allocs);
    /* A block that outlived its stream can still be used and freed. */
    BP_ASSERT_OK(bp_memory_set_async(dev, live, 7, 4096, b));
    BP_ASSERT_OK(bp_stream_synchronize(b));
    BP_ASSERT_OK(bp_memory_free(dev, live));
    BP_ASSERT_OK(bp_memory_free(dev, q));
    BP_ASSERT_OK(bp_stream_destroy(b));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    assert_int_equal(bp_test_memory_stats(dev).reserved_bytes, 0);
}

static void test_empty_cache(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    void *a = dev_alloc(dev, 1000, NULL);
    void *b = dev_alloc(dev, 4 * MIB, NULL);
    void *c = dev_alloc(dev, 8 * MIB, NULL);
    BP_ASSERT_OK(bp_memory_free(dev, a));
    BP_ASSERT_OK(bp_memory_free(dev, b));
    BP_ASSERT_OK(bp_memory_free(dev, c));
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.reserved_bytes, 14 * MIB);
    assert_int_equal(s1.num_segments, 3);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    bp_memory_stats s2 = bp_test_memory_stats(dev);
    assert_int_equal(s2.reserved_bytes, 0);
    assert_int_equal(s2.num_segments, 0);
    assert_int_equal(s2.num_backend_frees - s0.num_backend_frees, 3);
    assert_int_equal(s2.peak_reserved_bytes, 14 * MIB);

    /* Blocks handed out stay. */
    unsigned char *live = dev_alloc(dev, 4096, NULL);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    assert_int_equal(bp_test_memory_stats(dev).reserved_bytes, 2 * MIB);
    unsigned char got[4096], want[4096];
    memset(want, 0x5a, sizeof want);
    BP_ASSERT_OK(bp_memory_set_async(dev, live, 0x5a, sizeof want, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(got, NULL, live, dev, sizeof got, NULL));
    BP_ASSERT_OK(bp_stream_synchronize(bp_current_stream(dev)));
    assert_bytes(got, want, sizeof got);
    BP_ASSERT_OK(bp_memory_free(dev, live));

    /* A segment another stream still works on is released only after that work. */
    bp_stream *s = new_stream(dev);
    void *busy = dev_alloc(dev, 4 * MIB, s);
    bp_conf_gate gate;
    keep_busy(dev, s, &gate, busy, 4 * MIB);
    unsigned char *out = calloc(1, 4 * MIB), *expect = malloc(4 * MIB);
    assert_non_null(out);
    assert_non_null(expect);
    memset(expect, 0x77, 4 * MIB); /* what keep_busy writes */
    BP_ASSERT_OK(bp_memory_copy_async(out, NULL, busy, dev, 4 * MIB, s));
    BP_ASSERT_OK(bp_memory_free(dev, busy));
    assert_int_equal(bp_stream_query(s), BP_ERR_NOT_READY);
    /* empty_cache must wait for s, so the gate opens first (the work may still run). */
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    bp_conf_gate_destroy(&gate, 1);
    /* The copy enqueued before the free has run: empty_cache waited for it. */
    assert_bytes(out, expect, 4 * MIB);
    assert_int_equal(bp_test_memory_stats(dev).reserved_bytes, 0);
    BP_ASSERT_OK(bp_stream_destroy(s));
    free(out);
    free(expect);
}

static void test_set_limit(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    BP_ASSERT_OK(bp_memory_set_limit(dev, 4 * MIB));
    assert_int_equal(bp_test_memory_stats(dev).limit_bytes, 4 * MIB);
    void *a = dev_alloc(dev, 2 * MIB, NULL);
    void *b = (void *)0x1;
    char want[160];
    snprintf(want, sizeof want, "out of memory on %s: requested 3145728 bytes, allocated "
             "2097152 bytes, reserved 2097152 bytes, limit 4194304 bytes", bp_device_name(dev));
    BP_ASSERT_ERR(bp_memory_alloc(dev, 3 * MIB, NULL, &b), BP_ERR_OUT_OF_MEMORY, want);
    assert_null(b);

    /* Cached memory is released to make room under the limit. */
    BP_ASSERT_OK(bp_memory_free(dev, a));
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    b = dev_alloc(dev, 3 * MIB, NULL);
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.num_backend_frees - s0.num_backend_frees, 1);
    assert_int_equal(s1.reserved_bytes, 4 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, b));

    /* A limit below what is reserved empties the cache first. */
    BP_ASSERT_OK(bp_memory_set_limit(dev, 2 * MIB));
    assert_int_equal(bp_test_memory_stats(dev).reserved_bytes, 0);
    BP_ASSERT_ERR(bp_memory_alloc(dev, 3 * MIB, NULL, &b), BP_ERR_OUT_OF_MEMORY,
                  "limit 2097152 bytes");
    BP_ASSERT_OK(bp_memory_set_limit(dev, 0));
    b = dev_alloc(dev, 3 * MIB, NULL);
    BP_ASSERT_OK(bp_memory_free(dev, b));
    BP_ASSERT_ERR(bp_memory_alloc(dev, SIZE_MAX / 2, NULL, &b), BP_ERR_OUT_OF_MEMORY,
                  "limit none");
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* ---- host memory ---- */

static void test_host_alloc(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    unsigned char *h = NULL;
    BP_ASSERT_OK(bp_host_alloc(dev, 1000, (void **)&h));
    assert_non_null(h);
    memset(h, 0x3c, 1000);
    void *d = dev_alloc(dev, 1000, NULL);
    unsigned char back[1000];
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, h, NULL, 1000, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(back, NULL, d, dev, 1000, NULL));
    BP_ASSERT_OK(bp_stream_synchronize(bp_current_stream(dev)));
    assert_bytes(back, h, 1000);
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_host_free(dev, h));
    BP_ASSERT_ERR(bp_host_free(dev, h), BP_ERR_INVALID_ARGUMENT, "double free");
    int local;
    BP_ASSERT_ERR(bp_host_free(dev, &local), BP_ERR_INVALID_ARGUMENT, "foreign pointer");
    void *z = (void *)0x1;
    BP_ASSERT_OK(bp_host_alloc(dev, 0, &z));
    assert_null(z);
    BP_ASSERT_OK(bp_host_free(dev, NULL));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* ---- many threads, many streams ---- */

#define THREADS 8
#define ITERS 300

typedef struct worker {
    bp_device *dev;
    bp_stream *shared; /* every thread records its blocks on it now and then */
    int id;
    int failed_line;
    char error[256];
} worker;

#define WCHECK(w, cond)                                                                     \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            (w)->failed_line = __LINE__;                                                   \
            snprintf((w)->error, sizeof (w)->error, "%s (%s)", #cond, bp_last_error());      \
            return NULL;                                                                   \
        }                                                                                  \
    } while (0)

static void *worker_main(void *arg) {
    worker *w = arg;
    static const size_t sizes[] = {512, 1000, 4096, 100 * KIB, MIB, 3 * MIB};
    enum { NSIZES = sizeof sizes / sizeof sizes[0] };
    bp_stream *s = NULL;
    WCHECK(w, bp_stream_create(w->dev, 0, &s) == BP_OK);
    unsigned char *back = malloc(3 * MIB);
    WCHECK(w, back);
    void *held[4] = {0};
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    for (int i = 0; i < ITERS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = sizes[x % NSIZES];
        int slot = (int)((x >> 8) % 4);
        if (held[slot])
            WCHECK(w, bp_memory_free(w->dev, held[slot]) == BP_OK);
        held[slot] = NULL;
        void *p = NULL;
        WCHECK(w, bp_memory_alloc(w->dev, n, s, &p) == BP_OK && p);
        int value = (w->id * 31 + i) & 0xff;
        WCHECK(w, bp_memory_set_async(w->dev, p, value, n, s) == BP_OK);
        if ((x >> 20) % 8 == 0)
            WCHECK(w, bp_memory_record_stream(w->dev, p, w->shared) == BP_OK);
        WCHECK(w, bp_memory_copy_async(back, NULL, p, w->dev, n, s) == BP_OK);
        WCHECK(w, bp_stream_synchronize(s) == BP_OK);
        for (size_t k = 0; k < n; k += 97)
            WCHECK(w, back[k] == value);
        WCHECK(w, back[n - 1] == value);
        held[slot] = p;
    }
    for (int k = 0; k < 4; k++)
        if (held[k])
            WCHECK(w, bp_memory_free(w->dev, held[k]) == BP_OK);
    free(back);
    WCHECK(w, bp_stream_destroy(s) == BP_OK);
    return NULL;
}

static void test_threads_and_streams(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    bp_stream *shared = new_stream(dev);
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.dev = dev, .shared = shared, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (w[i].failed_line)
            fail_msg("thread %d failed at line %d: %s", i, w[i].failed_line, w[i].error);
    }
    bp_memory_stats s = bp_test_memory_stats(dev);
    assert_int_equal(s.allocated_bytes, 0);
    assert_int_equal(s.num_allocs - s.num_frees, 0);
    BP_ASSERT_OK(bp_stream_destroy(shared));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    s = bp_test_memory_stats(dev);
    assert_int_equal(s.reserved_bytes, 0);
    assert_int_equal(s.num_segments, 0);
    assert_int_equal(s.num_backend_allocs, s.num_backend_frees);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_free_basic),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_copy_round_trip),
        cmocka_unit_test(test_overlapping_copy),
        cmocka_unit_test(test_memset),
        cmocka_unit_test(test_zero_size_and_null_free),
        cmocka_unit_test(test_double_free),
        cmocka_unit_test(test_foreign_pointer),
        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_split_and_coalesce),
        cmocka_unit_test(test_same_stream_reuse),
        cmocka_unit_test(test_cross_stream_reuse_waits),
        cmocka_unit_test(test_record_stream_delays_reuse),
        cmocka_unit_test(test_record_stream_destroyed_stream),
        cmocka_unit_test(test_destroyed_stream_memory_reused),
        cmocka_unit_test(test_empty_cache),
        cmocka_unit_test(test_set_limit),
        cmocka_unit_test(test_host_alloc),
        cmocka_unit_test(test_threads_and_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
