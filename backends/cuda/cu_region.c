/* cuda: regions captured into CUDA graphs.
 *
 * begin puts the region's first stream into stream capture (relaxed mode, so that the
 * caching allocator may still call cuMemAlloc) and forks the other streams from it, so
 * that what the core then issues on any of them (kernels, copies, memsets, event
 * records and waits) becomes one graph: a bfs schedule's chains as parallel branches,
 * strict/dfs as one chain. end joins the streams, ends the capture, and launches the
 * graph on the first stream. The executable graph is kept: a later region with the
 * same shape (hints, node count and graph topology) updates it in place with the new
 * kernel arguments (cuGraphExecUpdate) instead of instantiating again, which is what
 * makes replays cheap.
 *
 * A region on one stream (strict, dfs, or any schedule one wide) is launched in
 * chunks: every CHUNK_LAUNCHES launches the capture so far becomes a graph that is
 * launched at once, and capture goes on, so that the device runs the first chunks
 * while the host is still capturing the next (one stream keeps every order). Each
 * chunk has its own cached executable.
 *
 * Events recorded during the capture belong to the graph: until end they report "not
 * ready", and after the launch they are recorded again on the first stream, so that
 * they complete when the region's work does. Waits on events recorded outside the
 * capture cannot become graph edges; the launch itself waits for them. */
#include "cu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Executables kept per device (least recently used goes first). */
#define CACHE_MAX 64
/* Launches per chunk of a one-stream region. */
#define CHUNK_LAUNCHES 128

typedef struct cu_graph_entry {
    CUgraphExec exec;
    int32_t order, width, nodes, has_group_id, chunk;
    int64_t group_id;
    size_t graph_nodes;
    uint64_t last_use;
} cu_graph_entry;

struct cu_graph_cache {
    cu_graph_entry entries[CACHE_MAX];
    int n;
    uint64_t clock;
};

/* A growable array of events. */
typedef struct event_list {
    cu_event **items;
    int n, cap;
} event_list;

