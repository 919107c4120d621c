/* testdev: the smallest complete backplane plugin, and the loader tests' working one.
 *
 * It drives two pretend devices that are really host memory. Work runs synchronously
 * inside each call, so streams are always idle, an event is complete as soon as it is
 * recorded, and "device" pointers are ordinary host pointers. A real backend would
 * enqueue work on its runtime's queue instead; everything else (the descriptor, the
 * struct_size rules, error reporting through host->set_error) is the same.
 *
 * Build: a shared library named libbp_<name>.so that includes only <backplane/plugin.h>
 * and does not link libbackplane. Put it in BP_PLUGIN_PATH or the plugin directory. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <backplane/plugin.h>

/* The loader tests build a second copy with a lower priority. */
#ifndef TESTDEV_PRIORITY
#define TESTDEV_PRIORITY 0
#endif

#define TESTDEV_DEVICES 2
#define TESTDEV_MEMORY (1ull << 30) /* bytes each pretend device offers */
#define TESTDEV_ALIGN 256           /* the ABI asks for at least 256-byte alignment */

typedef struct testdev_backend testdev_backend;

typedef struct testdev_device {
    testdev_backend *backend;
    int index;
    atomic_ullong used; /* bytes handed out by alloc */
} testdev_device;

struct testdev_backend {
    const bp_host_services *host;
    testdev_device devices[TESTDEV_DEVICES];
};

typedef struct testdev_stream {
    testdev_device *device;
} testdev_stream;

typedef struct testdev_event {
    int timing;
    struct timespec when; /* taken at record: the work before it is already done */
} testdev_event;

/* ---- backend ---- */

/* ---- a kernel ----
 *
 * fill for f32, the way a backend registers its kernels: a function taking the call
 * record. testdev's device memory is host memory and its streams are synchronous, so
 * the kernel writes the elements right away; a real backend would enqueue a launch on
 * call->stream. It walks any strides, since an op may hand it a view. (An ABI 1.0
 * build has no register_kernel, so it has no kernel.) */
#ifndef TESTDEV_ABI_1_0
static void fill_f32(char *data, const bp_tensor_desc *t, int dim, float value) {
    if (dim == t->ndim) {
        *(float *)data = value;
        return;
    }
    for (int64_t i = 0; i < t->shape[dim]; i++)
        fill_f32(data + i * t->strides[dim] * (int64_t)sizeof(float), t, dim + 1, value);
}

static bp_status testdev_fill_f32(const bp_kernel_call *call) {
    const bp_tensor_desc *out = call->outputs[0];
    if (out->data)
        fill_f32(out->data, out, 0, (float)((const bp_fill_attrs *)call->attrs)->value);
    return BP_OK;
}
#endif

static bp_status testdev_init(const bp_host_services *host, void **out_backend) {
    testdev_backend *b = calloc(1, sizeof *b);
    if (!b)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "testdev: cannot allocate its state");
    b->host = host;
    for (int i = 0; i < TESTDEV_DEVICES; i++) {
        b->devices[i].backend = b;
        b->devices[i].index = i;
        atomic_init(&b->devices[i].used, 0);
    }
#ifndef TESTDEV_ABI_1_0
    /* register_kernel arrived in ABI 1.1: check that this host's table has it. */
    if (host->struct_size >= offsetof(bp_host_services, register_kernel) + sizeof(void *)) {
        bp_status st = host->register_kernel("testdev", "fill", BP_DTYPE_F32, testdev_fill_f32,
                                             NULL, 0);
        if (st != BP_OK) {
            free(b);
            return st;
        }
    }
#endif
    *out_backend = b;
    return BP_OK;
}

static void testdev_shutdown(void *backend) { free(backend); }

/* ---- devices ---- */

static int testdev_count(void *backend) { return TESTDEV_DEVICES; }

