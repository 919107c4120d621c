/* The built-in cpu backend: the embedded default device, compiled into libbackplane.
 *
 * It is written against the plugin ABI only, like any out-of-tree backend; the core
 * finds it through bp_cpu_backend_descriptor() instead of dlopen.
 *
 * One device, "cpu:0". Each stream is a worker thread draining an in-order task
 * queue (cpu_queue.h), so stream work really is asynchronous to the caller. An event
 * is a position in one stream's queue; memory is ordinary aligned host memory, and
 * device pointers are host addresses.
 */
#include <backplane/plugin.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "cpu_queue.h"

const bp_plugin_descriptor *bp_cpu_backend_descriptor(void);

#define CPU_ALLOC_ALIGN 256 /* the ABI asks for at least 256 */
#define CPU_HOST_ALIGN 64   /* a cache line */

typedef struct cpu_backend cpu_backend;
typedef struct cpu_stream cpu_stream;

typedef struct cpu_device {
    cpu_backend *backend;
    pthread_mutex_t lock; /* guards the stream list */
    cpu_stream *streams;  /* live streams, for device synchronize */
} cpu_device;

struct cpu_backend {
    const bp_host_services *host;
    cpu_device device;
    atomic_uint next_stream_id; /* numbers worker threads "bp-cpu-s<N>" */
    char description[128];
    uint64_t total_memory;
};

struct cpu_stream {
    cpu_device *device;
    cpu_queue *queue;
    int priority;
    cpu_stream *prev, *next;
};

/* An event is the (queue, ticket) of its latest record: complete once that queue has
 * finished that many tasks. Stream and event state so come from one counter and
 * always agree, and a wait keeps the record it saw even if the event is re-recorded
 * on another stream. A timing record is a task that stamps the time; a plain record
 * needs no task at all (its ticket is the stream's last task). */
typedef struct cpu_event {
    cpu_backend *backend;
    atomic_uint refs; /* the host's handle + each queued timestamp task */
    pthread_mutex_t lock;
    bool timing;
    cpu_queue *queue; /* of the latest record (a reference); NULL = never recorded */
    uint64_t ticket;  /* the latest record is complete when `queue` reaches it */
    uint64_t seq;     /* records so far; the latest is number `seq` */
    uint64_t stamp_seq; /* latest record whose timestamp task has run */
    int64_t stamp_ns;   /* its CLOCK_MONOTONIC time */
} cpu_event;

static bp_status cpu_error_errno(cpu_backend *be, bp_status status, const char *what, int err) {
    char buf[128];
    const char *msg = strerror_r(err, buf, sizeof buf); /* GNU variant */
    return be->host->set_error(status, "cpu: %s (%s)", what, msg);
}

/* ---- device ---- */

/* "model name" from /proc/cpuinfo, or "CPU" where the kernel reports none (arm64). */
static void read_cpu_model(char *out, size_t out_size) {
    snprintf(out, out_size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *value = strchr(line, ':');
        if (!value)
            continue;
        value++;
        while (*value == ' ' || *value == '\t')
            value++;
        value[strcspn(value, "\n")] = '\0';
        if (*value)
            snprintf(out, out_size, "%s", value);
        break;
    }
    free(line);
    fclose(f);
}

static uint64_t read_total_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)page_size;
}

/* MemAvailable (what can be allocated without swapping), else sysinfo's free RAM. */
static uint64_t read_free_memory(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kib = 0;
        bool found = false;
        while (!found && fgets(line, sizeof line, f))
            found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
        fclose(f);
        if (found)
            return (uint64_t)kib * 1024u;
    }
    struct sysinfo si;
    if (sysinfo(&si) == 0)
        return (uint64_t)si.freeram * si.mem_unit;
    return 0;
}

static int cpu_device_count(void *backend) {
    (void)backend;
    return 1;
}

static bp_status check_index(cpu_backend *be, int index) {
    if (index != 0)
        return be->host->set_error(BP_ERR_NOT_FOUND,
                                   "cpu: device index %d out of range (1 cpu device)", index);
    return BP_OK;
}

