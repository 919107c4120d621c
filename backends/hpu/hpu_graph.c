/* hpu: the region compiler (see hpu_graph.h). */
#include "hpu_graph.h"

#include <stdlib.h>
#include <string.h>

/* ---- completion ---- */

struct hpu_done {
    atomic_uint refs; /* the graph's + each event recorded in it */
    pthread_mutex_t lock;
    hpu_done_state state;
    cpu_queue *queue; /* launched: the main stream's queue (a reference) */
    uint64_t ticket;
    double end_us;
};

static hpu_done *done_create(void) {
    hpu_done *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    atomic_init(&d->refs, 1u);
    pthread_mutex_init(&d->lock, NULL);
    return d;
}

void hpu_done_retain(hpu_done *done) {
    atomic_fetch_add_explicit(&done->refs, 1u, memory_order_relaxed);
}

void hpu_done_release(hpu_done *done) {
    if (!done || atomic_fetch_sub_explicit(&done->refs, 1u, memory_order_acq_rel) != 1)
        return;
    if (done->queue)
        cpu_queue_release(done->queue);
    pthread_mutex_destroy(&done->lock);
    free(done);
}

hpu_done_state hpu_done_get(hpu_done *done, cpu_queue **out_queue, uint64_t *out_ticket,
                            double *out_end_us) {
    pthread_mutex_lock(&done->lock);
    hpu_done_state state = done->state;
    *out_queue = state == HPU_DONE_LAUNCHED ? done->queue : NULL;
    if (*out_queue)
        cpu_queue_retain(*out_queue);
    *out_ticket = done->ticket;
    *out_end_us = done->end_us;
    pthread_mutex_unlock(&done->lock);
    return state;
}

static void done_finish(hpu_done *done, hpu_done_state state, cpu_queue *queue, uint64_t ticket,
                        double end_us) {
    pthread_mutex_lock(&done->lock);
    done->state = state;
    done->queue = queue; /* the caller's reference passes to `done` */
    done->ticket = ticket;
    done->end_us = end_us;
    pthread_mutex_unlock(&done->lock);
}

/* ---- graphs and nodes ---- */

typedef enum node_kind { NODE_KERNEL, NODE_COPY, NODE_MEMSET, NODE_HOST_FN } node_kind;

typedef struct span {
    uintptr_t lo, hi;
} span;

typedef struct node {
    node_kind kind;
    bp_kernel_call *call;      /* NODE_KERNEL: the kit's copy (cpukit_call_copy) */
    void *dst;                 /* NODE_COPY, NODE_MEMSET */
    const void *src;           /* NODE_COPY */
    size_t size;
    int value;                 /* NODE_MEMSET */
    void (*fn)(void *arg);     /* NODE_HOST_FN */
    void *arg;
    hpu_work work;
    span *spans;               /* the reads, then the writes */
    int nreads, nwrites;
    span envelope;             /* of all spans: a quick no-overlap test */
} node;

typedef struct ext_wait {
    cpu_queue *queue; /* a reference, or NULL */
    uint64_t ticket;
    double ts_us;
} ext_wait;

struct hpu_graph {
    hpu_device *dev;
    int32_t order;
    int nstreams;
    hpu_stream **streams; /* [0] is the main stream */
    node *nodes;
    int nnodes, cap_nodes;
    ext_wait *waits;
    int nwaits, cap_waits;
    hpu_done *done;
};

static void node_free(node *n) {
    free(n->call);
    free(n->spans);
}

static void release_waits(ext_wait *waits, int n) {
    for (int i = 0; i < n; i++)
        if (waits[i].queue)
            cpu_queue_release(waits[i].queue);
}

static void graph_free(hpu_graph *g) {
    for (int i = 0; i < g->nnodes; i++)
        node_free(&g->nodes[i]);
    free(g->nodes);
    release_waits(g->waits, g->nwaits);
    free(g->waits);
    free(g->streams);
    hpu_done_release(g->done);
    free(g);
}

