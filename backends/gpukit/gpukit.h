/* gpukit: what the plugins of devices with memory and queues of their own share (opencl,
 * xpu), a static position-independent library with hidden symbols, like cpukit
 * (docs/writing-a-backend.md §15). Only the C library, pthreads and the plugin ABI:
 *
 *   gpukit_memmap.c       the live allocations of a device by address, for translating
 *                         a device pointer (base + offset) back to its allocation
 *   gpukit_host_thread.c  a thread that runs a stream's host functions in order */
#ifndef BP_GPUKIT_H
#define BP_GPUKIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

/* ---- the allocation map ---- */

typedef struct gpukit_range {
    uint64_t addr;
    uint64_t size;   /* what was asked for */
    void *handle;    /* the backend's object (a cl_mem), or anything it likes */
} gpukit_range;

/* The live allocations of a device, sorted by address, and the bytes they hold. */
typedef struct gpukit_memmap {
    pthread_mutex_t lock;
    gpukit_range *ranges;
    size_t n, cap;
    uint64_t used;
} gpukit_memmap;

void gpukit_memmap_init(gpukit_memmap *m);
/* Calls release(handle, ctx) for every range still live, and empties the map (device
 * close). */
void gpukit_memmap_clear(gpukit_memmap *m, void (*release)(void *handle, void *ctx), void *ctx);
/* Frees the table and the lock (the ranges' handles are the caller's). */
void gpukit_memmap_fini(gpukit_memmap *m);
/* Adds [addr, addr + size), which overlaps no live range. False when the table cannot
 * grow (out of host memory). */
bool gpukit_memmap_add(gpukit_memmap *m, uint64_t addr, uint64_t size, void *handle);
/* Removes the range that starts at addr, giving its handle and size. False when no live
 * range starts there. */
bool gpukit_memmap_remove(gpukit_memmap *m, uint64_t addr, void **handle, uint64_t *size);
/* The range holding [addr, addr + size) (a range of 0 bytes may sit at its very end):
 * its start, its handle and addr's offset in it. False when no live range holds it. */
bool gpukit_memmap_find(gpukit_memmap *m, uint64_t addr, uint64_t size, gpukit_range *range,
                        uint64_t *offset);
/* The allocation's entry at alloc: gpukit_memmap_add, or BP_ERR_OUT_OF_MEMORY set through
 * host ("<type>:<index>: out of host memory for the allocation table") when the table
 * cannot grow; the caller then releases the allocation. */
bp_status gpukit_memmap_insert(gpukit_memmap *m, uint64_t addr, uint64_t size, void *handle,
                               const bp_host_services *host, const char *type, int index);
/* The lookup of mem_free: removes the allocation at ptr and gives its handle for the
 * caller to release. False, with nothing removed, for a NULL ptr (nothing logged) or for
 * one that starts no live allocation, which is logged through host as an error naming
 * the device ("<type>:<index>: free of <ptr>, which is not a live allocation of this
 * device: ignored"). */
bool gpukit_memmap_take(gpukit_memmap *m, void *ptr, const bp_host_services *host,
                        const char *type, int index, void **handle);
/* A kernel's or copy's device pointer as its allocation: gpukit_memmap_find, or
 * BP_ERR_INVALID_ARGUMENT set through host ("<type>:<index>: <what>: <size> bytes at
 * device address <ptr> are not inside one live allocation of this device"). */
bp_status gpukit_memmap_translate(gpukit_memmap *m, const void *ptr, size_t size,
                                  const bp_host_services *host, const char *type, int index,
                                  const char *what, gpukit_range *range, uint64_t *offset);
/* Bytes of the live ranges. */
uint64_t gpukit_memmap_used(gpukit_memmap *m);
/* The device vtable's mem_info for a device of `total` bytes whose allocations m holds:
 * free is what they leave of total (0 when they exceed it). Either output may be NULL. */
void gpukit_memmap_mem_info(gpukit_memmap *m, uint64_t total, uint64_t *out_free,
                            uint64_t *out_total);

/* ---- the host-function thread ---- */

/* A job: the backend's own struct starts with it; run does the job and frees it. */
typedef struct gpukit_host_job {
    void (*run)(struct gpukit_host_job *job);
    struct gpukit_host_job *next;
    void (*fn)(void *arg); /* the host function run calls, and its argument */
    void *arg;
} gpukit_host_job;

typedef struct gpukit_host_thread gpukit_host_thread;

/* The start of a stream's enqueue_host: checks fn (bp_plugin_check_host_fn) and
 * allocates a zeroed job of `size` bytes (the backend's struct, which starts with a
 * gpukit_host_job) holding run, fn and arg. BP_OK with *out set, else the error set through
 * host naming the device "<type>:<index>": BP_ERR_INVALID_ARGUMENT for a NULL fn,
 * BP_ERR_OUT_OF_MEMORY. The job is the caller's until pushed; free() frees it. */
bp_status gpukit_host_job_new(const bp_host_services *host, const char *type, int index,
                              void (*fn)(void *arg), void *arg, size_t size,
                              void (*run)(gpukit_host_job *job), gpukit_host_job **out);

/* Starts a thread that runs the jobs pushed to it one at a time, in order. 0, or the
 * errno of what failed (ENOMEM, or pthread_create's). */
int gpukit_host_thread_start(gpukit_host_thread **out);
/* A stream's host thread, *t, started on first use: BP_OK when it runs, else the error
 * set through host, naming the device "<type>:<index>". Call under the stream's lock. */
bp_status gpukit_host_thread_ensure(gpukit_host_thread **t, const bp_host_services *host,
                                    const char *type, int index);
void gpukit_host_thread_push(gpukit_host_thread *t, gpukit_host_job *job);
/* Runs the jobs still queued, stops the thread and frees it (NULL: nothing). */
void gpukit_host_thread_stop(gpukit_host_thread *t);

#endif
