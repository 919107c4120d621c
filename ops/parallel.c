/* The worker pool that splits one large cpu kernel over the cores: the CPU-class kit's
 * pool (backends/cpukit/cpukit.h), started on first use with one thread per core
 * (BP_NUM_THREADS sets the total, the caller included) and kept for the process's
 * life. Several kernels (one per stream worker) can share it at once. */
#include <stdlib.h>
#include <unistd.h>

#include "cpukit.h"
#include "env.h"
#include "ops_internal.h"

/* The most threads a kernel runs on: the caller and 63 pool threads. */
#define BP_POOL_MAX_THREADS 64

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static cpukit_pool *pool; /* NULL when it could not start: kernels then run inline */

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
    int total = cores < 1 ? 1 : cores > BP_POOL_MAX_THREADS ? BP_POOL_MAX_THREADS : (int)cores;
    /* Not pinned: the cpu kernels may use every core the process may. */
    if (cpukit_pool_create("bp-pool", total, NULL, &pool) != 0)
        pool = NULL;
}

void bp_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                     void *ctx) {
    pthread_once(&pool_once, start_pool);
    if (!pool) {
        if (n > 0)
            fn(ctx, 0, n);
        return;
    }
    cpukit_pool_parallel_for(pool, n, grain, fn, ctx);
}

int bp_parallel_threads(void) {
    pthread_once(&pool_once, start_pool);
    return pool ? cpukit_pool_threads(pool) : 1;
}
