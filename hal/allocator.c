/* The backend-agnostic caching allocator: one per device, over the backend's raw
 * alloc/free.
 *
 * Requests are rounded to 512 bytes. Small ones (<= 1 MiB) are carved from 2 MiB
 * segments, large ones get their own segment rounded to 2 MiB; a segment is split
 * into blocks and free neighbours coalesce again. Every segment belongs to one
 * stream (its pool) and all its blocks with it, so a block freed on that stream can
 * be handed out again at once: the stream's order protects it. Free blocks sit in
 * per-stream pools, in size-class bins (4 per power of two) searched best fit.
 *
 * Oversize requests (at least the maximum split size, BP_ALLOC_MAX_SPLIT_MB, like
 * PyTorch's max_split_size_mb) get segments of a third kind that are never split:
 * such a block serves only an oversize request that leaves less than OVERSIZE_SLACK of
 * it unused, so one huge freed block cannot end up pinned by small tensors carved
 * from it, and stays whole for release when memory runs short.
 *
 * The limit bounds reserved bytes. Lowered below them while blocks are in use, it
 * makes every allocation take the slow path, which first releases the cache and then
 * hands out cached memory only while the bytes in use stay within the limit.
 *
 * Another stream gets memory only a whole segment at a time: a fully free segment
 * moves to a new pool once an event recorded on its old stream, after the last free,
 * has completed. Blocks used by more streams (record_stream) wait after free for an
 * event on each of those streams before they return to their pool.
 *
 * Events are the backend's raw event handles, not bp_event wrappers: the allocator
 * records them on streams that bp_stream_destroy has already marked dead but not yet
 * handed to bp_allocator_stream_destroyed, whose handles are still valid.
 *
 * One mutex per allocator guards everything below. Waits for streams happen with it
 * released (release_cached), except in free after a backend failed to record an
 * event. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_internal.h"
#include "ptr_map.h"

#define BLOCK_ROUND ((size_t)512)
#define SMALL_MAX ((size_t)1 << 20)
#define SEGMENT_UNIT ((size_t)2 << 20)
#define MIB ((uint64_t)1 << 20)
/* Bins: 4 per power of two from 2^9 up to 2^63. */
#define NBINS ((64 - 9) * 4)
#define NBIN_WORDS ((NBINS + 63) / 64)
#define EVENT_POOL_MAX 32
/* What an oversize block may have beyond the request it serves (PyTorch's kLargeBuffer). */
#define OVERSIZE_SLACK ((size_t)20 << 20)
#define DEFAULT_MAX_SPLIT ((size_t)256 << 20)

/* The three kinds of segments, each with its own bins in every pool. */
typedef enum seg_kind {
    KIND_SMALL,    /* 2 MiB, carved into requests <= SMALL_MAX */
    KIND_LARGE,    /* one per request below the maximum split size, then split */
    KIND_OVERSIZE, /* one per request of at least the maximum split size, never split */
    KIND_COUNT
} seg_kind;

typedef enum block_state {
    BLOCK_FREE,      /* in its pool's bins */
    BLOCK_ALLOCATED, /* handed out, in the pointer map */
    BLOCK_PENDING,   /* freed, waiting for the events of the streams that also used it */
} block_state;

struct block;

/* Streams besides the allocating one that use a block (bp_allocator_record_stream),
 * and after free the events recorded on them. */
typedef struct stream_uses {
    int count, cap;
    bp_stream **streams;
    void **events;
    int nevents;
    struct stream_uses *prev, *next; /* uses of allocated blocks */
} stream_uses;

struct segment;

typedef struct block {
    uintptr_t addr;
    size_t size;
    struct segment *seg;
    struct block *prev, *next;         /* neighbours in address order within seg */
    struct block *bin_prev, *bin_next; /* free: bin list; pending: pending list */
    stream_uses *uses;
    block_state state;
    int bin; /* while free: the bin it is in */
} block;

typedef struct bins {
    uint64_t nonempty[NBIN_WORDS];
    block *head[NBINS];
} bins;

typedef struct pool {
    bp_stream *stream; /* NULL: the pool of segments whose stream was destroyed */
    bins bins[KIND_COUNT];
} pool;

typedef struct segment {
    uintptr_t base;
    size_t size;
    seg_kind kind;
    bool sync_device; /* releasing: no event could be recorded, wait for the device */
    bool in_free_list;
    pool *pool;
    bins *bins;    /* pool->bins[kind], where its free blocks are */
    size_t used;   /* blocks allocated or pending */
    block *blocks; /* first block in address order */
    void *event;   /* recorded on pool->stream since the segment became fully free */
    struct segment *prev, *next;           /* all segments held */
    struct segment *free_prev, *free_next; /* fully free segments */
} segment;

