/* The arm backend's devices: one per group of cores, whose stream workers and pool
 * threads run on the group's cores with the backend's SVE vector length. */
#include "arm_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arm_features.h"

/* Every thread of the backend starts here (cpu_thread_setup.start). */
static void thread_start(void *arg) {
    const arm_backend *be = arg;
    arm_sve_bits_apply(be->sve_bits_set);
}

static void parallel_for(const arm_exec *ex, int64_t n, int64_t grain, arm_range_fn fn,
                         void *ctx) {
    cpukit_pool_parallel_for(ex->pool, n, grain, fn, ctx);
}

/* The group's cores this process may run on. Cores outside the process's affinity (a
 * restricted container, or a BP_ARM_SYSFS_ROOT tree of another machine) are left out;
 * with none left the threads are not pinned, logged. */
static void choose_cpus(arm_device *dev, const cpu_set_t *allowed) {
    CPU_ZERO(&dev->cpus);
    int usable = 0;
    for (int n = 0; n < ARM_TOPO_MAX_CPUS && n < CPU_SETSIZE; n++)
        if (((dev->group.cpus[n / 64] >> (n % 64)) & 1u) && CPU_ISSET(n, allowed)) {
            CPU_SET(n, &dev->cpus);
            usable++;
        }
    dev->pinned = usable > 0;
    dev->threads = usable > 0 ? usable : dev->group.ncpus;
    if (!dev->pinned)
        dev->backend->host->log(BP_LOG_WARN, ARM_NAME,
                                "arm:%d: none of its cores (%s, from cpu%d) is in this "
                                "process's CPU set; its threads are not pinned",
                                dev->index, dev->group.description, dev->group.first_cpu);
}

void arm_devices_init(arm_backend *be, const char *sysfs_root) {
    arm_topology topology;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    arm_topology_read(sysfs_root, online > 0 ? (int)online : 1, &topology);
    if (topology.fallback_reason[0])
        be->host->log(BP_LOG_WARN, ARM_NAME, "arm: %s; one device of all online cores",
                      topology.fallback_reason);
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        CPU_ZERO(&allowed);
        for (int n = 0; n < CPU_SETSIZE; n++)
            CPU_SET(n, &allowed);
    }
    uint64_t total = cpukit_host_total_memory();
    be->ndevices = topology.ngroups;
    for (int i = 0; i < be->ndevices; i++) {
        arm_device *dev = &be->devices[i];
        dev->backend = be;
        dev->index = i;
        dev->group = topology.groups[i];
        choose_cpus(dev, &allowed);
        /* tag: "arm0".."arm15", within the kit's 7 characters; sized for any int so
         * that gcc (which cannot bound i under -fsanitize) sees no truncation. */
        char name[32], tag[16];
        snprintf(name, sizeof name, "arm:%d", i);
        snprintf(tag, sizeof tag, "arm%d", i);
        cpu_thread_setup workers = {dev->pinned ? &dev->cpus : NULL, thread_start, be};
        cpukit_device_init(&dev->kit, be->host, name, tag, &workers, total);
        dev->exec = (arm_exec){.features = &be->features, .parallel_for = parallel_for,
                               .log = be->host->log};
        be->host->log(BP_LOG_DEBUG, ARM_NAME, "arm:%d: %s, %d thread%s%s", i,
                      dev->group.description, dev->threads, dev->threads == 1 ? "" : "s",
                      dev->pinned ? " pinned" : "");
    }
}

bp_status arm_device_start(arm_device *dev) {
    if (dev->pool)
        return BP_OK;
    char name[16];
    snprintf(name, sizeof name, "bp-arm%d-pool", dev->index);
    cpu_thread_setup setup = {dev->pinned ? &dev->cpus : NULL, thread_start, dev->backend};
    int err = cpukit_pool_create(name, dev->threads, &setup, &dev->pool);
    if (err != 0)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "arm:%d: cannot start its thread pool (%s)",
                                             dev->index, strerror(err));
    dev->exec.pool = dev->pool;
    dev->exec.threads = cpukit_pool_threads(dev->pool); /* fewer if a thread did not start */
    return BP_OK;
}

void arm_device_stop(arm_device *dev) {
    if (dev->pool)
        cpukit_pool_destroy(dev->pool);
    dev->pool = NULL;
    dev->exec.pool = NULL;
}

void arm_devices_fini(arm_backend *be) {
    for (int i = 0; i < be->ndevices; i++) {
        arm_device_stop(&be->devices[i]);
        cpukit_device_fini(&be->devices[i].kit);
    }
}