static bp_status out_of_memory(hpu_graph *g, const char *what) {
    return g->dev->backend->host->set_error(
        BP_ERR_OUT_OF_MEMORY, "hpu:%d: out of host memory while capturing a region (%s)",
        g->dev->index, what);
}

hpu_done *hpu_graph_done(hpu_graph *g) {
    return g->done;
}

/* A new zeroed node at the end, or NULL. */
static node *append_node(hpu_graph *g, node_kind kind, int nspans) {
    if (g->nnodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes)
            return NULL;
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    span *spans = NULL;
    if (nspans > 0 && !(spans = calloc((size_t)nspans, sizeof *spans)))
        return NULL;
    node *n = &g->nodes[g->nnodes++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->spans = spans;
    return n;
}

static void set_envelope(node *n) {
    int count = n->nreads + n->nwrites;
    n->envelope = (span){UINTPTR_MAX, 0};
    for (int i = 0; i < count; i++) {
        if (n->spans[i].lo == n->spans[i].hi)
            continue;
        if (n->spans[i].lo < n->envelope.lo)
            n->envelope.lo = n->spans[i].lo;
        if (n->spans[i].hi > n->envelope.hi)
            n->envelope.hi = n->spans[i].hi;
    }
    if (n->envelope.lo > n->envelope.hi)
        n->envelope = (span){0, 0};
}

bp_status hpu_graph_add_kernel(hpu_graph *g, bp_kernel_call *call, const hpu_work *work) {
    const bp_kernel_call *c = call;
    node *n = append_node(g, NODE_KERNEL, c->n_inputs + c->n_outputs);
    if (!n)
        return out_of_memory(g, "a kernel node");
    n->call = call;
    n->work = *work;
    n->nreads = c->n_inputs;
    n->nwrites = c->n_outputs;
    for (int i = 0; i < c->n_inputs; i++)
        hpu_desc_span(c->inputs[i], &n->spans[i].lo, &n->spans[i].hi);
    for (int i = 0; i < c->n_outputs; i++)
        hpu_desc_span(c->outputs[i], &n->spans[c->n_inputs + i].lo, &n->spans[c->n_inputs + i].hi);
    set_envelope(n);
    return BP_OK;
}

bp_status hpu_graph_add_copy(hpu_graph *g, void *dst, const void *src, size_t size,
                             const hpu_work *work) {
    node *n = append_node(g, NODE_COPY, 2);
    if (!n)
        return out_of_memory(g, "a copy node");
    n->dst = dst;
    n->src = src;
    n->size = size;
    n->work = *work;
    n->nreads = n->nwrites = 1;
    n->spans[0] = (span){(uintptr_t)src, (uintptr_t)src + size};
    n->spans[1] = (span){(uintptr_t)dst, (uintptr_t)dst + size};
    set_envelope(n);
    return BP_OK;
}

bp_status hpu_graph_add_memset(hpu_graph *g, void *ptr, int value, size_t size,
                               const hpu_work *work) {
    node *n = append_node(g, NODE_MEMSET, 1);
    if (!n)
        return out_of_memory(g, "a memset node");
    n->dst = ptr;
    n->value = value;
    n->size = size;
    n->work = *work;
    n->nwrites = 1;
    n->spans[0] = (span){(uintptr_t)ptr, (uintptr_t)ptr + size};
    set_envelope(n);
    return BP_OK;
}

bp_status hpu_graph_add_host_fn(hpu_graph *g, void (*fn)(void *arg), void *arg) {
    node *n = append_node(g, NODE_HOST_FN, 0);
    if (!n)
        return out_of_memory(g, "a host function node");
    n->fn = fn;
    n->arg = arg;
    return BP_OK;
}

bp_status hpu_graph_add_wait(hpu_graph *g, cpu_queue *queue, uint64_t ticket, double ts_us) {
    if (g->nwaits == g->cap_waits) {
        int cap = g->cap_waits ? 2 * g->cap_waits : 8;
        ext_wait *waits = realloc(g->waits, (size_t)cap * sizeof *waits);
        if (!waits) {
            if (queue)
                cpu_queue_release(queue);
            return out_of_memory(g, "an event wait");
        }
        g->waits = waits;
        g->cap_waits = cap;
    }
    g->waits[g->nwaits++] = (ext_wait){queue, ticket, ts_us};
    return BP_OK;
}

/* ---- scheduling ---- */

static bool spans_overlap(span a, span b) {
    return a.lo < b.hi && b.lo < a.hi;
}

static bool any_overlap(const span *a, int na, const span *b, int nb) {
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (spans_overlap(a[i], b[j]))
                return true;
    return false;
}

/* Does `later` depend on `earlier`: read-after-write, write-after-read or
 * write-after-write on overlapping bytes. */
static bool depends(const node *later, const node *earlier) {
    if (!spans_overlap(later->envelope, earlier->envelope))
        return false;
    const span *lr = later->spans, *lw = later->spans + later->nreads;
    const span *er = earlier->spans, *ew = earlier->spans + earlier->nreads;
    return any_overlap(lr, later->nreads, ew, earlier->nwrites) ||
           any_overlap(lw, later->nwrites, er, earlier->nreads) ||
           any_overlap(lw, later->nwrites, ew, earlier->nwrites);
}

typedef struct schedule_result {
    double start_us, end_us;
    double busy_us[HPU_ENGINE_COUNT];
} schedule_result;

static double max2(double a, double b) {
    return a > b ? a : b;
}

/* List scheduling in capture order on the device's timeline, from `start_us`. Returns
 * false when out of host memory. */
static bool schedule(hpu_graph *g, double start_us, schedule_result *res) {
    const hpu_params *p = &g->dev->backend->params;
    hpu_timeline *tl = &g->dev->model.timeline;
    double *ends = malloc((size_t)(g->nnodes > 0 ? g->nnodes : 1) * sizeof *ends);
    if (!ends)
        return false;
    memset(res, 0, sizeof *res);
    res->start_us = res->end_us = start_us;
    /* Issue order: each engine takes its nodes in capture order (its own queue); under
     * order strict the whole graph issues in capture order, one node after another. */
    bool strict = g->order == BP_ORDER_STRICT;
    double prev_start = start_us;
    double engine_prev_start[HPU_ENGINE_COUNT];
    for (int e = 0; e < HPU_ENGINE_COUNT; e++)
        engine_prev_start[e] = start_us;
    double barrier_end = start_us;
    int barrier = -1;             /* last host-function node */
    for (int j = 0; j < g->nnodes; j++) {
        node *n = &g->nodes[j];
        double ready = barrier_end;
        if (n->kind == NODE_HOST_FN) {
            for (int i = barrier + 1; i < j; i++)
                ready = max2(ready, ends[i]);
            ends[j] = barrier_end = prev_start = ready;
            for (int e = 0; e < HPU_ENGINE_COUNT; e++)
                engine_prev_start[e] = ready;
            barrier = j;
            continue;
        }
        ready = max2(ready, strict ? prev_start : engine_prev_start[n->work.engine]);
        for (int i = barrier + 1; i < j; i++)
            if (ends[i] > ready && depends(n, &g->nodes[i]))
                ready = ends[i];
        double start = 0.0;
        ends[j] = hpu_timeline_place(tl, &n->work, ready, p->graph_node_us, &start);
        prev_start = engine_prev_start[n->work.engine] = start;
        res->busy_us[n->work.engine] += ends[j] - start;
        res->end_us = max2(res->end_us, ends[j]);
    }
    free(ends);
    return true;
}

/* ---- running ---- */

typedef struct graph_run {
    const bp_host_services *host;
    int device_index;
    node *nodes;
    int nnodes;
} graph_run;

typedef struct run_task {
    graph_run *run;
} run_task;

/* On the main stream's worker: every node in capture order, a valid topological order
 * (the core issues dependencies first). */
static void run_task_fn(void *payload) {
    run_task t;
    memcpy(&t, payload, sizeof t);
    graph_run *r = t.run;
    for (int i = 0; i < r->nnodes; i++) {
        node *n = &r->nodes[i];
        switch (n->kind) {
        case NODE_KERNEL: {
            bp_status st = r->host->run_reference_kernel(n->call);
            if (st != BP_OK)
                r->host->log(BP_LOG_ERROR, HPU_NAME,
                             "hpu:%d: region node %d (%s, %s) failed: status %d", r->device_index,
                             i, n->call->op_name ? n->call->op_name : "?",
                             hpu_engine_name(n->work.engine), (int)st);
            break;
        }
        case NODE_COPY:
            memmove(n->dst, n->src, n->size);
            break;
        case NODE_MEMSET:
            memset(n->dst, n->value, n->size);
            break;
        case NODE_HOST_FN:
            n->fn(n->arg);
            break;
        }
        node_free(n);
    }
    free(r->nodes);
    free(r);
}

/* ---- the region vtable ---- */

static void unmark_streams(hpu_graph *g) {
    for (int i = 0; i < g->nstreams; i++)
        if (g->streams[i]->graph == g)
            g->streams[i]->graph = NULL;
}

static bp_status region_begin(void *device, const bp_region_info *info, void **out_region) {
    hpu_device *dev = device;
    const bp_host_services *host = dev->backend->host;
    if (!info || info->struct_size < BP_STRUCT_END(bp_region_info, streams) || !out_region ||
        info->nstreams < 1 || !info->streams)
        return host->set_error(BP_ERR_INVALID_ARGUMENT,
                               "hpu:%d: region begin: malformed region info (no streams)",
                               dev->index);
    hpu_graph *g = calloc(1, sizeof *g);
    if (g) {
        g->streams = calloc((size_t)info->nstreams, sizeof *g->streams);
        g->done = done_create();
    }
    if (!g || !g->streams || !g->done) {
        if (g) {
            free(g->streams);
            hpu_done_release(g->done);
            free(g);
        }
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "hpu:%d: out of host memory for a region",
                               dev->index);
    }
    g->dev = dev;
    g->order = info->order;
    g->nstreams = info->nstreams;

    bp_status st = BP_OK;
    pthread_mutex_lock(&dev->lock);
    for (int i = 0; i < info->nstreams && st == BP_OK; i++) {
        hpu_stream *s = info->streams[i];
        g->streams[i] = s;
        if (!s || s->device != dev)
            st = host->set_error(BP_ERR_INVALID_ARGUMENT,
                                 "hpu:%d: region begin: stream %d is not a stream of this device",
                                 dev->index, i);
        else if (s->graph && s->graph != g)
            st = host->set_error(BP_ERR_INVALID_STATE,
                                 "hpu:%d: region begin: stream %d is already capturing a region",
                                 dev->index, i);
        else
            s->graph = g;
    }
    /* Work issued to the extra streams before the region comes first, as it would on
     * those streams. */
    for (int i = 1; i < info->nstreams && st == BP_OK; i++) {
        hpu_stream *s = g->streams[i];
        if (s == g->streams[0])
            continue;
        cpu_queue_retain(s->queue);
        st = hpu_graph_add_wait(g, s->queue, cpu_queue_last_ticket(s->queue), s->ready_us);
    }
    if (st != BP_OK) {
        unmark_streams(g);
        pthread_mutex_unlock(&dev->lock);
        g->nstreams = 0;
        graph_free(g);
        return st;
    }
    pthread_mutex_unlock(&dev->lock);
    *out_region = g;
    return BP_OK;
}