struct bp_allocator {
    pthread_mutex_t lock;
    pthread_cond_t released; /* signalled when a release_cached pass ends */
    bp_device *device;
    const bp_memory_vtable *mem;
    const bp_event_vtable *ev;
    bp_ptr_map blocks; /* address -> allocated block */
    bp_ptr_map pools;  /* stream -> pool */
    pool null_pool;
    pool *last_pool; /* of the last allocation: spares a map lookup in a loop */
    segment *segments;
    segment *free_segs;
    segment *lost; /* could not be proven idle when releasing: kept, never reused */
    block *pending;
    block *spare;
    stream_uses *uses;
    void *events[EVENT_POOL_MAX];
    int nevents;
    int releasing;
    uint64_t limit;
    bool over_limit;  /* limit && reserved > limit: only after the limit was lowered */
    size_t max_split; /* requests of this size or more are oversize; SIZE_MAX: none */
    /* Larger requests take the slow path: oversize ones, those beyond the device's
     * total memory, and every one while over the limit (fast_max is 0 then). One
     * compare on the fast path for the three. */
    size_t fast_cap, fast_max;
    uint64_t allocated, reserved, peak_allocated, peak_reserved;
    uint64_t num_allocs, num_frees, cache_hits, num_segments;
    uint64_t backend_allocs, backend_frees;
};

/* ---- size-class bins ---- */

static int bin_index(size_t size) {
    int p = 63 - __builtin_clzll((unsigned long long)size);
    return (p - 9) * 4 + (int)((size >> (p - 2)) & 3);
}

static void bin_insert(bins *bs, block *b) {
    int i = b->bin = bin_index(b->size);
    b->bin_prev = NULL;
    b->bin_next = bs->head[i];
    if (b->bin_next)
        b->bin_next->bin_prev = b;
    bs->head[i] = b;
    bs->nonempty[i / 64] |= 1ull << (i % 64);
}

static void bin_remove(bins *bs, block *b) {
    int i = b->bin;
    if (b->bin_prev)
        b->bin_prev->bin_next = b->bin_next;
    else if (!(bs->head[i] = b->bin_next))
        bs->nonempty[i / 64] &= ~(1ull << (i % 64));
    if (b->bin_next)
        b->bin_next->bin_prev = b->bin_prev;
    b->bin_prev = b->bin_next = NULL;
}

/* First non-empty bin at or after `from`, or -1. */
static int next_bin(const bins *bs, int from) {
    for (int w = from / 64; w < NBIN_WORDS; w++) {
        uint64_t bits = bs->nonempty[w];
        if (w == from / 64)
            bits &= ~0ull << (from % 64);
        if (bits)
            return w * 64 + __builtin_ctzll(bits);
    }
    return -1;
}

/* Best fit: the smallest free block of at least `size`. Blocks in the request's own
 * bin may be smaller than it; every block of a later bin fits. */
static block *bins_find(const bins *bs, size_t size) {
    int i = bin_index(size);
    block *best = NULL;
    for (block *b = bs->head[i]; b; b = b->bin_next) {
        if (b->size >= size && (!best || b->size < best->size)) {
            best = b;
            if (b->size == size)
                return b;
        }
    }
    if (best)
        return best;
    i = next_bin(bs, i + 1);
    if (i < 0)
        return NULL;
    best = bs->head[i];
    for (block *b = best->bin_next; b; b = b->bin_next)
        if (b->size < best->size)
            best = b;
    return best;
}

/* Puts the segment in pool `p` (its free blocks are not in any bins now). */
static void segment_place(segment *s, pool *p) {
    s->pool = p;
    s->bins = &p->bins[s->kind];
}

/* Whether a block of kind `kind` may split off what a request of `size` leaves. Large
 * blocks split only when the rest is worth a large block, like PyTorch. */
static bool splits(seg_kind kind, size_t block_size, size_t size) {
    size_t rest = block_size - size;
    return kind == KIND_SMALL ? rest >= BLOCK_ROUND : kind == KIND_LARGE && rest > SMALL_MAX;
}

/* Best fit in the pool's bins of `kind`; an oversize block only within the slack. */
static block *pool_find(pool *p, seg_kind kind, size_t size) {
    block *b = bins_find(&p->bins[kind], size);
    return kind == KIND_OVERSIZE && b && b->size - size >= OVERSIZE_SLACK ? NULL : b;
}

