/* bp-broken: a test-only plugin whose bugs can be switched on, so that the conformance
 * suite can show that it fails a wrong backend (docs/conformance.md).
 *
 * Device type `broken` (alias `bp_broken`), two devices. It wraps the cpu backend,
 * whose sources are compiled into this library (they use only the plugin ABI): both
 * devices are backed by cpu device 0, opened once, and every vtable function forwards
 * to the cpu one with the wrapped handle. Each device has its own handle and index,
 * and its streams, events and allocations remember which device they belong to. It
 * registers f32 kernels for fill, copy, add and softmax, a bf16 add and an f16 sum,
 * that run as host functions on the wrapped cpu stream, and a guard that keeps a
 * thread-local current device.
 *
 * BP_BROKEN_DEFECT=<name>, read at init, switches one defect on (unset or empty: none;
 * an unknown name fails init with the list of names):
 *   event_early       event query and synchronize report completion at once
 *   wait_ignored      stream wait_event does nothing
 *   copy_drops_byte   copies (also peer copies) leave the last byte unwritten
 *   alloc_overlap     alloc hands out memory inside a live earlier allocation
 *   softmax_no_max    softmax f32 skips the max subtraction (inf on large logits)
 *   guard_no_restore  set_current ignores a switch to a lower device index
 *   oom_abort         an allocation larger than the memory the device has left
 *                     aborts instead of failing with BP_ERR_OUT_OF_MEMORY
 *   query_hang        stream query never returns
 *   mem_info_free_above_total
 *                     mem_info of the last device reports more free memory than its
 *                     total (the first device is right)
 *   memset_drops_byte memset leaves the last byte unwritten
 *   peer_copy_chunk   a peer copy of more than 1 MiB loses the byte at each 1 MiB boundary
 *                     (it copies in 1 MiB chunks and skips each later chunk's first byte)
 *   guard_global      the current device of the guard is one process-wide variable, not
 *                     one per thread
 *   elapsed_seconds   elapsed_ms reports seconds
 *   timestamp_at_record  timing events take their timestamp when record() is
 *                     called, not when the stream reaches them
 *   small_copy_eager  copies of at most 64 bytes run at once on the calling thread,
 *                     ignoring the work pending on the stream
 *   wait_blocks_host  stream wait_event synchronizes the event on the host first
 *   query_ignores_waits  stream and event query report done once the stream's own
 *                     work (copies, memsets, kernels, host functions) is done,
 *                     ignoring its waits for other streams' events
 *   add_writes_past_end  the f32 add kernel also writes the element just past its
 *                     output view's last element
 *   softmax_long_rows the f32 softmax of rows of >= 2048 elements (a "tuned" long-row
 *                     path) normalizes by the sum of the row's first 1024 only
 *   bf16_round_truncates  add bf16 truncates its f32 result instead of rounding it
 *                     to nearest even
 *   sum_half_accumulate  sum f16 accumulates in f16 (each partial sum rounded)
 *   softmax_neg_inf_nan  softmax f32 gives NaN for a row whose kept logits are all
 *                     -inf (it subtracts the max unguarded: -inf - -inf)
 *
 * BROKEN_GUARD_ABI_1_0 builds a copy that declares ABI 1.1 and a guard table of the
 * 1.0 size: the host must not see its get_current (the loader tests).
 *
 * BROKEN_NO_HOST_FUNC builds a copy whose stream table has no enqueue_host, as a
 * third-party plugin may: its streams are asynchronous, so bp_stream_launch_host_func
 * takes the core's fallback (an event and a host thread) for real. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <backplane/plugin.h>

/* The cpu backend compiled into this library (backends/cpu/cpu_backend.c). */
const bp_plugin_descriptor *bp_cpu_backend_descriptor(void);

#define BROKEN_NAME "broken"
#define BROKEN_DEVICES 2
#define BROKEN_ALIGN 256 /* what the ABI promises for alloc */
/* alloc_overlap: every real allocation gets this much more, so that later ones can
 * start a multiple of BROKEN_ALIGN bytes into it (each at a distinct address, none at
 * its start) and still end inside. */
#define OVERLAP_SLACK 4096
#define MAX_INPUTS 2

/* ---- defects ---- */

typedef enum broken_defect {
    DEFECT_NONE,
    DEFECT_EVENT_EARLY,
    DEFECT_WAIT_IGNORED,
    DEFECT_COPY_DROPS_BYTE,
    DEFECT_ALLOC_OVERLAP,
    DEFECT_SOFTMAX_NO_MAX,
    DEFECT_GUARD_NO_RESTORE,
    DEFECT_OOM_ABORT,
    DEFECT_QUERY_HANG,
    DEFECT_MEM_INFO_FREE_ABOVE_TOTAL,
    DEFECT_MEMSET_DROPS_BYTE,
    DEFECT_PEER_COPY_CHUNK,
    DEFECT_GUARD_GLOBAL,
    DEFECT_ELAPSED_SECONDS,
    DEFECT_TIMESTAMP_AT_RECORD,
    DEFECT_SMALL_COPY_EAGER,
    DEFECT_WAIT_BLOCKS_HOST,
    DEFECT_QUERY_IGNORES_WAITS,
    DEFECT_ADD_WRITES_PAST_END,
    DEFECT_SOFTMAX_LONG_ROWS,
    DEFECT_BF16_ROUND_TRUNCATES,
    DEFECT_SUM_HALF_ACCUMULATE,
    DEFECT_SOFTMAX_NEG_INF_NAN,
    DEFECT_COUNT
} broken_defect;

