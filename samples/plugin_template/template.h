/* The template plugin's own types, shared by its source files.
 *
 * Device type "template": TEMPLATE_DEVICES pretend devices whose memory is host memory
 * (malloc) and whose streams are worker threads running their work in order. Replace
 * the bodies of the functions with calls into your runtime; the shapes of the structs
 * (a backend, devices, streams, events) are what every backend needs.
 *
 * Only <backplane/plugin.h> (and the header-only <backplane/kernel_plan.h>, <backplane/ops.h>
 * for attribute structs) are included: the plugin links no libbackplane, and everything
 * it calls on the host comes through the services table handed to init. */
#ifndef TEMPLATE_H
#define TEMPLATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <backplane/plugin.h>

#define TEMPLATE_NAME "template"
#define TEMPLATE_VERSION "0.1.0"
/* Two devices, so that the suite's tests of several devices (peer copies, a current
 * device per thread) run too. Report what your hardware has. */
#define TEMPLATE_DEVICES 2
#define TEMPLATE_MEMORY (1ull << 30) /* bytes each pretend device offers */
#define TEMPLATE_ALIGN 256           /* the ABI asks for at least 256-byte alignment */

/* The services table of the host, valid from init until shutdown returns: errors
 * (set_error), logging and kernel registration go through it. */
extern const bp_host_services *template_host;

typedef struct template_device {
    int index;
    atomic_ullong used;         /* bytes handed out by alloc */
    /* Work enqueued on any stream of the device and not finished: device synchronize
     * waits until it is 0 (so also for work other threads enqueue meanwhile, which a
     * runtime's own device synchronize may not; both are correct). */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    uint64_t pending;
} template_device;

/* ---- streams (template_stream.c) ---- */

typedef struct template_stream template_stream;

/* Stream work: run(args) on the stream's worker thread, once everything enqueued
 * before it has finished. `args` is the stream's copy of the arguments given to
 * template_submit; run frees nothing of it. */
typedef void (*template_work_fn)(void *args);

/* Enqueues run with a copy of `size` bytes of `args` on the stream. */
bp_status template_submit(template_stream *stream, template_work_fn run, const void *args,
                          size_t size);

extern const bp_stream_vtable template_stream_vtable;
bp_status template_device_synchronize(void *device);
/* The stream table's wait_event: a work item that waits for the event's record
 * (template_event.c). */
bp_status template_stream_wait_event(void *stream, void *event);

/* ---- the rest ---- */

extern const bp_event_vtable template_event_vtable;   /* template_event.c */
extern const bp_memory_vtable template_memory_vtable; /* template_memory.c */
/* Registers the kernels of template_kernels.c; called from init. */
bp_status template_register_kernels(const bp_host_services *host);

#endif
