/* Conformance group "threading": many threads, each with streams of its own, issuing
 * ops, allocating and freeing, and recording and waiting on each other's events, all at
 * once on the device under test.
 *
 * Worker threads never assert: each records its first failure (thread_report.h) and
 * the test fails with it after joining. A worker that fails keeps taking part in the
 * barriers of its test, so that the others do not wait for it forever. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "late.h"
#include "thread_report.h"
#include "work.h"

/* ---- many threads x streams issuing ops ---- */

enum { OP_THREADS = 8, OP_STREAMS = 2, OP_ITERS = 12, OP_ELEMS = 64 << 10 };

/* What the device can run: the first of add, fill and copy with an f32 kernel, or only
 * the memory calls when it has none of them. */
typedef enum op_mode { MODE_ADD, MODE_FILL, MODE_COPY, MODE_MEMORY } op_mode;

static const char *const mode_names[] = {"add", "fill", "copy", "memset/copy"};

static bool has_f32_kernel(const char *op_name) {
    bp_op_id op;
    return bp_op_find(op_name, &op) == BP_OK &&
           (bp_kernel_dtypes(op, bp_conf.device) & BP_DTYPE_BIT(BP_DTYPE_F32));
}

static op_mode pick_mode(void) {
    for (op_mode m = MODE_ADD; m < MODE_MEMORY; m++)
        if (has_f32_kernel(mode_names[m]))
            return m;
    return MODE_MEMORY;
}

typedef struct op_worker {
    int id;
    op_mode mode;
    uint64_t seed;
    bp_conf_report report;
} op_worker;

/* One piece of work in flight on one stream: the input tensors, the output, and the
 * values the output must hold. Small integers in f32, so sums are exact. */
typedef struct op_job {
    bp_stream *stream;
    bp_tensor *a, *b, *out;
    void *dev_a, *dev_out; /* MODE_MEMORY */
    float *want;
    float *got;
} op_job;

static void fill_small_ints(float *p, size_t n, uint64_t *rng) {
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((int)(bp_conf_rand(rng) % 2001) - 1000) / 8.0f;
}

/* Enqueues the job's work on its stream (made current by a guard, as the ops use the
 * current stream) and fills job->want. */
static bool op_job_start(op_worker *w, op_job *j, uint64_t *rng) {
    bp_conf_report *r = &w->report;
    bp_device *dev = bp_conf.device;
    const int64_t shape[1] = {OP_ELEMS};
    float *in = malloc(OP_ELEMS * sizeof *in), *in2 = malloc(OP_ELEMS * sizeof *in2);
    bool ok = in && in2;
    if (!ok)
        bp_conf_report_fail(r, "cannot allocate host memory");
    bp_stream_guard g;
    ok = ok && BP_CONF_REPORT_OK(r, bp_stream_guard_begin(&g, j->stream));
    if (!ok) {
        free(in);
        free(in2);
        return false;
    }
    fill_small_ints(in, OP_ELEMS, rng);
    fill_small_ints(in2, OP_ELEMS, rng);
    float value = (float)(bp_conf_rand(rng) % 1000) + 0.5f;
    switch (w->mode) {
    case MODE_ADD: /* out = (a + b) + a */
        ok = BP_CONF_REPORT_OK(r, bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, in, &j->a)) &&
             BP_CONF_REPORT_OK(r, bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, in2, &j->b)) &&
             BP_CONF_REPORT_OK(r, bp_add(j->a, j->b, &j->out)) &&
             BP_CONF_REPORT_OK(r, bp_add_out(j->out, j->a, j->out));
        for (size_t i = 0; i < OP_ELEMS; i++)
            j->want[i] = (in[i] + in2[i]) + in[i];
        break;
    case MODE_FILL:
        ok = BP_CONF_REPORT_OK(r, bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &j->out)) &&
             BP_CONF_REPORT_OK(r, bp_fill(j->out, value));
        for (size_t i = 0; i < OP_ELEMS; i++)
            j->want[i] = value;
        break;
    case MODE_COPY:
        ok = BP_CONF_REPORT_OK(r, bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, in, &j->a)) &&
             BP_CONF_REPORT_OK(r, bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &j->out)) &&
             BP_CONF_REPORT_OK(r, bp_copy(j->out, j->a));
        memcpy(j->want, in, OP_ELEMS * sizeof *in);
        break;
    case MODE_MEMORY: { /* upload, overwrite the first half, copy */
        size_t bytes = OP_ELEMS * sizeof(float);
        ok = BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, bytes, NULL, &j->dev_a)) &&
             BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, bytes, NULL, &j->dev_out)) &&
             BP_CONF_REPORT_OK(r, bp_memory_copy_async(j->dev_a, dev, in, NULL, bytes, NULL)) &&
             BP_CONF_REPORT_OK(r, bp_memory_set_async(dev, j->dev_a, 0x41, bytes / 2, NULL)) &&
             BP_CONF_REPORT_OK(r, bp_memory_copy_async(j->dev_out, dev, j->dev_a, dev, bytes,
                                                       NULL)) &&
             BP_CONF_REPORT_OK(r, bp_stream_synchronize(j->stream)); /* `in` is freed below */
        memcpy(j->want, in, bytes);
        memset(j->want, 0x41, bytes / 2);
        break;
    }
    }
    bp_stream_guard_end(&g);
    free(in);
    free(in2);
    return ok;
}

