/* gpu: regions captured into graphs (CUDA graphs, HIP graphs).
 *
 * begin puts the region's first stream into stream capture (relaxed mode, so that the
 * caching allocator may still allocate) and forks the other streams from it, so
 * that what the core then issues on any of them (kernels, copies, memsets, event
 * records and waits) becomes one graph: a bfs schedule's chains as parallel branches,
 * strict/dfs as one chain. end joins the streams, ends the capture, and launches the
 * graph on the first stream. The executable graph is kept: a later region with the
 * same shape (hints, node count and graph topology) updates it in place with the new
 * kernel arguments (graph_exec_update) instead of instantiating again, which is what
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
#include "gpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Executables kept per device (least recently used goes first). */
#define CACHE_MAX 64
/* Launches per chunk of a one-stream region. */
#define CHUNK_LAUNCHES 128

typedef struct gpu_graph_entry {
    void *exec;
    int32_t order, width, nodes, has_group_id, chunk;
    int64_t group_id;
    size_t graph_nodes;
    uint64_t last_use;
} gpu_graph_entry;

struct gpu_graph_cache {
    gpu_graph_entry entries[CACHE_MAX];
    int n;
    uint64_t clock;
};

/* A growable array of events. */
typedef struct event_list {
    gpu_event **items;
    int n, cap;
} event_list;