/* ---- small object caches ---- */

static block *spare_get(bp_allocator *a) {
    block *b = a->spare;
    if (b)
        a->spare = b->next;
    else if (!(b = malloc(sizeof *b)))
        return NULL;
    memset(b, 0, sizeof *b);
    return b;
}

static void spare_put(bp_allocator *a, block *b) {
    b->next = a->spare;
    a->spare = b;
}

static void event_put(bp_allocator *a, void *e) {
    if (!e)
        return;
    if (a->nevents < EVENT_POOL_MAX)
        a->events[a->nevents++] = e;
    else
        a->ev->destroy(e);
}

/* Records an event at the current end of `stream`; NULL when that fails. */
static void *event_record(bp_allocator *a, bp_stream *stream) {
    void *e = NULL;
    if (a->nevents > 0)
        e = a->events[--a->nevents];
    else if (a->ev->create(a->device->handle, 0, &e) != BP_OK)
        return NULL;
    if (a->ev->record(e, stream->handle) != BP_OK) {
        event_put(a, e);
        return NULL;
    }
    return e;
}

static void uses_unlink(bp_allocator *a, stream_uses *u) {
    if (u->prev)
        u->prev->next = u->next;
    else
        a->uses = u->next;
    if (u->next)
        u->next->prev = u->prev;
    u->prev = u->next = NULL;
}

static void uses_free(bp_allocator *a, stream_uses *u) {
    if (!u)
        return;
    for (int i = 0; i < u->nevents; i++)
        event_put(a, u->events[i]);
    free(u->streams);
    free(u->events);
    free(u);
}

/* ---- stats and the limit ---- */

/* Call whenever the limit changes or reserved bytes drop (new segments never cross the
 * limit). */
static void note_limit(bp_allocator *a) {
    a->over_limit = a->limit && a->reserved > a->limit;
    a->fast_max = a->over_limit ? 0 : a->fast_cap;
}

static void note_allocated(bp_allocator *a, uint64_t bytes) {
    a->allocated += bytes;
    if (a->allocated > a->peak_allocated)
        a->peak_allocated = a->allocated;
}

static void note_reserved(bp_allocator *a, uint64_t bytes) {
    a->reserved += bytes;
    if (a->reserved > a->peak_reserved)
        a->peak_reserved = a->reserved;
}

/* ---- segments and pools ---- */

static void segment_enter_free(bp_allocator *a, segment *s) {
    s->in_free_list = true;
    s->free_prev = NULL;
    s->free_next = a->free_segs;
    if (s->free_next)
        s->free_next->free_prev = s;
    a->free_segs = s;
}

static void segment_leave_free(bp_allocator *a, segment *s) {
    if (!s->in_free_list)
        return;
    if (s->free_prev)
        s->free_prev->free_next = s->free_next;
    else
        a->free_segs = s->free_next;
    if (s->free_next)
        s->free_next->free_prev = s->free_prev;
    s->free_prev = s->free_next = NULL;
    s->in_free_list = false;
    /* The event covered the frees so far; new use makes it stale. */
    event_put(a, s->event);
    s->event = NULL;
}

static void segment_unlink(bp_allocator *a, segment *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        a->segments = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* Moves the segment and its free blocks to pool `to`. */
static void segment_retag(bp_allocator *a, segment *s, pool *to) {
    for (block *b = s->blocks; b; b = b->next)
        if (b->state == BLOCK_FREE)
            bin_remove(s->bins, b);
    segment_place(s, to);
    for (block *b = s->blocks; b; b = b->next)
        if (b->state == BLOCK_FREE)
            bin_insert(s->bins, b);
    event_put(a, s->event);
    s->event = NULL;
}

static bp_status pool_get(bp_allocator *a, bp_stream *stream, pool **out) {
    pool *p = bp_ptr_map_get(&a->pools, stream);
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p || !bp_ptr_map_put(&a->pools, stream, p)) {
            free(p);
            return bp_set_error(BP_ERR_OUT_OF_MEMORY,
                                "out of host memory for the allocator of %s", a->device->name);
        }
        p->stream = stream;
    }
    *out = p;
    return BP_OK;
}

/* Whether a fully free segment of another pool may move to a new stream: its old
 * stream must have finished the work enqueued before the frees. Never blocks. */