/* Reads the job's output back (on its stream), compares it and frees the job. */
static void op_job_finish(op_worker *w, op_job *j, bool started, int iter) {
    bp_conf_report *r = &w->report;
    bp_stream_guard g;
    if (started && BP_CONF_REPORT_OK(r, bp_stream_guard_begin(&g, j->stream))) {
        bool ok = w->mode == MODE_MEMORY
                      ? BP_CONF_REPORT_OK(r, bp_conf_download(j->stream, j->dev_out,
                                                              OP_ELEMS * sizeof(float), j->got))
                      : BP_CONF_REPORT_OK(r, bp_tensor_to_host(j->out, j->got,
                                                               OP_ELEMS * sizeof(float)));
        for (size_t i = 0; ok && i < OP_ELEMS; i++)
            if (j->got[i] != j->want[i]) {
                bp_conf_report_fail(r, "%s, iteration %d: element %zu is %g, expected %g",
                                    mode_names[w->mode], iter, i, (double)j->got[i],
                                    (double)j->want[i]);
                break;
            }
        bp_stream_guard_end(&g);
    }
    bp_tensor_release(j->a);
    bp_tensor_release(j->b);
    bp_tensor_release(j->out);
    j->a = j->b = j->out = NULL;
    if (j->dev_a)
        BP_CONF_REPORT_OK(r, bp_memory_free(bp_conf.device, j->dev_a));
    if (j->dev_out)
        BP_CONF_REPORT_OK(r, bp_memory_free(bp_conf.device, j->dev_out));
    j->dev_a = j->dev_out = NULL;
}

/* Each iteration starts a job on each of the thread's streams, then checks them, so
 * both streams have work in flight at once. */
static void *op_worker_main(void *p) {
    op_worker *w = p;
    bp_conf_report *r = &w->report;
    uint64_t rng = w->seed;
    op_job jobs[OP_STREAMS] = {{0}};
    bool ok = true;
    for (int k = 0; k < OP_STREAMS && ok; k++) {
        jobs[k].want = malloc(OP_ELEMS * sizeof(float));
        jobs[k].got = malloc(OP_ELEMS * sizeof(float));
        ok = jobs[k].want && jobs[k].got &&
             BP_CONF_REPORT_OK(r, bp_stream_create(bp_conf.device, k ? -1 : 0, &jobs[k].stream));
    }
    for (int iter = 0; iter < OP_ITERS && ok; iter++) {
        bool started[OP_STREAMS];
        for (int k = 0; k < OP_STREAMS; k++)
            started[k] = op_job_start(w, &jobs[k], &rng);
        for (int k = 0; k < OP_STREAMS; k++)
            op_job_finish(w, &jobs[k], started[k], iter);
        ok = !r->failure[0];
    }
    for (int k = 0; k < OP_STREAMS; k++) {
        BP_CONF_REPORT_OK(r, bp_stream_destroy(jobs[k].stream));
        free(jobs[k].want);
        free(jobs[k].got);
    }
    return NULL;
}