static const struct {
    const char *name;
    const char *what;
} defects[DEFECT_COUNT] = {
    [DEFECT_NONE] = {"", "none"},
    [DEFECT_EVENT_EARLY] = {"event_early", "event query/synchronize report completion at once"},
    [DEFECT_WAIT_IGNORED] = {"wait_ignored", "stream wait_event is a no-op"},
    [DEFECT_COPY_DROPS_BYTE] = {"copy_drops_byte", "copies leave the last byte unwritten"},
    [DEFECT_ALLOC_OVERLAP] = {"alloc_overlap", "alloc hands out memory still in use"},
    [DEFECT_SOFTMAX_NO_MAX] = {"softmax_no_max", "softmax f32 skips the max subtraction"},
    [DEFECT_GUARD_NO_RESTORE] = {"guard_no_restore",
                                 "set_current ignores a switch to a lower device index"},
    [DEFECT_OOM_ABORT] = {"oom_abort",
                          "an allocation larger than the device's free memory aborts"},
    [DEFECT_QUERY_HANG] = {"query_hang", "stream query never returns"},
    [DEFECT_MEM_INFO_FREE_ABOVE_TOTAL] = {"mem_info_free_above_total",
                                          "the last device's mem_info reports free > total"},
    [DEFECT_MEMSET_DROPS_BYTE] = {"memset_drops_byte", "memset leaves the last byte unwritten"},
    [DEFECT_PEER_COPY_CHUNK] = {"peer_copy_chunk",
                                "peer copies lose the byte at each 1 MiB boundary"},
    [DEFECT_GUARD_GLOBAL] = {"guard_global",
                             "the guard's current device is process-wide, not per thread"},
    [DEFECT_ELAPSED_SECONDS] = {"elapsed_seconds", "elapsed_ms reports seconds"},
    [DEFECT_TIMESTAMP_AT_RECORD] = {"timestamp_at_record",
                                    "timing events are stamped when record() is called"},
    [DEFECT_SMALL_COPY_EAGER] = {"small_copy_eager",
                                 "copies of at most 64 bytes run at once, ignoring pending work"},
    [DEFECT_WAIT_BLOCKS_HOST] = {"wait_blocks_host",
                                 "stream wait_event synchronizes the event on the host"},
    [DEFECT_QUERY_IGNORES_WAITS] = {"query_ignores_waits",
                                    "stream/event query ignore the stream's event waits"},
    [DEFECT_ADD_WRITES_PAST_END] = {"add_writes_past_end",
                                    "add f32 also writes the element past its output's last"},
    [DEFECT_SOFTMAX_LONG_ROWS] = {"softmax_long_rows",
                                  "softmax f32 of rows >= 2048 sums only the first 1024"},
    [DEFECT_BF16_ROUND_TRUNCATES] = {"bf16_round_truncates",
                                     "add bf16 truncates instead of rounding to nearest even"},
    [DEFECT_SUM_HALF_ACCUMULATE] = {"sum_half_accumulate", "sum f16 accumulates in f16"},
    [DEFECT_SOFTMAX_NEG_INF_NAN] = {"softmax_neg_inf_nan",
                                    "softmax f32 gives NaN for an all -inf row"},
};

/* ---- state ---- */

typedef struct broken_backend broken_backend;

/* One live allocation. An alias (alloc_overlap) points into its owner's memory; the
 * owner's memory is freed when neither it nor any alias is live any more. */
typedef struct broken_block {
    void *ptr;
    size_t size;
    size_t room;                /* owner: bytes really allocated (size + slack) */
    struct broken_block *owner; /* NULL: owns ptr */
    int refs;                   /* owner: itself while live + its live aliases */
    size_t aliases_made;        /* owner: aliases handed out so far */
    struct broken_block *next;
} broken_block;

typedef struct broken_device {
    broken_backend *backend;
    int index;
    pthread_mutex_t lock; /* guards blocks */
    broken_block *blocks; /* live allocations of this device */
} broken_device;

struct broken_backend {
    const bp_host_services *host;
    const bp_plugin_descriptor *cpu; /* the wrapped backend */
    void *cpu_state;
    void *cpu_device; /* cpu device 0, behind both devices */
    broken_defect defect;
    broken_device devices[BROKEN_DEVICES];
};

/* query_ignores_waits: a cpu event recorded right after a piece of the stream's own
 * work, which a query then asks instead of the stream or the event: it completes
 * before any wait enqueued after that work. Shared by the stream and the events
 * recorded on it (refs). */
typedef struct own_marker {
    void *cpu_event;
    atomic_int refs;
} own_marker;

typedef struct broken_stream {
    broken_device *device;
    void *cpu;
    pthread_mutex_t lock; /* guards own */
    own_marker *own;      /* query_ignores_waits: after the latest own work, or NULL */
} broken_stream;

typedef struct broken_event {
    broken_device *device;
    void *cpu;
    pthread_mutex_t lock;     /* guards own */
    own_marker *own;          /* query_ignores_waits: the stream's marker at the record */
    _Atomic int64_t record_ns; /* timestamp_at_record: when record() was called */
} broken_event;

static bool has(const broken_backend *b, broken_defect defect) { return b->defect == defect; }

/* ---- query_ignores_waits: markers of a stream's own work ---- */

static own_marker *marker_retain(own_marker *m) {
    if (m)
        atomic_fetch_add(&m->refs, 1);
    return m;
}

static void marker_release(const broken_backend *b, own_marker *m) {
    if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
        b->cpu->event->destroy(m->cpu_event);
        free(m);
    }
}

/* Swaps the marker in *slot (under `lock`) for `m`, which it takes over. */
static void marker_set(const broken_backend *b, pthread_mutex_t *lock, own_marker **slot,
                       own_marker *m) {
    pthread_mutex_lock(lock);
    own_marker *old = *slot;
    *slot = m;
    pthread_mutex_unlock(lock);
    marker_release(b, old);
}

static own_marker *marker_get(pthread_mutex_t *lock, own_marker *const *slot) {
    pthread_mutex_lock(lock);
    own_marker *m = marker_retain(*slot);
    pthread_mutex_unlock(lock);
    return m;
}

static bp_status marker_query(const broken_backend *b, own_marker *m) {
    bp_status st = m ? b->cpu->event->query(m->cpu_event) : BP_OK;
    marker_release(b, m);
    return st;
}

/* query_ignores_waits: called after `status` of enqueueing own work on `s`; moves the
 * stream's marker after it (best effort: without a marker, query asks the stream). */
static bp_status note_own_work(broken_stream *s, bp_status status) {
    broken_backend *b = s->device->backend;
    if (status != BP_OK || !has(b, DEFECT_QUERY_IGNORES_WAITS))
        return status;
    own_marker *m = calloc(1, sizeof *m);
    if (!m)
        return status;
    atomic_init(&m->refs, 1);
    if (b->cpu->event->create(b->cpu_device, 0, &m->cpu_event) != BP_OK) {
        free(m);
        return status;
    }
    if (b->cpu->event->record(m->cpu_event, s->cpu) != BP_OK) {
        marker_release(b, m);
        return status;
    }
    marker_set(b, &s->lock, &s->own, m);
    return status;
}

/* ---- backend ---- */

