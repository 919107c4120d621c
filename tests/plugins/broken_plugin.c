/* Plugins with one defect each, for the loader tests. One source; the build picks the
 * defect with a definition:
 *   BROKEN_WRONG_ABI      built for the next major ABI
 *   BROKEN_NO_SYMBOL      exports its entry under the wrong name
 *   BROKEN_BAD_INIT       init fails the way a missing driver would
 *   BROKEN_OLD_HEADER     descriptor smaller than ABI 1.0 requires
 *   BROKEN_RESERVED_NAME  calls itself "cpu"
 *   NO_DEVICES            valid, but finds no hardware (count 0 with a reason)
 *   BROKEN_REGION_OLD_ABI a region vtable in a plugin declaring ABI 1.2 (before regions)
 *   BROKEN_REGION_NO_END  a region vtable without its end function
 *   OP_LIST               valid, no devices; its unavailable reason is the op list that
 *                         host->op_count and host->op_name gave its init (test_op_names)
 * Everything else is a valid stub, so each fails for exactly its one reason. */
#include <stddef.h>
#include <stdio.h>

#include <backplane/plugin.h>

#if defined(BROKEN_WRONG_ABI)
#define PLUGIN_NAME "wrongabi"
#elif defined(BROKEN_NO_SYMBOL)
#define PLUGIN_NAME "nosymbol"
#elif defined(BROKEN_BAD_INIT)
#define PLUGIN_NAME "badinit"
#elif defined(BROKEN_OLD_HEADER)
#define PLUGIN_NAME "oldheader"
#elif defined(BROKEN_RESERVED_NAME)
#define PLUGIN_NAME "cpu"
#elif defined(NO_DEVICES)
#define PLUGIN_NAME "nodev"
#elif defined(BROKEN_REGION_OLD_ABI)
#define PLUGIN_NAME "regionold"
#elif defined(BROKEN_REGION_NO_END)
#define PLUGIN_NAME "regionnoend"
#elif defined(OP_LIST)
#define PLUGIN_NAME "oplist"
#else
#error "define one of the cases listed at the top"
#endif

#ifndef BROKEN_BAD_INIT
static int backend_state; /* init hands out its address: any non-NULL state will do */
#endif

#ifdef BROKEN_BAD_INIT
static bp_status stub_kernel(const bp_kernel_call *call) {
    (void)call;
    return BP_OK;
}
#endif

#ifdef OP_LIST
static char op_list[1024];

/* "<count>:<name 0>,<name 1>,...;op_name(count)=NULL;op_name(-1)=NULL", as the host
 * services give them (a name that should be NULL and is not shows as "set"). */
static void list_ops(const bp_host_services *host) {
    if (!BP_HOST_HAS(host, op_count) || !BP_HOST_HAS(host, op_name)) {
        snprintf(op_list, sizeof op_list, "the host services lack op_count/op_name");
        return;
    }
    int32_t n = host->op_count();
    size_t used = (size_t)snprintf(op_list, sizeof op_list, "%d:", (int)n);
    for (int32_t i = 0; i < n && used < sizeof op_list; i++) {
        const char *name = host->op_name(i);
        used += (size_t)snprintf(op_list + used, sizeof op_list - used, "%s%s", i ? "," : "",
                                 name ? name : "(NULL)");
    }
    if (used < sizeof op_list)
        snprintf(op_list + used, sizeof op_list - used, ";op_name(count)=%s;op_name(-1)=%s",
                 host->op_name(n) ? "set" : "NULL", host->op_name(-1) ? "set" : "NULL");
}
#endif

static bp_status stub_init(const bp_host_services *host, void **out_backend) {
#ifdef OP_LIST
    list_ops(host);
#endif
#ifdef BROKEN_BAD_INIT
    /* A kernel registered before the failure must not outlive the plugin. */
    host->register_kernel(PLUGIN_NAME, "fill", BP_DTYPE_F32, stub_kernel, NULL, 0);
    return host->set_error(BP_ERR_DEVICE_LOST,
                           "badinit: simulated driver failure (the runtime did not respond)");
#else
    *out_backend = &backend_state;
    return BP_OK;
#endif
}

