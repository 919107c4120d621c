/* Devices and streams of the kit (cpukit.h): a stream is a cpu_queue worker, pinned to
 * the device's CPUs when the device has a set. */
#include "cpukit_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cpukit_device_init(cpukit_device *dev, const bp_host_services *host, const char *name,
                        const char *thread_tag, const cpu_thread_setup *workers,
                        uint64_t total_memory) {
    memset(dev, 0, sizeof *dev);
    dev->host = host;
    snprintf(dev->name, sizeof dev->name, "%s", name);
    snprintf(dev->thread_tag, sizeof dev->thread_tag, "%s", thread_tag);
    if (workers) {
        dev->workers = *workers;
        if (workers->cpus) {
            dev->cpus = *workers->cpus;
            dev->workers.cpus = &dev->cpus;
        }
    }
    dev->total_memory = total_memory;
    pthread_mutex_init(&dev->lock, NULL);
    atomic_init(&dev->next_stream_id, 0u);
}

void cpukit_device_fini(cpukit_device *dev) {
    pthread_mutex_destroy(&dev->lock);
}

bp_status cpukit_device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    cpukit_device *dev = device;
    uint64_t free_now = cpukit_host_free_memory();
    if (out_free)
        *out_free = free_now < dev->total_memory ? free_now : dev->total_memory;
    if (out_total)
        *out_total = dev->total_memory;
    return BP_OK;
}

/* Holds the stream list for the whole wait, so a stream cannot be destroyed under
 * it; stream creation on this device waits meanwhile. Workers never take this lock,
 * so the streams keep making progress. */
bp_status cpukit_device_synchronize(void *device) {
    cpukit_device *dev = device;
    pthread_mutex_lock(&dev->lock);
    for (cpukit_stream *s = dev->streams; s; s = s->next)
        cpu_queue_synchronize(s->queue);
    pthread_mutex_unlock(&dev->lock);
    return BP_OK;
}

bp_status cpukit_error_errno(const cpukit_device *dev, bp_status status, const char *what,
                             int err) {
    char buf[128];
    const char *msg = strerror_r(err, buf, sizeof buf); /* GNU variant */
    return dev->host->set_error(status, "%s: %s (%s)", dev->name, what, msg);
}

static bp_status stream_create(void *device, int priority, void **out_stream) {
    cpukit_device *dev = device;
    cpukit_stream *s = calloc(1, sizeof *s);
    if (!s)
        return dev->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                    "%s: cannot allocate a stream (%zu bytes)", dev->name,
                                    sizeof *s);
    char name[32];
    snprintf(name, sizeof name, "bp-%s-s%u", dev->thread_tag,
             atomic_fetch_add(&dev->next_stream_id, 1u));
    int err = cpu_queue_create(name, &dev->workers, &s->queue);
    if (err != 0) {
        free(s);
        return cpukit_error_errno(dev, err == ENOMEM ? BP_ERR_OUT_OF_MEMORY : BP_ERR_BACKEND,
                                  "cannot start a stream worker thread", err);
    }
    s->device = dev;
    s->priority = priority;

    pthread_mutex_lock(&dev->lock);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->lock);
    *out_stream = s;
    return BP_OK;
}

static void stream_destroy(void *stream) {
    cpukit_stream *s = stream;
    cpukit_device *dev = s->device;
    pthread_mutex_lock(&dev->lock);
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&dev->lock);
    cpu_queue_destroy(s->queue);
    free(s);
}

static bp_status stream_synchronize(void *stream) {
    cpukit_stream *s = stream;
    cpu_queue_synchronize(s->queue);
    return BP_OK;
}

static bp_status stream_query(void *stream) {
    cpukit_stream *s = stream;
    return cpu_queue_idle(s->queue) ? BP_OK : BP_ERR_NOT_READY;
}

bp_status cpukit_queue_error(cpukit_stream *s, const char *what, int err) {
    cpukit_device *dev = s->device;
    if (err == ENOMEM)
        return dev->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                    "%s: cannot enqueue %s (the stream's queue cannot grow: "
                                    "host memory exhausted)",
                                    dev->name, what);
    return cpukit_error_errno(dev, BP_ERR_INTERNAL, "cannot enqueue a task", err);
}

bp_status cpukit_submit(cpukit_stream *s, const char *what, cpu_task_fn fn, const void *payload,
                        size_t size, uint64_t *out_ticket) {
    int err = cpu_queue_submit(s->queue, fn, payload, size, out_ticket);
    return err ? cpukit_queue_error(s, what, err) : BP_OK;
}

cpukit_device *cpukit_stream_device(void *stream) {
    return ((cpukit_stream *)stream)->device;
}

bp_status cpukit_stream_submit(void *stream, const char *what, cpu_task_fn fn,
                               const void *payload, size_t size) {
    return cpukit_submit(stream, what, fn, payload, size, NULL);
}

/* A host function as stream work: how the core's reference kernels run on a cpu
 * stream. */
typedef struct host_fn_task {
    void (*fn)(void *arg);
    void *arg;
} host_fn_task;

static void host_fn_task_run(void *payload) {
    host_fn_task *t = payload;
    t->fn(t->arg);
}

static bp_status stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    cpukit_stream *s = stream;
    bp_status st = bp_plugin_check_host_fn(s->device->host, s->device->name, -1, fn);
    if (st != BP_OK)
        return st;
    host_fn_task t = {fn, arg};
    return cpukit_submit(s, "a host function", host_fn_task_run, &t, sizeof t, NULL);
}

const bp_stream_vtable cpukit_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stream_create,
    .destroy = stream_destroy,
    .synchronize = stream_synchronize,
    .query = stream_query,
    .wait_event = cpukit_stream_wait_event, /* cpukit_event.c */
    .enqueue_host = stream_enqueue_host,
};
