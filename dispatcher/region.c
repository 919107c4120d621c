/* Region recording: bp_region_begin/end, the nodes that ops append while a stream
 * records, deferred storage, and the checks that keep deferred tensors unread until
 * their region ended. Scheduling is in hints/schedule.c, running in region_exec.c. */
#include <stdlib.h>
#include <string.h>

#include "region_internal.h"

static atomic_uint_least64_t next_serial = 1;

/* Regions open now, linked through bp_region.next_open: bp_event_synchronize asks by
 * serial, so an event never keeps a pointer to a stream that may be gone. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static bp_region *open_regions;

static void open_list_remove(bp_region *r) {
    pthread_mutex_lock(&open_lock);
    bp_region **p = &open_regions;
    while (*p && *p != r)
        p = &(*p)->next_open;
    if (*p)
        *p = r->next_open;
    pthread_mutex_unlock(&open_lock);
}

bool bp_region_serial_open(uint64_t serial) {
    bool open = false;
    pthread_mutex_lock(&open_lock);
    for (const bp_region *r = open_regions; r && !open; r = r->next_open)
        open = r->serial == serial;
    pthread_mutex_unlock(&open_lock);
    return open;
}

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

bp_status bp_region_defer_storage(bp_stream *stream, bp_storage *storage) {
    bp_deferred *d = calloc(1, sizeof *d);
    if (!d)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_tensor_empty: out of host memory");
    pthread_mutex_init(&d->lock, NULL);
    d->region = stream->region;
    storage->deferred = d;
    int index;
    bp_status st = storage_add(stream->region, storage, true, &index);
    if (st != BP_OK) {
        storage->deferred = NULL;
        pthread_mutex_destroy(&d->lock);
        free(d);
    }
    return st;
}

bp_status bp_region_view_added(bp_storage *storage, bp_tensor *tensor) {
    bp_deferred *d = storage->deferred;
    bp_status st = BP_OK;
    pthread_mutex_lock(&d->lock);
    if (d->nviews == d->cap) {
        int cap = d->cap ? 2 * d->cap : 4;
        bp_tensor **p = realloc(d->views, (size_t)cap * sizeof *p);
        if (p) {
            d->views = p;
            d->cap = cap;
        } else {
            st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "tensor view: out of host memory");
        }
    }
    if (st == BP_OK)
        d->views[d->nviews++] = tensor;
    pthread_mutex_unlock(&d->lock);
    return st;
}

void bp_region_view_removed(bp_storage *storage, bp_tensor *tensor) {
    bp_deferred *d = storage->deferred;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->nviews; i++)
        if (d->views[i] == tensor) {
            d->views[i] = d->views[--d->nviews];
            break;
        }
    pthread_mutex_unlock(&d->lock);
}

static void deferred_free(bp_deferred *d) {
    pthread_mutex_destroy(&d->lock);
    free(d->views);
    free(d);
}

void bp_region_storage_freed(bp_storage *storage) {
    deferred_free(storage->deferred);
    storage->deferred = NULL;
}

/* The executor gave the storage memory: every header over it gets its data pointer,
 * and the storage becomes ordinary. */
static void deferred_resolve(bp_storage *s) {
    bp_deferred *d = s->deferred;
    s->deferred = NULL; /* first: bp_tensor_data reads ordinary storage only */
    for (int i = 0; i < d->nviews; i++)
        d->views[i]->desc.data = bp_tensor_data(d->views[i]);
    deferred_free(d);
}

/* ---- checks the HAL calls ---- */

bp_status bp_region_check_not_recording(const bp_stream *stream, const char *what) {
    if (!stream->region)
        return BP_OK;
    return bp_set_error(BP_ERR_INVALID_STATE, "%s: the stream (on %s) is recording a region; "
                        "end it with bp_region_end first (%s)", what, stream->device->name,
                        strstr(what, "synchronize") ? "work recorded in a region has not been "
                        "issued, so there is nothing to wait for"
                        : strstr(what, "host_func") ? "a region records kernels only: launch "
                        "host functions before bp_region_begin or after bp_region_end"
                        : "copies and memsets cannot be recorded: do them before "
                        "bp_region_begin or after bp_region_end");
}

static bp_status deferred_error(const bp_deferred *d, const char *what) {
    if (!d->region)
        return bp_set_error(BP_ERR_INVALID_STATE, "%s: the tensor was created in a region "
                            "whose bp_region_end failed: it never got memory", what);
    return bp_set_error(BP_ERR_INVALID_STATE, "%s: the tensor is deferred: it was created in a "
                        "region recording on a stream of %s that has not ended; call "
                        "bp_region_end first", what, d->region->stream->device->name);
}

bp_status bp_region_check_readable(const bp_tensor *tensor, const char *what) {
    const bp_deferred *d = tensor->storage->deferred;
    return d ? deferred_error(d, what) : BP_OK;
}

bp_status bp_region_stream_destroying(bp_stream *stream) {
    if (stream->region)
        return bp_set_error(BP_ERR_INVALID_STATE, "bp_stream_destroy: the stream is recording a "
                            "region; end it with bp_region_end first");
    for (int i = 0; i < stream->region_aux_count; i++)
        bp_stream_destroy(stream->region_aux[i]);
    stream->region_aux_count = 0;
    return BP_OK;
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
        if (s->deferred && s->deferred->region != r) {
            node_free(&node);
            if (!s->deferred->region)
                return deferred_error(s->deferred, op->name);
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
    if (stream->region) {
        *handled = true;
        return record(stream->region, op, kernel, call);
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
        const bp_deferred *def = bp_tensor_of_desc(d)->storage->deferred;
        if (def)
            return deferred_error(def, op->name);
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
                s->deferred->region = NULL;
            else
                deferred_resolve(s);
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
    if (stream->region)
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
    r->serial = atomic_fetch_add(&next_serial, 1);
    r->stream = stream;
    pthread_mutex_lock(&open_lock);
    r->next_open = open_regions;
    open_regions = r;
    pthread_mutex_unlock(&open_lock);
    stream->region = r;
    atomic_fetch_add(&stream->device->recording, 1);
    __atomic_fetch_add(&bp_dispatch_hooks, BP_HOOKS_REGION_UNIT, __ATOMIC_RELAXED);
    return BP_OK;
}

int bp_region_active(const bp_stream *stream) {
    return stream && bp_stream_check(stream, "bp_region_active") == BP_OK && stream->region;
}

bp_status bp_region_end(bp_stream *stream, bp_region_report *report) {
    bp_status st = bp_stream_check(stream, "bp_region_end");
    if (st != BP_OK)
        return st;
    bp_region *r = stream->region;
    if (!r)
        return bp_set_error(BP_ERR_INVALID_STATE, "bp_region_end: no region is open on this "
                            "stream (on %s); call bp_region_begin first", stream->device->name);
    if (report && report->struct_size < sizeof(bp_region_report))
        st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_region_end: report->struct_size is %u, "
                          "expected at least %zu (set it to sizeof(bp_region_report))",
                          report->struct_size, sizeof(bp_region_report));
    /* The stream stops recording before anything runs: the executor issues to it. */
    stream->region = NULL;
    open_list_remove(r);
    atomic_fetch_sub(&stream->device->recording, 1);
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