/* The defect named by BP_BROKEN_DEFECT; an unknown name is an error listing them. */
static bp_status read_defect(const bp_host_services *host, broken_defect *out) {
    const char *name = getenv("BP_BROKEN_DEFECT");
    *out = DEFECT_NONE;
    if (!name || !*name)
        return BP_OK;
    for (int k = DEFECT_NONE + 1; k < DEFECT_COUNT; k++) {
        if (strcmp(name, defects[k].name) == 0) {
            *out = (broken_defect)k;
            return BP_OK;
        }
    }
    char valid[512] = "";
    size_t used = 0;
    for (int k = DEFECT_NONE + 1; k < DEFECT_COUNT && used < sizeof valid; k++)
        used += (size_t)snprintf(valid + used, sizeof valid - used, "%s%s",
                                 k > DEFECT_NONE + 1 ? ", " : "", defects[k].name);
    return host->set_error(BP_ERR_INVALID_ARGUMENT,
                           "broken: unknown BP_BROKEN_DEFECT '%.64s'; valid names: %s (unset or "
                           "empty for none)",
                           name, valid);
}

static bp_status register_kernels(const bp_host_services *host);

static void release_cpu(broken_backend *b) {
    if (b->cpu_device)
        b->cpu->device->close(b->cpu_device);
    if (b->cpu_state && b->cpu->shutdown)
        b->cpu->shutdown(b->cpu_state);
    for (int i = 0; i < BROKEN_DEVICES; i++)
        pthread_mutex_destroy(&b->devices[i].lock);
    free(b);
}

static bp_status broken_init(const bp_host_services *host, void **out_backend) {
    broken_defect defect;
    bp_status st = read_defect(host, &defect);
    if (st != BP_OK)
        return st;
    broken_backend *b = calloc(1, sizeof *b);
    if (!b)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "broken: cannot allocate its state");
    b->host = host;
    b->defect = defect;
    b->cpu = bp_cpu_backend_descriptor();
    for (int i = 0; i < BROKEN_DEVICES; i++) {
        b->devices[i].backend = b;
        b->devices[i].index = i;
        pthread_mutex_init(&b->devices[i].lock, NULL);
    }
    st = b->cpu->init(host, &b->cpu_state);
    if (st == BP_OK)
        st = b->cpu->device->open(b->cpu_state, 0, &b->cpu_device);
    /* register_kernel arrived in ABI 1.1: a 1.0 host's table ends before it. */
    if (st == BP_OK &&
        host->struct_size >= offsetof(bp_host_services, register_kernel) + sizeof(void *))
        st = register_kernels(host);
    if (st != BP_OK) {
        release_cpu(b);
        return st;
    }
    if (defect != DEFECT_NONE)
        host->log(BP_LOG_WARN, BROKEN_NAME, "seeded defect '%s' is on: %s", defects[defect].name,
                  defects[defect].what);
    *out_backend = b;
    return BP_OK;
}

static void broken_free(void *device, void *ptr);

static void broken_shutdown(void *backend) {
    broken_backend *b = backend;
    for (int i = 0; i < BROKEN_DEVICES; i++) /* what the host left allocated */
        while (b->devices[i].blocks)
            broken_free(&b->devices[i], b->devices[i].blocks->ptr);
    release_cpu(b);
}

/* ---- devices ---- */

static int broken_count(void *backend) { return BROKEN_DEVICES; }

static bp_status check_index(broken_backend *b, int index) {
    if (index < 0 || index >= BROKEN_DEVICES)
        return b->host->set_error(BP_ERR_NOT_FOUND, "broken: no device %d (there are %d)", index,
                                  BROKEN_DEVICES);
    return BP_OK;
}

/* The cpu device's properties, as device `index`, with peer copies added. */
static bp_status broken_get_props(void *backend, int index, bp_backend_device_props *props) {
    broken_backend *b = backend;
    bp_status st = check_index(b, index);
    if (st != BP_OK)
        return st;
    bp_backend_device_props p = {.struct_size = sizeof p};
    st = b->cpu->device->get_props(b->cpu_state, 0, &p);
    if (st != BP_OK)
        return st;
    char cpu_description[sizeof p.description];
    memcpy(cpu_description, p.description, sizeof cpu_description);
    snprintf(p.description, sizeof p.description, "bp-broken test device %d on %.80s", index,
             cpu_description);
    p.capabilities |= BP_CAP_PEER_COPY;
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status broken_open(void *backend, int index, void **out_device) {
    broken_backend *b = backend;
    bp_status st = check_index(b, index);
    if (st == BP_OK)
        *out_device = &b->devices[index];
    return st;
}

static void broken_close(void *device) {}

static bp_status broken_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    broken_device *d = device;
    broken_backend *b = d->backend;
    uint64_t free_bytes = 0, total = 0;
    bp_status st = b->cpu->device->mem_info(b->cpu_device, &free_bytes, &total);
    if (st == BP_OK && has(b, DEFECT_MEM_INFO_FREE_ABOVE_TOTAL) && d->index == BROKEN_DEVICES - 1)
        free_bytes = total + ((uint64_t)1 << 20);
    if (out_free)
        *out_free = free_bytes;
    if (out_total)
        *out_total = total;
    return st;
}

/* Both devices share the cpu device, so this also waits for the other's streams:
 * more than needed, never less. */
static bp_status broken_device_synchronize(void *device) {
    broken_backend *b = ((broken_device *)device)->backend;
    return b->cpu->device->synchronize(b->cpu_device);
}

/* ---- streams ---- */

static bp_status broken_stream_create(void *device, int priority, void **out_stream) {
    broken_device *d = device;
    broken_backend *b = d->backend;
    broken_stream *s = calloc(1, sizeof *s);
    if (!s)
        return b->host->set_error(BP_ERR_OUT_OF_MEMORY, "broken:%d: cannot allocate a stream",
                                  d->index);
    bp_status st = b->cpu->stream->create(b->cpu_device, priority, &s->cpu);
    if (st != BP_OK) {
        free(s);
        return st;
    }
    s->device = d;
    pthread_mutex_init(&s->lock, NULL);
    *out_stream = s;
    return BP_OK;
}