static bp_status cpu_device_get_props(void *backend, int index, bp_backend_device_props *props) {
    cpu_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    if (!props)
        return be->host->set_error(BP_ERR_INVALID_ARGUMENT, "cpu: get_props: props is NULL");

    bp_backend_device_props p;
    memset(&p, 0, sizeof p);
    memcpy(p.description, be->description, sizeof p.description);
    p.total_memory = be->total_memory;
    /* No PEER_COPY: there is one device. No PINNED_HOST: host memory already is the
     * device's memory, there is nothing to pin. */
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS;
    p.dtypes = BP_DTYPE_BIT(BP_DTYPE_COUNT) - 1u;
    /* Streams are plain threads and the priority is only recorded: raising a
     * thread's priority needs privileges, and it would compete with the caller's
     * own threads. The range still gives callers written for CUDA-style priorities
     * a real high-priority value that the host clamps to. */
    p.stream_priority_least = 0;
    p.stream_priority_greatest = -1;

    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status cpu_device_open(void *backend, int index, void **out_device) {
    cpu_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    *out_device = &be->device;
    return BP_OK;
}

static void cpu_device_close(void *device) {
    (void)device; /* the device lives in the backend state; streams are gone already */
}

static bp_status cpu_device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    cpu_device *dev = device;
    if (out_free)
        *out_free = read_free_memory();
    if (out_total)
        *out_total = dev->backend->total_memory;
    return BP_OK;
}

/* Holds the stream list for the whole wait, so a stream cannot be destroyed under
 * it; stream creation on this device waits meanwhile. Workers never take this lock,
 * so the streams keep making progress. */
static bp_status cpu_device_synchronize(void *device) {
    cpu_device *dev = device;
    pthread_mutex_lock(&dev->lock);
    for (cpu_stream *s = dev->streams; s; s = s->next)
        cpu_queue_synchronize(s->queue);
    pthread_mutex_unlock(&dev->lock);
    return BP_OK;
}

/* ---- streams ---- */

