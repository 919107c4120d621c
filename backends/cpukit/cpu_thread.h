/* How the kit's threads (stream workers, pool threads) start: pinned to a CPU set and
 * running a setup function of the backend first (e.g. the arm backend sets the SVE
 * vector length of each of its threads). Needs _GNU_SOURCE (cpu_set_t). */
#ifndef BP_CPU_THREAD_H
#define BP_CPU_THREAD_H

#include <pthread.h>
#include <sched.h>

typedef struct cpu_thread_setup {
    const cpu_set_t *cpus;     /**< the CPUs the thread runs on; NULL: not pinned */
    void (*start)(void *arg);  /**< runs first on the new thread; NULL: nothing */
    void *start_arg;
} cpu_thread_setup;

/** Starts fn(arg) on a new joinable thread named `name` (at most 15 characters are
 *  kept), pinned to setup->cpus from its first instruction (setup may be NULL). The
 *  caller's fn calls cpu_thread_setup_run first. Returns 0 or pthread_create's (or the
 *  affinity's) errno value: EINVAL when no CPU of the set is usable. */
int cpu_thread_create(pthread_t *out, const char *name, const cpu_thread_setup *setup,
                      void *(*fn)(void *), void *arg);

/** Runs setup->start on the calling thread (nothing when setup or start is NULL). */
void cpu_thread_setup_run(const cpu_thread_setup *setup);

#endif