static void broken_stream_destroy(void *stream) {
    broken_stream *s = stream;
    broken_backend *b = s->device->backend;
    b->cpu->stream->destroy(s->cpu);
    marker_release(b, s->own);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static bp_status broken_stream_synchronize(void *stream) {
    broken_stream *s = stream;
    return s->device->backend->cpu->stream->synchronize(s->cpu);
}

static bp_status broken_stream_query(void *stream) {
    broken_stream *s = stream;
    broken_backend *b = s->device->backend;
    if (has(b, DEFECT_QUERY_HANG))
        for (;;)
            pause();
    if (has(b, DEFECT_QUERY_IGNORES_WAITS))
        return marker_query(b, marker_get(&s->lock, &s->own));
    return b->cpu->stream->query(s->cpu);
}

static bp_status broken_stream_wait_event(void *stream, void *event) {
    broken_stream *s = stream;
    broken_backend *b = s->device->backend;
    void *cpu_event = ((broken_event *)event)->cpu;
    if (has(b, DEFECT_WAIT_IGNORED))
        return BP_OK;
    if (has(b, DEFECT_WAIT_BLOCKS_HOST)) {
        bp_status st = b->cpu->event->synchronize(cpu_event);
        if (st != BP_OK)
            return st;
    }
    return b->cpu->stream->wait_event(s->cpu, cpu_event);
}

#ifndef BROKEN_NO_HOST_FUNC
static bp_status broken_stream_enqueue_host(void *stream, void (*fn)(void *arg), void *arg) {
    broken_stream *s = stream;
    return note_own_work(s, s->device->backend->cpu->stream->enqueue_host(s->cpu, fn, arg));
}
#endif

/* ---- events ---- */

static bp_status broken_event_create(void *device, int timing, void **out_event) {
    broken_device *d = device;
    broken_backend *b = d->backend;
    broken_event *e = calloc(1, sizeof *e);
    if (!e)
        return b->host->set_error(BP_ERR_OUT_OF_MEMORY, "broken:%d: cannot allocate an event",
                                  d->index);
    bp_status st = b->cpu->event->create(b->cpu_device, timing, &e->cpu);
    if (st != BP_OK) {
        free(e);
        return st;
    }
    e->device = d;
    pthread_mutex_init(&e->lock, NULL);
    *out_event = e;
    return BP_OK;
}

static void broken_event_destroy(void *event) {
    broken_event *e = event;
    broken_backend *b = e->device->backend;
    b->cpu->event->destroy(e->cpu);
    marker_release(b, e->own);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bp_status broken_event_record(void *event, void *stream) {
    broken_event *e = event;
    broken_stream *s = stream;
    broken_backend *b = e->device->backend;
    bp_status st = b->cpu->event->record(e->cpu, s->cpu);
    if (st == BP_OK && has(b, DEFECT_TIMESTAMP_AT_RECORD))
        atomic_store(&e->record_ns, now_ns());
    if (st == BP_OK && has(b, DEFECT_QUERY_IGNORES_WAITS))
        marker_set(b, &e->lock, &e->own, marker_get(&s->lock, &s->own));
    return st;
}

static bp_status broken_event_query(void *event) {
    broken_event *e = event;
    broken_backend *b = e->device->backend;
    if (has(b, DEFECT_EVENT_EARLY))
        return BP_OK;
    if (has(b, DEFECT_QUERY_IGNORES_WAITS))
        return marker_query(b, marker_get(&e->lock, &e->own));
    return b->cpu->event->query(e->cpu);
}

static bp_status broken_event_synchronize(void *event) {
    broken_event *e = event;
    if (has(e->device->backend, DEFECT_EVENT_EARLY))
        return BP_OK;
    return e->device->backend->cpu->event->synchronize(e->cpu);
}

static bp_status broken_event_elapsed_ms(void *start, void *end, float *out_ms) {
    broken_event *a = start, *z = end;
    broken_backend *b = a->device->backend;
    bp_status st = b->cpu->event->elapsed_ms(a->cpu, z->cpu, out_ms);
    if (st == BP_OK && has(b, DEFECT_TIMESTAMP_AT_RECORD))
        *out_ms = (float)((double)(atomic_load(&z->record_ns) - atomic_load(&a->record_ns)) / 1e6);
    if (st == BP_OK && has(b, DEFECT_ELAPSED_SECONDS))
        *out_ms /= 1000.0f;
    return st;
}

/* ---- memory ---- */

/* alloc_overlap: where the next alias of `owner` starts, in bytes from its start. */
static size_t alias_offset(const broken_block *owner) {
    return BROKEN_ALIGN * (owner->aliases_made + 1);
}

/* alloc_overlap: the first live allocation of `d` with room for `size` bytes at its
 * next alias offset (its slack included), or NULL. */
static broken_block *overlap_target(broken_device *d, size_t size) {
    for (broken_block *blk = d->blocks; blk; blk = blk->next)
        if (!blk->owner && alias_offset(blk) < blk->room && blk->room - alias_offset(blk) >= size)
            return blk;
    return NULL;
}

/* The bytes the device has left: the host's available memory, which both devices
 * share. Its total when that cannot be read. */
static uint64_t free_memory(broken_backend *b) {
    uint64_t free_bytes = 0, total = 0;
    if (b->cpu->device->mem_info(b->cpu_device, &free_bytes, &total) != BP_OK || !free_bytes)
        return total;
    return free_bytes;
}

/* A request the device cannot hold is BP_ERR_OUT_OF_MEMORY, decided here rather than by
 * an overcommitting host allocator (or a sanitizer's, which aborts); oom_abort
 * aborts instead. The host's allocator already refuses more than the total, so what
 * arrives here is at most the total: more than is free is the case to handle. */
static bp_status check_free(broken_device *d, size_t size) {
    broken_backend *b = d->backend;
    uint64_t available = free_memory(b);
    if (size <= available)
        return BP_OK;
    if (has(b, DEFECT_OOM_ABORT)) {
        b->host->log(BP_LOG_ERROR, BROKEN_NAME,
                     "broken:%d: %zu bytes requested, more than the %llu free: aborting (seeded "
                     "defect oom_abort)",
                     d->index, size, (unsigned long long)available);
        abort();
    }
    return b->host->set_error(BP_ERR_OUT_OF_MEMORY,
                              "broken:%d: cannot allocate %zu bytes: only %llu bytes are free",
                              d->index, size, (unsigned long long)available);
}

static bp_status broken_alloc(void *device, size_t size, void **out_ptr) {
    broken_device *d = device;
    broken_backend *b = d->backend;
    bp_status st = check_free(d, size);
    if (st != BP_OK)
        return st;
    broken_block *blk = calloc(1, sizeof *blk);
    if (!blk)
        return b->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                  "broken:%d: cannot allocate an allocation record", d->index);
    bool overlap = has(b, DEFECT_ALLOC_OVERLAP);
    pthread_mutex_lock(&d->lock);
    broken_block *owner = overlap ? overlap_target(d, size) : NULL;
    if (owner) {
        blk->ptr = (char *)owner->ptr + alias_offset(owner);
        blk->owner = owner;
        owner->aliases_made++;
        owner->refs++;
    } else {
        blk->room = size + (overlap && size <= SIZE_MAX - OVERLAP_SLACK ? OVERLAP_SLACK : 0);
        st = b->cpu->memory->alloc(b->cpu_device, blk->room, &blk->ptr);
        blk->refs = 1;
    }
    if (st == BP_OK) {
        blk->size = size;
        blk->next = d->blocks;
        d->blocks = blk;
        *out_ptr = blk->ptr;
    }
    pthread_mutex_unlock(&d->lock);
    if (st != BP_OK)
        free(blk);
    return st;
}

/* Drops a reference to an owning block; the last one frees its memory. */
static void block_release(broken_device *d, broken_block *owner) {
    if (--owner->refs > 0)
        return;
    d->backend->cpu->memory->free(d->backend->cpu_device, owner->ptr);
    free(owner);
}

static void broken_free(void *device, void *ptr) {
    broken_device *d = device;
    pthread_mutex_lock(&d->lock);
    broken_block **link = &d->blocks;
    while (*link && (*link)->ptr != ptr)
        link = &(*link)->next;
    broken_block *blk = *link;
    if (blk)
        *link = blk->next;
    if (blk && blk->owner) {
        block_release(d, blk->owner);
        free(blk);
    } else if (blk) {
        block_release(d, blk);
    }
    pthread_mutex_unlock(&d->lock);
    if (!blk)
        d->backend->host->log(BP_LOG_ERROR, BROKEN_NAME,
                              "broken:%d: free of %p, which this device did not allocate",
                              d->index, ptr);
}

/* copy_drops_byte: how many of `size` bytes a copy really copies. */
static size_t copied_bytes(const broken_backend *b, size_t size) {
    return has(b, DEFECT_COPY_DROPS_BYTE) && size > 0 ? size - 1 : size;
}

/* small_copy_eager: copies up to this size are done at once on the calling thread. */
#define EAGER_COPY_MAX 64

/* small_copy_eager: true when it did the copy itself (device memory is host memory). */
static bool copied_eagerly(const broken_backend *b, void *dst, const void *src, size_t size) {
    if (!has(b, DEFECT_SMALL_COPY_EAGER) || size > EAGER_COPY_MAX)
        return false;
    memcpy(dst, src, size);
    return true;
}

static bp_status broken_copy_async(void *stream, void *dst, const void *src, size_t size,
                                   bp_copy_kind kind) {
    broken_stream *s = stream;
    broken_backend *b = s->device->backend;
    if (copied_eagerly(b, dst, src, size))
        return BP_OK;
    return note_own_work(s, b->cpu->memory->copy_async(s->cpu, dst, src, copied_bytes(b, size),
                                                       kind));
}

/* peer_copy_chunk: a peer copy of `size` bytes in chunks of this many, each chunk after
 * the first missing its first byte. */
#define PEER_CHUNK ((size_t)1 << 20)

static bp_status copy_peer_chunked(broken_stream *s, char *dst, const char *src, size_t size) {
    const bp_plugin_descriptor *cpu = s->device->backend->cpu;
    bp_status st = BP_OK;
    for (size_t at = 0; at < size && st == BP_OK; at += PEER_CHUNK) {
        size_t skip = at > 0, n = size - at < PEER_CHUNK ? size - at : PEER_CHUNK;
        st = cpu->memory->copy_async(s->cpu, dst + at + skip, src + at + skip, n - skip,
                                     BP_COPY_DEVICE_TO_DEVICE);
    }
    return st;
}

/* Both devices are host memory: a peer copy is a device-to-device copy. */
static bp_status broken_copy_peer_async(void *stream, void *dst, void *dst_device, const void *src,
                                        void *src_device, size_t size) {
    broken_stream *s = stream;
    broken_backend *b = s->device->backend;
    if (has(b, DEFECT_PEER_COPY_CHUNK))
        return copy_peer_chunked(s, dst, src, size);
    return b->cpu->memory->copy_async(s->cpu, dst, src, copied_bytes(b, size),
                                      BP_COPY_DEVICE_TO_DEVICE);
    if (copied_eagerly(b, dst, src, size))
        return BP_OK;
    return note_own_work(s, b->cpu->memory->copy_async(s->cpu, dst, src, copied_bytes(b, size),
                                                       BP_COPY_DEVICE_TO_DEVICE));
}

static bp_status broken_memset_async(void *stream, void *ptr, int value, size_t size) {
    broken_stream *s = stream;
    broken_backend *b = s->device->backend;
    if (has(b, DEFECT_MEMSET_DROPS_BYTE) && size > 0)
        size--;
    return b->cpu->memory->memset_async(s->cpu, ptr, value, size);
    return note_own_work(s, s->device->backend->cpu->memory->memset_async(s->cpu, ptr, value,
                                                                          size));
}

/* ---- guard: the device this backend holds current on each thread ---- */

static _Thread_local int tls_current = -1; /* index, -1: none yet on this thread */
/* guard_global: the one current device of every thread. */
static _Atomic int global_current = -1;

static bp_status broken_set_current(void *device) {
    broken_device *d = device;
    if (has(d->backend, DEFECT_GUARD_NO_RESTORE) && tls_current >= 0 && d->index < tls_current)
        return BP_OK;
    if (has(d->backend, DEFECT_GUARD_GLOBAL))
        global_current = d->index;
    else
        tls_current = d->index;
    return BP_OK;
}

static bp_status broken_get_current(void *backend, int *out_index) {
    int current = has(backend, DEFECT_GUARD_GLOBAL) ? global_current : tls_current;
    if (current < 0)
        return BP_ERR_NOT_FOUND;
    *out_index = current;
    return BP_OK;
}

/* ---- kernels ----
 *
 * A kernel copies the call (its descriptors and attributes are valid only during the
 * call) into a heap job and enqueues it as a host function on the wrapped cpu stream.
 * The job walks the output in rows along its last dim; each operand's position comes
 * from its own strides, where an input that broadcasts (fewer dims, or a dim of 1)
 * has stride 0. */

typedef enum kernel_op { OP_FILL, OP_COPY, OP_ADD, OP_SOFTMAX, OP_SUM } kernel_op;

typedef struct kernel_job {
    kernel_op op;
    int n_inputs;
    bp_tensor_desc out;
    bp_tensor_desc in[MAX_INPUTS];
    double fill_value;
    bp_softmax_attrs softmax;
    int64_t softmax_rows_per_matrix; /* causal: size of dim -2 */
    bool softmax_no_max;
    bool add_writes_past_end;
    bool softmax_long_rows;
    bool softmax_neg_inf_nan;
    bool round_truncates;   /* bf16 results truncated */
    bool half_accumulate;   /* sums accumulated in the (f16) dtype */
    bp_reduce_attrs reduce; /* sum: dim (normalised) and keepdim */
} kernel_job;

/* One row of the walk: where it starts in each operand (0: the output, then the
 * inputs), the element stride along it in each, its length and its number. */
typedef struct row_view {
    char *ptr[1 + MAX_INPUTS];
    int64_t stride[1 + MAX_INPUTS];
    int64_t n;
    int64_t row;
} row_view;

typedef void (*row_fn)(const kernel_job *job, const row_view *r);

static size_t dtype_size(bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F64:
    case BP_DTYPE_I64:
        return 8;
    case BP_DTYPE_F32:
    case BP_DTYPE_I32:
        return 4;
    case BP_DTYPE_F16:
    case BP_DTYPE_BF16:
        return 2;
    default:
        return 1;
    }
}

