/* Region recording: bp_region_begin/end, the nodes that ops append while a stream
 * records, and the checks that keep deferred tensors unread until their region ended.
 * A region is a capture of its stream (hal/capture.c): the callbacks below word hal's
 * refusals and free the executor's streams; deferred storage is the tensor layer's
 * (tensor/deferred.c), made here through its capture hook. Scheduling is in
 * hints/schedule.c, running in region_exec.c. */
#include <stdlib.h>
#include <string.h>

#include "region_internal.h"

/* ---- storages ---- */

static int storage_index(bp_region *r, bp_storage *s) {
    return (int)(intptr_t)bp_ptr_map_get(&r->storage_map, s) - 1;
}

static bp_status storage_add(bp_region *r, bp_storage *s, bool deferred, int *out_index) {
    int i = storage_index(r, s);
    if (i >= 0) {
        *out_index = i;
        return BP_OK;
    }
    if (r->nstorages == r->cap_storages) {
        int cap = r->cap_storages ? 2 * r->cap_storages : 16;
        bp_region_storage *p = realloc(r->storages, (size_t)cap * sizeof *p);
        if (!p)
            return bp_set_error(BP_ERR_OUT_OF_MEMORY, "region: out of host memory");
        r->storages = p;
        r->cap_storages = cap;
    }
    if (!bp_ptr_map_put(&r->storage_map, s, (void *)(intptr_t)(r->nstorages + 1)))
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "region: out of host memory");
    bp_storage_retain(s);
    r->storages[r->nstorages] = (bp_region_storage){.storage = s, .deferred = deferred,
                                                    .last_use = -1};
    *out_index = r->nstorages++;
    return BP_OK;
}

/* The tensor layer's capture hook: bp_tensor_empty on a recording stream makes the
 * storage deferred in its region. */
static bp_status defer_storage(bp_stream *stream, bp_storage *storage) {
    bp_region *r = bp_region_of(stream);
    bp_status st = bp_storage_defer(storage, &r->capture);
    int index;
    if (st == BP_OK)
        st = storage_add(r, storage, true, &index);
    if (st != BP_OK && storage->deferred)
        bp_deferred_storage_freed(storage);
    return st;
}

/* ---- the capture callbacks ---- */

static const char *refusal_reason(bp_capture_refusal refusal) {
    switch (refusal) {
    case BP_CAPTURE_REFUSE_SYNCHRONIZE:
        return "work recorded in a region has not been issued, so there is nothing to wait for";
    case BP_CAPTURE_REFUSE_HOST_FUNC:
        return "a region records kernels only: launch host functions before bp_region_begin or "
               "after bp_region_end";
    default:
        return "copies and memsets cannot be recorded: do them before bp_region_begin or after "
               "bp_region_end";
    }
}

static bp_status refuse(bp_capture_refusal refusal, const char *what, const bp_device *device) {
    switch (refusal) {
    case BP_CAPTURE_REFUSE_DESTROY:
        return bp_set_error(BP_ERR_INVALID_STATE, "%s: the stream is recording a region; end it "
                            "with bp_region_end first", what);
    case BP_CAPTURE_REFUSE_DEVICE_SYNCHRONIZE:
        return bp_set_error(BP_ERR_INVALID_STATE, "%s: a stream of %s is recording a region; "
                            "end it (bp_region_end) first", what, device->name);
    case BP_CAPTURE_REFUSE_EVENT_SYNCHRONIZE:
        return bp_set_error(BP_ERR_INVALID_STATE, "%s: the event was recorded on a stream of %s "
                            "that is recording a region; end the region (bp_region_end) before "
                            "waiting for it", what, device->name);
    default:
        return bp_set_error(BP_ERR_INVALID_STATE, "%s: the stream (on %s) is recording a region; "
                            "end it with bp_region_end first (%s)", what, device->name,
                            refusal_reason(refusal));
    }
}

/* The stream is being destroyed: so are the extra streams its schedules ran on. */
static void release_aux_streams(bp_stream *stream) {
    bp_region_aux_streams *aux = stream->capture_data;
    for (int i = 0; i < aux->count; i++)
        bp_stream_destroy(aux->streams[i]);
    free(aux);
}

static const bp_capture_callbacks region_capture = {
    .refuse = refuse,
    .release_stream_data = release_aux_streams,
};

__attribute__((constructor)) static void install_capture(void) {
    bp_capture_install(&region_capture);
    bp_storage_set_capture_hook(defer_storage);
}

