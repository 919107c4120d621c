/* hpu: the state shared by the plugin's files (backend, devices, streams) and the
 * vtables each file provides.
 *
 * Locking: each device has one model mutex, `lock`. It guards the device's model
 * (hpu_model), every stream's modelled state (ready_us) and capture state (graph),
 * and the graphs being captured. Stream workers never take it, so submitting to a
 * queue under it is safe. Lock order: event lock -> device lock -> graph completion
 * lock. The stream list has its own lock, taken before the device lock. */
#ifndef BP_HPU_INTERNAL_H
#define BP_HPU_INTERNAL_H

#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_queue.h"
#include "hpu_arena.h"
#include "hpu_model.h"
#include "hpu_params.h"

#define HPU_NAME "hpu"

typedef struct hpu_backend hpu_backend;
typedef struct hpu_stream hpu_stream;
typedef struct hpu_graph hpu_graph;

typedef struct hpu_device {
    hpu_backend *backend;
    int index;
    hpu_arena *arena;           /* from open to close */
    pthread_mutex_t lock;       /* the model mutex (see above) */
    hpu_model model;
    bp_plugin_list streams;     /* live streams (their links), for device synchronize */
} hpu_device;

struct hpu_backend {
    const bp_host_services *host;
    hpu_params params;
    uint32_t dtypes;            /* dtypes with at least one kernel */
    int ndevices;
    hpu_device *devices;
    atomic_uint next_stream_id; /* names the worker threads */
};

struct hpu_stream {
    hpu_device *device;
    cpu_queue *queue;
    int priority;
    double ready_us;            /* modelled: when the stream's work so far is done */
    hpu_graph *graph;           /* the region being captured on it, or NULL */
    bp_plugin_link link;        /* in the device's streams */
};

/* ---- hpu_stream.c ---- */
extern const bp_stream_vtable hpu_stream_vtable;
extern const bp_event_vtable hpu_event_vtable;

/** Appends a task to the stream's queue, with a message naming `what` on failure. */
bp_status hpu_submit(hpu_stream *s, const char *what, cpu_task_fn fn, const void *payload,
                     size_t size, uint64_t *out_ticket);

/** Makes later work on `s` wait for `ticket` of `queue`. Takes over the caller's
 *  reference on `queue`, also on failure. */
bp_status hpu_submit_wait(hpu_stream *s, cpu_queue *queue, uint64_t ticket);

/** Waits for every stream of the device (device synchronize). */
bp_status hpu_streams_synchronize(hpu_device *dev);

/* ---- hpu_memory.c ---- */
extern const bp_memory_vtable hpu_memory_vtable;

/* ---- hpu_graph.c ---- */
extern const bp_region_vtable hpu_region_vtable;

#endif