/* Strides of `t` against an output of `ndim` dims: dims are aligned at the end, and a
 * missing dim or a dim of 1 repeats (stride 0). */
static void broadcast_strides(const bp_tensor_desc *t, int ndim, int64_t *strides) {
    int lead = ndim - t->ndim;
    for (int d = 0; d < ndim; d++)
        strides[d] = d < lead || t->shape[d - lead] == 1 ? 0 : t->strides[d - lead];
}

static void for_each_row(const kernel_job *job, row_fn fn) {
    const bp_tensor_desc *ops[1 + MAX_INPUTS] = {&job->out, &job->in[0], &job->in[1]};
    int nops = 1 + job->n_inputs;
    int ndim = job->out.ndim;
    int64_t shape[BP_KERNEL_MAX_DIMS];
    int64_t strides[1 + MAX_INPUTS][BP_KERNEL_MAX_DIMS];
    if (ndim == 0) { /* a scalar is one row of one */
        ndim = 1;
        shape[0] = 1;
        for (int o = 0; o < nops; o++)
            strides[o][0] = 0;
    } else {
        memcpy(shape, job->out.shape, (size_t)ndim * sizeof shape[0]);
        for (int o = 0; o < nops; o++)
            broadcast_strides(ops[o], ndim, strides[o]);
    }
    int outer = ndim - 1;
    int64_t rows = 1;
    for (int d = 0; d < outer; d++)
        rows *= shape[d];
    row_view r = {.n = shape[outer]};
    if (rows == 0 || r.n == 0)
        return;
    int64_t index[BP_KERNEL_MAX_DIMS] = {0};
    int64_t offset[1 + MAX_INPUTS] = {0}; /* elements */
    for (int o = 0; o < nops; o++)
        r.stride[o] = strides[o][outer];
    for (r.row = 0; r.row < rows; r.row++) {
        for (int o = 0; o < nops; o++)
            r.ptr[o] = (char *)ops[o]->data + offset[o] * (int64_t)dtype_size(ops[o]->dtype);
        fn(job, &r);
        for (int d = outer - 1; d >= 0; d--) { /* odometer over the outer dims */
            for (int o = 0; o < nops; o++)
                offset[o] += strides[o][d];
            if (++index[d] < shape[d])
                break;
            for (int o = 0; o < nops; o++)
                offset[o] -= strides[o][d] * shape[d];
            index[d] = 0;
        }
    }
}

