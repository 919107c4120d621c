/* The core region executor: runs a schedule (hints/schedule.c) on the region's stream
 * and, for bfs widths, on extra streams of the same device ordered by events. Deferred
 * storage gets memory at its first use, on the stream that uses it; storage nobody
 * outside the region holds is freed right after its last use (stream-ordered, with
 * record_stream for every other stream that used it), so the allocator's peak follows
 * the schedule. */
#include <stdlib.h>
#include <string.h>

#include "region_internal.h"

enum { MAX_INLINE_ARGS = 16 };

/* The region's stream and n - 1 extra streams, kept in its capture_data (freed by
 * the recorder's release_stream_data when the stream is destroyed). */
static bp_status get_streams(bp_stream *main, int n, bp_stream **streams) {
    streams[0] = main;
    if (n > 1 && !main->capture_data) {
        main->capture_data = calloc(1, sizeof(bp_region_aux_streams));
        if (!main->capture_data)
            return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    }
    bp_region_aux_streams *aux = main->capture_data;
    for (int i = 1; i < n; i++) {
        if (aux->count < i) {
            bp_stream *extra = NULL;
            bp_status st = bp_stream_create(main->device, main->priority, &extra);
            if (st != BP_OK)
                return bp_error_prefix(st, "bp_region_end: creating a stream for the schedule");
            aux->streams[aux->count++] = extra;
        }
        streams[i] = aux->streams[i - 1];
    }
    return BP_OK;
}

/* Memory for storage `rs` used on stream index `si`: allocated at first use, noted as
 * used by every further stream. */
static bp_status use_storage(bp_region_storage *rs, int si, bp_stream **streams) {
    bp_storage *s = rs->storage;
    bp_device *device = s->device;
    if (rs->deferred && !s->ptr && s->bytes > 0) {
        bp_status st = bp_memory_alloc(device, s->bytes, streams[si], &s->ptr);
        if (st != BP_OK)
            return bp_error_prefix(st, "bp_region_end");
        s->stream = streams[si];
        s->stream_id = streams[si]->id;
        rs->streams_noted |= 1u << si;
        return BP_OK;
    }
    if (!s->ptr || (rs->streams_noted & (1u << si)))
        return BP_OK;
    rs->streams_noted |= 1u << si;
    if (streams[si]->id == s->stream_id)
        return BP_OK;
    return bp_memory_record_stream(device, s->ptr, streams[si]);
}

static bp_status launch_node(bp_region *r, const bp_region_node *n, bp_stream *stream) {
    int total = n->n_inputs + n->n_outputs;
    bp_tensor_desc inline_descs[MAX_INLINE_ARGS];
    const bp_tensor_desc *inline_ptrs[MAX_INLINE_ARGS];
    bp_tensor_desc *descs = total <= MAX_INLINE_ARGS ? inline_descs
                                                     : malloc((size_t)total * sizeof *descs);
    const bp_tensor_desc **ptrs = total <= MAX_INLINE_ARGS ? inline_ptrs
                                                           : malloc((size_t)total * sizeof *ptrs);
    bp_status st = BP_OK;
    if (!descs || !ptrs) {
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    } else {
        for (int i = 0; i < total; i++) {
            const bp_region_arg *a = &n->args[i];
            descs[i] = a->desc;
            bp_storage *s = r->storages[a->storage].storage;
            descs[i].data = s->ptr && a->hi > a->lo ? (char *)s->ptr + a->offset : NULL;
            ptrs[i] = &descs[i];
        }
        bp_op_call call = {
            .kernel = {.op = n->op_id, .dtype = n->dtype, .n_inputs = n->n_inputs,
                       .n_outputs = n->n_outputs, .inputs = ptrs, .outputs = ptrs + n->n_inputs,
                       .attrs = n->attrs},
            .device = r->stream->device,
            .stream = stream,
        };
        st = bp_dispatch_launch_recorded(n->op, n->kernel, &call, stream);
    }
    if (descs != inline_descs)
        free(descs);
    if (ptrs != inline_ptrs)
        free(ptrs);
    return st;
}

/* A device with BP_CAP_REGIONS takes the whole region: the backend captures what the
 * executor issues between begin and end, then compiles and launches it as one. */
static bp_status capture_begin(bp_region *r, const bp_hint_values *hv, const bp_schedule *s,
                               bp_stream **streams, int nstreams, void **out_capture) {
    *out_capture = NULL;
    bp_device *device = r->stream->device;
    const bp_region_vtable *vt = device->backend->desc->region;
    if (!vt || !(device->props.capabilities & BP_CAP_REGIONS))
        return BP_OK;
    void *handles[BP_REGION_MAX_STREAMS];
    for (int i = 0; i < nstreams; i++)
        handles[i] = streams[i]->handle;
    bp_region_info info = {
        .struct_size = sizeof info,
        .order = (int32_t)s->policy,
        .width = s->width,
        .nodes = r->nnodes,
        .has_group_id = hv->has_group_id,
        .group_id = hv->group_id,
        .nstreams = nstreams,
        .streams = handles,
    };
    bp_status st = vt->begin(device->handle, &info, out_capture);
    if (st != BP_OK) {
        *out_capture = NULL;
        return bp_error_prefix(st, "bp_region_end: the backend's region begin");
    }
    return BP_OK;
}

