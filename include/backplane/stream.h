/* backplane: streams (in-order work queues) and events (markers in a stream). */
#ifndef BACKPLANE_STREAM_H
#define BACKPLANE_STREAM_H

#include <stdbool.h>
#include <backplane/device.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An in-order queue of asynchronous work on one device. Work enqueued on one stream
 *  runs in the order it was enqueued; work on different streams may run concurrently
 *  unless ordered by events. A stream may be used from many threads; enqueueing from
 *  two threads at once orders their work in the order the calls took the stream. */
typedef struct bp_stream bp_stream;

/** A marker recorded into a stream; it completes when all work enqueued on that
 *  stream before the record has completed. */
typedef struct bp_event bp_event;

/** Creates a stream on `device`. `priority` follows CUDA's convention: lower numbers
 *  are higher priority; 0 is the default; values outside the device's range
 *  (bp_device_props.stream_priority_*) are clamped. The caller owns the stream.
 *  Errors: BP_ERR_INVALID_ARGUMENT, BP_ERR_OUT_OF_MEMORY, backend errors. */
BP_API bp_status bp_stream_create(bp_device *device, int priority, bp_stream **out_stream);

/** Waits for the stream's queued work, then destroys it. Destroying the default
 *  stream is an error (BP_ERR_INVALID_ARGUMENT); so is a stream already destroyed
 *  (detected for recently destroyed streams). NULL is a no-op returning BP_OK. */
BP_API bp_status bp_stream_destroy(bp_stream *stream);

/** The device's default stream: created with the device, never destroyed. It is an
 *  ordinary in-order stream and does not synchronize implicitly with other streams. */
BP_API bp_status bp_stream_default(bp_device *device, bp_stream **out_stream);

/** Device the stream belongs to; NULL for an invalid stream. */
BP_API bp_device *bp_stream_device(const bp_stream *stream);

/** Priority the stream was created with, after clamping. */
BP_API bp_status bp_stream_get_priority(const bp_stream *stream, int *out_priority);

/** Blocks until all work enqueued on the stream so far has completed. */
BP_API bp_status bp_stream_synchronize(bp_stream *stream);

/** BP_OK when all work enqueued so far has completed, BP_ERR_NOT_READY when not
 *  (which does not set the last error), or an error. Does not block. */
BP_API bp_status bp_stream_query(bp_stream *stream);

/** Makes all work enqueued on `stream` after this call wait until `event` completes;
 *  the host does not block. The event may belong to another stream or to another
 *  device of the same backend. For a device of another backend, the host waits for
 *  the event before returning (documented fallback). Waiting on an event that was
 *  never recorded is a no-op, as in CUDA. */
BP_API bp_status bp_stream_wait_event(bp_stream *stream, bp_event *event);

/** A host function for bp_stream_launch_host_func: called once with the `arg` given
 *  at launch. */
typedef void (*bp_host_fn)(void *arg);

/** Enqueues a host function on `stream` (cudaLaunchHostFunc / hipLaunchHostFunc):
 *  fn(arg) runs once on a host thread of the library after all work enqueued on the
 *  stream before this call has completed, and work enqueued on the stream after it
 *  (kernels, copies, memsets, event records, waits, other host functions) does not
 *  start before fn has returned. bp_stream_query says BP_ERR_NOT_READY and
 *  bp_stream_synchronize, bp_device_synchronize and an event recorded after it wait
 *  until fn has returned. Host functions of one stream run in launch order; those of
 *  different streams may run concurrently or one after another.
 *
 *  What fn may do: plain host code: compute, read and write host memory (including
 *  results that earlier work on the stream copied to the host), signal other threads
 *  (condition variables, semaphores, pipes), and block for a while, which holds back
 *  the stream's later work. What fn must not do: call backplane for any device or
 *  stream (enqueue, synchronize, query, allocate, free, record or wait): it may run on
 *  the thread that executes the stream's work, so such a call can deadlock; nor wait
 *  for something that only later work on this stream would produce.
 *
 *  A NULL `stream` means the calling thread's current stream of its current device
 *  (bp_current_stream(bp_current_device())). `arg` is passed through untouched; the
 *  caller keeps ownership of what it points to and must keep it alive until fn ran.
 *  Thread safety: may be called from any thread, as the other stream calls.
 *
 *  Backends: a backend with a native host-function queue (cpu, hpu, opencl, cuda) runs
 *  fn from its own queue, and the calling thread never blocks. For a backend plugin
 *  without one (a plugin whose stream table has no enqueue_host) the library falls
 *  back to an event and a host thread: fn runs on a library thread once an event
 *  recorded at the launch has completed, and until fn has returned, any call that hands
 *  the stream new work (a kernel, copy, memset, stream wait) blocks the calling thread
 *  first; launching more host functions and recording events do not block (an event
 *  recorded meanwhile completes only after fn, and a timing event's timestamp is taken
 *  when the device work before it ends, not counting host functions). A
 *  bp_stream_wait_event on such an event, from any stream, blocks the calling thread
 *  until those host functions have run.
 *
 *  Errors: BP_ERR_INVALID_ARGUMENT for a NULL fn, a destroyed or invalid stream, or no
 *  current device; BP_ERR_INVALID_STATE while the stream records a region (a region
 *  records kernels only); BP_ERR_OUT_OF_MEMORY; backend errors. */
BP_API bp_status bp_stream_launch_host_func(bp_stream *stream, bp_host_fn fn, void *arg);

/** Event creation flags. */
enum {
    BP_EVENT_DEFAULT = 0,
    BP_EVENT_TIMING = 1u << 0, /**< record a timestamp, for bp_event_elapsed_ms */
};

/** Creates an event on `device` with BP_EVENT_* `flags`. BP_EVENT_TIMING on a device
 *  without BP_CAP_TIMED_EVENTS is BP_ERR_UNSUPPORTED. The caller owns the event. */
BP_API bp_status bp_event_create(bp_device *device, unsigned flags, bp_event **out_event);

/** Destroys an event; pending waits on it still complete. NULL is a no-op. */
BP_API bp_status bp_event_destroy(bp_event *event);

/** Records the event at the current end of `stream`, which must be on the event's
 *  device. Re-recording moves the marker; earlier waits keep the earlier one. */
BP_API bp_status bp_event_record(bp_event *event, bp_stream *stream);

/** BP_OK when the recorded work has completed (or the event was never recorded),
 *  BP_ERR_NOT_READY when not (without setting the last error), or an error. */
BP_API bp_status bp_event_query(bp_event *event);

/** Blocks until the event completes; returns at once for an unrecorded event. */
BP_API bp_status bp_event_synchronize(bp_event *event);

/** Milliseconds between two completed timing events of one device.
 *  Errors: BP_ERR_INVALID_ARGUMENT if either lacks BP_EVENT_TIMING, was never
 *  recorded or is on another device; BP_ERR_NOT_READY if either has not completed. */
BP_API bp_status bp_event_elapsed_ms(bp_event *start, bp_event *end, float *out_ms);

#ifdef __cplusplus
}
#endif
#endif