static bp_status cpu_stream_create(void *device, int priority, void **out_stream) {
    cpu_device *dev = device;
    cpu_backend *be = dev->backend;
    cpu_stream *s = calloc(1, sizeof *s);
    if (!s)
        return be->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                   "cpu: cannot allocate a stream (%zu bytes)", sizeof *s);
    char name[32];
    snprintf(name, sizeof name, "bp-cpu-s%u", atomic_fetch_add(&be->next_stream_id, 1u));
    int err = cpu_queue_create(name, &s->queue);
    if (err != 0) {
        free(s);
        return cpu_error_errno(be, err == ENOMEM ? BP_ERR_OUT_OF_MEMORY : BP_ERR_BACKEND,
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

static void cpu_stream_destroy(void *stream) {
    cpu_stream *s = stream;
    cpu_device *dev = s->device;
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

static bp_status cpu_stream_synchronize(void *stream) {
    cpu_stream *s = stream;
    cpu_queue_synchronize(s->queue);
    return BP_OK;
}

static bp_status cpu_stream_query(void *stream) {
    cpu_stream *s = stream;
    return cpu_queue_idle(s->queue) ? BP_OK : BP_ERR_NOT_READY;
}

/* The status and message of a queue's errno value `err` (not 0) for `what`. */
static bp_status queue_error(cpu_stream *s, const char *what, int err) {
    cpu_backend *be = s->device->backend;
    if (err == ENOMEM)
        return be->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                   "cpu: cannot enqueue %s (the stream's queue cannot grow: "
                                   "host memory exhausted)",
                                   what);
    return cpu_error_errno(be, BP_ERR_INTERNAL, "cannot enqueue a task", err);
}

/* Submits a task, turning the queue's errno into a status with a message. */
static bp_status submit(cpu_stream *s, const char *what, cpu_task_fn fn, const void *payload,
                        size_t size, uint64_t *out_ticket) {
    int err = cpu_queue_submit(s->queue, fn, payload, size, out_ticket);
    return err ? queue_error(s, what, err) : BP_OK;
}

/* ---- events ---- */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void event_release(cpu_event *ev) {
    if (atomic_fetch_sub_explicit(&ev->refs, 1u, memory_order_acq_rel) != 1)
        return;
    if (ev->queue)
        cpu_queue_release(ev->queue);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

typedef struct stamp_task {
    cpu_event *event;
    uint64_t seq;
} stamp_task;

/* The queue counts this task finished only after it returns, so whoever sees the
 * record complete also sees its timestamp. */
static void stamp_task_run(void *payload) {
    stamp_task t;
    memcpy(&t, payload, sizeof t);
    int64_t stamp = now_ns();
    pthread_mutex_lock(&t.event->lock);
    if (t.seq > t.event->stamp_seq) { /* an older record finishing late changes nothing */
        t.event->stamp_seq = t.seq;
        t.event->stamp_ns = stamp;
    }
    pthread_mutex_unlock(&t.event->lock);
    event_release(t.event);
}

static bp_status cpu_event_create(void *device, int timing, void **out_event) {
    cpu_device *dev = device;
    cpu_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "cpu: cannot allocate an event (%zu bytes)",
                                             sizeof *ev);
    ev->backend = dev->backend;
    atomic_init(&ev->refs, 1u);
    pthread_mutex_init(&ev->lock, NULL);
    ev->timing = timing != 0;
    *out_event = ev;
    return BP_OK;
}

/* Queued timestamp tasks hold their own references, and waits hold the queue they
 * wait for, so pending work still completes. */
static void cpu_event_destroy(void *event) {
    event_release(event);
}

static bp_status cpu_event_record(void *event, void *stream) {
    cpu_event *ev = event;
    cpu_stream *s = stream;
    /* The event lock is held across the submit so that concurrent records of one
     * event take effect in one order. Workers never hold a queue lock while taking
     * an event lock, so this cannot deadlock. */
    pthread_mutex_lock(&ev->lock);
    uint64_t seq = ev->seq + 1, ticket = 0;
    if (ev->timing) {
        stamp_task t = {ev, seq};
        atomic_fetch_add_explicit(&ev->refs, 1u, memory_order_relaxed);
        bp_status st = submit(s, "an event record", stamp_task_run, &t, sizeof t, &ticket);
        if (st != BP_OK) {
            atomic_fetch_sub_explicit(&ev->refs, 1u, memory_order_relaxed); /* not the last */
            pthread_mutex_unlock(&ev->lock);
            return st;
        }
    } else {
        ticket = cpu_queue_last_ticket(s->queue);
    }
    cpu_queue_retain(s->queue);
    if (ev->queue)
        cpu_queue_release(ev->queue);
    ev->queue = s->queue;
    ev->ticket = ticket;
    ev->seq = seq;
    pthread_mutex_unlock(&ev->lock);
    return BP_OK;
}

/* The queue and ticket of the event's latest record, with a reference on the queue
 * (NULL when never recorded). */
static cpu_queue *event_latest(cpu_event *ev, uint64_t *out_ticket) {
    pthread_mutex_lock(&ev->lock);
    cpu_queue *q = ev->queue;
    *out_ticket = ev->ticket;
    if (q)
        cpu_queue_retain(q);
    pthread_mutex_unlock(&ev->lock);
    return q;
}

static bp_status cpu_event_query(void *event) {
    uint64_t ticket;
    cpu_queue *q = event_latest(event, &ticket);
    if (!q)
        return BP_OK;
    bool done = cpu_queue_done(q, ticket);
    cpu_queue_release(q);
    return done ? BP_OK : BP_ERR_NOT_READY;
}

static bp_status cpu_event_synchronize(void *event) {
    uint64_t ticket;
    cpu_queue *q = event_latest(event, &ticket);
    if (q) {
        cpu_queue_wait(q, ticket);
        cpu_queue_release(q);
    }
    return BP_OK;
}

static bp_status cpu_stream_wait_event(void *stream, void *event) {
    cpu_stream *s = stream;
    uint64_t ticket;
    cpu_queue *q = event_latest(event, &ticket);
    if (!q) /* never recorded */
        return BP_OK;
    int err = cpu_queue_submit_wait(s->queue, q, ticket);
    return err ? queue_error(s, "an event wait", err) : BP_OK;
}

/* Completion time of the event's latest record. */
static bp_status event_stamp(cpu_event *ev, const char *which, int64_t *out_ns) {
    uint64_t ticket;
    cpu_queue *q = event_latest(ev, &ticket);
    if (!q)
        return ev->backend->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                            "cpu: elapsed_ms: the %s event was never recorded",
                                            which);
    bool done = cpu_queue_done(q, ticket);
    cpu_queue_release(q);
    if (!done)
        return ev->backend->host->set_error(BP_ERR_NOT_READY,
                                            "cpu: elapsed_ms: the %s event has not completed",
                                            which);
    pthread_mutex_lock(&ev->lock);
    *out_ns = ev->stamp_ns;
    pthread_mutex_unlock(&ev->lock);
    return BP_OK;
}

static bp_status cpu_event_elapsed_ms(void *start, void *end, float *out_ms) {
    cpu_event *a = start, *b = end;
    if (!a->timing || !b->timing)
        return a->backend->host->set_error(
            BP_ERR_INVALID_ARGUMENT,
            "cpu: elapsed_ms needs two events created with BP_EVENT_TIMING "
            "(start has timing: %s, end has timing: %s)",
            a->timing ? "yes" : "no", b->timing ? "yes" : "no");
    int64_t t0 = 0, t1 = 0;
    bp_status st = event_stamp(a, "start", &t0);
    if (st == BP_OK)
        st = event_stamp(b, "end", &t1);
    if (st == BP_OK)
        *out_ms = (float)((double)(t1 - t0) / 1e6);
    return st;
}

/* ---- memory ---- */

static bp_status aligned_host_alloc(cpu_device *dev, size_t size, size_t align, void **out_ptr) {
    cpu_backend *be = dev->backend;
    if (!out_ptr)
        return be->host->set_error(BP_ERR_INVALID_ARGUMENT, "cpu: alloc: out_ptr is NULL");
    if (size > SIZE_MAX - (align - 1))
        return be->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                   "cpu: cannot allocate %zu bytes (larger than the address space)",
                                   size);
    /* aligned_alloc wants a multiple of the alignment; a zero size still gets a
     * distinct pointer. */
    size_t rounded = size == 0 ? align : (size + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded);
    if (!p)
        return be->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                   "cpu: cannot allocate %zu bytes (host memory exhausted)", size);
    *out_ptr = p;
    return BP_OK;
}

