/* hpu: a simulator of a Gaudi2-class graph accelerator, as a backplane plugin.
 *
 * Results are computed on the host by the host's reference kernels
 * (host->run_reference_kernel, ABI 1.3) on stream worker threads; device memory is an
 * arena of host memory. Time is modelled (hpu_model.h): events carry modelled
 * timestamps, so elapsed_ms reports what the modelled device would take. Regions are
 * captured and compiled into one graph launch (hpu_graph.h).
 *
 * This file: the descriptor, init, the devices, the current-device guard and the one
 * kernel function that every (op, dtype) is registered with. */
#include "cpukit.h"
#include "hpu_call.h"
#include "hpu_graph.h"
#include "hpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HPU_VERSION "0.1.0-sim"
#define HPU_DESCRIPTION "hpu simulator (Gaudi2-class model, results computed on the host)"

/* ---- the kernel ---- */

typedef struct kernel_task {
    const bp_host_services *host;
    int device_index;
    bp_kernel_call *call; /* the kit's copy (cpukit_call_copy) */
} kernel_task;

static void kernel_task_fn(void *payload) {
    kernel_task t;
    memcpy(&t, payload, sizeof t);
    bp_status st = t.host->run_reference_kernel(t.call);
    if (st != BP_OK)
        t.host->log(BP_LOG_ERROR, HPU_NAME,
                    "hpu:%d: %s kernel failed on the stream worker: status %d", t.device_index,
                    t.call->op_name ? t.call->op_name : "?", (int)st);
    free(t.call);
}

/* Every registered (op, dtype): kernel_data is the op's cost entry. Captured into the
 * stream's graph, or modelled and queued as one eager launch. */
static bp_status hpu_launch_kernel(const bp_kernel_call *call) {
    const hpu_op_cost *cost = call->kernel_data;
    hpu_stream *s = call->stream;
    hpu_device *dev = s->device;
    hpu_backend *be = dev->backend;
    hpu_work w = hpu_work_kernel(&be->params, cost, call);
    bp_kernel_call *copy = cpukit_call_copy(call);
    if (!copy)
        return be->host->set_error(BP_ERR_OUT_OF_MEMORY, "hpu:%d: %s: out of host memory for "
                                   "the launch record", dev->index, cost->op);
    bp_status st;
    pthread_mutex_lock(&dev->lock);
    if (s->graph) {
        st = hpu_graph_add_kernel(s->graph, copy, &w);
    } else {
        double end = hpu_model_eager(&dev->model, &be->params, &w, s->ready_us, true);
        kernel_task t = {be->host, dev->index, copy};
        st = hpu_submit(s, "a kernel launch", kernel_task_fn, &t, sizeof t, NULL);
        if (st == BP_OK)
            s->ready_us = end;
    }
    pthread_mutex_unlock(&dev->lock);
    if (st != BP_OK)
        free(copy);
    return st;
}

/* ---- devices ---- */

static int device_count(void *backend) {
    return ((hpu_backend *)backend)->ndevices;
}

static bp_status check_index(hpu_backend *be, int index) {
    return bp_plugin_check_index(be->host, HPU_NAME, index, be->ndevices, "hpu",
                                 "BP_HPU_DEVICES sets the count");
}

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    hpu_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, HPU_NAME, props, &p);
    if (st != BP_OK)
        return st;
    snprintf(p.description, sizeof p.description, "%s", HPU_DESCRIPTION);
    p.total_memory = be->params.arena_bytes;
    p.capabilities =
        BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_MODELLED_TIME | BP_CAP_REGIONS;
    p.dtypes = be->dtypes;
    p.stream_priority_least = 0;
    p.stream_priority_greatest = 0;
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status device_open(void *backend, int index, void **out_device) {
    hpu_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    hpu_device *dev = &be->devices[index];
    if (!dev->arena) {
        int err = hpu_arena_create(be->params.arena_bytes, &dev->arena);
        if (err != 0)
            return be->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                       "hpu:%d: cannot map %llu bytes of device memory (%s); "
                                       "BP_HPU_MEMORY_MB sets a smaller size",
                                       index, (unsigned long long)be->params.arena_bytes,
                                       strerror(err));
    }
    *out_device = dev;
    return BP_OK;
}

static void device_close(void *device) {
    hpu_device *dev = device;
    if (!dev->arena)
        return;
    hpu_arena_stats st;
    hpu_arena_get_stats(dev->arena, &st);
    dev->backend->host->log(BP_LOG_INFO, HPU_NAME, "hpu:%d arena peak %llu bytes of %llu",
                            dev->index, (unsigned long long)st.peak, (unsigned long long)st.size);
    hpu_arena_destroy(dev->arena);
    dev->arena = NULL;
}