static void test_threads_streams_ops(void **state) {
    (void)state;
    op_mode mode = pick_mode();
    print_message("threads issue %s (f32) on %d streams each\n", mode_names[mode], OP_STREAMS);
    uint64_t rng = bp_conf_test_seed();
    op_worker workers[OP_THREADS];
    pthread_t threads[OP_THREADS];
    for (int t = 0; t < OP_THREADS; t++) {
        workers[t] = (op_worker){.id = t, .mode = mode, .seed = bp_conf_rand(&rng)};
        assert_int_equal(pthread_create(&threads[t], NULL, op_worker_main, &workers[t]), 0);
    }
    for (int t = 0; t < OP_THREADS; t++)
        pthread_join(threads[t], NULL);
    char who[32];
    for (int t = 0; t < OP_THREADS; t++) {
        snprintf(who, sizeof who, "thread %d", t);
        bp_conf_report_check(&workers[t].report, who);
    }
}

/* ---- concurrent allocation and free ---- */

enum { ALLOC_THREADS = 8, ALLOC_ITERS = 40, ALLOC_LIVE = 4, ALLOC_MAX = 3 << 20 };

typedef struct alloc_worker {
    int id;
    uint64_t seed;
    bp_conf_report report;
} alloc_worker;

/* A block this thread keeps while others allocate: its bytes must survive. */
typedef struct live_block {
    void *ptr;
    size_t size;
    int value;
} live_block;

/* Sizes from a few bytes to ALLOC_MAX, most of them small. */
static size_t random_size(uint64_t *rng) {
    uint64_t x = bp_conf_rand(rng);
    size_t limit = x % 4 == 0 ? ALLOC_MAX : x % 4 == 1 ? 64 << 10 : 4 << 10;
    return (size_t)(bp_conf_rand(rng) % limit) + 1;
}

static bool check_bytes(bp_conf_report *r, bp_stream *s, const void *src, const void *want,
                        size_t n, unsigned char *host, const char *what) {
    if (!BP_CONF_REPORT_OK(r, bp_conf_download(s, src, n, host)))
        return false;
    for (size_t i = 0; i < n; i++)
        if (host[i] != ((const unsigned char *)want)[i]) {
            bp_conf_report_fail(r, "%s (%zu bytes): byte %zu is 0x%02x, expected 0x%02x", what,
                                n, i, host[i], ((const unsigned char *)want)[i]);
            return false;
        }
    return true;
}

/* One iteration: upload into p, copy p to q, free p while the copy may still run,
 * allocate r (which may reuse p) and overwrite it, then check q and r. */