static bp_status cpu_mem_alloc(void *device, size_t size, void **out_ptr) {
    return aligned_host_alloc(device, size, CPU_ALLOC_ALIGN, out_ptr);
}

static bp_status cpu_mem_host_alloc(void *device, size_t size, void **out_ptr) {
    return aligned_host_alloc(device, size, CPU_HOST_ALIGN, out_ptr);
}

static void cpu_mem_free(void *device, void *ptr) {
    (void)device;
    free(ptr);
}

typedef struct copy_task {
    void *dst;
    const void *src;
    size_t size;
} copy_task;

/* memmove: a copy within one device may overlap, and costs the same otherwise. */
static void copy_task_run(void *payload) {
    copy_task t;
    memcpy(&t, payload, sizeof t);
    memmove(t.dst, t.src, t.size);
}

static bp_status cpu_mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                    bp_copy_kind kind) {
    cpu_stream *s = stream;
    cpu_backend *be = s->device->backend;
    if (kind != BP_COPY_HOST_TO_DEVICE && kind != BP_COPY_DEVICE_TO_HOST &&
        kind != BP_COPY_DEVICE_TO_DEVICE)
        return be->host->set_error(BP_ERR_INVALID_ARGUMENT, "cpu: copy: unknown copy kind %d",
                                   (int)kind);
    if (size == 0)
        return BP_OK;
    if (!dst || !src)
        return be->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                   "cpu: copy of %zu bytes: %s pointer is NULL", size,
                                   !dst ? "destination" : "source");
    copy_task t = {dst, src, size};
    return submit(s, "a copy", copy_task_run, &t, sizeof t, NULL);
}

