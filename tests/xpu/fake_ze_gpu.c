/* The "gpu" mode of the fake Level Zero loader (fake_ze_loader.c): one pretend GPU for
 * the xpu plugin's host-side paths (device table, props, streams' event chains, event
 * pools, memory bookkeeping, the error of a module the driver rejects). Its functions
 * replace the loader's aborting stubs (those are weak); in any other mode they abort.
 *
 * It is no driver: "device" memory is host memory, a command stays pending until the
 * host queries or waits on an event, then runs on that thread (in append order per
 * list, once its waits are signalled), and every module build fails with a fixed build
 * log, so no kernel ever runs. Nothing passing on it says anything about a GPU. What it
 * checks, aborting with a message: an event signalled again before a reset, or reset,
 * destroyed or waited on forever while commands use it; memory freed or a list
 * destroyed while a pending command uses it; pools and memory left at the end. Events
 * the host signals (zeEventHostSignal, the plugin's host functions) wake host waits. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <level_zero/ze_api.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* fake_ze_loader.c */
int fake_ze_gpu_mode(void);
void fake_ze_die(const char *fn) __attribute__((noreturn));

#define GPU_ONLY(fn)                                                                       \
    do {                                                                                   \
        if (!fake_ze_gpu_mode())                                                           \
            fake_ze_die(fn);                                                               \
    } while (0)

/* FAKE_ZE_FAIL=<function>: that function fails with ZE_RESULT_ERROR_DEVICE_LOST (only
 * those that start with FAULT_POINT). */
#define FAULT_POINT(fn)                                                                    \
    do {                                                                                   \
        GPU_ONLY(fn);                                                                      \
        const char *fault = getenv("FAKE_ZE_FAIL");                                        \
        if (fault && strcmp(fault, fn) == 0)                                               \
            return ZE_RESULT_ERROR_DEVICE_LOST;                                            \
    } while (0)

#define FAKE_BUILD_LOG "fake build log: error: the fake driver compiles nothing"
#define FAKE_NATIVE_LOG "fake build log: the fake driver loads no native binary"

static int fake_context;
/* The pretend devices: FAKE_ZE_GPUS of them (1, or 2 for the multi-device paths); a
 * device's handle is the address of its entry. */
#define FAKE_MAX_GPUS 2
int fake_ze_devices[FAKE_MAX_GPUS];

int fake_ze_gpu_count(void) {
    const char *n = getenv("FAKE_ZE_GPUS");
    return n && strcmp(n, "2") == 0 ? 2 : 1;
}

static int is_device(ze_device_handle_t dev) {
    for (int i = 0; i < fake_ze_gpu_count(); i++)
        if ((void *)dev == &fake_ze_devices[i])
            return 1;
    return 0;
}

/* ---- events ---- */

struct _ze_event_pool_handle_t {
    uint32_t count;
    struct _ze_event_handle_t *events;
};

struct _ze_event_handle_t {
    ze_event_pool_handle_t pool;
    int created;
    int signalled;
};

/* One lock for the whole fake: events, lists and their pending commands, memory. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Broadcast when an event is signalled: a host wait that cannot run anything itself
 * waits for another thread (a host function's thread) to signal. */
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;

static void fail(const char *what) __attribute__((noreturn));
static void fail(const char *what) {
    fprintf(stderr, "fake_ze_gpu: %s\n", what);
    abort();
}

/* ---- commands: pending until the host waits ---- */

/* A command appended and not run yet. Commands run in append order per list, each when
 * its waits are signalled, only when the host queries or waits on an event: so the
 * plugin sees work that is not done, and a reset, destroy or free of something a
 * pending command uses is caught. */
typedef enum { CMD_COPY, CMD_FILL, CMD_TIMESTAMP, CMD_BARRIER } cmd_kind;

typedef struct pending {
    cmd_kind kind;
    void *dst;
    const void *src;
    size_t size;
    unsigned char pattern[16];
    size_t psize;
    ze_event_handle_t signal;
    uint32_t nwait;
    ze_event_handle_t wait[4];
    struct pending *next;
} pending;

struct _ze_command_list_handle_t {
    pending *head, *tail;
    ze_command_list_handle_t next;
};
static ze_command_list_handle_t lists;

static uint64_t fake_clock; /* one tick per command run */

static int uses(const pending *c, ze_event_handle_t e) {
    if (c->signal == e)
        return 1;
    for (uint32_t i = 0; i < c->nwait; i++)
        if (c->wait[i] == e)
            return 1;
    return 0;
}

