/* Many threads x many streams: ordering, cross-stream event waits, stream-ordered
 * allocator reuse and guard restore, all at once on the cpu device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* REUSE is above the allocator's small-block limit, so each such block owns its segment
 * and a freed one is a candidate for another stream at once. */
enum { THREADS = 8, STREAMS = 4, ITERS = 12, PAYLOAD = 256 << 10, REUSE = 3 << 20, SLOW = 4 << 20 };

struct worker {
    int id;
    bp_device *dev;
    char failure[256];
};

#define WORKER_CHECK(w, cond)                                                              \
    do {                                                                                   \
        if (!(cond) && !(w)->failure[0])                                                   \
            snprintf((w)->failure, sizeof (w)->failure, "thread %d, line %d: %s (%s)",      \
                     (w)->id, __LINE__, #cond, bp_last_error());                           \
    } while (0)

/* A chain across the 4 streams: s0 uploads, each next stream waits for the previous one's
 * event and copies on; the previous stream is kept busy first, so a missing wait shows
 * up as wrong data. Intermediate buffers are freed while in flight (record_stream keeps
 * them alive for the reader). */
static void chain_across_streams(struct worker *w, bp_stream **s, void *slow,
                                 unsigned char *in, unsigned char *out, int iter) {
    bp_device *dev = w->dev;
    bp_test_fill_random(in, PAYLOAD, (uint64_t)(w->id * 1000 + iter + 1));
    memset(out, 0, PAYLOAD);
    void *buf[STREAMS] = {0};
    bp_event *ev[STREAMS] = {0};
    WORKER_CHECK(w, bp_memory_alloc(dev, PAYLOAD, s[0], &buf[0]) == BP_OK);
    WORKER_CHECK(w, bp_memory_set_async(dev, slow, iter, SLOW, s[0]) == BP_OK);
    WORKER_CHECK(w, bp_memory_copy_async(buf[0], dev, in, NULL, PAYLOAD, s[0]) == BP_OK);
    for (int i = 1; i < STREAMS; i++) {
        WORKER_CHECK(w, bp_event_create(dev, BP_EVENT_DEFAULT, &ev[i - 1]) == BP_OK);
        WORKER_CHECK(w, bp_memory_set_async(dev, slow, i, SLOW, s[i - 1]) == BP_OK);
        WORKER_CHECK(w, bp_event_record(ev[i - 1], s[i - 1]) == BP_OK);
        WORKER_CHECK(w, bp_stream_wait_event(s[i], ev[i - 1]) == BP_OK);
        WORKER_CHECK(w, bp_memory_alloc(dev, PAYLOAD, s[i], &buf[i]) == BP_OK);
        WORKER_CHECK(w, bp_memory_copy_async(buf[i], dev, buf[i - 1], dev, PAYLOAD, s[i]) == BP_OK);
        WORKER_CHECK(w, bp_memory_record_stream(dev, buf[i - 1], s[i]) == BP_OK);
        WORKER_CHECK(w, bp_memory_free(dev, buf[i - 1]) == BP_OK);
        WORKER_CHECK(w, bp_event_destroy(ev[i - 1]) == BP_OK);
    }
    WORKER_CHECK(w, bp_memory_copy_async(out, NULL, buf[STREAMS - 1], dev, PAYLOAD,
                                         s[STREAMS - 1]) == BP_OK);
    WORKER_CHECK(w, bp_stream_synchronize(s[STREAMS - 1]) == BP_OK);
    WORKER_CHECK(w, memcmp(in, out, PAYLOAD) == 0);
    WORKER_CHECK(w, bp_memory_free(dev, buf[STREAMS - 1]) == BP_OK);
}

/* Frees a block whose stream is still busy with it, then allocates the same size on
 * another stream and scribbles over the result at once: if the allocator handed out
 * the busy block, the first stream's copy reads the scribble. */
static void reuse_across_streams(struct worker *w, bp_stream *a, bp_stream *b, void *slow,
                                 unsigned char *in, unsigned char *out, int iter) {
    bp_device *dev = w->dev;
    bp_test_fill_random(in, REUSE, (uint64_t)(w->id * 7777 + iter + 3));
    void *x = NULL, *y = NULL, *z = NULL;
    WORKER_CHECK(w, bp_memory_alloc(dev, REUSE, a, &x) == BP_OK);
    WORKER_CHECK(w, bp_memory_alloc(dev, REUSE, a, &y) == BP_OK);
    WORKER_CHECK(w, bp_memory_copy_async(x, dev, in, NULL, REUSE, a) == BP_OK);
    WORKER_CHECK(w, bp_memory_set_async(dev, slow, 1, SLOW, a) == BP_OK);
    WORKER_CHECK(w, bp_memory_copy_async(y, dev, x, dev, REUSE, a) == BP_OK);
    WORKER_CHECK(w, bp_memory_free(dev, x) == BP_OK);
    WORKER_CHECK(w, bp_memory_alloc(dev, REUSE, b, &z) == BP_OK);
    WORKER_CHECK(w, bp_memory_set_async(dev, z, 0x5A, REUSE, b) == BP_OK);
    WORKER_CHECK(w, bp_memory_copy_async(out, NULL, y, dev, REUSE, a) == BP_OK);
    WORKER_CHECK(w, bp_stream_synchronize(a) == BP_OK);
    WORKER_CHECK(w, bp_stream_synchronize(b) == BP_OK);
    WORKER_CHECK(w, memcmp(in, out, REUSE) == 0);
    WORKER_CHECK(w, bp_memory_free(dev, y) == BP_OK);
    WORKER_CHECK(w, bp_memory_free(dev, z) == BP_OK);
}

/* Random nesting of stream guards over this thread's streams; each end must restore. */
static void nested_guards(struct worker *w, bp_stream **s, unsigned seed) {
    bp_stream_guard guards[6];
    bp_stream *expected[7];
    expected[0] = bp_current_stream(w->dev);
    int depth = 0;
    for (int step = 0; step < 40; step++) {
        seed = seed * 1103515245u + 12345u;
        bool push = depth == 0 || (depth < 6 && (seed >> 16) % 2);
        if (push) {
            bp_stream *next = s[(seed >> 8) % STREAMS];
            WORKER_CHECK(w, bp_stream_guard_begin(&guards[depth], next) == BP_OK);
            expected[++depth] = next;
        } else {
            bp_stream_guard_end(&guards[--depth]);
        }
        WORKER_CHECK(w, bp_current_stream(w->dev) == expected[depth]);
    }
    while (depth > 0)
        bp_stream_guard_end(&guards[--depth]);
    WORKER_CHECK(w, bp_current_stream(w->dev) == expected[0]);
}

static void *worker_main(void *p) {
    struct worker *w = p;
    bp_stream *s[STREAMS] = {0};
    for (int i = 0; i < STREAMS; i++)
        WORKER_CHECK(w, bp_stream_create(w->dev, i % 2 ? -1 : 0, &s[i]) == BP_OK);
    void *slow = NULL;
    WORKER_CHECK(w, bp_memory_alloc(w->dev, SLOW, s[0], &slow) == BP_OK);
    unsigned char *in = malloc(REUSE), *out = malloc(REUSE);
    for (int iter = 0; iter < ITERS && !w->failure[0]; iter++) {
        chain_across_streams(w, s, slow, in, out, iter);
        reuse_across_streams(w, s[iter % STREAMS], s[(iter + 1) % STREAMS], slow, in, out, iter);
        nested_guards(w, s, (unsigned)(w->id * 31 + iter));
    }
    WORKER_CHECK(w, bp_device_synchronize(w->dev) == BP_OK);
    WORKER_CHECK(w, bp_memory_free(w->dev, slow) == BP_OK);
    for (int i = 0; i < STREAMS; i++)
        WORKER_CHECK(w, bp_stream_destroy(s[i]) == BP_OK);
    free(in);
    free(out);
    return NULL;
}

static void test_many_threads_many_streams(void **state) {
    (void)state;
    bp_device *dev = bp_test_cpu();
    bp_memory_stats before = {.struct_size = sizeof before};
    BP_ASSERT_OK(bp_memory_get_stats(dev, &before));
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (struct worker){.id = t, .dev = dev};
        assert_int_equal(pthread_create(&threads[t], NULL, worker_main, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < THREADS; t++)
        if (workers[t].failure[0])
            fail_msg("%s", workers[t].failure);
    bp_memory_stats after = {.struct_size = sizeof after};
    BP_ASSERT_OK(bp_memory_get_stats(dev, &after));
    assert_int_equal(after.allocated_bytes, before.allocated_bytes);
    uint64_t allocs = after.num_allocs - before.num_allocs;
    assert_int_equal(allocs, (uint64_t)THREADS * (1 + ITERS * (STREAMS + 3)));
    assert_int_equal(after.num_frees - before.num_frees, allocs);
    /* The cache did its job: most allocations were served without the backend. */
    assert_true(after.cache_hits - before.cache_hits > allocs / 2);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads_many_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