static void region_abort(void *region) {
    hpu_graph *g = region;
    hpu_device *dev = g->dev;
    pthread_mutex_lock(&dev->lock);
    unmark_streams(g);
    done_finish(g->done, HPU_DONE_ABORTED, NULL, 0, g->streams[0]->ready_us);
    pthread_mutex_unlock(&dev->lock);
    dev->backend->host->log(BP_LOG_INFO, HPU_NAME, "hpu:%d region aborted: %d nodes discarded",
                            dev->index, g->nnodes);
    graph_free(g);
}

/* Enqueues the graph's waits and its one task on the main stream, and makes the extra
 * streams' later work wait for it. Device lock held. */
static bp_status launch(hpu_graph *g, uint64_t *out_ticket) {
    hpu_device *dev = g->dev;
    hpu_stream *main_stream = g->streams[0];
    bp_status st = BP_OK;
    for (int i = 0; i < g->nwaits; i++) {
        ext_wait w = g->waits[i];
        g->waits[i].queue = NULL; /* handed over (or released) below */
        if (!w.queue)
            continue;
        if (st != BP_OK || w.queue == main_stream->queue)
            cpu_queue_release(w.queue);
        else
            st = hpu_submit_wait(main_stream, w.queue, w.ticket);
    }
    if (st != BP_OK)
        return st;
    graph_run *run = malloc(sizeof *run);
    if (!run)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "hpu:%d: out of host memory launching a region",
                                             dev->index);
    *run = (graph_run){dev->backend->host, dev->index, g->nodes, g->nnodes};
    run_task t = {run};
    st = hpu_submit(main_stream, "a region launch", run_task_fn, &t, sizeof t, out_ticket);
    if (st != BP_OK) {
        free(run);
        return st;
    }
    g->nodes = NULL; /* the task owns them now */
    g->nnodes = 0;
    for (int i = 1; i < g->nstreams && st == BP_OK; i++) {
        if (g->streams[i] == main_stream)
            continue;
        cpu_queue_retain(main_stream->queue);
        st = hpu_submit_wait(g->streams[i], main_stream->queue, *out_ticket);
    }
    return st;
}