/* Whether a pending command signals or waits on e (lock held). */
static int in_use(ze_event_handle_t e) {
    for (ze_command_list_handle_t l = lists; l; l = l->next)
        for (pending *c = l->head; c; c = c->next)
            if (uses(c, e))
                return 1;
    return 0;
}

static void run(pending *c) {
    fake_clock++;
    switch (c->kind) {
    case CMD_COPY: memcpy(c->dst, c->src, c->size); break;
    case CMD_FILL:
        for (size_t i = 0; i < c->size; i++)
            ((unsigned char *)c->dst)[i] = c->pattern[i % c->psize];
        break;
    case CMD_TIMESTAMP: *(uint64_t *)c->dst = fake_clock; break;
    case CMD_BARRIER: break;
    }
    if (c->signal)
        c->signal->signalled = 1;
    pthread_cond_broadcast(&progress);
}

/* Runs one command whose waits are signalled, the first such list head; 0 when none
 * can run (lock held). */
static int step(void) {
    for (ze_command_list_handle_t l = lists; l; l = l->next) {
        pending *c = l->head;
        if (!c)
            continue;
        uint32_t i = 0;
        while (i < c->nwait && c->wait[i]->signalled)
            i++;
        if (i < c->nwait)
            continue;
        l->head = c->next;
        if (!l->head)
            l->tail = NULL;
        run(c);
        free(c);
        return 1;
    }
    return 0;
}

static ze_result_t append(const char *fn, ze_command_list_handle_t list, pending *c,
                          ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
    if (nwait > 4)
        fail("a command waits on more than 4 events");
    c->signal = signal;
    c->nwait = nwait;
    for (uint32_t i = 0; i < nwait; i++)
        c->wait[i] = wait[i];
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < nwait; i++)
        if (!wait[i]->created)
            fail("a command waits on a destroyed event");
    if (signal && (signal->signalled || in_use(signal))) {
        fprintf(stderr, "fake_ze_gpu: %s signals an event that is %s\n", fn,
                signal->signalled ? "signalled (not reset)" : "used by a pending command");
        abort();
    }
    c->next = NULL;
    if (list->tail)
        list->tail->next = c;
    else
        list->head = c;
    list->tail = c;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

static pending *new_command(cmd_kind kind) {
    pending *c = calloc(1, sizeof *c);
    if (!c)
        fail("out of memory");
    c->kind = kind;
    return c;
}