typedef struct memset_task {
    void *ptr;
    size_t size;
    int value;
} memset_task;

static void memset_task_run(void *payload) {
    memset_task t;
    memcpy(&t, payload, sizeof t);
    memset(t.ptr, t.value, t.size);
}

static bp_status cpu_mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    cpu_stream *s = stream;
    if (size == 0)
        return BP_OK;
    if (!ptr)
        return s->device->backend->host->set_error(
            BP_ERR_INVALID_ARGUMENT, "cpu: memset of %zu bytes: pointer is NULL", size);
    memset_task t = {ptr, size, value};
    return submit(s, "a memset", memset_task_run, &t, sizeof t, NULL);
}

/* ---- backend ---- */

static bp_status cpu_init(const bp_host_services *host, void **out_backend) {
    cpu_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "cpu: cannot allocate the backend state (%zu bytes)", sizeof *be);
    be->host = host;
    be->device.backend = be;
    pthread_mutex_init(&be->device.lock, NULL);
    atomic_init(&be->next_stream_id, 0u);

    char model[128];
    read_cpu_model(model, sizeof model);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(be->description, sizeof be->description, "%.96s (%ld cores)", model,
             cores > 0 ? cores : 1L);
    be->total_memory = read_total_memory();
    *out_backend = be;
    return BP_OK;
}

static void cpu_shutdown(void *backend) {
    cpu_backend *be = backend;
    pthread_mutex_destroy(&be->device.lock);
    free(be);
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

static bp_status cpu_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    cpu_stream *s = stream;
    if (!fn)
        return s->device->backend->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                                   "cpu: enqueue_host: fn is NULL");
    host_fn_task t = {fn, arg};
    return submit(s, "a host function", host_fn_task_run, &t, sizeof t, NULL);
}

static const bp_device_vtable cpu_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = cpu_device_count,
    .unavailable_reason = NULL,
    .get_props = cpu_device_get_props,
    .open = cpu_device_open,
    .close = cpu_device_close,
    .mem_info = cpu_device_mem_info,
    .synchronize = cpu_device_synchronize,
};

static const bp_stream_vtable cpu_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = cpu_stream_create,
    .destroy = cpu_stream_destroy,
    .synchronize = cpu_stream_synchronize,
    .query = cpu_stream_query,
    .wait_event = cpu_stream_wait_event,
    .enqueue_host = cpu_stream_enqueue_host,
};

static const bp_event_vtable cpu_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = cpu_event_create,
    .destroy = cpu_event_destroy,
    .record = cpu_event_record,
    .query = cpu_event_query,
    .synchronize = cpu_event_synchronize,
    .elapsed_ms = cpu_event_elapsed_ms,
};

static const bp_memory_vtable cpu_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = cpu_mem_alloc,
    .free = cpu_mem_free,
    .host_alloc = cpu_mem_host_alloc,
    .host_free = cpu_mem_free,
    .copy_async = cpu_mem_copy_async,
    .copy_peer_async = NULL, /* one device: nothing to peer with */
    .memset_async = cpu_mem_memset_async,
};

static const bp_plugin_descriptor cpu_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = "cpu",
    .aliases = NULL,
    .version = "0.1.0",
    .priority = 0,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device = &cpu_device_vtable,
    .stream = &cpu_stream_vtable,
    .event = &cpu_event_vtable,
    .memory = &cpu_memory_vtable,
    .guard = NULL, /* no per-thread context to make current */
    .region = NULL,
};

/* Called by the core's loader; the built-in backend has no exported entry symbol. */
const bp_plugin_descriptor *bp_cpu_backend_descriptor(void) {
    return &cpu_descriptor;
}
