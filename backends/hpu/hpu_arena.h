/* hpu: device memory. One anonymous mapping per device (reserved, not committed: pages
 * exist once touched) and a first-fit allocator over it.
 *
 * Blocks are 256-byte aligned and sized; freed blocks coalesce with their free
 * neighbours, and a freed block of 2 MiB or more is returned to the kernel
 * (MADV_DONTNEED) so the process's RSS follows the device's use. The host's caching
 * allocator sits above, so calls are rare: the lists are plain sorted arrays.
 * Thread safety: every function but create/destroy may be called from many threads. */
#ifndef BP_HPU_ARENA_H
#define BP_HPU_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HPU_ARENA_ALIGN 256

typedef struct hpu_arena hpu_arena;

typedef struct hpu_arena_stats {
    uint64_t size;          /* bytes of the mapping */
    uint64_t in_use;        /* bytes in live blocks (after rounding) */
    uint64_t peak;          /* largest in_use so far */
    uint64_t largest_free;  /* the largest block an alloc could get now */
} hpu_arena_stats;

/** Maps `size` bytes. Returns 0 or an errno value (mmap's, or ENOMEM). */
int hpu_arena_create(uint64_t size, hpu_arena **out_arena);

/** Unmaps the memory; outstanding blocks are gone with it. */
void hpu_arena_destroy(hpu_arena *arena);

/** A block of at least `size` bytes (a zero size still gets a distinct block), or NULL
 *  when no free range is large enough. */
void *hpu_arena_alloc(hpu_arena *arena, size_t size);

/** Frees a block from hpu_arena_alloc. Returns false (and changes nothing) for a pointer
 *  that is not the start of a live block. */
bool hpu_arena_free(hpu_arena *arena, void *ptr);

void hpu_arena_get_stats(hpu_arena *arena, hpu_arena_stats *out);

#endif