static bp_status testdev_get_props(void *backend, int index, bp_backend_device_props *props) {
    testdev_backend *b = backend;
    if (index < 0 || index >= TESTDEV_DEVICES)
        return b->host->set_error(BP_ERR_NOT_FOUND, "testdev: no device %d (there are %d)", index,
                                  TESTDEV_DEVICES);
    /* Fill a full struct, then copy only what the host's struct has room for: a host
     * built against an older header passes a smaller struct_size. */
    bp_backend_device_props p = {.struct_size = props->struct_size};
    snprintf(p.description, sizeof p.description, "backplane test device %d", index);
    p.total_memory = TESTDEV_MEMORY;
    p.capabilities = BP_CAP_TIMED_EVENTS | BP_CAP_PEER_COPY;
    p.dtypes = BP_DTYPE_BIT(BP_DTYPE_COUNT) - 1; /* memory only: every dtype is bytes */
    p.stream_priority_least = 0;
    p.stream_priority_greatest = 0;
#ifdef TESTDEV_ABI_1_0
    size_t mine = offsetof(bp_backend_device_props, features); /* the 1.0 header's struct */
#else
    size_t mine = sizeof p;
    snprintf(p.features, sizeof p.features, "testdev-feature-a testdev-feature-b");
#endif
    size_t n = props->struct_size < mine ? props->struct_size : mine;
    memcpy(props, &p, n);
    return BP_OK;
}

static bp_status testdev_open(void *backend, int index, void **out_device) {
    testdev_backend *b = backend;
    if (index < 0 || index >= TESTDEV_DEVICES)
        return b->host->set_error(BP_ERR_NOT_FOUND, "testdev: no device %d", index);
    *out_device = &b->devices[index];
    return BP_OK;
}

static void testdev_close(void *device) {}

static bp_status testdev_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    testdev_device *d = device;
    uint64_t used = atomic_load(&d->used);
    *out_total = TESTDEV_MEMORY;
    *out_free = used < TESTDEV_MEMORY ? TESTDEV_MEMORY - used : 0;
    return BP_OK;
}

static bp_status testdev_device_synchronize(void *device) { return BP_OK; }

/* ---- streams: work already ran inside each call ---- */

static bp_status testdev_stream_create(void *device, int priority, void **out_stream) {
    testdev_device *d = device;
    testdev_stream *s = calloc(1, sizeof *s);
    if (!s)
        return d->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                           "testdev:%d: cannot allocate a stream", d->index);
    s->device = d;
    *out_stream = s;
    return BP_OK;
}

static void testdev_stream_destroy(void *stream) { free(stream); }

static bp_status testdev_stream_synchronize(void *stream) { return BP_OK; }

static bp_status testdev_stream_query(void *stream) { return BP_OK; }

static bp_status testdev_stream_wait_event(void *stream, void *event) { return BP_OK; }

/* ---- events ---- */

static bp_status testdev_event_create(void *device, int timing, void **out_event) {
    testdev_device *d = device;
    testdev_event *e = calloc(1, sizeof *e);
    if (!e)
        return d->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                           "testdev:%d: cannot allocate an event", d->index);
    e->timing = timing;
    *out_event = e;
    return BP_OK;
}

static void testdev_event_destroy(void *event) { free(event); }

static bp_status testdev_event_record(void *event, void *stream) {
    testdev_event *e = event;
    if (e->timing)
        clock_gettime(CLOCK_MONOTONIC, &e->when);
    return BP_OK;
}

static bp_status testdev_event_query(void *event) { return BP_OK; }

static bp_status testdev_event_synchronize(void *event) { return BP_OK; }

static bp_status testdev_event_elapsed_ms(void *start, void *end, float *out_ms) {
    const testdev_event *a = start, *b = end;
    double ms = (double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6;
    *out_ms = (float)ms;
    return BP_OK;
}

/* ---- memory: aligned host memory with a header that remembers the size ---- */

static bp_status testdev_alloc(void *device, size_t size, void **out_ptr) {
    testdev_device *d = device;
    size_t rounded = (size + TESTDEV_ALIGN - 1) / TESTDEV_ALIGN * TESTDEV_ALIGN;
    uint64_t used = atomic_fetch_add(&d->used, rounded) + rounded;
    if (rounded < size || used > TESTDEV_MEMORY) {
        atomic_fetch_sub(&d->used, rounded);
        return d->backend->host->set_error(
            BP_ERR_OUT_OF_MEMORY, "testdev:%d: cannot allocate %zu bytes (%llu of %llu in use)",
            d->index, size, (unsigned long long)atomic_load(&d->used), TESTDEV_MEMORY);
    }
    /* The header keeps the pointer 256-byte aligned. */
    unsigned char *base = aligned_alloc(TESTDEV_ALIGN, TESTDEV_ALIGN + rounded);
    if (!base) {
        atomic_fetch_sub(&d->used, rounded);
        return d->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                           "testdev:%d: host memory exhausted allocating %zu "
                                           "bytes",
                                           d->index, size);
    }
    memcpy(base, &rounded, sizeof rounded);
    *out_ptr = base + TESTDEV_ALIGN;
    return BP_OK;
}

