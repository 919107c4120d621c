/* Deferred storage: storage made on a captured stream, without memory until the
 * capture (a region) ends. The tensor layer keeps the headers over it to patch them;
 * the capturing layer (dispatcher/region.c) decides when it gets memory. */
#include <stdlib.h>

#include "tensor_internal.h"

static _Atomic(bp_storage_capture_hook) capture_hook;

void bp_storage_set_capture_hook(bp_storage_capture_hook hook) {
    atomic_store_explicit(&capture_hook, hook, memory_order_release);
}

bp_status bp_storage_captured(bp_stream *stream, bp_storage *storage) {
    bp_storage_capture_hook hook = atomic_load_explicit(&capture_hook, memory_order_acquire);
    return hook ? hook(stream, storage)
                : bp_memory_alloc(storage->device, storage->bytes, stream, &storage->ptr);
}

bp_status bp_storage_defer(bp_storage *storage, const bp_stream_capture *owner) {
    bp_deferred *d = calloc(1, sizeof *d);
    if (!d)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_tensor_empty: out of host memory");
    pthread_mutex_init(&d->lock, NULL);
    d->owner = owner;
    storage->deferred = d;
    return BP_OK;
}

bp_status bp_deferred_view_added(bp_storage *storage, bp_tensor *tensor) {
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

void bp_deferred_view_removed(bp_storage *storage, bp_tensor *tensor) {
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

void bp_deferred_storage_freed(bp_storage *storage) {
    deferred_free(storage->deferred);
    storage->deferred = NULL;
}

void bp_storage_resolve(bp_storage *storage) {
    bp_deferred *d = storage->deferred;
    storage->deferred = NULL; /* first: bp_tensor_data reads ordinary storage only */
    for (int i = 0; i < d->nviews; i++)
        d->views[i]->desc.data = bp_tensor_data(d->views[i]);
    deferred_free(d);
}

void bp_storage_abandon(bp_storage *storage) { storage->deferred->owner = NULL; }

bp_status bp_storage_check_readable(const bp_storage *storage, const char *what) {
    const bp_deferred *d = storage->deferred;
    if (!d)
        return BP_OK;
    if (!d->owner)
        return bp_set_error(BP_ERR_INVALID_STATE, "%s: the tensor was created in a region "
                            "whose bp_region_end failed: it never got memory", what);
    return bp_set_error(BP_ERR_INVALID_STATE, "%s: the tensor is deferred: it was created in a "
                        "region recording on a stream of %s that has not ended; call "
                        "bp_region_end first", what, storage->device->name);
}