/* ---- recording ---- */

static void node_free(bp_region_node *n) {
    free(n->args);
    free(n->attrs);
}

/* Byte extent of a view: elements reach offset + sum((shape-1)*|stride|) either way. */
static void arg_extent(bp_region_arg *a, size_t esize) {
    int64_t lo = 0, hi = 0;
    bool empty = false;
    for (int d = 0; d < a->desc.ndim; d++) {
        if (a->desc.shape[d] == 0)
            empty = true;
        int64_t span = (a->desc.shape[d] - 1) * a->desc.strides[d];
        if (span > 0)
            hi += span;
        else
            lo += span;
    }
    if (empty) {
        a->lo = a->hi = a->offset;
        return;
    }
    a->lo = a->offset + lo * (int64_t)esize;
    a->hi = a->offset + (hi + 1) * (int64_t)esize;
}

static bp_status record(bp_region *r, const bp_op_record *op, const bp_kernel_entry *kernel,
                        const bp_op_call *call) {
    const bp_kernel_call *kc = &call->kernel;
    if (!kernel)
        return bp_set_error(BP_ERR_UNSUPPORTED, "region: op '%s' has no kernel on %s for dtype "
                            "%s, so it cannot be recorded (the cpu fallback does not run "
                            "inside regions)", op->name, call->device->name,
                            bp_dtype_name(kc->dtype));
    if (call->device != r->stream->device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "region: op '%s' on %s was issued to a "
                            "stream of %s", op->name, call->device->name,
                            r->stream->device->name);
    int n = kc->n_inputs + kc->n_outputs;
    bp_region_node node = {.op = op, .kernel = kernel, .op_id = kc->op, .dtype = kc->dtype,
                           .n_inputs = kc->n_inputs, .n_outputs = kc->n_outputs};
    node.args = calloc(n ? (size_t)n : 1, sizeof *node.args);
    if (!node.args)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "region: out of host memory");
    if (kc->attrs && op->attrs_size) {
        node.attrs = malloc(op->attrs_size);
        if (!node.attrs) {
            node_free(&node);
            return bp_set_error(BP_ERR_OUT_OF_MEMORY, "region: out of host memory");
        }
        memcpy(node.attrs, kc->attrs, op->attrs_size);
    }
    for (int i = 0; i < n; i++) {
        const bp_tensor_desc *desc = i < kc->n_inputs ? kc->inputs[i]
                                                      : kc->outputs[i - kc->n_inputs];
        /* Descriptors in a region come from bp_tensor_kernel_desc (documented). */
        bp_tensor *t = bp_tensor_of_desc(desc);
        bp_storage *s = t->storage;
        if (s->deferred && s->deferred->owner != &r->capture) {
            node_free(&node);
            if (!s->deferred->owner)
                return bp_storage_check_readable(s, op->name);
            return bp_set_error(BP_ERR_INVALID_STATE, "%s: tensor %d is deferred in another "
                                "region (recording on another stream) that has not ended; end "
                                "that region first", op->name, i);
        }
        bp_region_arg *a = &node.args[i];
        a->desc = *desc;
        a->offset = t->offset * (int64_t)bp_dtype_size(t->dtype);
        arg_extent(a, bp_dtype_size(t->dtype));
        bp_status st = storage_add(r, s, s->deferred != NULL, &a->storage);
        if (st != BP_OK) {
            node_free(&node);
            return st;
        }
    }
    if (r->nnodes == r->cap_nodes) {
        int cap = r->cap_nodes ? 2 * r->cap_nodes : 32;
        bp_region_node *p = realloc(r->nodes, (size_t)cap * sizeof *p);
        if (!p) {
            node_free(&node);
            return bp_set_error(BP_ERR_OUT_OF_MEMORY, "region: out of host memory");
        }
        r->nodes = p;
        r->cap_nodes = cap;
    }
    r->nodes[r->nnodes++] = node;
    return BP_OK;
}

