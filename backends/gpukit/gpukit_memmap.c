/* gpukit: the live allocations of a device by address (gpukit.h). A sorted array and a
 * binary search: lookups happen at every kernel argument, changes at allocations, which
 * the core's caching allocator keeps rare. */
#include "gpukit.h"

#include <stdlib.h>
#include <string.h>

void gpukit_memmap_init(gpukit_memmap *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
}

void gpukit_memmap_clear(gpukit_memmap *m, void (*release)(void *handle, void *ctx), void *ctx) {
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->n; i++)
        release(m->ranges[i].handle, ctx);
    free(m->ranges);
    m->ranges = NULL;
    m->n = m->cap = 0;
    m->used = 0;
    pthread_mutex_unlock(&m->lock);
}

void gpukit_memmap_fini(gpukit_memmap *m) {
    free(m->ranges);
    m->ranges = NULL;
    m->n = m->cap = 0;
    pthread_mutex_destroy(&m->lock);
}

/* The number of ranges that start at or below addr: the one holding addr is the last
 * of them. Called with the lock held. */
static size_t ranges_at_or_below(const gpukit_memmap *m, uint64_t addr) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool gpukit_memmap_add(gpukit_memmap *m, uint64_t addr, uint64_t size, void *handle) {
    pthread_mutex_lock(&m->lock);
    bool ok = true;
    if (m->n == m->cap) {
        size_t ncap = m->cap ? 2 * m->cap : 64;
        gpukit_range *grown = realloc(m->ranges, ncap * sizeof *grown);
        ok = grown != NULL;
        if (ok) {
            m->ranges = grown;
            m->cap = ncap;
        }
    }
    if (ok) {
        size_t i = ranges_at_or_below(m, addr);
        memmove(&m->ranges[i + 1], &m->ranges[i], (m->n - i) * sizeof *m->ranges);
        m->ranges[i] = (gpukit_range){.addr = addr, .size = size, .handle = handle};
        m->n++;
        m->used += size;
    }
    pthread_mutex_unlock(&m->lock);
    return ok;
}

bool gpukit_memmap_remove(gpukit_memmap *m, uint64_t addr, void **handle, uint64_t *size) {
    pthread_mutex_lock(&m->lock);
    size_t i = ranges_at_or_below(m, addr);
    bool found = i > 0 && m->ranges[i - 1].addr == addr;
    if (found) {
        i--;
        *handle = m->ranges[i].handle;
        *size = m->ranges[i].size;
        m->used -= m->ranges[i].size;
        memmove(&m->ranges[i], &m->ranges[i + 1], (m->n - i - 1) * sizeof *m->ranges);
        m->n--;
    }
    pthread_mutex_unlock(&m->lock);
    return found;
}

bool gpukit_memmap_find(gpukit_memmap *m, uint64_t addr, uint64_t size, gpukit_range *range,
                        uint64_t *offset) {
    pthread_mutex_lock(&m->lock);
    size_t i = ranges_at_or_below(m, addr);
    bool ok = false;
    if (i > 0) {
        const gpukit_range *r = &m->ranges[i - 1];
        uint64_t off = addr - r->addr;
        ok = off < r->size ? size <= r->size - off : off == r->size && size == 0;
        if (ok) {
            *range = *r;
            *offset = off;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return ok;
}

bp_status gpukit_memmap_insert(gpukit_memmap *m, uint64_t addr, uint64_t size, void *handle,
                               const bp_host_services *host, const char *type, int index) {
    if (gpukit_memmap_add(m, addr, size, handle))
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_OUT_OF_MEMORY, type, index,
                          "out of host memory for the allocation table");
}

bool gpukit_memmap_take(gpukit_memmap *m, void *ptr, const bp_host_services *host,
                        const char *type, int index, void **handle) {
    if (!ptr)
        return false;
    uint64_t size = 0;
    if (gpukit_memmap_remove(m, (uint64_t)(uintptr_t)ptr, handle, &size))
        return true;
    host->log(BP_LOG_ERROR, type,
              "%s:%d: free of %p, which is not a live allocation of this device: ignored", type,
              index, ptr);
    return false;
}

bp_status gpukit_memmap_translate(gpukit_memmap *m, const void *ptr, size_t size,
                                  const bp_host_services *host, const char *type, int index,
                                  const char *what, gpukit_range *range, uint64_t *offset) {
    if (gpukit_memmap_find(m, (uint64_t)(uintptr_t)ptr, size, range, offset))
        return BP_OK;
    return bp_plugin_fail(host, BP_ERR_INVALID_ARGUMENT, type, index,
                          "%s: %zu bytes at device address %p are not inside one live "
                          "allocation of this device",
                          what, size, ptr);
}

uint64_t gpukit_memmap_used(gpukit_memmap *m) {
    pthread_mutex_lock(&m->lock);
    uint64_t used = m->used;
    pthread_mutex_unlock(&m->lock);
    return used;
}

void gpukit_memmap_mem_info(gpukit_memmap *m, uint64_t total, uint64_t *out_free,
                            uint64_t *out_total) {
    uint64_t used = gpukit_memmap_used(m);
    if (out_free)
        *out_free = used < total ? total - used : 0;
    if (out_total)
        *out_total = total;
}
