/* backplane: device memory through the caching allocator, host memory, copies. */
#ifndef BACKPLANE_MEMORY_H
#define BACKPLANE_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <backplane/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Allocates `size` bytes of device memory for use on `stream` (NULL: the thread's
 *  current stream of `device`). Memory comes from a per-device cache: a block freed
 *  on the same stream is reused at once (stream order makes that safe); a block freed
 *  on another stream is reused only after an event proves that stream's work done.
 *  A cached block of the maximum split size or more (BP_ALLOC_MAX_SPLIT_MB, in MiB;
 *  default 256, 0 for none) is never split: it serves only a request of that size or
 *  more that leaves less than 20 MiB of it unused, so that it can be released whole.
 *  Pointers are aligned to at least 256 bytes. A size of 0 succeeds and returns NULL;
 *  bp_memory_free(device, NULL) is a no-op. Thread-safe.
 *  Errors: BP_ERR_OUT_OF_MEMORY, with requested, allocated, reserved and limit bytes in
 *  the message, when the device or the per-device limit cannot satisfy the request even
 *  after releasing cached memory. */
BP_API bp_status bp_memory_alloc(bp_device *device, size_t size, bp_stream *stream,
                                 void **out_ptr);

/** Returns a block to the cache. Work already enqueued on the block's stream may still
 *  use it; the allocator keeps that order. Errors: BP_ERR_INVALID_ARGUMENT for a
 *  pointer this device's allocator did not hand out, or one already freed. */
BP_API bp_status bp_memory_free(bp_device *device, void *ptr);

/** Marks `ptr` as used by `stream` too, so that its reuse after free waits for that
 *  stream as well as the one it was allocated on. */
BP_API bp_status bp_memory_record_stream(bp_device *device, void *ptr, bp_stream *stream);

/** Allocator statistics of one device. */
typedef struct bp_memory_stats {
    uint32_t struct_size;
    uint64_t allocated_bytes;      /**< bytes in blocks handed out now */
    uint64_t reserved_bytes;       /**< bytes held from the backend (handed out + cached) */
    uint64_t peak_allocated_bytes; /**< highest allocated_bytes since start or reset */
    uint64_t peak_reserved_bytes;  /**< highest reserved_bytes since start or reset */
    uint64_t num_allocs;           /**< successful non-zero allocations */
    uint64_t num_frees;            /**< successful frees of non-NULL pointers */
    uint64_t cache_hits;           /**< allocations served from the cache */
    uint64_t num_segments;         /**< backend allocations held now */
    uint64_t num_backend_allocs;   /**< backend allocations made since start */
    uint64_t num_backend_frees;    /**< backend frees made since start */
    uint64_t limit_bytes;          /**< per-device limit, 0 = none */
    uint64_t max_split_bytes;      /**< maximum split size (BP_ALLOC_MAX_SPLIT_MB), 0 = none */
} bp_memory_stats;

/** Reads the statistics; set stats->struct_size = sizeof(bp_memory_stats) first. */
BP_API bp_status bp_memory_get_stats(bp_device *device, bp_memory_stats *stats);

/** Returns every cached block that is not handed out to the backend, after waiting
 *  for the streams that last used them. */
BP_API bp_status bp_memory_empty_cache(bp_device *device);

/** Sets peak_allocated_bytes and peak_reserved_bytes to the current values. */
BP_API bp_status bp_memory_reset_peak(bp_device *device);

/** Limits the bytes the allocator may reserve on the device (0: no limit). A limit
 *  below what is reserved now first empties the cache; if still below (blocks are in
 *  use), each later allocation releases the cache again first and then succeeds only
 *  from cached memory and only if the bytes handed out, with it, stay within the
 *  limit: BP_ERR_OUT_OF_MEMORY until enough is freed.
 *
 *  The environment variables BP_MEMORY_LIMIT_MB (the initial limit of every device)
 *  and BP_ALLOC_MAX_SPLIT_MB (see bp_memory_alloc) are whole numbers of MiB: ASCII
 *  decimal digits only, no sign, space, prefix, exponent or unit; 0 means no limit
 *  (no maximum). Unset means no limit (a maximum split size of 256 MiB). Any other
 *  value, an empty one included, or one whose bytes do not fit in 64 bits, makes the
 *  open of every device (the first call that uses it, e.g. bp_device_open) fail with
 *  BP_ERR_INVALID_ARGUMENT naming the variable, its value and the reason. */
BP_API bp_status bp_memory_set_limit(bp_device *device, uint64_t limit_bytes);

/** Allocates host memory suited for fast transfers with `device` (page-locked where
 *  the backend has BP_CAP_PINNED_HOST, else ordinary aligned memory). Size 0 returns
 *  NULL. Free with bp_host_free on the same device. */
BP_API bp_status bp_host_alloc(bp_device *device, size_t size, void **out_ptr);

/** Frees memory from bp_host_alloc. Errors: BP_ERR_INVALID_ARGUMENT for a foreign
 *  pointer or a double free. NULL is a no-op. */
BP_API bp_status bp_host_free(bp_device *device, void *ptr);

/** Enqueues a copy of `size` bytes on `stream`. `dst_device`/`src_device` say where
 *  each pointer lives: NULL for host memory (pageable or from bp_host_alloc), else a
 *  device; at least one side must be a device. Host to device, device to host, within
 *  a device and between devices of one backend (peer copy) run asynchronously: the
 *  caller keeps both buffers valid until the stream reaches the copy. With pageable
 *  host memory (not from bp_host_alloc) a backend may block the caller until the
 *  stream has run the copy, as CUDA's cuMemcpyAsync does for device-to-host copies;
 *  with bp_host_alloc memory and between device buffers the call never waits for the
 *  stream. Either way the copy is ordered after the stream's earlier work. `stream` must
 *  belong to one of the two devices; NULL means the thread's current stream of the
 *  destination device, or of the source when the destination is host memory.
 *  Between devices of two different backends the copy is staged through host memory
 *  on the host, after the source device's work is done, and it has completed when
 *  the call returns.
 *  Within one device the copy has memmove semantics: when the two ranges overlap, the
 *  destination ends up holding what the source held before the copy. Such a copy is
 *  staged, in stream order, through a temporary block of `size` bytes from the
 *  device's caching allocator (so it may fail with BP_ERR_OUT_OF_MEMORY), and backends
 *  never see overlapping ranges; dst == src copies nothing. */
BP_API bp_status bp_memory_copy_async(void *dst, bp_device *dst_device, const void *src,
                                      bp_device *src_device, size_t size, bp_stream *stream);

/** Enqueues setting `size` bytes at device pointer `ptr` to `value` on `stream`
 *  (NULL: the current stream of `device`). */
BP_API bp_status bp_memory_set_async(bp_device *device, void *ptr, int value, size_t size,
                                     bp_stream *stream);

#ifdef __cplusplus
}
#endif
#endif