static float half_to_float(uint16_t h) {
    float sign = h & 0x8000u ? -1.0f : 1.0f;
    int exponent = (h >> 10) & 0x1f;
    int mantissa = h & 0x3ff;
    if (exponent == 0x1f)
        return mantissa ? NAN : sign * INFINITY;
    if (exponent == 0) /* zero or subnormal */
        return sign * ldexpf((float)mantissa, -24);
    return sign * ldexpf((float)(mantissa | 0x400), exponent - 25);
}

/* Element `p` of dtype `dtype` as a float (the copy op's conversion). */
static float load_as_float(const char *p, bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F32: {
        float v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case BP_DTYPE_F16: {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return half_to_float(h);
    }
    case BP_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        uint32_t bits = (uint32_t)h << 16;
        float v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    case BP_DTYPE_F64: {
        double v;
        memcpy(&v, p, sizeof v);
        return (float)v;
    }
    case BP_DTYPE_I8:
        return (float)*(const int8_t *)p;
    case BP_DTYPE_U8:
        return (float)*(const uint8_t *)p;
    case BP_DTYPE_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return (float)v;
    }
    case BP_DTYPE_I64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (float)v;
    }
    default: /* bool */
        return *(const uint8_t *)p ? 1.0f : 0.0f;
    }
}

static void fill_row(const kernel_job *job, const row_view *r) {
    float *y = (float *)r->ptr[0];
    const float value = (float)job->fill_value;
    for (int64_t j = 0; j < r->n; j++)
        y[j * r->stride[0]] = value;
}

static void copy_row(const kernel_job *job, const row_view *r) {
    float *y = (float *)r->ptr[0];
    const bp_dtype from = job->in[0].dtype;
    const int64_t step = r->stride[1] * (int64_t)dtype_size(from);
    for (int64_t j = 0; j < r->n; j++)
        y[j * r->stride[0]] = load_as_float(r->ptr[1] + j * step, from);
}

/* f32 to f16 bits, rounded to nearest even (overflow to inf, gradual underflow). */
static uint16_t float_to_half(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    float a = fabsf(f);
    if (isnan(f))
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0f) /* at or past the tie above the largest: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14f) /* subnormal: a multiple of 2^-24, rounded by the f32 add */
        return (uint16_t)(sign | (uint16_t)lrintf(a * 0x1p24f));
    int e;
    float m = frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
    uint32_t q = (uint32_t)lrintf(m * 2048.0f); /* 11 bits, to nearest even */
    if (q == 2048)
        q = 1024, e++;
    if (e + 14 > 30)
        return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (uint16_t)((e + 14) << 10) | (uint16_t)(q & 0x3ffu));
}