static bool alloc_round(alloc_worker *w, bp_stream *s, uint64_t *rng, unsigned char *pattern,
                        unsigned char *want, unsigned char *host) {
    bp_conf_report *r = &w->report;
    bp_device *dev = bp_conf.device;
    size_t n = random_size(rng);
    int value = (int)(bp_conf_rand(rng) % 255) + 1;
    bp_conf_random_bytes(pattern, n, bp_conf_rand(rng));
    void *p = NULL, *q = NULL, *x = NULL;
    bool ok = BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, n, s, &p)) &&
              BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, n, s, &q)) &&
              BP_CONF_REPORT_OK(r, bp_memory_copy_async(p, dev, pattern, NULL, n, s)) &&
              BP_CONF_REPORT_OK(r, bp_memory_copy_async(q, dev, p, dev, n, s));
    if (p) {
        ok = BP_CONF_REPORT_OK(r, bp_memory_free(dev, p)) && ok;
    }
    ok = ok && BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, n, s, &x)) &&
         BP_CONF_REPORT_OK(r, bp_memory_set_async(dev, x, value, n, s));
    ok = ok && check_bytes(r, s, q, pattern, n, host, "block copied before its source was freed");
    memset(want, value, n);
    ok = ok && check_bytes(r, s, x, want, n, host, "block allocated after a free, then set");
    if (q)
        ok = BP_CONF_REPORT_OK(r, bp_memory_free(dev, q)) && ok;
    if (x)
        ok = BP_CONF_REPORT_OK(r, bp_memory_free(dev, x)) && ok;
    return ok;
}

/* Replaces live block k with a new one of a random size and value. */
static bool replace_live(alloc_worker *w, bp_stream *s, live_block *b, uint64_t *rng) {
    bp_conf_report *r = &w->report;
    bp_device *dev = bp_conf.device;
    if (b->ptr && !BP_CONF_REPORT_OK(r, bp_memory_free(dev, b->ptr)))
        return false;
    b->ptr = NULL;
    b->size = random_size(rng);
    b->value = (int)(bp_conf_rand(rng) % 255) + 1;
    return BP_CONF_REPORT_OK(r, bp_memory_alloc(dev, b->size, s, &b->ptr)) &&
           BP_CONF_REPORT_OK(r, bp_memory_set_async(dev, b->ptr, b->value, b->size, s));
}

static void *alloc_worker_main(void *p) {
    alloc_worker *w = p;
    bp_conf_report *r = &w->report;
    bp_device *dev = bp_conf.device;
    uint64_t rng = w->seed;
    bp_stream *s = NULL;
    live_block live[ALLOC_LIVE] = {{0}};
    unsigned char *pattern = malloc(ALLOC_MAX), *want = malloc(ALLOC_MAX),
                  *host = malloc(ALLOC_MAX);
    bool ok = pattern && want && host && BP_CONF_REPORT_OK(r, bp_stream_create(dev, 0, &s));
    if (!(pattern && want && host))
        bp_conf_report_fail(r, "cannot allocate host memory");
    for (int k = 0; k < ALLOC_LIVE && ok; k++)
        ok = replace_live(w, s, &live[k], &rng);
    for (int iter = 0; iter < ALLOC_ITERS && ok; iter++) {
        ok = alloc_round(w, s, &rng, pattern, want, host);
        if (ok && iter % 5 == 0)
            ok = replace_live(w, s, &live[iter / 5 % ALLOC_LIVE], &rng);
    }
    for (int k = 0; k < ALLOC_LIVE; k++) {
        if (!live[k].ptr)
            continue;
        if (ok) {
            memset(want, live[k].value, live[k].size);
            ok = check_bytes(r, s, live[k].ptr, want, live[k].size, host,
                             "block kept while other threads allocated and freed");
        }
        BP_CONF_REPORT_OK(r, bp_memory_free(dev, live[k].ptr));
    }
    if (s)
        BP_CONF_REPORT_OK(r, bp_stream_destroy(s));
    free(pattern);
    free(want);
    free(host);
    return NULL;
}

static void test_concurrent_alloc_free(void **state) {
    (void)state;
    bp_memory_stats before = bp_conf_memory_stats();
    uint64_t rng = bp_conf_test_seed();
    alloc_worker workers[ALLOC_THREADS];
    pthread_t threads[ALLOC_THREADS];
    for (int t = 0; t < ALLOC_THREADS; t++) {
        workers[t] = (alloc_worker){.id = t, .seed = bp_conf_rand(&rng)};
        assert_int_equal(pthread_create(&threads[t], NULL, alloc_worker_main, &workers[t]), 0);
    }
    for (int t = 0; t < ALLOC_THREADS; t++)
        pthread_join(threads[t], NULL);
    char who[32];
    for (int t = 0; t < ALLOC_THREADS; t++) {
        snprintf(who, sizeof who, "thread %d", t);
        bp_conf_report_check(&workers[t].report, who);
    }
    bp_conf_expect_allocated_unchanged(&before, "after every thread freed its blocks");
}