static bp_status device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    hpu_device *dev = device;
    hpu_arena_stats st;
    hpu_arena_get_stats(dev->arena, &st);
    if (out_free)
        *out_free = st.size - st.in_use;
    if (out_total)
        *out_total = st.size;
    return BP_OK;
}

static bp_status device_synchronize(void *device) {
    return hpu_streams_synchronize(device);
}

/* ---- the current device ---- */

static bp_status guard_set_current(void *device) {
    return bp_plugin_current_set(((hpu_device *)device)->index);
}

/* ---- init ---- */

static void free_backend(hpu_backend *be) {
    for (int i = 0; i < be->ndevices; i++) {
        pthread_mutex_destroy(&be->devices[i].lock);
        bp_plugin_list_fini(&be->devices[i].streams);
    }
    free(be->devices);
    free(be);
}

/* Every op of the cost table, for every dtype the host has a reference kernel of. */
static bp_status register_kernels(hpu_backend *be) {
    const bp_host_services *host = be->host;
    for (int i = 0; i < hpu_op_cost_count; i++) {
        const hpu_op_cost *cost = &hpu_op_costs[i];
        uint32_t mask = host->reference_dtypes(cost->op);
        for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
            if (!(mask & BP_DTYPE_BIT(dt)))
                continue;
            bp_status st = host->register_kernel(HPU_NAME, cost->op, (bp_dtype)dt,
                                                 hpu_launch_kernel, (void *)cost, 0);
            if (st != BP_OK)
                return st; /* the host's message says what failed */
        }
        be->dtypes |= mask;
    }
    return BP_OK;
}

static bp_status hpu_init(const bp_host_services *host, void **out_backend) {
    if (host->abi_minor < 4 || !BP_HOST_HAS(host, reference_dtypes) ||
        !BP_HOST_HAS(host, run_reference_kernel) || !BP_HOST_HAS(host, register_kernel))
        return host->set_error(BP_ERR_ABI_MISMATCH,
                               "hpu: the host speaks plugin ABI %u.%u; the hpu simulator needs "
                               "1.4 or newer (host reference kernels: reference_dtypes and "
                               "run_reference_kernel; attrs_size in kernel calls)",
                               host->abi_major, host->abi_minor);
    hpu_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "hpu: out of host memory for the backend");
    be->host = host;
    atomic_init(&be->next_stream_id, 0u);
    bp_status st = hpu_params_load(host, &be->params);
    if (st != BP_OK) {
        free(be);
        return st;
    }
    be->devices = calloc((size_t)be->params.devices, sizeof *be->devices);
    if (!be->devices) {
        free(be);
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "hpu: out of host memory for the devices");
    }
    be->ndevices = be->params.devices;
    for (int i = 0; i < be->ndevices; i++) {
        hpu_device *dev = &be->devices[i];
        dev->backend = be;
        dev->index = i;
        pthread_mutex_init(&dev->lock, NULL);
        bp_plugin_list_init(&dev->streams);
    }
    st = register_kernels(be);
    if (st != BP_OK) {
        free_backend(be);
        return st;
    }
    host->log(BP_LOG_DEBUG, HPU_NAME,
              "hpu: %d device%s of %llu MiB, kernels for dtype mask 0x%x", be->ndevices,
              be->ndevices == 1 ? "" : "s", (unsigned long long)(be->params.arena_bytes >> 20),
              be->dtypes);
    *out_backend = be;
    return BP_OK;
}

/* The host closed every device before. */
static void hpu_shutdown(void *backend) {
    free_backend(backend);
}

static const bp_device_vtable hpu_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = NULL,
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = device_mem_info,
    .synchronize = device_synchronize,
};

static const bp_guard_vtable hpu_guard_vtable = {
    .struct_size = sizeof(bp_guard_vtable),
    .set_current = guard_set_current,
    .get_current = bp_plugin_current_get,
};

static const bp_plugin_descriptor hpu_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = HPU_NAME,
    .aliases = NULL,
    .version = HPU_VERSION,
    .priority = 0,
    .init = hpu_init,
    .shutdown = hpu_shutdown,
    .device = &hpu_device_vtable,
    .stream = &hpu_stream_vtable,
    .event = &hpu_event_vtable,
    .memory = &hpu_memory_vtable,
    .guard = &hpu_guard_vtable,
    .region = &hpu_region_vtable,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
    return &hpu_descriptor;
}
