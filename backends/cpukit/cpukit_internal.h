/* What the kit's own files share (not for backends: they use cpukit.h). */
#ifndef BP_CPUKIT_INTERNAL_H
#define BP_CPUKIT_INTERNAL_H

#include "cpukit.h"

struct cpukit_stream {
    cpukit_device *device;
    cpu_queue *queue;
    int priority; /* recorded only (see the cpu backend's stream priority range) */
    cpukit_stream *prev, *next;
};

/* Sets the error "<device>: <what> (<strerror(err)>)" and returns `status`. */
bp_status cpukit_error_errno(const cpukit_device *dev, bp_status status, const char *what,
                             int err);

/* The status and message of a queue's errno value `err` (not 0) for `what`. */
bp_status cpukit_queue_error(cpukit_stream *s, const char *what, int err);

/* Submits a task, storing its ticket in *out_ticket when not NULL; turns the queue's
 * errno value into a status with a message naming `what`. */
bp_status cpukit_submit(cpukit_stream *s, const char *what, cpu_task_fn fn, const void *payload,
                        size_t size, uint64_t *out_ticket);

/* The stream vtable's wait_event (cpukit_event.c): later work on the stream waits for
 * the event's latest record. */
bp_status cpukit_stream_wait_event(void *stream, void *event);

#endif