static int stub_count(void *backend) { return 0; }
static const char *stub_unavailable(void *backend) {
#ifdef OP_LIST
    return op_list;
#else
    return "simulated: no " PLUGIN_NAME " hardware present";
#endif
}
static bp_status stub_get_props(void *backend, int index, bp_backend_device_props *props) {
    return BP_ERR_NOT_FOUND;
}
static bp_status stub_open(void *backend, int index, void **out_device) { return BP_ERR_NOT_FOUND; }
static void stub_close(void *device) {}
static bp_status stub_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    return BP_ERR_UNSUPPORTED;
}
static bp_status stub_sync(void *handle) { return BP_ERR_UNSUPPORTED; }
static bp_status stub_create(void *device, int arg, void **out_handle) {
    return BP_ERR_UNSUPPORTED;
}
static void stub_destroy(void *handle) {}
static bp_status stub_wait(void *stream, void *event) { return BP_ERR_UNSUPPORTED; }
static bp_status stub_record(void *event, void *stream) { return BP_ERR_UNSUPPORTED; }
static bp_status stub_alloc(void *device, size_t size, void **out_ptr) {
    return BP_ERR_OUT_OF_MEMORY;
}
static void stub_free(void *device, void *ptr) {}
static bp_status stub_copy(void *stream, void *dst, const void *src, size_t size,
                           bp_copy_kind kind) {
    return BP_ERR_UNSUPPORTED;
}
static bp_status stub_memset(void *stream, void *ptr, int value, size_t size) {
    return BP_ERR_UNSUPPORTED;
}

static const bp_device_vtable device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = stub_count,
    .unavailable_reason = stub_unavailable,
    .get_props = stub_get_props,
    .open = stub_open,
    .close = stub_close,
    .mem_info = stub_mem_info,
    .synchronize = stub_sync,
};

static const bp_stream_vtable stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = stub_create,
    .destroy = stub_destroy,
    .synchronize = stub_sync,
    .query = stub_sync,
    .wait_event = stub_wait,
};

static const bp_event_vtable event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = stub_create,
    .destroy = stub_destroy,
    .record = stub_record,
    .query = stub_sync,
    .synchronize = stub_sync,
};

static const bp_memory_vtable memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = stub_alloc,
    .free = stub_free,
    .copy_async = stub_copy,
    .memset_async = stub_memset,
};

#if defined(BROKEN_REGION_OLD_ABI) || defined(BROKEN_REGION_NO_END)
static bp_status stub_region_begin(void *device, const bp_region_info *info, void **out) {
    (void)device, (void)info;
    *out = &backend_state;
    return BP_OK;
}
#ifndef BROKEN_REGION_NO_END
static bp_status stub_region_end(void *region) {
    (void)region;
    return BP_OK;
}
#endif
static void stub_region_abort(void *region) { (void)region; }

static const bp_region_vtable region_vtable = {
    .struct_size = sizeof(bp_region_vtable),
    .begin = stub_region_begin,
#ifndef BROKEN_REGION_NO_END
    .end = stub_region_end,
#endif
    .abort = stub_region_abort,
};
#endif

static const bp_plugin_descriptor descriptor = {
#ifdef BROKEN_OLD_HEADER
    /* As if built before the guard and region fields were added. */
    .struct_size = offsetof(bp_plugin_descriptor, guard),
#else
    .struct_size = sizeof(bp_plugin_descriptor),
#endif
#if defined(BROKEN_WRONG_ABI)
    .abi_major = BP_PLUGIN_ABI_MAJOR + 1,
    .abi_minor = 0,
#elif defined(BROKEN_REGION_OLD_ABI)
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = 2,
#else
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
#endif
    .name = PLUGIN_NAME,
    .version = "0.0.1",
    .init = stub_init,
    .device = &device_vtable,
    .stream = &stream_vtable,
    .event = &event_vtable,
    .memory = &memory_vtable,
#if defined(BROKEN_REGION_OLD_ABI) || defined(BROKEN_REGION_NO_END)
    .region = &region_vtable,
#endif
};

#ifdef BROKEN_NO_SYMBOL
/* A typo in the entry name: the library loads but is not a plugin. */
BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry_v0(void) { return &descriptor; }
#else
BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) { return &descriptor; }
#endif
