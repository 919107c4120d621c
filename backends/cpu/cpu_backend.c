/* The built-in cpu backend: the embedded default device, compiled into libbackplane.
 *
 * It is written against the plugin ABI only, like any out-of-tree backend; the core
 * finds it through bp_cpu_backend_descriptor() instead of dlopen.
 *
 * One device, "cpu:0", whose streams, events and memory are the CPU-class kit's
 * (backends/cpukit/cpukit.h): each stream is a worker thread draining an in-order task
 * queue, an event is a position in one stream's queue, memory is aligned host memory
 * and device pointers are host addresses. What is left here is what makes it the cpu
 * backend: its one device, its description and its memory figures.
 */
#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpukit.h"

const bp_plugin_descriptor *bp_cpu_backend_descriptor(void);

typedef struct cpu_backend {
    const bp_host_services *host;
    cpukit_device device;
    char description[128];
} cpu_backend;

/* ---- device ---- */

/* "model name" from /proc/cpuinfo, or "CPU" where the kernel reports none (arm64). */
static void read_cpu_model(char *out, size_t out_size) {
    snprintf(out, out_size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *value = strchr(line, ':');
        if (!value)
            continue;
        value++;
        while (*value == ' ' || *value == '\t')
            value++;
        value[strcspn(value, "\n")] = '\0';
        if (*value)
            snprintf(out, out_size, "%s", value);
        break;
    }
    free(line);
    fclose(f);
}

static int cpu_device_count(void *backend) {
    (void)backend;
    return 1;
}

static bp_status check_index(cpu_backend *be, int index) {
    return bp_plugin_check_index(be->host, "cpu", index, 1, "cpu", NULL);
}

static bp_status cpu_device_get_props(void *backend, int index, bp_backend_device_props *props) {
    cpu_backend *be = backend;
    bp_backend_device_props p;
    bp_status st = check_index(be, index);
    if (st == BP_OK)
        st = bp_plugin_props_begin(be->host, "cpu", props, &p);
    if (st != BP_OK)
        return st;

    memcpy(p.description, be->description, sizeof p.description);
    p.total_memory = be->device.total_memory;
    /* No PEER_COPY: there is one device. No PINNED_HOST: host memory already is the
     * device's memory, there is nothing to pin. */
    p.capabilities = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS;
    p.dtypes = BP_DTYPE_BIT(BP_DTYPE_COUNT) - 1u;
    /* Streams are plain threads and the priority is only recorded: raising a
     * thread's priority needs privileges, and it would compete with the caller's
     * own threads. The range still gives callers written for CUDA-style priorities
     * a real high-priority value that the host clamps to. */
    p.stream_priority_least = 0;
    p.stream_priority_greatest = -1;

    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status cpu_device_open(void *backend, int index, void **out_device) {
    cpu_backend *be = backend;
    bp_status st = check_index(be, index);
    if (st != BP_OK)
        return st;
    *out_device = &be->device;
    return BP_OK;
}

static void cpu_device_close(void *device) {
    (void)device; /* the device lives in the backend state; streams are gone already */
}

/* ---- backend ---- */

static bp_status cpu_init(const bp_host_services *host, void **out_backend) {
    cpu_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->set_error(BP_ERR_OUT_OF_MEMORY,
                               "cpu: cannot allocate the backend state (%zu bytes)", sizeof *be);
    be->host = host;
    /* Not pinned: the cpu device is every core the process may use. */
    cpukit_device_init(&be->device, host, "cpu", "cpu", NULL, cpukit_host_total_memory());

    char model[128];
    read_cpu_model(model, sizeof model);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(be->description, sizeof be->description, "%.96s (%ld cores)", model,
             cores > 0 ? cores : 1L);
    *out_backend = be;
    return BP_OK;
}

static void cpu_shutdown(void *backend) {
    cpu_backend *be = backend;
    cpukit_device_fini(&be->device);
    free(be);
}

static const bp_device_vtable cpu_device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = cpu_device_count,
    .unavailable_reason = NULL,
    .get_props = cpu_device_get_props,
    .open = cpu_device_open,
    .close = cpu_device_close,
    .mem_info = cpukit_device_mem_info,
    .synchronize = cpukit_device_synchronize,
};

static const bp_plugin_descriptor cpu_descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = "cpu",
    .aliases = NULL,
    .version = "0.1.0",
    .priority = 0,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device = &cpu_device_vtable,
    .stream = &cpukit_stream_vtable,
    .event = &cpukit_event_vtable,
    .memory = &cpukit_memory_vtable, /* no peer copies: there is one device */
    .guard = NULL, /* no per-thread context to make current */
    .region = NULL,
};

/* Called by the core's loader; the built-in backend has no exported entry symbol. */
const bp_plugin_descriptor *bp_cpu_backend_descriptor(void) {
    return &cpu_descriptor;
}