FAKE_EXPORT ze_result_t zeEventPoolCreate(ze_context_handle_t ctx,
                                          const ze_event_pool_desc_t *desc, uint32_t ndev,
                                          ze_device_handle_t *devs, ze_event_pool_handle_t *out) {
    FAULT_POINT("zeEventPoolCreate");
    (void)ndev;
    (void)devs;
    if ((void *)ctx != &fake_context || !(desc->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE))
        fake_ze_die("zeEventPoolCreate (another context, or not host-visible)");
    ze_event_pool_handle_t p = calloc(1, sizeof *p);
    p->count = desc->count;
    p->events = calloc(desc->count, sizeof *p->events);
    *out = p;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t p) {
    GPU_ONLY("zeEventPoolDestroy");
    for (uint32_t i = 0; i < p->count; i++)
        if (p->events[i].created)
            fail("zeEventPoolDestroy: an event of the pool is not destroyed");
    free(p->events);
    free(p);
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeEventCreate(ze_event_pool_handle_t p, const ze_event_desc_t *desc,
                                      ze_event_handle_t *out) {
    FAULT_POINT("zeEventCreate");
    if (desc->index >= p->count || p->events[desc->index].created)
        fail("zeEventCreate: a bad or used index");
    ze_event_handle_t e = &p->events[desc->index];
    e->pool = p;
    e->created = 1;
    e->signalled = 0;
    *out = e;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeEventDestroy(ze_event_handle_t e) {
    GPU_ONLY("zeEventDestroy");
    pthread_mutex_lock(&lock);
    if (in_use(e))
        fail("zeEventDestroy: a pending command uses the event");
    e->created = 0;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

/* Makes progress: one command per query, so polling ends. */
FAKE_EXPORT ze_result_t zeEventQueryStatus(ze_event_handle_t e) {
    GPU_ONLY("zeEventQueryStatus");
    pthread_mutex_lock(&lock);
    if (!e->signalled)
        step();
    int s = e->signalled;
    pthread_mutex_unlock(&lock);
    return s ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

FAKE_EXPORT ze_result_t zeEventHostSynchronize(ze_event_handle_t e, uint64_t timeout) {
    GPU_ONLY("zeEventHostSynchronize");
    (void)timeout;
    pthread_mutex_lock(&lock);
    while (!e->signalled) {
        if (step())
            continue;
        /* Nothing can run: only another thread's zeEventHostSignal can help. A minute
         * without one is a wait that would never end (this bound only turns a hang into
         * a message; no passing run depends on it). */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 60;
        if (pthread_cond_timedwait(&progress, &lock, &until) != 0 && !e->signalled && !step())
            fail("zeEventHostSynchronize: on an event that nothing signals (a minute "
                 "without progress)");
    }
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeEventHostSignal(ze_event_handle_t e) {
    GPU_ONLY("zeEventHostSignal");
    pthread_mutex_lock(&lock);
    if (e->signalled)
        fail("zeEventHostSignal: the event is signalled (not reset)");
    for (ze_command_list_handle_t l = lists; l; l = l->next)
        for (pending *c = l->head; c; c = c->next)
            if (c->signal == e)
                fail("zeEventHostSignal: a pending command signals the event too");
    e->signalled = 1;
    pthread_cond_broadcast(&progress);
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeEventHostReset(ze_event_handle_t e) {
    GPU_ONLY("zeEventHostReset");
    pthread_mutex_lock(&lock);
    if (in_use(e))
        fail("zeEventHostReset: a pending command uses the event");
    e->signalled = 0;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeCommandListCreateImmediate(ze_context_handle_t ctx,
                                                     ze_device_handle_t dev,
                                                     const ze_command_queue_desc_t *desc,
                                                     ze_command_list_handle_t *out) {
    FAULT_POINT("zeCommandListCreateImmediate");
    if ((void *)ctx != &fake_context || !is_device(dev) || desc->ordinal != 1)
        fail("zeCommandListCreateImmediate: not the compute group of the device");
    ze_command_list_handle_t l = calloc(1, sizeof *l);
    pthread_mutex_lock(&lock);
    l->next = lists;
    lists = l;
    pthread_mutex_unlock(&lock);
    *out = l;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeCommandListDestroy(ze_command_list_handle_t list) {
    GPU_ONLY("zeCommandListDestroy");
    pthread_mutex_lock(&lock);
    if (list->head)
        fail("zeCommandListDestroy: commands are pending");
    ze_command_list_handle_t *link = &lists;
    while (*link != list)
        link = &(*link)->next;
    *link = list->next;
    pthread_mutex_unlock(&lock);
    free(list);
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t list,
                                                   ze_event_handle_t signal, uint32_t nwait,
                                                   ze_event_handle_t *wait) {
    FAULT_POINT("zeCommandListAppendBarrier");
    /* Without waits a barrier waits on the list's earlier commands: already in order. */
    return append("zeCommandListAppendBarrier", list, new_command(CMD_BARRIER), signal, nwait,
                  wait);
}

FAKE_EXPORT ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t list, void *dst,
                                                      const void *src, size_t size,
                                                      ze_event_handle_t signal, uint32_t nwait,
                                                      ze_event_handle_t *wait) {
    FAULT_POINT("zeCommandListAppendMemoryCopy");
    pending *c = new_command(CMD_COPY);
    c->dst = dst;
    c->src = src;
    c->size = size;
    return append("zeCommandListAppendMemoryCopy", list, c, signal, nwait, wait);
}

FAKE_EXPORT ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t list, void *ptr,
                                                      const void *pattern, size_t psize,
                                                      size_t size, ze_event_handle_t signal,
                                                      uint32_t nwait, ze_event_handle_t *wait) {
    FAULT_POINT("zeCommandListAppendMemoryFill");
    if (psize == 0 || psize > sizeof ((pending *)0)->pattern)
        fail("zeCommandListAppendMemoryFill: a bad pattern size");
    pending *c = new_command(CMD_FILL);
    c->dst = ptr;
    c->size = size;
    c->psize = psize;
    memcpy(c->pattern, pattern, psize);
    return append("zeCommandListAppendMemoryFill", list, c, signal, nwait, wait);
}

FAKE_EXPORT ze_result_t zeCommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t list,
                                                                uint64_t *dst,
                                                                ze_event_handle_t signal,
                                                                uint32_t nwait,
                                                                ze_event_handle_t *wait) {
    FAULT_POINT("zeCommandListAppendWriteGlobalTimestamp");
    pending *c = new_command(CMD_TIMESTAMP);
    c->dst = dst;
    c->size = sizeof *dst;
    return append("zeCommandListAppendWriteGlobalTimestamp", list, c, signal, nwait, wait);
}

/* ---- memory: host memory, remembered by kind ---- */

typedef struct allocation {
    void *ptr;
    size_t size;
    ze_memory_type_t type;
    ze_device_handle_t device; /* of a device allocation */
    struct allocation *next;
} allocation;
static allocation *allocations;

static ze_result_t alloc(ze_context_handle_t ctx, size_t size, size_t align,
                         ze_memory_type_t type, ze_device_handle_t dev, void **out) {
    if ((void *)ctx != &fake_context)
        fake_ze_die("zeMemAlloc* (another context)");
    allocation *a = malloc(sizeof *a);
    if (!a || posix_memalign(&a->ptr, align < sizeof(void *) ? sizeof(void *) : align, size)) {
        free(a);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    a->type = type;
    a->size = size;
    a->device = dev;
    pthread_mutex_lock(&lock);
    a->next = allocations;
    allocations = a;
    pthread_mutex_unlock(&lock);
    *out = a->ptr;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeMemAllocDevice(ze_context_handle_t ctx,
                                         const ze_device_mem_alloc_desc_t *desc, size_t size,
                                         size_t align, ze_device_handle_t dev, void **out) {
    FAULT_POINT("zeMemAllocDevice");
    (void)desc;
    if (!is_device(dev))
        fake_ze_die("zeMemAllocDevice (not a device)");
    return alloc(ctx, size, align, ZE_MEMORY_TYPE_DEVICE, dev, out);
}

FAKE_EXPORT ze_result_t zeMemAllocHost(ze_context_handle_t ctx,
                                       const ze_host_mem_alloc_desc_t *desc, size_t size,
                                       size_t align, void **out) {
    FAULT_POINT("zeMemAllocHost");
    (void)desc;
    return alloc(ctx, size, align, ZE_MEMORY_TYPE_HOST, NULL, out);
}

static int inside(const void *p, const allocation *a) {
    return p && (const char *)p >= (const char *)a->ptr &&
           (const char *)p < (const char *)a->ptr + a->size;
}

FAKE_EXPORT ze_result_t zeMemFree(ze_context_handle_t ctx, void *ptr) {
    GPU_ONLY("zeMemFree");
    if ((void *)ctx != &fake_context)
        fake_ze_die("zeMemFree (another context)");
    pthread_mutex_lock(&lock);
    allocation **link = &allocations;
    while (*link && (*link)->ptr != ptr)
        link = &(*link)->next;
    allocation *a = *link;
    if (!a)
        fail("zeMemFree: not an allocation");
    for (ze_command_list_handle_t l = lists; l; l = l->next)
        for (pending *c = l->head; c; c = c->next)
            if (inside(c->dst, a) || inside(c->src, a))
                fail("zeMemFree: a pending command uses the memory");
    *link = a->next;
    pthread_mutex_unlock(&lock);
    free(a->ptr);
    free(a);
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeMemGetAllocProperties(ze_context_handle_t ctx, const void *ptr,
                                                ze_memory_allocation_properties_t *props,
                                                ze_device_handle_t *dev) {
    GPU_ONLY("zeMemGetAllocProperties");
    (void)ctx;
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    ze_device_handle_t owner = NULL;
    pthread_mutex_lock(&lock);
    for (allocation *a = allocations; a; a = a->next)
        if (a->ptr == ptr) {
            props->type = a->type;
            owner = a->device;
        }
    pthread_mutex_unlock(&lock);
    if (dev)
        *dev = owner;
    return ZE_RESULT_SUCCESS;
}

/* ---- the device and its context ---- */

FAKE_EXPORT ze_result_t zeDeviceGetSubDevices(ze_device_handle_t dev, uint32_t *count,
                                              ze_device_handle_t *subs) {
    GPU_ONLY("zeDeviceGetSubDevices");
    (void)dev;
    (void)subs;
    *count = 0;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeDeviceGetProperties(ze_device_handle_t dev, ze_device_properties_t *p) {
    FAULT_POINT("zeDeviceGetProperties");
    if (!is_device(dev) || p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2)
        fake_ze_die("zeDeviceGetProperties (another device, or not the 1.2 structure)");
    p->type = ZE_DEVICE_TYPE_GPU;
    p->vendorId = 0x8086;
    p->deviceId = 0x0BD5; /* a Data Center GPU Max id: family pvc */
    p->maxMemAllocSize = UINT64_C(1) << 30;
    p->numSlices = 1;
    p->numSubslicesPerSlice = 2;
    p->numEUsPerSubslice = 8;
    p->physicalEUSimdWidth = 16;
    p->timerResolution = 1000000000;
    p->timestampValidBits = 64;
    snprintf(p->name, sizeof p->name, "Fake Level Zero GPU");
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t dev,
                                                     ze_device_compute_properties_t *c) {
    FAULT_POINT("zeDeviceGetComputeProperties");
    (void)dev;
    const char *wg = getenv("FAKE_ZE_MAX_GROUP"); /* a device with smaller work-groups */
    c->maxTotalGroupSize = wg && wg[0] ? (uint32_t)strtoul(wg, NULL, 10) : 1024;
    c->maxSharedLocalMemory = 65536;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeDeviceGetModuleProperties(ze_device_handle_t dev,
                                                    ze_device_module_properties_t *m) {
    GPU_ONLY("zeDeviceGetModuleProperties");
    (void)dev;
    const char *fp64 = getenv("FAKE_ZE_FP64"); /* "0": a device without fp64 */
    bool has_fp64 = !(fp64 && strcmp(fp64, "0") == 0);
    m->flags = ZE_DEVICE_MODULE_FLAG_FP16 | (has_fp64 ? ZE_DEVICE_MODULE_FLAG_FP64 : 0);
    m->fp64flags = has_fp64 ? ZE_DEVICE_FP_FLAG_FMA : 0;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t dev, uint32_t *count,
                                                    ze_device_memory_properties_t *mems) {
    GPU_ONLY("zeDeviceGetMemoryProperties");
    (void)dev;
    if (mems && *count >= 1)
        mems[0].totalSize = UINT64_C(1) << 30;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

/* Group 0 copies only, group 1 computes: the plugin must pick 1. */
FAKE_EXPORT ze_result_t zeDeviceGetCommandQueueGroupProperties(
    ze_device_handle_t dev, uint32_t *count, ze_command_queue_group_properties_t *g) {
    FAULT_POINT("zeDeviceGetCommandQueueGroupProperties");
    (void)dev;
    if (g && *count >= 2) {
        g[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        g[1].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                     ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    }
    *count = 2;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeDeviceCanAccessPeer(ze_device_handle_t dev, ze_device_handle_t peer,
                                              ze_bool_t *value) {
    GPU_ONLY("zeDeviceCanAccessPeer");
    if (!is_device(dev) || !is_device(peer) || dev == peer)
        fail("zeDeviceCanAccessPeer: not two devices");
    *value = 1;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeContextCreate(ze_driver_handle_t drv, const ze_context_desc_t *desc,
                                        ze_context_handle_t *out) {
    FAULT_POINT("zeContextCreate");
    (void)drv;
    (void)desc;
    *out = (ze_context_handle_t)&fake_context;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeContextDestroy(ze_context_handle_t ctx) {
    GPU_ONLY("zeContextDestroy");
    (void)ctx;
    if (allocations)
        fake_ze_die("zeContextDestroy (with memory not freed)");
    return ZE_RESULT_SUCCESS;
}

/* ---- modules: every build fails (a native binary as one for another device) ---- */

FAKE_EXPORT ze_result_t zeModuleCreate(ze_context_handle_t ctx, ze_device_handle_t dev,
                                       const ze_module_desc_t *desc, ze_module_handle_t *out,
                                       ze_module_build_log_handle_t *log) {
    GPU_ONLY("zeModuleCreate");
    (void)ctx;
    (void)dev;
    *out = NULL;
    if (desc->format == ZE_MODULE_FORMAT_NATIVE) {
        if (!desc->pInputModule || desc->inputSize == 0)
            fail("zeModuleCreate: an empty native binary");
        if (log)
            *log = (ze_module_build_log_handle_t)FAKE_NATIVE_LOG;
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV || desc->inputSize < 20 ||
        memcmp(desc->pInputModule, "\x03\x02\x23\x07", 4) != 0)
        fail("zeModuleCreate: not a SPIR-V module");
    if (log)
        *log = (ze_module_build_log_handle_t)FAKE_BUILD_LOG;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
}

FAKE_EXPORT ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t log,
                                                  size_t *size, char *text) {
    FAULT_POINT("zeModuleBuildLogGetString");
    const char *s = (const char *)log;
    if (text)
        memcpy(text, s, *size < strlen(s) + 1 ? *size : strlen(s) + 1);
    *size = strlen(s) + 1;
    return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t log) {
    GPU_ONLY("zeModuleBuildLogDestroy");
    (void)log;
    return ZE_RESULT_SUCCESS;
}