/* ---- a ring of threads waiting on each other's events ---- */

enum { RING_THREADS = 6, RING_ROUNDS = 10, RING_BYTES = 256 << 10 };

typedef struct ring ring;

typedef struct ring_member {
    ring *ring;
    int id;
    bp_stream *stream, *reader; /* writes x; reads the previous member's */
    bp_event *event;
    void *x, *y;
    void *source;      /* this round's value, what the late write copies */
    bp_conf_late late; /* this round's write over x; the reader asks whether it is open */
    bool recorded; /* this round's record was enqueued; read by the next member after
                      the barrier, which orders the write before the read */
    bp_conf_report report;
} ring_member;

struct ring {
    pthread_barrier_t recorded, read;
    uint64_t seed;
    ring_member members[RING_THREADS];
};

/* The byte member `id` writes in `round`: it changes every round. */
static int ring_value(const ring *g, int id, int round) {
    return (int)((g->seed + (uint64_t)id * 37 + (uint64_t)round * 11) % 255) + 1;
}

/* Member i writes x_i late (late.h: held on a gate that a thread opens a while later)
 * and records its event; after a barrier it reads x of member i-1: in even rounds
 * through a stream wait on that member's event (and a copy on a reader stream of its
 * own, which nothing holds), in odd rounds after bp_event_synchronize of it. Either
 * wait must end after member i-1's gate opened. A second barrier keeps the writers
 * from starting the next round (and freeing their gates) before every read is done. */
static void *ring_member_main(void *p) {
    ring_member *m = p;
    ring *g = m->ring;
    bp_conf_report *r = &m->report;
    bp_device *dev = bp_conf.device;
    ring_member *prev = &g->members[(m->id + RING_THREADS - 1) % RING_THREADS];
    unsigned char *host = malloc(RING_BYTES);
    bool ok = host != NULL;
    if (!ok)
        bp_conf_report_fail(r, "cannot allocate host memory");
    for (int round = 0; round < RING_ROUNDS; round++) {
        int value = ring_value(g, m->id, round);
        if (ok)
            memset(host, value, RING_BYTES);
        bp_conf_late_init(&m->late);
        ok = ok && BP_CONF_REPORT_OK(r, bp_conf_upload(m->stream, m->source, host, RING_BYTES)) &&
             BP_CONF_REPORT_OK(r, bp_conf_late_write(&m->late, m->stream, m->x, m->source,
                                                     RING_BYTES, value, 1)) &&
             BP_CONF_REPORT_OK(r, bp_event_record(m->event, m->stream));
        bp_conf_late_open_later(&m->late);
        m->recorded = ok;
        pthread_barrier_wait(&g->recorded);
        /* A member that failed did not record: its reader must not check. */
        bool prev_ok = prev->recorded;
        /* Through the reader, which nothing holds: a wait that ends early reads the
         * buffer while its late write is still held. */
        bool checked = ok && prev_ok;
        if (checked && round % 2 == 0)
            checked = BP_CONF_REPORT_OK(r, bp_stream_wait_event(m->reader, prev->event)) &&
                      BP_CONF_REPORT_OK(r, bp_memory_copy_async(m->y, dev, prev->x, dev,
                                                                RING_BYTES, m->reader)) &&
                      BP_CONF_REPORT_OK(r, bp_stream_synchronize(m->reader));
        else if (checked)
            checked = BP_CONF_REPORT_OK(r, bp_event_synchronize(prev->event));
        if (checked && !bp_conf_late_is_open(&prev->late)) {
            bp_conf_report_fail(r, "round %d: %s of thread %d's event returned while a host "
                                   "function still held the work before its record",
                                round,
                                round % 2 ? "bp_event_synchronize"
                                          : "bp_stream_synchronize after a stream wait",
                                prev->id);
            checked = false;
        }
        if (checked)
            checked = BP_CONF_REPORT_OK(r, bp_conf_download(m->reader, round % 2 ? prev->x : m->y,
                                                            RING_BYTES, host));
        size_t bad = 0;
        int want = ring_value(g, prev->id, round);
        if (checked && !bp_conf_all_bytes(host, RING_BYTES, want, &bad)) {
            bp_conf_report_fail(r, "round %d: read thread %d's buffer after %s: byte %zu is "
                                   "0x%02x, expected 0x%02x",
                                round, prev->id,
                                round % 2 ? "bp_event_synchronize" : "a stream wait",
                                bad, host[bad], want);
            checked = false;
        }
        ok = ok && (checked || !prev_ok);
        pthread_barrier_wait(&g->read);
        bp_conf_late_finish(&m->late);
    }
    free(host);
    return NULL;
}