static void testdev_free(void *device, void *ptr) {
    testdev_device *d = device;
    unsigned char *base = (unsigned char *)ptr - TESTDEV_ALIGN;
    size_t rounded;
    memcpy(&rounded, base, sizeof rounded);
    atomic_fetch_sub(&d->used, rounded);
    free(base);
}

static bp_status testdev_copy_async(void *stream, void *dst, const void *src, size_t size,
                                    bp_copy_kind kind) {
    memcpy(dst, src, size);
    return BP_OK;
}

static bp_status testdev_copy_peer_async(void *stream, void *dst, void *dst_device, const void *src,
                                         void *src_device, size_t size) {
    memcpy(dst, src, size);
    return BP_OK;
}

static bp_status testdev_memset_async(void *stream, void *ptr, int value, size_t size) {
    memset(ptr, value, size);
    return BP_OK;
}

/* ---- the descriptor ---- */

static const bp_device_vtable testdev_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = testdev_count,
    .unavailable_reason = NULL, /* count() is never 0 */
    .get_props = testdev_get_props,
    .open = testdev_open,
    .close = testdev_close,
    .mem_info = testdev_mem_info,
    .synchronize = testdev_device_synchronize,
};

/* TESTDEV_ABI_1_0 builds the plugin as if against the ABI 1.0 header: a stream vtable
 * without the 1.1 fields, so the host must not read past it. */
static const bp_stream_vtable testdev_stream_vtable = {
#ifdef TESTDEV_ABI_1_0
    .struct_size = offsetof(bp_stream_vtable, enqueue_host),
#else
    .struct_size = sizeof(bp_stream_vtable),
#endif
    .create = testdev_stream_create,
    .destroy = testdev_stream_destroy,
    .synchronize = testdev_stream_synchronize,
    .query = testdev_stream_query,
    .wait_event = testdev_stream_wait_event,
};

static const bp_event_vtable testdev_event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = testdev_event_create,
    .destroy = testdev_event_destroy,
    .record = testdev_event_record,
    .query = testdev_event_query,
    .synchronize = testdev_event_synchronize,
    .elapsed_ms = testdev_event_elapsed_ms,
};

static const bp_memory_vtable testdev_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = testdev_alloc,
    .free = testdev_free,
    .host_alloc = NULL, /* the host falls back to aligned malloc */
    .host_free = NULL,
    .copy_async = testdev_copy_async,
    .copy_peer_async = testdev_copy_peer_async,
    .memset_async = testdev_memset_async,
};

static const char *const testdev_aliases[] = {"tdev", NULL};

static const bp_plugin_descriptor testdev_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
#ifdef TESTDEV_ABI_1_0
    .abi_minor = 0,
#else
    .abi_minor = BP_PLUGIN_ABI_MINOR,
#endif
    .name = "testdev",
    .aliases = testdev_aliases,
    .version = "1.0.0",
    .priority = TESTDEV_PRIORITY,
    .init = testdev_init,
    .shutdown = testdev_shutdown,
    .device = &testdev_device_vtable,
    .stream = &testdev_stream_vtable,
    .event = &testdev_event_vtable,
    .memory = &testdev_memory_vtable,
    .guard = NULL,  /* no per-thread context to make current */
    .region = NULL, /* reserved in ABI 1.0 */
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) { return &testdev_descriptor; }
