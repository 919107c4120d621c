/* Memory of the kit (cpukit.h): aligned host memory, copies and memsets as stream
 * tasks, and the host's memory figures. */
#include "cpukit_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define KIT_ALLOC_ALIGN 256 /* the ABI asks for at least 256 */
#define KIT_HOST_ALIGN 64   /* a cache line */

uint64_t cpukit_host_total_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)page_size;
}

uint64_t cpukit_host_free_memory(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kib = 0;
        bool found = false;
        while (!found && fgets(line, sizeof line, f))
            found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
        fclose(f);
        if (found)
            return (uint64_t)kib * 1024u;
    }
    struct sysinfo si;
    if (sysinfo(&si) == 0)
        return (uint64_t)si.freeram * si.mem_unit;
    return 0;
}

static bp_status aligned_host_alloc(cpukit_device *dev, size_t size, size_t align,
                                    void **out_ptr) {
    if (!out_ptr)
        return dev->host->set_error(BP_ERR_INVALID_ARGUMENT, "%s: alloc: out_ptr is NULL",
                                    dev->name);
    if (size > SIZE_MAX - (align - 1))
        return dev->host->set_error(
            BP_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes (larger than the address space)",
            dev->name, size);
    /* aligned_alloc wants a multiple of the alignment; a zero size still gets a
     * distinct pointer. */
    size_t rounded = size == 0 ? align : (size + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded);
    if (!p)
        return dev->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                    "%s: cannot allocate %zu bytes (host memory exhausted)",
                                    dev->name, size);
    *out_ptr = p;
    return BP_OK;
}

static bp_status mem_alloc(void *device, size_t size, void **out_ptr) {
    return aligned_host_alloc(device, size, KIT_ALLOC_ALIGN, out_ptr);
}

static bp_status mem_host_alloc(void *device, size_t size, void **out_ptr) {
    return aligned_host_alloc(device, size, KIT_HOST_ALIGN, out_ptr);
}

static void mem_free(void *device, void *ptr) {
    (void)device;
    free(ptr);
}

typedef struct copy_task {
    void *dst;
    const void *src;
    size_t size;
} copy_task;

/* memmove: a copy within one device may overlap, and costs the same otherwise. */
static void copy_task_run(void *payload) {
    copy_task t;
    memcpy(&t, payload, sizeof t);
    memmove(t.dst, t.src, t.size);
}

static bp_status mem_copy_async(void *stream, void *dst, const void *src, size_t size,
                                bp_copy_kind kind) {
    cpukit_stream *s = stream;
    const cpukit_device *dev = s->device;
    if (kind != BP_COPY_HOST_TO_DEVICE && kind != BP_COPY_DEVICE_TO_HOST &&
        kind != BP_COPY_DEVICE_TO_DEVICE)
        return dev->host->set_error(BP_ERR_INVALID_ARGUMENT, "%s: copy: unknown copy kind %d",
                                    dev->name, (int)kind);
    if (size == 0)
        return BP_OK;
    if (!dst || !src)
        return dev->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                    "%s: copy of %zu bytes: %s pointer is NULL", dev->name, size,
                                    !dst ? "destination" : "source");
    copy_task t = {dst, src, size};
    return cpukit_submit(s, "a copy", copy_task_run, &t, sizeof t, NULL);
}

typedef struct memset_task {
    void *ptr;
    size_t size;
    int value;
} memset_task;

static void memset_task_run(void *payload) {
    memset_task t;
    memcpy(&t, payload, sizeof t);
    memset(t.ptr, t.value, t.size);
}

static bp_status mem_memset_async(void *stream, void *ptr, int value, size_t size) {
    cpukit_stream *s = stream;
    if (size == 0)
        return BP_OK;
    if (!ptr)
        return s->device->host->set_error(BP_ERR_INVALID_ARGUMENT,
                                          "%s: memset of %zu bytes: pointer is NULL",
                                          s->device->name, size);
    memset_task t = {ptr, size, value};
    return cpukit_submit(s, "a memset", memset_task_run, &t, sizeof t, NULL);
}

/* No copy_peer_async: each device is its own backend's memory space only as far as
 * the ABI goes; a backend with several kit devices may add its own. */
const bp_memory_vtable cpukit_memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = mem_alloc,
    .free = mem_free,
    .host_alloc = mem_host_alloc,
    .host_free = mem_free,
    .copy_async = mem_copy_async,
    .copy_peer_async = NULL,
    .memset_async = mem_memset_async,
};