bp_status bp_region_execute(bp_region *r, const bp_hint_values *hv, const bp_schedule *s,
                            bp_region_report *report) {
    bp_stream *main = r->stream;
    bp_device *device = main->device;
    bp_stream *streams[BP_REGION_MAX_STREAMS];
    int nstreams = s->nstreams < 1 ? 1 : s->nstreams;
    bp_status st = get_streams(main, nstreams, streams);
    if (st != BP_OK)
        return st;

    int n = r->nnodes;
    for (int pos = 0; pos < n; pos++) {
        const bp_region_node *node = &r->nodes[s->order[pos]];
        for (int i = 0; i < node->n_inputs + node->n_outputs; i++) {
            r->storages[node->args[i].storage].last_use = pos;
        }
    }
    /* Nodes whose result another stream waits for get an event after them. */
    bool *needs_event = calloc(n ? (size_t)n : 1, sizeof *needs_event);
    bp_event **events = calloc(n ? (size_t)n : 1, sizeof *events);
    if (!needs_event || !events) {
        free(needs_event);
        free(events);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    }
    for (int j = 0; j < n; j++)
        for (const int *p = s->preds[j]; *p >= 0; p++)
            if (s->stream_of[*p] != s->stream_of[j])
                needs_event[*p] = true;

    /* Reading the time means waiting for the end: only when a report asks for it. */
    bool timed = report && (device->props.capabilities & BP_CAP_TIMED_EVENTS) != 0;
    bp_event *t0 = NULL, *t1 = NULL, *fork = NULL;
    if (timed) {
        st = bp_event_create(device, BP_EVENT_TIMING, &t0);
        if (st == BP_OK)
            st = bp_event_create(device, BP_EVENT_TIMING, &t1);
        if (st == BP_OK)
            st = bp_event_record(t0, main);
    }
    /* The extra streams start after the work issued to the region's stream before it. */
    if (st == BP_OK && nstreams > 1) {
        st = bp_event_create(device, 0, &fork);
        if (st == BP_OK)
            st = bp_event_record(fork, main);
        for (int i = 1; i < nstreams && st == BP_OK; i++)
            st = bp_stream_wait_event(streams[i], fork);
    }
    bp_memory_stats before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    if (st == BP_OK)
        st = bp_memory_reset_peak(device);
    if (st == BP_OK)
        st = bp_memory_get_stats(device, &before);
    void *capture = NULL;
    if (st == BP_OK)
        st = capture_begin(r, hv, s, streams, nstreams, &capture);

    for (int pos = 0; pos < n && st == BP_OK; pos++) {
        int j = s->order[pos];
        const bp_region_node *node = &r->nodes[j];
        int si = s->stream_of[j];
        for (const int *p = s->preds[j]; *p >= 0 && st == BP_OK; p++)
            if (s->stream_of[*p] != si)
                st = bp_stream_wait_event(streams[si], events[*p]);
        for (int i = 0; i < node->n_inputs + node->n_outputs && st == BP_OK; i++)
            st = use_storage(&r->storages[node->args[i].storage], si, streams);
        if (st == BP_OK)
            st = launch_node(r, node, streams[si]);
        if (st == BP_OK && needs_event[j]) {
            st = bp_event_create(device, 0, &events[j]);
            if (st == BP_OK)
                st = bp_event_record(events[j], streams[si]);
        }
        for (int i = 0; i < node->n_inputs + node->n_outputs && st == BP_OK; i++) {
            bp_region_storage *rs = &r->storages[node->args[i].storage];
            if (rs->deferred && !rs->user_held && rs->last_use == pos && rs->storage->ptr) {
                st = bp_memory_free(device, rs->storage->ptr);
                rs->storage->ptr = NULL;
            }
        }
    }
    /* Deferred storage the user holds but no node touched still gets its memory. */
    for (int i = 0; i < r->nstorages && st == BP_OK; i++) {
        bp_region_storage *rs = &r->storages[i];
        if (rs->deferred && rs->user_held && !rs->storage->ptr && rs->storage->bytes > 0)
            st = use_storage(rs, 0, streams);
    }
    if (st == BP_OK)
        st = bp_memory_get_stats(device, &after);
    /* Join: later work on the region's stream sees everything the region did. */
    for (int i = 1; i < nstreams && st == BP_OK; i++) {
        bp_event *join = NULL;
        st = bp_event_create(device, 0, &join);
        if (st == BP_OK)
            st = bp_event_record(join, streams[i]);
        if (st == BP_OK)
            st = bp_stream_wait_event(main, join);
        bp_event_destroy(join);
    }
    if (capture) {
        const bp_region_vtable *vt = device->backend->desc->region;
        r->backend_compiled = st == BP_OK;
        if (st == BP_OK) {
            st = vt->end(capture);
            if (st != BP_OK)
                st = bp_error_prefix(st, "bp_region_end: the backend's region end");
        } else {
            vt->abort(capture);
        }
    }
    float ms = -1.0f;
    if (st == BP_OK && timed) {
        st = bp_event_record(t1, main);
        if (st == BP_OK)
            st = bp_event_synchronize(t1);
        if (st == BP_OK)
            st = bp_event_elapsed_ms(t0, t1, &ms);
    }
    if (st == BP_OK && report) {
        report->peak_scratch_bytes = after.peak_allocated_bytes > before.allocated_bytes
                                         ? after.peak_allocated_bytes - before.allocated_bytes
                                         : 0;
        report->device_ms = timed ? (double)ms : -1.0;
        report->streams_used = nstreams;
        report->backend_compiled = r->backend_compiled;
    }
    for (int j = 0; j < n; j++)
        bp_event_destroy(events[j]);
    bp_event_destroy(fork);
    bp_event_destroy(t0);
    bp_event_destroy(t1);
    free(events);
    free(needs_event);
    return st;
}