static bool segment_idle(bp_allocator *a, segment *s) {
    if (!s->pool->stream)
        return true;
    if (!s->event && !(s->event = event_record(a, s->pool->stream)))
        return false;
    return a->ev->query(s->event) == BP_OK;
}

/* Takes the smallest idle fully free segment of another pool that fits. */
static block *migrate_segment(bp_allocator *a, pool *p, size_t size, seg_kind kind) {
    segment *best = NULL;
    for (segment *s = a->free_segs; s; s = s->free_next) {
        if (s->pool == p || s->kind != kind || s->size < size)
            continue;
        if (kind == KIND_OVERSIZE && s->size - size >= OVERSIZE_SLACK)
            continue;
        if (best && s->size >= best->size)
            continue;
        if (segment_idle(a, s)) {
            best = s;
            if (kind == KIND_SMALL)
                break;
        }
    }
    if (!best)
        return NULL;
    segment_retag(a, best, p);
    return best->blocks;
}

/* ---- blocks ---- */

/* Returns a block to its pool, merging it with free neighbours. */
static void block_release(bp_allocator *a, block *b) {
    segment *s = b->seg;
    bins *bs = s->bins;
    b->state = BLOCK_FREE;
    block *n = b->next;
    if (n && n->state == BLOCK_FREE) {
        bin_remove(bs, n);
        b->size += n->size;
        b->next = n->next;
        if (b->next)
            b->next->prev = b;
        spare_put(a, n);
    }
    block *p = b->prev;
    if (p && p->state == BLOCK_FREE) {
        bin_remove(bs, p);
        p->size += b->size;
        p->next = b->next;
        if (p->next)
            p->next->prev = p;
        spare_put(a, b);
        b = p;
    }
    bin_insert(bs, b);
    if (--s->used == 0)
        segment_enter_free(a, s);
}

/* Takes free block `b` out of its bins, splits off what `size` does not need and
 * records it as handed out. The caller has put it in the pointer map. */
static void block_hand_out(bp_allocator *a, block *b, size_t size) {
    segment *s = b->seg;
    bins *bs = s->bins;
    bin_remove(bs, b);
    block *r = splits(s->kind, b->size, size) ? spare_get(a) : NULL;
    if (r) {
        r->addr = b->addr + size;
        r->size = b->size - size;
        r->seg = s;
        r->prev = b;
        r->next = b->next;
        if (r->next)
            r->next->prev = r;
        b->next = r;
        b->size = size;
        r->state = BLOCK_FREE;
        bin_insert(bs, r);
    }
    if (s->used++ == 0)
        segment_leave_free(a, s);
    b->state = BLOCK_ALLOCATED;
    note_allocated(a, b->size);
    a->num_allocs++;
}

/* Pending blocks whose streams have all passed their events go back to the pools. */
static void process_pending(bp_allocator *a) {
    block **link = &a->pending;
    while (*link) {
        block *b = *link;
        stream_uses *u = b->uses;
        bool done = true;
        for (int i = 0; i < u->nevents && done; i++)
            done = a->ev->query(u->events[i]) == BP_OK;
        if (!done) {
            link = &b->bin_next;
            continue;
        }
        *link = b->bin_next;
        b->bin_next = NULL;
        b->uses = NULL;
        uses_free(a, u);
        block_release(a, b);
    }
}

/* ---- errors ---- */

static bp_status diagnose_unknown(bp_allocator *a, void *ptr, const char *what) {
    uintptr_t addr = (uintptr_t)ptr;
    const char *dev = a->device->name;
    for (segment *s = a->segments; s; s = s->next) {
        if (addr < s->base || addr - s->base >= s->size)
            continue;
        for (block *b = s->blocks; b; b = b->next) {
            if (addr - b->addr >= b->size || b->state == BLOCK_ALLOCATED)
                continue;
            if (strcmp(what, "free") == 0)
                return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                    "double free of 0x%" PRIxPTR " on %s: the block was "
                                    "already freed", addr, dev);
            return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                "%s: 0x%" PRIxPTR " on %s was already freed", what, addr, dev);
        }
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "%s: pointer 0x%" PRIxPTR " lies inside a block allocated by "
                            "backplane on %s but is not its start", what, addr, dev);
    }
    return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                        "%s: pointer 0x%" PRIxPTR " was not allocated by backplane on %s "
                        "(foreign pointer)", what, addr, dev);
}

