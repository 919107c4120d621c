/* backplane: regions. Between bp_region_begin and bp_region_end, ops issued on a stream
 * are recorded instead of run; at the end the recorded work is scheduled by the hint
 * policy (docs/hints.md) and run, with every intermediate allocated at its first use
 * and freed after its last, so peak memory follows the schedule.
 *
 * Rules while a stream records (each break is BP_ERR_INVALID_STATE with a message):
 *  - ops record when they run on that stream, i.e. when it is the thread's current
 *    stream of its device (bp_dispatch: the call's stream);
 *  - tensors created by bp_tensor_empty or an op's allocating form while the device's
 *    current stream records are deferred: they have a shape but no memory until the
 *    region ends; views of them are deferred too. Reading one (bp_tensor_to_host,
 *    bp_tensor_data, an op on a stream that does not record that region) before its
 *    region ended is an error;
 *  - bp_stream_synchronize of the stream, bp_event_synchronize of an event recorded on
 *    it, bp_device_synchronize of its device, bp_stream_destroy of it, and copies or
 *    memsets on it (bp_memory_copy_async, bp_memory_set_async, hence
 *    bp_tensor_from_host) are errors: create inputs before bp_region_begin;
 *  - nesting: bp_region_begin on a stream that already records is an error (regions
 *    do not flatten); regions on different streams may be open at once, but an op of
 *    one may not read a deferred tensor of another.
 * A region's tensors are ordinary once it ended. Thread safety: a region belongs to
 * the thread that began it; record and end it from that thread. */
#ifndef BACKPLANE_REGION_H
#define BACKPLANE_REGION_H

#include <stdint.h>
#include <backplane/hints.h>
#include <backplane/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BP_REGION_MAX_HINTS 16
#define BP_REGION_KEY_MAX 48
#define BP_REGION_REASON_MAX 160

/** What became of one hint in a region (copied: valid after the scopes are popped). */
typedef struct bp_region_hint {
    char key[BP_REGION_KEY_MAX];        /**< as written, truncated to fit */
    bp_hint_disposition disposition;    /**< BP_HINT_HONOURED or BP_HINT_IGNORED */
    char reason[BP_REGION_REASON_MAX];  /**< why, one sentence */
} bp_region_hint;

/** What bp_region_end did. Set struct_size = sizeof(bp_region_report) first; fields
 *  are only appended in later versions. */
typedef struct bp_region_report {
    uint32_t struct_size;
    int nodes;                  /**< ops recorded */
    bp_schedule_order policy;   /**< the order used (bfs when no hint) */
    int width;                  /**< chains run at once (1 for strict/dfs) */
    int chains;                 /**< independent chains found in the region */
    int streams_used;           /**< streams the work ran on */
    uint64_t predicted_peak_bytes; /**< the schedule's peak, from simulating alloc/free */
    uint64_t peak_scratch_bytes;   /**< allocator peak during the run minus what was
                                        allocated when it started */
    double device_ms;           /**< device time of the run from timing events; -1
                                     without BP_CAP_TIMED_EVENTS */
    /* The run resets the device's allocator peak (bp_memory_reset_peak) to measure. */
    int hint_count;             /**< entries of hints[] used (at most BP_REGION_MAX_HINTS) */
    bp_region_hint hints[BP_REGION_MAX_HINTS]; /**< every hint in effect, in scope order */
    int backend_compiled;       /**< 1 when the device took the whole region (BP_CAP_REGIONS:
                                     compiled by the backend, e.g. into a CUDA graph or over
                                     its engines), 0 when the core executor issued it node
                                     by node */
} bp_region_report;

/** Starts recording `stream`. `hints_json` (NULL or "" for none) is merged over the
 *  thread's hint scopes (bp_hints_push), the region's keys winning.
 *  Errors: BP_ERR_INVALID_ARGUMENT for a bad stream or malformed hints (the hints
 *  parser's message, naming the key or byte offset); BP_ERR_INVALID_STATE when the
 *  stream already records a region (nested regions are an error, not flattened). */
BP_API bp_status bp_region_begin(bp_stream *stream, const char *hints_json);

/** Ends the region recording on `stream`: schedules its ops by the policy and enqueues
 *  them (asynchronous, like eager ops; with a report on a device with timed events it
 *  waits for the end to read device_ms). Fills *report when not NULL. The region is
 *  closed even on error; its deferred tensors then stay unreadable (after a planning
 *  error such as the budget nothing of it ran).
 *  Errors: BP_ERR_INVALID_STATE when no region is open on the stream;
 *  BP_ERR_INVALID_ARGUMENT for `order` auto when no schedule fits mem_budget_mb (the
 *  message gives the smallest feasible peak in MB) or a report with a bad struct_size;
 *  BP_ERR_OUT_OF_MEMORY; kernel errors. */
BP_API bp_status bp_region_end(bp_stream *stream, bp_region_report *report);

/** 1 when `stream` is recording a region, else 0. */
BP_API int bp_region_active(const bp_stream *stream);

#ifdef __cplusplus
}
#endif
#endif