static void test_concurrent_events(void **state) {
    (void)state;
    bp_device *dev = bp_conf.device;
    ring *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->seed = bp_conf_test_seed();
    pthread_barrier_init(&g->recorded, NULL, RING_THREADS);
    pthread_barrier_init(&g->read, NULL, RING_THREADS);
    for (int i = 0; i < RING_THREADS; i++) {
        ring_member *m = &g->members[i];
        *m = (ring_member){.ring = g, .id = i};
        BP_CONF_OK(bp_stream_create(dev, 0, &m->stream));
        BP_CONF_OK(bp_stream_create(dev, 0, &m->reader));
        BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &m->event));
        BP_CONF_OK(bp_memory_alloc(dev, RING_BYTES, m->stream, &m->x));
        BP_CONF_OK(bp_memory_alloc(dev, RING_BYTES, m->reader, &m->y));
        BP_CONF_OK(bp_memory_alloc(dev, RING_BYTES, m->stream, &m->source));
    }
    pthread_t threads[RING_THREADS];
    for (int i = 0; i < RING_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, ring_member_main, &g->members[i]), 0);
    for (int i = 0; i < RING_THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&g->recorded);
    pthread_barrier_destroy(&g->read);
    char who[32];
    for (int i = 0; i < RING_THREADS; i++) {
        snprintf(who, sizeof who, "thread %d", i);
        bp_conf_report_check(&g->members[i].report, who);
    }
    BP_CONF_OK(bp_device_synchronize(dev));
    for (int i = 0; i < RING_THREADS; i++) {
        ring_member *m = &g->members[i];
        BP_CONF_OK(bp_memory_free(dev, m->x));
        BP_CONF_OK(bp_memory_free(dev, m->y));
        BP_CONF_OK(bp_memory_free(dev, m->source));
        BP_CONF_OK(bp_event_destroy(m->event));
        BP_CONF_OK(bp_stream_destroy(m->stream));
        BP_CONF_OK(bp_stream_destroy(m->reader));
    }
    free(g);
}

static const bp_conf_test tests[] = {
    {"threads_streams_ops", test_threads_streams_ops,
     "8 threads x 2 streams issue ops (or memory calls) and get correct results", NULL},
    {"concurrent_alloc_free", test_concurrent_alloc_free,
     "threads allocating, freeing and using blocks on their own streams keep their data", NULL},
    {"concurrent_events", test_concurrent_events,
     "threads in a ring record and wait on each other's events and read final data", NULL},
};

const bp_conf_group bp_conf_group_threading = {
    .name = "threading",
    .summary = "many threads with their own streams: ops, allocation, events",
    .tests = tests,
    .n_tests = sizeof tests / sizeof tests[0],
};
