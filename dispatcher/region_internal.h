/* Internal contract of regions: the recorder (dispatcher/region.c), the executor
 * (dispatcher/region_exec.c), the scheduling policies (hints/schedule.c) and the
 * report (hints/region_report.c). Not installed. */
#ifndef BP_REGION_INTERNAL_H
#define BP_REGION_INTERNAL_H

#include <backplane/region.h>

#include "dispatcher_internal.h"
#include "ptr_map.h"
#include "hints_internal.h"
#include "tensor_internal.h"

#define BP_REGION_MAX_STREAMS 16

/* A storage the region touches: deferred ones (created in it) and the others its
 * nodes read or write. The region holds one reference on each. */
typedef struct bp_region_storage {
    bp_storage *storage;
    bool deferred;
    bool user_held;   /* executor: some tensor header outside the region still uses it */
    int last_use;     /* executor: last position in the schedule, -1 if unused */
    uint32_t streams_noted; /* executor: stream indices already record_stream'ed */
} bp_region_storage;

/* One tensor argument of a node: its descriptor as recorded (data NULL when deferred)
 * and where its bytes lie in its storage. */
typedef struct bp_region_arg {
    bp_tensor_desc desc;
    int storage;        /* index into bp_region.storages */
    int64_t offset;     /* bytes from the storage start to the first element */
    int64_t lo, hi;     /* byte extent [lo, hi) touched; lo == hi for no elements */
} bp_region_arg;

typedef struct bp_region_node {
    const bp_op_record *op;
    const bp_kernel_entry *kernel;
    bp_op_id op_id;
    bp_dtype dtype;
    int n_inputs, n_outputs;
    bp_region_arg *args; /* n_inputs + n_outputs, inputs first */
    void *attrs;         /* a copy of op->attrs_size bytes, or NULL */
} bp_region_node;

/* A region is its stream's capture (hal/capture.c): begin and end open and close it. */
typedef struct bp_region {
    bp_stream_capture capture; /* first member: stream->capture leads here (bp_region_of) */
    bp_stream *stream;
    bp_hint_set *hints;
    bp_region_node *nodes;
    int nnodes, cap_nodes;
    bp_region_storage *storages;
    bp_ptr_map storage_map;   /* bp_storage * -> index + 1 into storages */
    int nstorages, cap_storages;
    bool backend_compiled;    /* executor: the device took the whole region (BP_CAP_REGIONS) */
} bp_region;

/* The region `stream` records, or NULL. */
static inline bp_region *bp_region_of(const bp_stream *stream) {
    return (bp_region *)stream->capture;
}

/* The extra streams of a stream's bfs schedules (its capture_data), created on first
 * need by the executor, destroyed with the stream. */
typedef struct bp_region_aux_streams {
    bp_stream *streams[BP_REGION_MAX_STREAMS - 1];
    int count;
} bp_region_aux_streams;

/* The schedule a policy made (hints/schedule.c). */
typedef struct bp_schedule {
    int *order;          /* nnodes node indices, in issue order */
    int *stream_of;      /* per node: stream index 0 .. nstreams-1 (0 = the region's) */
    int **preds;         /* per node: predecessor node indices, -1 terminated */
    int nstreams;
    int width;
    int chains;
    bp_schedule_order policy;
    uint64_t predicted_peak;
} bp_schedule;

/* Orders `r` by the effective hints `hv`: dependencies from the storages' byte
 * extents (RAW/WAR/WAW), chains, the policy's order and streams, the predicted peak.
 * Storages' user_held must be set. Errors: BP_ERR_INVALID_ARGUMENT when auto's budget
 * cannot be met (gives the smallest feasible peak), BP_ERR_OUT_OF_MEMORY. */
BP_INTERNAL bp_status bp_schedule_plan(bp_region *r, const bp_hint_values *hv,
                                       bp_schedule *out);
BP_INTERNAL void bp_schedule_free(bp_schedule *s, int nnodes);

/* Runs the schedule (dispatcher/region_exec.c) planned from the effective hints `hv`;
 * fills the measured fields of report (may be NULL). */
BP_INTERNAL bp_status bp_region_execute(bp_region *r, const bp_hint_values *hv,
                                        const bp_schedule *s, bp_region_report *report);

/* Marks every hint of r honoured or ignored for the schedule and copies them into
 * report (may be NULL) with the schedule's fields (hints/region_report.c). */
BP_INTERNAL void bp_region_report_fill(bp_region *r, const bp_schedule *s,
                                       bp_region_report *report);

/* Launches one recorded node's kernel call on `stream` (dispatcher.c, with the
 * trace/profile hooks when they are on). */
BP_INTERNAL bp_status bp_dispatch_launch_recorded(const bp_op_record *op,
                                                  const bp_kernel_entry *kernel,
                                                  bp_op_call *call, bp_stream *stream);
/* dispatch_slow's hook while any region is open: records the call when its stream
 * records (sets *handled), else checks that it reads no deferred tensor. */
BP_INTERNAL bp_status bp_region_intercept(const bp_op_record *op, const bp_kernel_entry *kernel,
                                          bp_op_call *call, bp_stream *stream, bool *handled);

#endif
