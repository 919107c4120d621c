/* The kit's thread pool (cpukit.h).
 *
 * A call publishes a job (on its own stack) in the pool's list; pool threads and the
 * caller take chunks from it with an atomic counter until none are left, and the
 * caller returns once every chunk ran and no pool thread still holds the job. Several
 * callers can share the pool at once. */
#include "cpukit.h"

#include <errno.h>
#include <stdlib.h>

typedef struct job {
    cpukit_range_fn fn;
    void *ctx;
    int64_t n, chunk, nchunks;
    atomic_llong next;    /* next chunk to take */
    int64_t done;         /* chunks finished; under the pool's lock */
    int users;            /* pool threads working on it; under the pool's lock */
    bool listed;          /* in the job list; under the pool's lock */
    pthread_cond_t finished;
    struct job *next_job;
} job;

struct cpukit_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    job *jobs;
    bool stopping;
    cpu_thread_setup setup; /* a copy; its CPU set is `cpus` */
    cpu_set_t cpus;
    int nthreads;       /* started */
    pthread_t *threads;
};

static int64_t run_chunks(job *j) {
    int64_t ran = 0;
    for (int64_t c; (c = atomic_fetch_add(&j->next, 1)) < j->nchunks; ran++) {
        int64_t begin = c * j->chunk;
        int64_t end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
        j->fn(j->ctx, begin, end);
    }
    return ran;
}

static void unlist(cpukit_pool *pool, job *j) {
    if (!j->listed)
        return;
    for (job **p = &pool->jobs; *p; p = &(*p)->next_job)
        if (*p == j) {
            *p = j->next_job;
            break;
        }
    j->listed = false;
}

static void *pool_main(void *arg) {
    cpukit_pool *pool = arg;
    cpu_thread_setup_run(&pool->setup);
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->jobs && !pool->stopping)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (!pool->jobs)
            break; /* stopping */
        job *j = pool->jobs;
        if (atomic_load(&j->next) >= j->nchunks) {
            unlist(pool, j);
            continue;
        }
        j->users++;
        pthread_mutex_unlock(&pool->lock);
        int64_t ran = run_chunks(j);
        pthread_mutex_lock(&pool->lock);
        j->done += ran;
        j->users--;
        if (j->done == j->nchunks && j->users == 0)
            pthread_cond_signal(&j->finished);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int cpukit_pool_create(const char *thread_name, int threads, const cpu_thread_setup *setup,
                       cpukit_pool **out_pool) {
    if (threads < 1)
        return EINVAL;
    cpukit_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return ENOMEM;
    pool->threads = calloc((size_t)threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return ENOMEM;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    if (setup) {
        pool->setup = *setup;
        if (setup->cpus) {
            pool->cpus = *setup->cpus;
            pool->setup.cpus = &pool->cpus;
        }
    }
    for (int i = 1; i < threads; i++) {
        if (cpu_thread_create(&pool->threads[pool->nthreads], thread_name, &pool->setup,
                              pool_main, pool) != 0)
            break; /* a smaller pool still works */
        pool->nthreads++;
    }
    *out_pool = pool;
    return 0;
}

void cpukit_pool_destroy(cpukit_pool *pool) {
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->nthreads; i++)
        pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool);
}

int cpukit_pool_threads(const cpukit_pool *pool) {
    return pool->nthreads + 1;
}

void cpukit_pool_parallel_for(cpukit_pool *pool, int64_t n, int64_t grain, cpukit_range_fn fn,
                              void *ctx) {
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int64_t max_chunks = (int64_t)pool->nthreads + 1;
    int64_t nchunks = (n + grain - 1) / grain;
    if (nchunks > max_chunks * 4)
        nchunks = max_chunks * 4; /* a few chunks per thread even out uneven speeds */
    if (nchunks <= 1 || pool->nthreads == 0) {
        fn(ctx, 0, n);
        return;
    }
    job j = {.fn = fn, .ctx = ctx, .n = n, .chunk = (n + nchunks - 1) / nchunks};
    j.nchunks = (n + j.chunk - 1) / j.chunk;
    atomic_init(&j.next, 0);
    pthread_cond_init(&j.finished, NULL);
    pthread_mutex_lock(&pool->lock);
    j.listed = true;
    j.next_job = pool->jobs;
    pool->jobs = &j;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    int64_t ran = run_chunks(&j);

    pthread_mutex_lock(&pool->lock);
    j.done += ran;
    unlist(pool, &j);
    while (j.done < j.nchunks || j.users > 0)
        pthread_cond_wait(&j.finished, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    pthread_cond_destroy(&j.finished);
}