/* Call with the lock held (reads the counters). */
static bp_status out_of_memory(bp_allocator *a, size_t requested, const char *why) {
    char limit[32] = "none";
    if (a->limit)
        snprintf(limit, sizeof limit, "%" PRIu64 " bytes", a->limit);
    return bp_set_error(BP_ERR_OUT_OF_MEMORY,
                        "out of memory on %s: requested %zu bytes, allocated %" PRIu64
                        " bytes, reserved %" PRIu64 " bytes, limit %s; %s",
                        a->device->name, requested, a->allocated, a->reserved, limit, why);
}

/* ---- raw segments ---- */

/* Gets a new segment for `size` into pool `p` and returns its one free block. On
 * BP_ERR_OUT_OF_MEMORY from the limit or the backend, sets no error but says why in
 * `why`; the caller may release the cache and retry. */
static bp_status segment_new(bp_allocator *a, pool *p, size_t size, seg_kind kind, block **out,
                             char *why, size_t why_size) {
    size_t seg_size =
        kind == KIND_SMALL ? SEGMENT_UNIT : (size + SEGMENT_UNIT - 1) & ~(SEGMENT_UNIT - 1);
    if (a->limit && a->reserved + seg_size > a->limit) {
        snprintf(why, why_size,
                 "a new segment of %zu bytes would exceed the limit (raise it with "
                 "bp_memory_set_limit or BP_MEMORY_LIMIT_MB)", seg_size);
        return BP_ERR_OUT_OF_MEMORY;
    }
    void *raw = NULL;
    bp_status st = a->mem->alloc(a->device->handle, seg_size, &raw);
    if (st == BP_ERR_OUT_OF_MEMORY) {
        snprintf(why, why_size, "the backend could not allocate %zu bytes: %s", seg_size,
                 bp_last_error());
        return st;
    }
    if (st != BP_OK) {
        char context[128];
        snprintf(context, sizeof context, "allocating %zu bytes on %s", seg_size,
                 a->device->name);
        return bp_error_prefix(st, context);
    }
    if (!raw)
        return bp_set_error(BP_ERR_INTERNAL, "the backend of %s returned NULL for %zu bytes",
                            a->device->name, seg_size);
    segment *s = calloc(1, sizeof *s);
    block *b = spare_get(a);
    if (!s || !b) {
        free(s);
        if (b)
            spare_put(a, b);
        a->mem->free(a->device->handle, raw);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "out of host memory for the allocator of %s",
                            a->device->name);
    }
    s->base = (uintptr_t)raw;
    s->size = seg_size;
    s->kind = kind;
    segment_place(s, p);
    s->blocks = b;
    s->next = a->segments;
    if (s->next)
        s->next->prev = s;
    a->segments = s;
    b->addr = s->base;
    b->size = seg_size;
    b->seg = s;
    b->state = BLOCK_FREE;
    bin_insert(s->bins, b);
    segment_enter_free(a, s);
    note_reserved(a, seg_size);
    a->num_segments++;
    a->backend_allocs++;
    *out = b;
    return BP_OK;
}

/* Frees every cached segment after the stream that used it last is done with it,
 * first waiting for pending frees. Called without the lock: the waits happen
 * unlocked, on segments detached from every list so that no thread can hand them
 * out meanwhile (they still count as reserved until freed). */