/* f32 to bf16 bits: to nearest even, or truncated (the round_truncates defect). */
static uint16_t float_to_bf16(float f, bool truncate) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (isnan(f))
        return (uint16_t)((bits >> 16) | 0x40u);
    if (!truncate)
        bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

/* Stores v into element `p` of a float dtype (f32, f16, bf16). */
static void store_float(char *p, bp_dtype dtype, float v, bool truncate) {
    if (dtype == BP_DTYPE_F32) {
        memcpy(p, &v, sizeof v);
    } else {
        uint16_t h = dtype == BP_DTYPE_F16 ? float_to_half(v) : float_to_bf16(v, truncate);
        memcpy(p, &h, sizeof h);
    }
}

static void add_row(const kernel_job *job, const row_view *r) {
    const bp_dtype dt = job->out.dtype;
    const int64_t size = (int64_t)dtype_size(dt);
    for (int64_t j = 0; j < r->n; j++) {
        float a = load_as_float(r->ptr[1] + j * r->stride[1] * size, dt);
        float b = load_as_float(r->ptr[2] + j * r->stride[2] * size, dt);
        store_float(r->ptr[0] + j * r->stride[0] * size, dt, a + b, job->round_truncates);
    }
}

/* softmax_no_max: exp of the raw logits in f32, which overflows to inf above ~88. */
static void softmax_row_no_max(const row_view *r, float scale, int64_t kept) {
    float *y = (float *)r->ptr[0];
    const float *x = (const float *)r->ptr[1];
    const int64_t ys = r->stride[0], xs = r->stride[1];
    float sum = 0.0f;
    for (int64_t j = 0; j < kept; j++)
        sum += expf(x[j * xs] * scale);
    for (int64_t j = 0; j < kept; j++)
        y[j * ys] = expf(x[j * xs] * scale) / sum;
    for (int64_t j = kept; j < r->n; j++)
        y[j * ys] = 0.0f;
}

/* Softmax of one row of x * scale in double, the max subtracted first. With causal,
 * row i of each [Sq, Sk] matrix keeps keys j <= i; masked elements become 0, and so
 * does a row whose kept logits are all -inf. A NaN logit makes the row NaN. Every
 * x[j] is read before y[j] is written, so out may be the input itself. */
static void softmax_row(const kernel_job *job, const row_view *r) {
    int64_t kept = r->n;
    if (job->softmax.causal) {
        int64_t i = r->row % job->softmax_rows_per_matrix;
        if (i + 1 < kept)
            kept = i + 1;
    }
    if (job->softmax_no_max) {
        softmax_row_no_max(r, job->softmax.scale, kept);
        return;
    }
    float *y = (float *)r->ptr[0];
    const float *x = (const float *)r->ptr[1];
    const int64_t ys = r->stride[0], xs = r->stride[1];
    const double scale = job->softmax.scale;
    double m = -INFINITY;
    for (int64_t j = 0; j < kept; j++) {
        double v = x[j * xs] * scale;
        if (v > m || isnan(v))
            m = v;
    }
    if (m == -INFINITY && !job->softmax_neg_inf_nan)
        kept = 0;
    /* softmax_long_rows: the long-row path keeps only its first block's partial sum. */
    int64_t summed = job->softmax_long_rows && r->n >= 2048 && kept > 1024 ? 1024 : kept;
    double sum = 0.0;
    for (int64_t j = 0; j < summed; j++)
        sum += exp(x[j * xs] * scale - m);
    for (int64_t j = 0; j < kept; j++)
        y[j * ys] = (float)(exp(x[j * xs] * scale - m) / sum);
    for (int64_t j = kept; j < r->n; j++)
        y[j * ys] = 0.0f;
}

/* add_writes_past_end: the element just past the output view's last one (by address)
 * gets that last element's value, as a vector loop running one lane too far would. */
static void write_past_end(const kernel_job *job) {
    float *y = job->out.data;
    int64_t last = 0;
    for (int d = 0; d < job->out.ndim; d++)
        last += (job->out.shape[d] - 1) * job->out.strides[d];
    y[last + 1] = y[last];
}

/* sum over dim of the input: every output element walks its line of the input (any
 * strides), accumulating in f32, or in the f16 dtype (half_accumulate). */
static void run_sum(const kernel_job *job) {
    const bp_tensor_desc *x = &job->in[0], *y = &job->out;
    const int dim = job->reduce.dim, nd = x->ndim;
    const int64_t len = nd ? x->shape[dim] : 1, xstep = nd ? x->strides[dim] : 0;
    const size_t xs = dtype_size(x->dtype), ys = dtype_size(y->dtype);
    int64_t index[BP_KERNEL_MAX_DIMS] = {0}, outputs = 1;
    for (int d = 0; d < nd; d++)
        outputs *= d == dim ? 1 : x->shape[d];
    for (int64_t o = 0; o < outputs; o++) {
        int64_t xoff = 0, yoff = 0;
        for (int d = 0, od = 0; d < nd; d++) {
            xoff += index[d] * x->strides[d];
            if (d != dim || job->reduce.keepdim)
                yoff += index[d] * y->strides[od++];
        }
        float acc = 0.0f;
        for (int64_t j = 0; j < len; j++) {
            acc += load_as_float((const char *)x->data + (xoff + j * xstep) * (int64_t)xs,
                                 x->dtype);
            if (job->half_accumulate)
                acc = half_to_float(float_to_half(acc));
        }
        store_float((char *)y->data + yoff * (int64_t)ys, y->dtype, acc, false);
        for (int d = nd - 1; d >= 0; d--) { /* odometer, skipping dim */
            if (d == dim)
                continue;
            if (++index[d] < x->shape[d])
                break;
            index[d] = 0;
        }
    }
}

static void run_job(void *arg) {
    kernel_job *job = arg;
    static const row_fn rows[] = {
        [OP_FILL] = fill_row, [OP_COPY] = copy_row, [OP_ADD] = add_row, [OP_SOFTMAX] = softmax_row};
    if (job->op == OP_SUM)
        run_sum(job);
    else
        for_each_row(job, rows[job->op]);
    if (job->add_writes_past_end)
        write_past_end(job);
    free(job);
}

