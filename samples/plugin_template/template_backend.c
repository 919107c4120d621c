/* The template plugin: its descriptor (the one exported symbol, bp_plugin_entry),
 * init and shutdown, the device table and the guard table. Streams, events, memory and
 * kernels are in the other files (template.h lists them).
 *
 * Build it as libbp_template.so with hidden visibility: backplane_add_plugin() in
 * CMakeLists.txt, or `cc $(pkg-config --cflags backplane-plugin) -shared ...` (README.md). */
#include <stdio.h>
#include <string.h>

#include <backplane/plugin_util.h>

#include "template.h"

const bp_host_services *template_host;

static template_device devices[TEMPLATE_DEVICES];

/* ---- init and shutdown: the host serialises them ---- */

static bp_status template_init(const bp_host_services *host, void **out_backend) {
    template_host = host;
    for (int i = 0; i < TEMPLATE_DEVICES; i++) {
        template_device *dev = &devices[i];
        dev->index = i;
        atomic_init(&dev->used, 0);
        dev->pending = 0;
        pthread_mutex_init(&dev->lock, NULL);
        pthread_cond_init(&dev->idle, NULL);
    }
    /* A failure here skips the plugin with the message register_kernel set. */
    bp_status st = template_register_kernels(host);
    if (st != BP_OK)
        return st;
    host->log(BP_LOG_DEBUG, TEMPLATE_NAME, "%d devices of %llu bytes", TEMPLATE_DEVICES,
              (unsigned long long)TEMPLATE_MEMORY);
    *out_backend = devices;
    return BP_OK;
}

/* Called after every stream, event and allocation of the plugin is gone. */
static void template_shutdown(void *backend) {
    for (int i = 0; i < TEMPLATE_DEVICES; i++) {
        pthread_cond_destroy(&devices[i].idle);
        pthread_mutex_destroy(&devices[i].lock);
    }
}

/* ---- devices ---- */

static int device_count(void *backend) { return TEMPLATE_DEVICES; }

/* The index check of get_props and open, from the optional helpers of
 * <backplane/plugin_util.h>: "template: device index 5 out of range (2 template
 * devices)". */
static bp_status check_index(int index) {
    return bp_plugin_check_index(template_host, TEMPLATE_NAME, index, TEMPLATE_DEVICES,
                                 TEMPLATE_NAME, NULL);
}

static bp_status device_get_props(void *backend, int index, bp_backend_device_props *props) {
    bp_backend_device_props p;
    bp_status st = check_index(index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(template_host, TEMPLATE_NAME, props, &p); /* zeroes p */
    if (st != BP_OK)
        return st;
    snprintf(p.description, sizeof p.description, "backplane template device %d", index);
    p.total_memory = TEMPLATE_MEMORY;
    /* Only what the device really does: the suite and users skip by these. */
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_PEER_COPY;
    /* Memory holds any dtype; which ops run is what the kernels registered say. */
    p.dtypes = BP_DTYPE_BIT(BP_DTYPE_COUNT) - 1;
    p.stream_priority_least = 0;
    p.stream_priority_greatest = 0;
    /* An older host passes a smaller struct: copy no more than it has. */
    bp_props_copy_out(props, &p);
    return BP_OK;
}

/* The host opens each device once, lazily, and closes it before shutdown. */
static bp_status device_open(void *backend, int index, void **out_device) {
    bp_status st = check_index(index);
    if (st != BP_OK)
        return st;
    *out_device = &devices[index];
    return BP_OK;
}

static void device_close(void *device) {}

static bp_status device_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    template_device *dev = device;
    uint64_t used = atomic_load(&dev->used);
    *out_total = TEMPLATE_MEMORY;
    *out_free = used < TEMPLATE_MEMORY ? TEMPLATE_MEMORY - used : 0;
    return BP_OK;
}

static const bp_device_vtable template_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = device_count,
    .unavailable_reason = NULL, /* count() is never 0; a real backend says why it is */
    .get_props = device_get_props,
    .open = device_open,
    .close = device_close,
    .mem_info = device_mem_info,
    .synchronize = template_device_synchronize,
};

/* ---- the current device of each thread ----
 *
 * The host calls set_current when a guard makes one of these devices current on a
 * thread. A runtime with per-thread state (a CUDA context) makes it current here; the
 * template only remembers the index, per thread, for get_current: the helpers of
 * <backplane/plugin_util.h> do that (get_current returns BP_ERR_NOT_FOUND, without
 * set_error, on a thread that has none). */

static bp_status guard_set_current(void *device) {
    return bp_plugin_current_set(((template_device *)device)->index);
}

static const bp_guard_vtable template_guard_vtable = {
    .struct_size = sizeof(bp_guard_vtable),
    .set_current = guard_set_current,
    .get_current = bp_plugin_current_get,
};

/* ---- the descriptor ---- */

static const bp_plugin_descriptor template_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = TEMPLATE_NAME, /* the device type: [a-z][a-z0-9_]*, at most 31 chars */
    .aliases = NULL,
    .version = TEMPLATE_VERSION,
    .priority = 0,
    .init = template_init,
    .shutdown = template_shutdown,
    .device = &template_device_vtable,
    .stream = &template_stream_vtable,
    .event = &template_event_vtable,
    .memory = &template_memory_vtable,
    .guard = &template_guard_vtable,
    .region = NULL, /* the core runs regions with the tables above */
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) { return &template_descriptor; }