static bp_status release_cached(bp_allocator *a) {
    bp_status result = BP_OK;
    pthread_mutex_lock(&a->lock);
    a->releasing++;
    block *pend = a->pending;
    a->pending = NULL;
    pthread_mutex_unlock(&a->lock);

    bool pend_ok = true;
    for (block *b = pend; b; b = b->bin_next)
        for (int i = 0; i < b->uses->nevents; i++)
            if (a->ev->synchronize(b->uses->events[i]) != BP_OK)
                pend_ok = false;

    pthread_mutex_lock(&a->lock);
    while (pend) {
        block *b = pend;
        pend = b->bin_next;
        b->bin_next = NULL;
        if (pend_ok) {
            uses_free(a, b->uses);
            b->uses = NULL;
            block_release(a, b);
        } else {
            b->bin_next = a->pending;
            a->pending = b;
        }
    }
    segment *doomed = NULL;
    while (a->free_segs) {
        segment *s = a->free_segs;
        void *e = s->event;
        s->event = NULL;
        segment_leave_free(a, s);
        bin_remove(s->bins, s->blocks);
        segment_unlink(a, s);
        if (s->pool->stream && !e) {
            e = event_record(a, s->pool->stream);
            s->sync_device = e == NULL;
        }
        s->event = e;
        s->pool = NULL;
        s->bins = NULL;
        s->next = doomed;
        doomed = s;
    }
    pthread_mutex_unlock(&a->lock);

    const bp_device_vtable *dv = a->device->backend->desc->device;
    for (segment *s = doomed; s; s = s->next) {
        if (s->event && a->ev->synchronize(s->event) != BP_OK)
            s->sync_device = true;
        if (s->sync_device && dv->synchronize(a->device->handle) != BP_OK) {
            result = bp_error_prefix(BP_ERR_DEVICE_LOST, "cannot release cached memory");
            continue;
        }
        s->sync_device = false;
        a->mem->free(a->device->handle, (void *)s->base);
    }

    pthread_mutex_lock(&a->lock);
    while (doomed) {
        segment *s = doomed;
        doomed = s->next;
        if (s->sync_device) {
            /* Maybe still in use by the device: keep it, never hand it out. */
            bp_log(BP_LOG_ERROR, "allocator",
                   "%s: keeping %zu bytes at 0x%" PRIxPTR " that could not be proven idle",
                   a->device->name, s->size, s->base);
            s->next = a->lost;
            a->lost = s;
            continue;
        }
        a->reserved -= s->size;
        a->num_segments--;
        a->backend_frees++;
        event_put(a, s->event);
        spare_put(a, s->blocks);
        free(s);
    }
    note_limit(a);
    a->releasing--;
    pthread_cond_broadcast(&a->released);
    pthread_mutex_unlock(&a->lock);
    return result;
}

/* ---- the slow path ---- */

/* Releases the cache (the lock released meanwhile) and waits for every other release
 * pass: one may still hold segments it is about to free. */
static void release_and_wait(bp_allocator *a) {
    pthread_mutex_unlock(&a->lock);
    release_cached(a);
    pthread_mutex_lock(&a->lock);
    while (a->releasing > 0)
        pthread_cond_wait(&a->released, &a->lock);
}

/* Finds a block when the stream's pool has none or the allocator is over its limit:
 * pending frees, idle segments of other streams, a new segment, and after an
 * out-of-memory the same once more after releasing the cache. Over a lowered limit,
 * the cache is released first, and a cached block is then handed out only if the bytes
 * in use stay within the limit. Called and returns with the lock held. */
static bp_status alloc_slow(bp_allocator *a, bp_stream *stream, size_t requested, size_t size,
                            block **out) {
    uint64_t total = a->device->props.total_memory;
    if (total && size > total)
        /* No release or retry can help; saying so beats a backend failure or an
         * overcommitted host allocation. */
        return out_of_memory(a, requested, "the request exceeds the device's total memory");
    seg_kind kind = size <= SMALL_MAX     ? KIND_SMALL
                    : size < a->max_split ? KIND_LARGE
                                          : KIND_OVERSIZE;
    char why[384] = "";
    for (int attempt = 0;; attempt++) {
        pool *p = NULL;
        bp_status st = pool_get(a, stream, &p);
        if (st != BP_OK)
            return st;
        process_pending(a);
        if (a->over_limit && attempt == 0) {
            release_and_wait(a);
            continue;
        }
        block *b = pool_find(p, kind, size);
        if (!b)
            b = migrate_segment(a, p, size, kind);
        uint64_t in_use = b ? a->allocated + (splits(kind, b->size, size) ? size : b->size) : 0;
        if (a->over_limit && in_use > a->limit) {
            snprintf(why, sizeof why,
                     "the limit is below the bytes still reserved (it was lowered while blocks "
                     "were in use), and the cached block would put %" PRIu64 " bytes in use, "
                     "above the limit (free memory or raise the limit)", in_use);
            return out_of_memory(a, requested, why);
        }
        if (b) {
            a->cache_hits++;
            *out = b;
            return BP_OK;
        }
        st = segment_new(a, p, size, kind, out, why, sizeof why);
        if (st != BP_ERR_OUT_OF_MEMORY)
            return st;
        if (attempt == 1)
            return out_of_memory(a, requested, why);
        release_and_wait(a);
    }
}

/* ---- the internal API ---- */

/* A whole number of MiB from the environment variable `name` into *out_mb, at most
 * max_mb: ASCII decimal digits and nothing else (no sign, space, base prefix, exponent
 * or unit). Unset leaves *out_mb alone; anything else, empty included, is an error
 * naming the variable, the value and the reason. */
