/* A worker pool for splitting one large kernel over the cores.
 *
 * A call publishes a job (on its own stack) in a shared list; pool threads and the
 * caller take chunks from it with an atomic counter until none are left, and the
 * caller returns once every chunk ran and no pool thread still holds the job. Several
 * kernels (one per stream worker) can share the pool at once. Pool threads are started
 * on first use, one per core beyond the first (BP_NUM_THREADS sets the total). */
#include <stdlib.h>
#include <unistd.h>

#include "env.h"
#include "ops_internal.h"

/* The most threads a kernel runs on: the caller and 63 pool threads. */
#define BP_POOL_MAX_THREADS 64

typedef struct job {
    void (*fn)(void *ctx, int64_t begin, int64_t end);
    void *ctx;
    int64_t n, chunk, nchunks;
    atomic_llong next;    /* next chunk to take */
    int64_t done;         /* chunks finished; under pool_lock */
    int users;            /* pool threads working on it; under pool_lock */
    bool listed;          /* in the job list; under pool_lock */
    pthread_cond_t finished;
    struct job *next_job;
} job;

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static job *jobs;
static int pool_threads;

static int64_t run_chunks(job *j) {
    int64_t ran = 0;
    for (int64_t c; (c = atomic_fetch_add(&j->next, 1)) < j->nchunks; ran++) {
        int64_t begin = c * j->chunk;
        int64_t end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
        j->fn(j->ctx, begin, end);
    }
    return ran;
}

static void unlist(job *j) {
    if (!j->listed)
        return;
    for (job **p = &jobs; *p; p = &(*p)->next_job)
        if (*p == j) {
            *p = j->next_job;
            break;
        }
    j->listed = false;
}

static void *pool_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (!jobs)
            pthread_cond_wait(&pool_wake, &pool_lock);
        job *j = jobs;
        if (atomic_load(&j->next) >= j->nchunks) {
            unlist(j);
            continue;
        }
        j->users++;
        pthread_mutex_unlock(&pool_lock);
        int64_t ran = run_chunks(j);
        pthread_mutex_lock(&pool_lock);
        j->done += ran;
        j->users--;
        if (j->done == j->nchunks && j->users == 0)
            pthread_cond_signal(&j->finished);
    }
    return NULL;
}

static void start_pool(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("BP_NUM_THREADS");
    long long threads = 0;
    if (env && *env) {
        if (bp_env_parse_whole(env, 1, BP_POOL_MAX_THREADS, &threads))
            cores = (long)threads;
        else
            bp_log(BP_LOG_WARN, "parallel", "BP_NUM_THREADS='%s' is not a whole number of "
                   "threads from 1 to %d; using the cores online (%ld)", env,
                   BP_POOL_MAX_THREADS, cores);
    }
    int wanted = cores > 1 ? (int)(cores > BP_POOL_MAX_THREADS ? BP_POOL_MAX_THREADS - 1
                                                               : cores - 1)
                           : 0;
    for (int i = 0; i < wanted; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, pool_main, NULL) != 0)
            break;
        pthread_setname_np(t, "bp-pool");
        pthread_detach(t);
        pool_threads++;
    }
}

void bp_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                     void *ctx) {
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    pthread_once(&pool_once, start_pool);
    int64_t max_chunks = (int64_t)pool_threads + 1;
    int64_t nchunks = (n + grain - 1) / grain;
    if (nchunks > max_chunks * 4)
        nchunks = max_chunks * 4; /* a few chunks per thread even out uneven speeds */
    if (nchunks <= 1 || pool_threads == 0) {
        fn(ctx, 0, n);
        return;
    }
    job j = {.fn = fn, .ctx = ctx, .n = n, .chunk = (n + nchunks - 1) / nchunks};
    j.nchunks = (n + j.chunk - 1) / j.chunk;
    atomic_init(&j.next, 0);
    pthread_cond_init(&j.finished, NULL);
    pthread_mutex_lock(&pool_lock);
    j.listed = true;
    j.next_job = jobs;
    jobs = &j;
    pthread_cond_broadcast(&pool_wake);
    pthread_mutex_unlock(&pool_lock);

    int64_t ran = run_chunks(&j);

    pthread_mutex_lock(&pool_lock);
    j.done += ran;
    unlist(&j);
    while (j.done < j.nchunks || j.users > 0)
        pthread_cond_wait(&j.finished, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    pthread_cond_destroy(&j.finished);
}