struct gpu_region {
    gpu_device *device;
    bp_region_info info;       /* streams point into `streams` */
    gpu_stream **streams;
    void *link;                /* forks the streams at begin, joins them at end */
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

static bp_status list_add(gpu_region *r, event_list *l, gpu_event *e) {
    for (int i = 0; i < l->n; i++)
        if (l->items[i] == e)
            return BP_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        gpu_event **grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return gpu_error(r->device, BP_ERR_OUT_OF_MEMORY,
                             "out of host memory in a region capture");
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = e;
    return BP_OK;
}

static void list_remove(event_list *l, gpu_event *e) {
    for (int i = 0; i < l->n; i++)
        if (l->items[i] == e) {
            l->items[i] = l->items[--l->n];
            return;
        }
}

void gpu_region_note_record(gpu_region *r, gpu_event *e) {
    /* On failure the event is not re-recorded after the launch; its query then stays
     * "not ready" until it is recorded again, which is safe for the allocator. */
    (void)list_add(r, &r->recorded, e);
}

void gpu_region_forget_event(gpu_region *r, gpu_event *e) {
    list_remove(&r->recorded, e);
    list_remove(&r->waits, e);
}

bp_status gpu_region_defer_wait(gpu_region *r, gpu_event *e) {
    bp_status st = list_add(r, &r->waits, e);
    if (st == BP_OK)
        e->waited_in = r;
    return st;
}

static void free_region(gpu_region *r) {
    for (int i = 0; i < r->waits.n; i++)
        r->waits.items[i]->waited_in = NULL;
    if (r->link)
        r->device->drv->event_destroy(r->link);
    free(r->recorded.items);
    free(r->waits.items);
    free(r->streams);
    free(r);
}

static void set_capturing(gpu_region *r, gpu_region *value) {
    for (int i = 0; i < r->info.nstreams; i++)
        r->streams[i]->capturing = value;
}

static bp_status region_begin(void *device, const bp_region_info *info, void **out_region) {
    gpu_device *dev = device;
    const gpu_driver *drv = dev->drv;
    *out_region = NULL;
    if (info->nstreams < 1 || !info->streams)
        return gpu_error(dev, BP_ERR_INVALID_ARGUMENT, "a region without streams");
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    gpu_region *r = calloc(1, sizeof *r);
    if (r)
        r->streams = calloc((size_t)info->nstreams, sizeof *r->streams);
    if (!r || !r->streams) {
        free(r);
        return gpu_error(dev, BP_ERR_OUT_OF_MEMORY, "out of host memory for a region");
    }
    r->device = dev;
    r->info = *info;
    for (int i = 0; i < info->nstreams; i++) {
        r->streams[i] = info->streams[i];
        if (r->streams[i]->capturing) {
            free_region(r);
            return gpu_error(dev, BP_ERR_INVALID_ARGUMENT,
                             "a stream of the region is already being captured");
        }
        /* Kernels cannot grow a workspace during the capture: give each stream one now. */
        void *ws = NULL;
        st = gpu_stream_workspace(r->streams[i], GPU_WORKSPACE_BYTES, &ws);
        if (st != BP_OK) {
            free_region(r);
            return st;
        }
    }
    r->info.streams = NULL;
    gpu_result res = drv->event_create(&r->link, 0);
    if (res != GPU_SUCCESS) {
        r->link = NULL;
        free_region(r);
        return gpu_fail(dev, res, "%s (region)", drv->name.event_create);
    }
    void *first = r->streams[0]->handle;
    res = drv->stream_begin_capture(first);
    if (res != GPU_SUCCESS) {
        free_region(r);
        return gpu_fail(dev, res, "%s", drv->name.stream_begin_capture);
    }
    if (info->nstreams > 1) {
        res = drv->event_record(r->link, first);
        for (int i = 1; i < info->nstreams && res == GPU_SUCCESS; i++)
            res = drv->stream_wait_event(r->streams[i]->handle, r->link);
        if (res != GPU_SUCCESS) {
            void *g = NULL;
            if (drv->stream_end_capture(first, &g) == GPU_SUCCESS && g)
                drv->graph_destroy(g);
            free_region(r);
            return gpu_fail(dev, res, "forking the region's streams from the capture");
        }
    }
    set_capturing(r, r);
    r->t_begin = now_ms();
    *out_region = r;
    return BP_OK;
}

/* Joins the other streams into the first and ends the capture; *graph is NULL when the
 * capture failed (the result says why). */
static gpu_result finish_capture(gpu_region *r, void **graph) {
    const gpu_driver *drv = r->device->drv;
    void *first = r->streams[0]->handle;
    gpu_result res = GPU_SUCCESS;
    for (int i = 1; i < r->info.nstreams && res == GPU_SUCCESS; i++) {
        res = drv->event_record(r->link, r->streams[i]->handle);
        if (res == GPU_SUCCESS)
            res = drv->stream_wait_event(first, r->link);
    }
    set_capturing(r, NULL);
    *graph = NULL;
    gpu_result end = drv->stream_end_capture(first, graph);
    if (res == GPU_SUCCESS)
        res = end;
    if (res != GPU_SUCCESS && *graph) {
        drv->graph_destroy(*graph);
        *graph = NULL;
    }
    return res;
}

/* Records the captured events again on the first stream (after the launch, when there
 * is one), so that they complete with the region's work. */
static gpu_result rerecord_events(gpu_region *r) {
    const gpu_driver *drv = r->device->drv;
    gpu_result res = GPU_SUCCESS;
    for (int i = 0; i < r->recorded.n; i++) {
        gpu_event *e = r->recorded.items[i];
        gpu_result one = drv->event_record(e->handle, r->streams[0]->handle);
        __atomic_store_n(&e->captured_in, NULL, __ATOMIC_RELEASE);
        if (res == GPU_SUCCESS)
            res = one;
    }
    r->recorded.n = 0;
    return res;
}

/* An executable for `graph`: a cached one of the same shape updated in place, else a
 * new instantiation (which replaces that entry, or the least recently used). */
static bp_status executable_for(gpu_region *r, void *graph, void **out, bool *out_updated,
                                size_t *out_graph_nodes) {
    gpu_device *dev = r->device;
    const gpu_driver *drv = dev->drv;
    size_t graph_nodes = 0;
    gpu_result res = drv->graph_node_count(graph, &graph_nodes);
    if (res != GPU_SUCCESS)
        return gpu_fail(dev, res, "%s", drv->name.graph_node_count);
    *out_graph_nodes = graph_nodes;
    *out = NULL;
    if (graph_nodes == 0) /* nothing was captured since the last chunk */
        return BP_OK;
    pthread_mutex_lock(&dev->lock);
    if (!dev->graphs && !(dev->graphs = calloc(1, sizeof *dev->graphs))) {
        pthread_mutex_unlock(&dev->lock);
        return gpu_error(dev, BP_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    struct gpu_graph_cache *c = dev->graphs;
    const bp_region_info *in = &r->info;
    gpu_graph_entry *slot = NULL;
    for (int i = 0; i < c->n && !slot; i++) {
        gpu_graph_entry *e = &c->entries[i];
        if (e->order == in->order && e->width == in->width && e->nodes == in->nodes &&
            e->has_group_id == in->has_group_id && e->group_id == in->group_id &&
            e->chunk == r->chunk && e->graph_nodes == graph_nodes)
            slot = e;
    }
    bool updated = false;
    if (slot) {
        updated = drv->graph_exec_update(slot->exec, graph) == GPU_SUCCESS;
        if (!updated) {
            drv->graph_exec_destroy(slot->exec);
            slot->exec = NULL;
        }
    } else if (c->n < CACHE_MAX) {
        slot = &c->entries[c->n++];
    } else {
        slot = &c->entries[0];
        for (int i = 1; i < c->n; i++)
            if (c->entries[i].last_use < slot->last_use)
                slot = &c->entries[i];
        drv->graph_exec_destroy(slot->exec);
        slot->exec = NULL;
    }
    if (!updated) {
        res = drv->graph_instantiate(&slot->exec, graph);
        if (res != GPU_SUCCESS) {
            /* Drop the slot: move the last entry into it. */
            *slot = c->entries[--c->n];
            pthread_mutex_unlock(&dev->lock);
            return gpu_fail(dev, res, "%s", drv->name.graph_instantiate);
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
static bp_status launch_capture(gpu_region *r, bool *out_updated, size_t *out_graph_nodes) {
    gpu_device *dev = r->device;
    const gpu_driver *drv = dev->drv;
    double t0 = now_ms();
    r->t_captured += t0 - r->t_begin;
    void *graph = NULL;
    gpu_result res = finish_capture(r, &graph);
    bp_status st = res == GPU_SUCCESS
                       ? BP_OK
                       : gpu_fail(dev, res, "ending the region's capture (%s)",
                                  drv->name.stream_end_capture);
    void *exec = NULL;
    if (st == BP_OK)
        st = executable_for(r, graph, &exec, out_updated, out_graph_nodes);
    void *first = r->streams[0]->handle;
    for (int i = 0; i < r->waits.n && st == BP_OK; i++) {
        res = drv->stream_wait_event(first, r->waits.items[i]->handle);
        if (res != GPU_SUCCESS)
            st = gpu_fail(dev, res, "%s (before the region's launch)", drv->name.stream_wait_event);
        r->waits.items[i]->waited_in = NULL;
    }
    r->waits.n = 0;
    if (st == BP_OK && exec) {
        res = drv->graph_launch(exec, first);
        if (res != GPU_SUCCESS)
            st = gpu_fail(dev, res, "%s", drv->name.graph_launch);
    }
    res = rerecord_events(r);
    if (st == BP_OK && res != GPU_SUCCESS)
        st = gpu_fail(dev, res, "%s (after the region's launch)", drv->name.event_record);
    if (graph)
        drv->graph_destroy(graph);
    r->launches = 0;
    return st;
}

bp_status gpu_region_enqueued(gpu_region *r) {
    if (r->info.nstreams != 1 || ++r->launches < CHUNK_LAUNCHES)
        return BP_OK;
    bool updated = false;
    size_t graph_nodes = 0;
    bp_status st = launch_capture(r, &updated, &graph_nodes);
    r->chunk++;
    gpu_result res = r->device->drv->stream_begin_capture(r->streams[0]->handle);
    if (st == BP_OK && res != GPU_SUCCESS)
        st = gpu_fail(r->device, res, "%s (the region's next chunk)",
                      r->device->drv->name.stream_begin_capture);
    set_capturing(r, r);
    r->t_begin = now_ms();
    return st;
}

static bp_status region_end(void *region) {
    gpu_region *r = region;
    gpu_device *dev = r->device;
    bp_status st = gpu_enter(dev);
    bool updated = false;
    size_t graph_nodes = 0;
    double t0 = now_ms();
    bp_status launched = launch_capture(r, &updated, &graph_nodes);
    if (st == BP_OK)
        st = launched;
    if (st == BP_OK)
        gpu_host->log(BP_LOG_DEBUG, dev->drv->device_type,
                      "%s:%d: region of %d nodes on %d stream%s, %d chunk%s: captured in %.3f "
                      "ms; last graph of %zu nodes %s and launched in %.3f ms",
                      dev->drv->device_type, dev->index, r->info.nodes, r->info.nstreams,
                      r->info.nstreams == 1 ? "" : "s", r->chunk + 1, r->chunk ? "s" : "",
                      r->t_captured, graph_nodes, updated ? "updated in place" : "instantiated",
                      now_ms() - t0);
    free_region(r);
    return st;
}

static void region_abort(void *region) {
    gpu_region *r = region;
    const gpu_driver *drv = r->device->drv;
    if (gpu_enter(r->device) == BP_OK) {
        void *graph = NULL;
        finish_capture(r, &graph);
        if (graph)
            drv->graph_destroy(graph);
        rerecord_events(r);
    }
    free_region(r);
}

void gpu_graph_cache_destroy(gpu_device *dev) {
    struct gpu_graph_cache *c = dev->graphs;
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        dev->drv->graph_exec_destroy(c->entries[i].exec);
    free(c);
    dev->graphs = NULL;
}

const bp_region_vtable gpu_region_vtable = {
    .struct_size = sizeof(bp_region_vtable),
    .begin = region_begin,
    .end = region_end,
    .abort = region_abort,
};