static bp_status env_mib(const bp_device *device, const char *name, const char *zero_means,
                         uint64_t max_mb, uint64_t *out_mb) {
    const char *v = secure_getenv(name);
    if (!v)
        return BP_OK;
    size_t digits = strspn(v, "0123456789");
    size_t len = strlen(v);
    const char *cut = len > 64 ? "..." : "";
    if (digits == 0 || digits != len)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "%s='%.64s%s' for %s is not a whole number of MiB (decimal digits "
                            "only; 0 for %s)", name, v, cut, device->name, zero_means);
    uint64_t mb = 0;
    for (size_t i = 0; i < digits; i++) {
        unsigned d = (unsigned)(v[i] - '0');
        if (mb > (max_mb - d) / 10)
            return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                "%s='%.64s%s' for %s is out of range: at most %" PRIu64 " MiB",
                                name, v, cut, device->name, max_mb);
        mb = mb * 10 + d;
    }
    *out_mb = mb;
    return BP_OK;
}

bp_status bp_allocator_create(bp_device *device, bp_allocator **out_allocator) {
    uint64_t limit_mb = 0, split_mb = DEFAULT_MAX_SPLIT / MIB;
    bp_status st = env_mib(device, "BP_MEMORY_LIMIT_MB", "no limit", UINT64_MAX / MIB, &limit_mb);
    if (st == BP_OK)
        st = env_mib(device, "BP_ALLOC_MAX_SPLIT_MB", "no maximum", SIZE_MAX / MIB, &split_mb);
    if (st != BP_OK)
        return st;
    bp_allocator *a = calloc(1, sizeof *a);
    if (!a)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY,
                            "out of host memory creating the allocator of %s", device->name);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->released, NULL);
    a->device = device;
    a->mem = device->backend->desc->memory;
    a->ev = device->backend->desc->event;
    a->limit = limit_mb * MIB;
    a->max_split = split_mb ? (size_t)(split_mb * MIB) : SIZE_MAX;
    uint64_t total = device->props.total_memory;
    a->fast_cap = a->max_split - 1;
    if (total && total < a->fast_cap)
        a->fast_cap = (size_t)total;
    note_limit(a);
    *out_allocator = a;
    return BP_OK;
}

static bp_status check_stream(bp_allocator *a, bp_stream **stream, const char *what) {
    if (!*stream)
        *stream = a->device->default_stream;
    if ((*stream)->device != a->device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: the stream belongs to %s, not %s",
                            what, (*stream)->device->name, a->device->name);
    return BP_OK;
}

bp_status bp_allocator_alloc(bp_allocator *a, size_t size, bp_stream *stream, void **out_ptr) {
    bp_status st = check_stream(a, &stream, "alloc");
    if (st != BP_OK)
        return st;
    if (size > SIZE_MAX - SEGMENT_UNIT)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY,
                            "cannot allocate %zu bytes on %s: the size is beyond what any "
                            "device can hold", size, a->device->name);
    size_t rounded = (size + BLOCK_ROUND - 1) & ~(BLOCK_ROUND - 1);
    seg_kind kind = rounded <= SMALL_MAX ? KIND_SMALL : KIND_LARGE; /* on the fast path */

    pthread_mutex_lock(&a->lock);
    block *b = NULL;
    pool *p = a->last_pool;
    if (!p || p->stream != stream)
        a->last_pool = p = bp_ptr_map_get(&a->pools, stream);
    if (rounded <= a->fast_max && p && (b = bins_find(&p->bins[kind], rounded)))
        a->cache_hits++;
    else
        st = alloc_slow(a, stream, size, rounded, &b);
    if (st == BP_OK && !bp_ptr_map_put(&a->blocks, (void *)b->addr, b))
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "out of host memory for the allocator of %s",
                          a->device->name);
    if (st == BP_OK) {
        block_hand_out(a, b, rounded);
        *out_ptr = (void *)b->addr;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

bp_status bp_allocator_free(bp_allocator *a, void *ptr) {
    pthread_mutex_lock(&a->lock);
    block *b = bp_ptr_map_remove(&a->blocks, ptr);
    if (!b) {
        bp_status st = diagnose_unknown(a, ptr, "free");
        pthread_mutex_unlock(&a->lock);
        return st;
    }
    a->allocated -= b->size;
    a->num_frees++;
    stream_uses *u = b->uses;
    b->uses = NULL;
    if (u) {
        uses_unlink(a, u);
        for (int i = 0; i < u->count; i++) {
            void *e = event_record(a, u->streams[i]);
            if (e)
                u->events[u->nevents++] = e;
            else /* nothing to wait for later: wait now (only after a backend error) */
                u->streams[i]->device->backend->desc->stream->synchronize(
                    u->streams[i]->handle);
        }
    }
    if (u && u->nevents > 0) {
        b->uses = u;
        b->state = BLOCK_PENDING;
        b->bin_next = a->pending;
        a->pending = b;
    } else {
        uses_free(a, u);
        block_release(a, b);
    }
    pthread_mutex_unlock(&a->lock);
    return BP_OK;
}

bp_status bp_allocator_record_stream(bp_allocator *a, void *ptr, bp_stream *stream) {
    bp_status st = check_stream(a, &stream, "record_stream");
    if (st != BP_OK)
        return st;
    pthread_mutex_lock(&a->lock);
    block *b = bp_ptr_map_get(&a->blocks, ptr);
    stream_uses *u = b ? b->uses : NULL;
    if (!b) {
        st = diagnose_unknown(a, ptr, "record_stream");
        goto out;
    }
    if (b->seg->pool->stream == stream)
        goto out;
    if (!u) {
        if (!(u = calloc(1, sizeof *u)))
            goto oom;
        b->uses = u;
        u->next = a->uses;
        if (u->next)
            u->next->prev = u;
        a->uses = u;
    }
    for (int i = 0; i < u->count; i++)
        if (u->streams[i] == stream)
            goto out;
    if (u->count == u->cap) {
        int cap = u->cap ? u->cap * 2 : 2;
        bp_stream **streams = realloc(u->streams, (size_t)cap * sizeof *streams);
        if (streams)
            u->streams = streams;
        void **events = realloc(u->events, (size_t)cap * sizeof *events);
        if (events)
            u->events = events;
        if (!streams || !events)
            goto oom;
        u->cap = cap;
    }
    u->streams[u->count++] = stream;
    goto out;
oom:
    st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "out of host memory for the allocator of %s",
                      a->device->name);
out:
    pthread_mutex_unlock(&a->lock);
    return st;
}