static bp_status region_end(void *region) {
    hpu_graph *g = region;
    hpu_device *dev = g->dev;
    const hpu_params *p = &dev->backend->params;
    hpu_stream *main_stream = g->streams[0];
    int nnodes = g->nnodes;

    pthread_mutex_lock(&dev->lock);
    unmark_streams(g);
    /* One launch on the host, then the graph starts once the main stream and every
     * awaited event are done. */
    dev->model.host_us += p->graph_launch_us;
    double start = max2(main_stream->ready_us, dev->model.host_us);
    for (int i = 0; i < g->nwaits; i++)
        start = max2(start, g->waits[i].ts_us);
    schedule_result res;
    bp_status st = BP_OK;
    if (!schedule(g, start, &res))
        st = out_of_memory(g, "scheduling");
    uint64_t ticket = 0;
    if (st == BP_OK)
        st = launch(g, &ticket);
    if (ticket != 0) { /* the graph's task is queued: it runs even if a later step failed */
        for (int i = 0; i < g->nstreams; i++)
            g->streams[i]->ready_us = max2(g->streams[i]->ready_us, res.end_us);
        cpu_queue_retain(main_stream->queue);
        done_finish(g->done, HPU_DONE_LAUNCHED, main_stream->queue, ticket, res.end_us);
    } else {
        done_finish(g->done, HPU_DONE_ABORTED, NULL, 0, main_stream->ready_us);
    }
    pthread_mutex_unlock(&dev->lock);

    if (ticket != 0)
        dev->backend->host->log(BP_LOG_INFO, HPU_NAME,
                                "hpu:%d region: %d nodes, order %d, modelled %.3f ms (MME busy "
                                "%.3f ms, TPC %.3f ms, DMA %.3f ms)",
                                dev->index, nnodes, (int)g->order,
                                (res.end_us - res.start_us) / 1000.0,
                                res.busy_us[HPU_ENGINE_MME] / 1000.0,
                                res.busy_us[HPU_ENGINE_TPC] / 1000.0,
                                res.busy_us[HPU_ENGINE_DMA] / 1000.0);
    graph_free(g);
    return st;
}

const bp_region_vtable hpu_region_vtable = {
    .struct_size = sizeof(bp_region_vtable),
    .begin = region_begin,
    .end = region_end,
    .abort = region_abort,
};