bp_status bp_region_intercept(const bp_op_record *op, const bp_kernel_entry *kernel,
                              bp_op_call *call, bp_stream *stream, bool *handled) {
    if (stream->capture) {
        *handled = true;
        return record(bp_region_of(stream), op, kernel, call);
    }
    const bp_kernel_call *kc = &call->kernel;
    for (int i = 0; i < kc->n_inputs + kc->n_outputs; i++) {
        const bp_tensor_desc *d = i < kc->n_inputs ? kc->inputs[i] : kc->outputs[i - kc->n_inputs];
        /* Only a deferred tensor has elements and no data: look at its header then. */
        if (d->data || d->ndim < 0)
            continue;
        int64_t numel = 1;
        for (int k = 0; k < d->ndim; k++)
            numel *= d->shape[k];
        if (numel == 0)
            continue;
        const bp_storage *s = bp_tensor_of_desc(d)->storage;
        if (s->deferred)
            return bp_storage_check_readable(s, op->name);
    }
    return BP_OK;
}

/* ---- begin and end ---- */

static void region_free(bp_region *r, bool failed) {
    for (int i = 0; i < r->nnodes; i++)
        node_free(&r->nodes[i]);
    free(r->nodes);
    for (int i = 0; i < r->nstorages; i++) {
        bp_storage *s = r->storages[i].storage;
        if (s->deferred) {
            /* Never got memory (a zero-byte storage needs none): stays unreadable. */
            if (failed || (!s->ptr && s->bytes > 0))
                bp_storage_abandon(s);
            else
                bp_storage_resolve(s);
        }
        bp_storage_release(s);
    }
    free(r->storages);
    bp_ptr_map_clear(&r->storage_map);
    bp_hint_set_free(r->hints);
    free(r);
}

bp_status bp_region_begin(bp_stream *stream, const char *hints_json) {
    bp_status st = bp_stream_check(stream, "bp_region_begin");
    if (st != BP_OK)
        return st;
    if (stream->capture)
        return bp_set_error(BP_ERR_INVALID_STATE, "bp_region_begin: the stream (on %s) already "
                            "records a region; regions do not nest on one stream (end the "
                            "open one first)", stream->device->name);
    bp_region *r = calloc(1, sizeof *r);
    if (!r)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_begin: out of host memory");
    st = bp_hints_snapshot(hints_json, &r->hints);
    if (st != BP_OK) {
        free(r);
        return bp_error_prefix(st, "bp_region_begin");
    }
    r->stream = stream;
    bp_stream_capture_begin(stream, &r->capture);
    __atomic_fetch_add(&bp_dispatch_hooks, BP_HOOKS_REGION_UNIT, __ATOMIC_RELAXED);
    return BP_OK;
}

int bp_region_active(const bp_stream *stream) {
    return stream && bp_stream_check(stream, "bp_region_active") == BP_OK && stream->capture;
}

bp_status bp_region_end(bp_stream *stream, bp_region_report *report) {
    bp_status st = bp_stream_check(stream, "bp_region_end");
    if (st != BP_OK)
        return st;
    bp_region *r = bp_region_of(stream);
    if (!r)
        return bp_set_error(BP_ERR_INVALID_STATE, "bp_region_end: no region is open on this "
                            "stream (on %s); call bp_region_begin first", stream->device->name);
    if (report && report->struct_size < sizeof(bp_region_report))
        st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_region_end: report->struct_size is %u, "
                          "expected at least %zu (set it to sizeof(bp_region_report))",
                          report->struct_size, sizeof(bp_region_report));
    /* The stream stops recording before anything runs: the executor issues to it. */
    bp_stream_capture_end(stream);
    __atomic_fetch_sub(&bp_dispatch_hooks, BP_HOOKS_REGION_UNIT, __ATOMIC_RELAXED);

    for (int i = 0; i < r->nstorages; i++) {
        /* Only the region's own reference left: nobody reads it after the region. */
        bp_region_storage *rs = &r->storages[i];
        rs->user_held = atomic_load(&rs->storage->refcount) > 1;
    }
    bp_hint_values hv = {.struct_size = sizeof hv};
    bp_schedule sched;
    memset(&sched, 0, sizeof sched);
    if (st == BP_OK)
        st = bp_hint_set_values(r->hints, &hv);
    if (st == BP_OK)
        st = bp_schedule_plan(r, &hv, &sched);
    if (st == BP_OK && report) {
        uint32_t size = report->struct_size;
        memset(report, 0, sizeof *report);
        report->struct_size = size;
    }
    if (st == BP_OK)
        st = bp_region_execute(r, &hv, &sched, report);
    if (st == BP_OK)
        bp_region_report_fill(r, &sched, report);
    bp_schedule_free(&sched, r->nnodes);
    region_free(r, st != BP_OK);
    return st;
}