void bp_allocator_get_stats(bp_allocator *a, bp_memory_stats *stats) {
    bp_memory_stats s = {0};
    pthread_mutex_lock(&a->lock);
    s.allocated_bytes = a->allocated;
    s.reserved_bytes = a->reserved;
    s.peak_allocated_bytes = a->peak_allocated;
    s.peak_reserved_bytes = a->peak_reserved;
    s.num_allocs = a->num_allocs;
    s.num_frees = a->num_frees;
    s.cache_hits = a->cache_hits;
    s.num_segments = a->num_segments;
    s.num_backend_allocs = a->backend_allocs;
    s.num_backend_frees = a->backend_frees;
    s.limit_bytes = a->limit;
    s.max_split_bytes = a->max_split == SIZE_MAX ? 0 : a->max_split;
    pthread_mutex_unlock(&a->lock);
    s.struct_size = stats->struct_size;
    memcpy(stats, &s, stats->struct_size < sizeof s ? stats->struct_size : sizeof s);
}

bp_status bp_allocator_empty_cache(bp_allocator *a) {
    return release_cached(a);
}

void bp_allocator_reset_peak(bp_allocator *a) {
    pthread_mutex_lock(&a->lock);
    a->peak_allocated = a->allocated;
    a->peak_reserved = a->reserved;
    pthread_mutex_unlock(&a->lock);
}

bp_status bp_allocator_set_limit(bp_allocator *a, uint64_t limit_bytes) {
    pthread_mutex_lock(&a->lock);
    a->limit = limit_bytes;
    note_limit(a);
    bool over = a->over_limit;
    pthread_mutex_unlock(&a->lock);
    return over ? release_cached(a) : BP_OK;
}

void bp_allocator_stream_destroyed(bp_allocator *a, bp_stream *stream) {
    pthread_mutex_lock(&a->lock);
    pool *p = bp_ptr_map_remove(&a->pools, stream);
    if (p) {
        /* The stream was synchronized: its segments are safe for every stream. */
        for (segment *s = a->segments; s; s = s->next)
            if (s->pool == p)
                segment_retag(a, s, &a->null_pool);
        if (a->last_pool == p)
            a->last_pool = NULL;
        free(p);
    }
    for (stream_uses *u = a->uses; u; u = u->next) {
        for (int i = 0; i < u->count; i++) {
            if (u->streams[i] == stream) {
                u->streams[i] = u->streams[--u->count];
                break;
            }
        }
    }
    pthread_mutex_unlock(&a->lock);
}