struct cu_region {
    cu_device *device;
    bp_region_info info;       /* streams point into `streams` */
    cu_stream **streams;
    CUevent link;              /* forks the streams at begin, joins them at end */
    event_list recorded;       /* recorded during the capture */
    event_list waits;          /* waited on, but recorded outside the capture */
    int chunk;                 /* chunks launched so far (one-stream regions) */
    int launches;              /* launches captured since the last chunk */
    double t_begin;            /* host clock (ms) when the capture began, for the log */
    double t_captured;         /* host time spent capturing (ms), for the log */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static bp_status list_add(cu_region *r, event_list *l, cu_event *e) {
    for (int i = 0; i < l->n; i++)
        if (l->items[i] == e)
            return BP_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        cu_event **grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return cu_host->set_error(BP_ERR_OUT_OF_MEMORY,
                                      "cuda:%d: out of host memory in a region capture",
                                      r->device->index);
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = e;
    return BP_OK;
}

static void list_remove(event_list *l, cu_event *e) {
    for (int i = 0; i < l->n; i++)
        if (l->items[i] == e) {
            l->items[i] = l->items[--l->n];
            return;
        }
}

void cu_region_note_record(cu_region *r, cu_event *e) {
    /* On failure the event is not re-recorded after the launch; its query then stays
     * "not ready" until it is recorded again, which is safe for the allocator. */
    (void)list_add(r, &r->recorded, e);
}

void cu_region_forget_event(cu_region *r, cu_event *e) {
    list_remove(&r->recorded, e);
    list_remove(&r->waits, e);
}

bp_status cu_region_defer_wait(cu_region *r, cu_event *e) {
    bp_status st = list_add(r, &r->waits, e);
    if (st == BP_OK)
        e->waited_in = r;
    return st;
}

static void free_region(cu_region *r) {
    for (int i = 0; i < r->waits.n; i++)
        r->waits.items[i]->waited_in = NULL;
    if (r->link)
        r->device->backend->api.cuEventDestroy(r->link);
    free(r->recorded.items);
    free(r->waits.items);
    free(r->streams);
    free(r);
}

static void set_capturing(cu_region *r, cu_region *value) {
    for (int i = 0; i < r->info.nstreams; i++)
        r->streams[i]->capturing = value;
}

static bp_status region_begin(void *device, const bp_region_info *info, void **out_region) {
    cu_device *dev = device;
    const cu_api *api = &dev->backend->api;
    *out_region = NULL;
    if (info->nstreams < 1 || !info->streams)
        return cu_host->set_error(BP_ERR_INVALID_ARGUMENT, "cuda:%d: a region without streams",
                                  dev->index);
    bp_status st = cu_enter(dev);
    if (st != BP_OK)
        return st;
    cu_region *r = calloc(1, sizeof *r);
    if (r)
        r->streams = calloc((size_t)info->nstreams, sizeof *r->streams);
    if (!r || !r->streams) {
        free(r);
        return cu_host->set_error(BP_ERR_OUT_OF_MEMORY, "cuda:%d: out of host memory for a region",
                                  dev->index);
    }
    r->device = dev;
    r->info = *info;
    for (int i = 0; i < info->nstreams; i++) {
        r->streams[i] = info->streams[i];
        if (r->streams[i]->capturing) {
            free_region(r);
            return cu_host->set_error(BP_ERR_INVALID_ARGUMENT,
                                      "cuda:%d: a stream of the region is already being captured",
                                      dev->index);
        }
        /* Kernels cannot grow a workspace during the capture: give each stream one now. */
        void *ws = NULL;
        st = cu_stream_workspace(r->streams[i], CU_WORKSPACE_BYTES, &ws);
        if (st != BP_OK) {
            free_region(r);
            return st;
        }
    }
    r->info.streams = NULL;
    CUresult res = api->cuEventCreate(&r->link, CU_EVENT_DISABLE_TIMING);
    if (res != CUDA_SUCCESS) {
        r->link = NULL;
        free_region(r);
        return cu_fail(dev, res, "cuEventCreate (region)");
    }
    CUstream first = r->streams[0]->handle;
    res = api->cuStreamBeginCapture(first, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (res != CUDA_SUCCESS) {
        free_region(r);
        return cu_fail(dev, res, "cuStreamBeginCapture");
    }
    if (info->nstreams > 1) {
        res = api->cuEventRecord(r->link, first);
        for (int i = 1; i < info->nstreams && res == CUDA_SUCCESS; i++)
            res = api->cuStreamWaitEvent(r->streams[i]->handle, r->link, 0);
        if (res != CUDA_SUCCESS) {
            CUgraph g = NULL;
            if (api->cuStreamEndCapture(first, &g) == CUDA_SUCCESS && g)
                api->cuGraphDestroy(g);
            free_region(r);
            return cu_fail(dev, res, "forking the region's streams from the capture");
        }
    }
    set_capturing(r, r);
    r->t_begin = now_ms();
    *out_region = r;
    return BP_OK;
}

/* Joins the other streams into the first and ends the capture; *graph is NULL when the
 * capture failed (the result says why). */
static CUresult finish_capture(cu_region *r, CUgraph *graph) {
    const cu_api *api = &r->device->backend->api;
    CUstream first = r->streams[0]->handle;
    CUresult res = CUDA_SUCCESS;
    for (int i = 1; i < r->info.nstreams && res == CUDA_SUCCESS; i++) {
        res = api->cuEventRecord(r->link, r->streams[i]->handle);
        if (res == CUDA_SUCCESS)
            res = api->cuStreamWaitEvent(first, r->link, 0);
    }
    set_capturing(r, NULL);
    *graph = NULL;
    CUresult end = api->cuStreamEndCapture(first, graph);
    if (res == CUDA_SUCCESS)
        res = end;
    if (res != CUDA_SUCCESS && *graph) {
        api->cuGraphDestroy(*graph);
        *graph = NULL;
    }
    return res;
}

/* Records the captured events again on the first stream (after the launch, when there
 * is one), so that they complete with the region's work. */
static CUresult rerecord_events(cu_region *r) {
    const cu_api *api = &r->device->backend->api;
    CUresult res = CUDA_SUCCESS;
    for (int i = 0; i < r->recorded.n; i++) {
        cu_event *e = r->recorded.items[i];
        CUresult one = api->cuEventRecord(e->handle, r->streams[0]->handle);
        __atomic_store_n(&e->captured_in, NULL, __ATOMIC_RELEASE);
        if (res == CUDA_SUCCESS)
            res = one;
    }
    r->recorded.n = 0;
    return res;
}

/* An executable for `graph`: a cached one of the same shape updated in place, else a
 * new instantiation (which replaces that entry, or the least recently used). */
static bp_status executable_for(cu_region *r, CUgraph graph, CUgraphExec *out, bool *out_updated,
                                size_t *out_graph_nodes) {
    cu_device *dev = r->device;
    const cu_api *api = &dev->backend->api;
    size_t graph_nodes = 0;
    CUresult res = api->cuGraphGetNodes(graph, NULL, &graph_nodes);
    if (res != CUDA_SUCCESS)
        return cu_fail(dev, res, "cuGraphGetNodes");
    *out_graph_nodes = graph_nodes;
    *out = NULL;
    if (graph_nodes == 0) /* nothing was captured since the last chunk */
        return BP_OK;
    pthread_mutex_lock(&dev->lock);
    if (!dev->graphs && !(dev->graphs = calloc(1, sizeof *dev->graphs))) {
        pthread_mutex_unlock(&dev->lock);
        return cu_host->set_error(BP_ERR_OUT_OF_MEMORY, "cuda:%d: out of host memory",
                                  dev->index);
    }
    struct cu_graph_cache *c = dev->graphs;
    const bp_region_info *in = &r->info;
    cu_graph_entry *slot = NULL;
    for (int i = 0; i < c->n && !slot; i++) {
        cu_graph_entry *e = &c->entries[i];
        if (e->order == in->order && e->width == in->width && e->nodes == in->nodes &&
            e->has_group_id == in->has_group_id && e->group_id == in->group_id &&
            e->chunk == r->chunk && e->graph_nodes == graph_nodes)
            slot = e;
    }
    bool updated = false;
    if (slot) {
        CUgraphExecUpdateResultInfo info;
        memset(&info, 0, sizeof info);
        updated = api->cuGraphExecUpdate(slot->exec, graph, &info) == CUDA_SUCCESS;
        if (!updated) {
            api->cuGraphExecDestroy(slot->exec);
            slot->exec = NULL;
        }
    } else if (c->n < CACHE_MAX) {
        slot = &c->entries[c->n++];
    } else {
        slot = &c->entries[0];
        for (int i = 1; i < c->n; i++)
            if (c->entries[i].last_use < slot->last_use)
                slot = &c->entries[i];
        api->cuGraphExecDestroy(slot->exec);
        slot->exec = NULL;
    }
    if (!updated) {
        res = api->cuGraphInstantiateWithFlags(&slot->exec, graph, 0);
        if (res != CUDA_SUCCESS) {
            /* Drop the slot: move the last entry into it. */
            *slot = c->entries[--c->n];
            pthread_mutex_unlock(&dev->lock);
            return cu_fail(dev, res, "cuGraphInstantiateWithFlags");
        }
        slot->order = in->order;
        slot->width = in->width;
        slot->nodes = in->nodes;
        slot->has_group_id = in->has_group_id;
        slot->group_id = in->group_id;
        slot->chunk = r->chunk;
        slot->graph_nodes = graph_nodes;
    }
    slot->last_use = ++c->clock;
    *out = slot->exec;
    pthread_mutex_unlock(&dev->lock);
    *out_updated = updated;
    return BP_OK;
}

/* Ends the capture and launches what it holds on the first stream, after the waits on
 * outside events; the events recorded in it are recorded again after the launch (also
 * when something failed, so that they stay usable). */
static bp_status launch_capture(cu_region *r, bool *out_updated, size_t *out_graph_nodes) {
    cu_device *dev = r->device;
    const cu_api *api = &dev->backend->api;
    double t0 = now_ms();
    r->t_captured += t0 - r->t_begin;
    CUgraph graph = NULL;
    CUresult res = finish_capture(r, &graph);
    bp_status st = res == CUDA_SUCCESS
                       ? BP_OK
                       : cu_fail(dev, res, "ending the region's capture (cuStreamEndCapture)");
    CUgraphExec exec = NULL;
    if (st == BP_OK)
        st = executable_for(r, graph, &exec, out_updated, out_graph_nodes);
    CUstream first = r->streams[0]->handle;
    for (int i = 0; i < r->waits.n && st == BP_OK; i++) {
        res = api->cuStreamWaitEvent(first, r->waits.items[i]->handle, 0);
        if (res != CUDA_SUCCESS)
            st = cu_fail(dev, res, "cuStreamWaitEvent (before the region's launch)");
        r->waits.items[i]->waited_in = NULL;
    }
    r->waits.n = 0;
    if (st == BP_OK && exec) {
        res = api->cuGraphLaunch(exec, first);
        if (res != CUDA_SUCCESS)
            st = cu_fail(dev, res, "cuGraphLaunch");
    }
    res = rerecord_events(r);
    if (st == BP_OK && res != CUDA_SUCCESS)
        st = cu_fail(dev, res, "cuEventRecord (after the region's launch)");
    if (graph)
        api->cuGraphDestroy(graph);
    r->launches = 0;
    return st;
}

bp_status cu_region_enqueued(cu_region *r) {
    if (r->info.nstreams != 1 || ++r->launches < CHUNK_LAUNCHES)
        return BP_OK;
    bool updated = false;
    size_t graph_nodes = 0;
    bp_status st = launch_capture(r, &updated, &graph_nodes);
    r->chunk++;
    CUresult res = r->device->backend->api.cuStreamBeginCapture(r->streams[0]->handle,
                                                                CU_STREAM_CAPTURE_MODE_RELAXED);
    if (st == BP_OK && res != CUDA_SUCCESS)
        st = cu_fail(r->device, res, "cuStreamBeginCapture (the region's next chunk)");
    set_capturing(r, r);
    r->t_begin = now_ms();
    return st;
}

static bp_status region_end(void *region) {
    cu_region *r = region;
    cu_device *dev = r->device;
    bp_status st = cu_enter(dev);
    bool updated = false;
    size_t graph_nodes = 0;
    double t0 = now_ms();
    bp_status launched = launch_capture(r, &updated, &graph_nodes);
    if (st == BP_OK)
        st = launched;
    if (st == BP_OK)
        dev->backend->host->log(BP_LOG_DEBUG, CU_NAME,
                                "cuda:%d: region of %d nodes on %d stream%s, %d chunk%s: captured "
                                "in %.3f ms; last graph of %zu nodes %s and launched in %.3f ms",
                                dev->index, r->info.nodes, r->info.nstreams,
                                r->info.nstreams == 1 ? "" : "s", r->chunk + 1,
                                r->chunk ? "s" : "", r->t_captured, graph_nodes,
                                updated ? "updated in place" : "instantiated", now_ms() - t0);
    free_region(r);
    return st;
}

static void region_abort(void *region) {
    cu_region *r = region;
    const cu_api *api = &r->device->backend->api;
    if (cu_enter(r->device) == BP_OK) {
        CUgraph graph = NULL;
        finish_capture(r, &graph);
        if (graph)
            api->cuGraphDestroy(graph);
        rerecord_events(r);
    }
    free_region(r);
}

void cu_graph_cache_destroy(cu_device *dev) {
    struct cu_graph_cache *c = dev->graphs;
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        dev->backend->api.cuGraphExecDestroy(c->entries[i].exec);
    free(c);
    dev->graphs = NULL;
}

const bp_region_vtable cu_region_vtable = {
    .struct_size = sizeof(bp_region_vtable),
    .begin = region_begin,
    .end = region_end,
    .abort = region_abort,
};