static int64_t numel(const bp_tensor_desc *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* Copies the call into a job and enqueues it on the wrapped stream. */
static bp_status enqueue_job(const bp_kernel_call *call, kernel_op op) {
    broken_stream *s = call->stream;
    broken_backend *b = s->device->backend;
    if (call->n_inputs > MAX_INPUTS || call->n_outputs != 1)
        return b->host->set_error(BP_ERR_INTERNAL,
                                  "broken: %s kernel called with %d inputs and %d outputs",
                                  call->op_name, (int)call->n_inputs, (int)call->n_outputs);
    if (numel(call->outputs[0]) == 0)
        return BP_OK; /* nothing to compute; the data pointer may be NULL */
    kernel_job *job = calloc(1, sizeof *job);
    if (!job)
        return b->host->set_error(BP_ERR_OUT_OF_MEMORY, "broken: cannot allocate a %s launch",
                                  call->op_name);
    job->op = op;
    job->n_inputs = call->n_inputs;
    job->out = *call->outputs[0];
    for (int i = 0; i < call->n_inputs; i++)
        job->in[i] = *call->inputs[i];
    if (op == OP_FILL && call->attrs)
        job->fill_value = ((const bp_fill_attrs *)call->attrs)->value;
    if (op == OP_SOFTMAX) {
        job->softmax = call->attrs ? *(const bp_softmax_attrs *)call->attrs
                                   : (bp_softmax_attrs){.scale = 1.0f, .causal = 0};
        job->softmax_rows_per_matrix = job->out.ndim >= 2 ? job->out.shape[job->out.ndim - 2] : 1;
        job->softmax_no_max = has(b, DEFECT_SOFTMAX_NO_MAX);
        job->softmax_long_rows = has(b, DEFECT_SOFTMAX_LONG_ROWS);
        job->softmax_neg_inf_nan = has(b, DEFECT_SOFTMAX_NEG_INF_NAN);
    }
    job->add_writes_past_end =
        op == OP_ADD && job->out.dtype == BP_DTYPE_F32 && has(b, DEFECT_ADD_WRITES_PAST_END);
    if (op == OP_SUM && call->attrs)
        job->reduce = *(const bp_reduce_attrs *)call->attrs;
    job->round_truncates = has(b, DEFECT_BF16_ROUND_TRUNCATES);
    job->half_accumulate = has(b, DEFECT_SUM_HALF_ACCUMULATE);
    bp_status st = b->cpu->stream->enqueue_host(s->cpu, run_job, job);
    if (st != BP_OK)
        free(job);
    return note_own_work(s, st);
}

static bp_status fill_kernel(const bp_kernel_call *call) { return enqueue_job(call, OP_FILL); }
static bp_status copy_kernel(const bp_kernel_call *call) { return enqueue_job(call, OP_COPY); }
static bp_status add_kernel(const bp_kernel_call *call) { return enqueue_job(call, OP_ADD); }
static bp_status softmax_kernel(const bp_kernel_call *call) {
    return enqueue_job(call, OP_SOFTMAX);
}
static bp_status sum_kernel(const bp_kernel_call *call) { return enqueue_job(call, OP_SUM); }

static bp_status register_kernels(const bp_host_services *host) {
    static const struct {
        const char *op;
        bp_dtype dtype;
        bp_kernel_fn fn;
    } kernels[] = {
        {"fill", BP_DTYPE_F32, fill_kernel},
        {"copy", BP_DTYPE_F32, copy_kernel},
        {"add", BP_DTYPE_F32, add_kernel},
        {"softmax", BP_DTYPE_F32, softmax_kernel},
        {"add", BP_DTYPE_BF16, add_kernel},
        {"sum", BP_DTYPE_F16, sum_kernel},
    };
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        bp_status st = host->register_kernel(BROKEN_NAME, kernels[k].op, kernels[k].dtype,
                                             kernels[k].fn, NULL, 0);
        if (st != BP_OK)
            return st;
    }
    return BP_OK;
}

/* ---- the descriptor ---- */

static const bp_device_vtable broken_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = broken_count,
    .unavailable_reason = NULL, /* count() is never 0 */
    .get_props = broken_get_props,
    .open = broken_open,
    .close = broken_close,
    .mem_info = broken_mem_info,
    .synchronize = broken_device_synchronize,
};

static const bp_stream_vtable broken_stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = broken_stream_create,
    .destroy = broken_stream_destroy,
    .synchronize = broken_stream_synchronize,
    .query = broken_stream_query,
    .wait_event = broken_stream_wait_event,
#ifndef BROKEN_NO_HOST_FUNC
    .enqueue_host = broken_stream_enqueue_host,
#endif
};

static const bp_event_vtable broken_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = broken_event_create,
    .destroy = broken_event_destroy,
    .record = broken_event_record,
    .query = broken_event_query,
    .synchronize = broken_event_synchronize,
    .elapsed_ms = broken_event_elapsed_ms,
};

static const bp_memory_vtable broken_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = broken_alloc,
    .free = broken_free,
    .host_alloc = NULL, /* the host falls back to aligned malloc */
    .host_free = NULL,
    .copy_async = broken_copy_async,
    .copy_peer_async = broken_copy_peer_async,
    .memset_async = broken_memset_async,
};

static const bp_guard_vtable broken_guard_vtable = {
#ifdef BROKEN_GUARD_ABI_1_0
    /* get_current is set, but lies past the size: the host must not read it. */
    .struct_size = offsetof(bp_guard_vtable, get_current),
#else
    .struct_size = sizeof(bp_guard_vtable),
#endif
    .set_current = broken_set_current,
    .get_current = broken_get_current,
};

static const char *const broken_aliases[] = {"bp_broken", NULL};

static const bp_plugin_descriptor broken_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
#ifdef BROKEN_GUARD_ABI_1_0
    .abi_minor = 1,
    .version = "0.1.0 (guard table of ABI 1.0)",
#else
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .version = "0.1.0",
#endif
    .name = BROKEN_NAME,
    .aliases = broken_aliases,
    .priority = 0,
    .init = broken_init,
    .shutdown = broken_shutdown,
    .device = &broken_device_vtable,
    .stream = &broken_stream_vtable,
    .event = &broken_event_vtable,
    .memory = &broken_memory_vtable,
    .guard = &broken_guard_vtable,
    .region = NULL,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) { return &broken_descriptor; }
