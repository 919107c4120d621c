/* hpu: the device memory arena (see hpu_arena.h). */
#include "hpu_arena.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RELEASE_MIN_BYTES (2u << 20) /* freed blocks this large go back to the kernel */

typedef struct range {
    uint64_t off, len;
} range;

/* A sorted array of ranges (by offset). */
typedef struct range_list {
    range *items;
    size_t count, cap;
} range_list;

struct hpu_arena {
    pthread_mutex_t lock;
    char *base;
    uint64_t size;
    range_list free_ranges; /* disjoint, sorted, never adjacent (coalesced) */
    range_list blocks;      /* live blocks, sorted */
    uint64_t in_use, peak;
};

/* ---- sorted range arrays ---- */

/* Index of the first range whose offset is >= off. */
static size_t list_lower_bound(const range_list *l, uint64_t off) {
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->items[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool list_reserve(range_list *l, size_t extra) {
    if (l->count + extra <= l->cap)
        return true;
    size_t cap = l->cap ? l->cap * 2 : 64;
    while (cap < l->count + extra)
        cap *= 2;
    range *items = realloc(l->items, cap * sizeof *items);
    if (!items)
        return false;
    l->items = items;
    l->cap = cap;
    return true;
}

/* Caller reserved room. */
static void list_insert_at(range_list *l, size_t i, range r) {
    memmove(&l->items[i + 1], &l->items[i], (l->count - i) * sizeof *l->items);
    l->items[i] = r;
    l->count++;
}

static void list_remove_at(range_list *l, size_t i) {
    memmove(&l->items[i], &l->items[i + 1], (l->count - i - 1) * sizeof *l->items);
    l->count--;
}

/* ---- arena ---- */

int hpu_arena_create(uint64_t size, hpu_arena **out_arena) {
    if (size == 0 || size > SIZE_MAX)
        return EINVAL;
    hpu_arena *a = calloc(1, sizeof *a);
    if (!a)
        return ENOMEM;
    void *base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        int err = errno;
        free(a);
        return err;
    }
    if (!list_reserve(&a->free_ranges, 1)) {
        munmap(base, (size_t)size);
        free(a);
        return ENOMEM;
    }
    pthread_mutex_init(&a->lock, NULL);
    a->base = base;
    a->size = size;
    /* Only whole aligned blocks are ever handed out. */
    list_insert_at(&a->free_ranges, 0, (range){0, size & ~(uint64_t)(HPU_ARENA_ALIGN - 1)});
    *out_arena = a;
    return 0;
}

void hpu_arena_destroy(hpu_arena *arena) {
    if (!arena)
        return;
    munmap(arena->base, (size_t)arena->size);
    free(arena->free_ranges.items);
    free(arena->blocks.items);
    pthread_mutex_destroy(&arena->lock);
    free(arena);
}

void *hpu_arena_alloc(hpu_arena *arena, size_t size) {
    if (size > SIZE_MAX - HPU_ARENA_ALIGN)
        return NULL;
    const uint64_t mask = HPU_ARENA_ALIGN - 1;
    uint64_t len = size == 0 ? HPU_ARENA_ALIGN : ((uint64_t)size + mask) & ~mask;
    void *ptr = NULL;
    pthread_mutex_lock(&arena->lock);
    range_list *fl = &arena->free_ranges;
    for (size_t i = 0; i < fl->count; i++) {
        if (fl->items[i].len < len)
            continue;
        if (!list_reserve(&arena->blocks, 1))
            break;
        uint64_t off = fl->items[i].off;
        if (fl->items[i].len == len) {
            list_remove_at(fl, i);
        } else {
            fl->items[i].off += len;
            fl->items[i].len -= len;
        }
        list_insert_at(&arena->blocks, list_lower_bound(&arena->blocks, off), (range){off, len});
        arena->in_use += len;
        if (arena->in_use > arena->peak)
            arena->peak = arena->in_use;
        ptr = arena->base + off;
        break;
    }
    pthread_mutex_unlock(&arena->lock);
    return ptr;
}

/* Gives the whole pages inside [off, off+len) back to the kernel: they read as zero
 * and stop counting in RSS until touched again. */
static void release_pages(hpu_arena *arena, uint64_t off, uint64_t len) {
    long page = sysconf(_SC_PAGESIZE);
    uint64_t pg = page > 0 ? (uint64_t)page : 4096u;
    uint64_t lo = (off + pg - 1) / pg * pg, hi = (off + len) / pg * pg;
    if (hi > lo)
        madvise(arena->base + lo, (size_t)(hi - lo), MADV_DONTNEED);
}

bool hpu_arena_free(hpu_arena *arena, void *ptr) {
    if (!ptr || (char *)ptr < arena->base || (char *)ptr >= arena->base + arena->size)
        return false;
    uint64_t off = (uint64_t)((char *)ptr - arena->base);
    pthread_mutex_lock(&arena->lock);
    range_list *bl = &arena->blocks, *fl = &arena->free_ranges;
    size_t bi = list_lower_bound(bl, off);
    /* Room for the worst case (no neighbour to merge with) before changing anything. */
    if (bi == bl->count || bl->items[bi].off != off || !list_reserve(fl, 1)) {
        pthread_mutex_unlock(&arena->lock);
        return false;
    }
    range r = bl->items[bi];
    list_remove_at(bl, bi);
    arena->in_use -= r.len;
    /* Still owned by nobody else: safe to drop its pages before it becomes free. */
    if (r.len >= RELEASE_MIN_BYTES)
        release_pages(arena, r.off, r.len);

    size_t i = list_lower_bound(fl, r.off);
    bool merge_prev = i > 0 && fl->items[i - 1].off + fl->items[i - 1].len == r.off;
    bool merge_next = i < fl->count && r.off + r.len == fl->items[i].off;
    if (merge_prev && merge_next) {
        fl->items[i - 1].len += r.len + fl->items[i].len;
        list_remove_at(fl, i);
    } else if (merge_prev) {
        fl->items[i - 1].len += r.len;
    } else if (merge_next) {
        fl->items[i].off = r.off;
        fl->items[i].len += r.len;
    } else {
        list_insert_at(fl, i, r);
    }
    pthread_mutex_unlock(&arena->lock);
    return true;
}

void hpu_arena_get_stats(hpu_arena *arena, hpu_arena_stats *out) {
    pthread_mutex_lock(&arena->lock);
    out->size = arena->size;
    out->in_use = arena->in_use;
    out->peak = arena->peak;
    out->largest_free = 0;
    for (size_t i = 0; i < arena->free_ranges.count; i++)
        if (arena->free_ranges.items[i].len > out->largest_free)
            out->largest_free = arena->free_ranges.items[i].len;
    pthread_mutex_unlock(&arena->lock);
}
