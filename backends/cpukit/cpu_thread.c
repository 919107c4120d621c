/* Starting the kit's threads (cpu_thread.h). */
#include "cpu_thread.h"

#include <stdio.h>

int cpu_thread_create(pthread_t *out, const char *name, const cpu_thread_setup *setup,
                      void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    int err = pthread_attr_init(&attr);
    if (err != 0)
        return err;
    if (setup && setup->cpus)
        err = pthread_attr_setaffinity_np(&attr, sizeof *setup->cpus, setup->cpus);
    if (err == 0)
        err = pthread_create(out, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (err == 0) {
        char short_name[16];
        snprintf(short_name, sizeof short_name, "%s", name);
        pthread_setname_np(*out, short_name);
    }
    return err;
}

void cpu_thread_setup_run(const cpu_thread_setup *setup) {
    if (setup && setup->start)
        setup->start(setup->start_arg);
}
