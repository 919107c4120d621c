/* Plugins that attack the loader, one way each, for the loader hardening tests. One
 * source; the build picks the attack with a definition:
 *   HOSTILE_ALIASES       "aaa": claims the names of real plugins (hpu, opencl, cuda,
 *                         cpu), testdev's alias tdev, its own name, and "shared"
 *   HOSTILE_ALIAS_SHARED  "bbb": claims "shared" too, and an alias of its own
 *   HOSTILE_REENTRANT     "reentrant": calls the public API from init and reports what
 *                         it got as its unavailable reason (it has no devices)
 *   HOSTILE_GATED         "gated": init writes a byte to the fd in BP_TEST_NOTIFY_FD,
 *                         then blocks reading the fd in BP_TEST_GATE_FD
 *   HOSTILE_CRASH         "crash": init aborts (SIGABRT)
 *   HOSTILE_EXIT          "exiter": init calls exit(7)
 *   HOSTILE_MANY          "many": reports a million devices ("many<x>" with
 *                         HOSTILE_MANY_SUFFIX=<x>, to fill the registry)
 *   HOSTILE_STRINGS       "strings": a version string with no terminator that runs
 *                         into an unreadable page, and a device description that fills
 *                         its array with no terminator
 *   HOSTILE_STRINGS_NODEV "stringsnodev": no devices, and an unavailable reason like the
 *                         version above
 * The devices (one unless said otherwise) open and report memory, enough for the host
 * to list them and read their properties; nothing else works. Like a vendor's plugin,
 * it includes only <backplane/plugin.h> and links no libbackplane: the re-entrant one
 * finds the public API in the process with dlsym. */
#define _GNU_SOURCE /* RTLD_DEFAULT */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <backplane/plugin.h>

#if defined(HOSTILE_ALIASES)
#define PLUGIN_NAME "aaa"
#elif defined(HOSTILE_ALIAS_SHARED)
#define PLUGIN_NAME "bbb"
#elif defined(HOSTILE_REENTRANT)
#define PLUGIN_NAME "reentrant"
#elif defined(HOSTILE_GATED)
#define PLUGIN_NAME "gated"
#elif defined(HOSTILE_CRASH)
#define PLUGIN_NAME "crash"
#elif defined(HOSTILE_EXIT)
#define PLUGIN_NAME "exiter"
#elif defined(HOSTILE_MANY) && defined(HOSTILE_MANY_SUFFIX)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define PLUGIN_NAME "many" STRINGIFY(HOSTILE_MANY_SUFFIX)
#elif defined(HOSTILE_MANY)
#define PLUGIN_NAME "many"
#elif defined(HOSTILE_STRINGS)
#define PLUGIN_NAME "strings"
#elif defined(HOSTILE_STRINGS_NODEV)
#define PLUGIN_NAME "stringsnodev"
#else
#error "define one of the cases listed at the top"
#endif

#if defined(HOSTILE_REENTRANT) || defined(HOSTILE_STRINGS_NODEV)
#define DEVICES 0
#elif defined(HOSTILE_MANY)
#define DEVICES 1000000
#else
#define DEVICES 1
#endif

static const bp_host_services *g_host;
static int handle; /* the address is every handle this plugin hands out */

#ifdef HOSTILE_REENTRANT
static char report[2048] = "init did not run";

typedef const char *(*last_error_fn)(void);

/* Appends "<call>=<result> (<last error>); " to the report. */
static void note(const char *call, long result) {
    last_error_fn last_error = (last_error_fn)dlsym(RTLD_DEFAULT, "bp_last_error");
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s=%ld (%s); ", call, result,
             last_error ? last_error() : "no bp_last_error");
}

static void call_public_api(void) {
    report[0] = '\0';
    int (*device_count)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "bp_device_count");
    int (*plugin_count)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "bp_plugin_count");
    bp_status (*device_open)(const char *, void **) =
        (bp_status(*)(const char *, void **))dlsym(RTLD_DEFAULT, "bp_device_open");
    bp_status (*plugin_load)(const char *) =
        (bp_status(*)(const char *))dlsym(RTLD_DEFAULT, "bp_plugin_load");
    if (!device_count || !plugin_count || !device_open || !plugin_load) {
        snprintf(report, sizeof report, "the public API is not in the process");
        return;
    }
    note("bp_device_count", device_count());
    void *dev = NULL;
    note("bp_device_open(cpu)", device_open("cpu", &dev));
    note("bp_plugin_count", plugin_count());
    note("bp_plugin_load", plugin_load("/nonexistent/libbp_x.so"));
}
#endif

#if defined(HOSTILE_STRINGS) || defined(HOSTILE_STRINGS_NODEV)
/* A page of 'x' with no terminator, followed by a page that cannot be read: reading
 * the string without a bound faults. */
static const char *unterminated(void) {
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return "mmap failed";
    memset(p, 'x', (size_t)page);
    mprotect(p + page, (size_t)page, PROT_NONE);
    return p;
}
#endif

#ifdef HOSTILE_GATED
static int fd_from_env(const char *name) {
    const char *value = getenv(name);
    return value ? atoi(value) : -1;
}
#endif

static bp_status hostile_init(const bp_host_services *host, void **out_backend) {
    g_host = host;
#if defined(HOSTILE_REENTRANT)
    call_public_api();
#elif defined(HOSTILE_GATED)
    char byte = 'i';
    if (write(fd_from_env("BP_TEST_NOTIFY_FD"), &byte, 1) != 1 ||
        read(fd_from_env("BP_TEST_GATE_FD"), &byte, 1) != 1)
        return host->set_error(BP_ERR_INVALID_STATE, "gated: the test's pipes are not there");
#elif defined(HOSTILE_CRASH)
    abort();
#elif defined(HOSTILE_EXIT)
    exit(7);
#endif
    *out_backend = &handle;
    return BP_OK;
}

static int hostile_count(void *backend) { return DEVICES; }

static const char *hostile_unavailable(void *backend) {
#if defined(HOSTILE_REENTRANT)
    return report;
#elif defined(HOSTILE_STRINGS_NODEV)
    return unterminated();
#else
    return NULL;
#endif
}

static bp_status hostile_get_props(void *backend, int index, bp_backend_device_props *props) {
    bp_backend_device_props p = {.struct_size = props->struct_size};
#ifdef HOSTILE_STRINGS
    memset(p.description, 'd', sizeof p.description);
#else
    snprintf(p.description, sizeof p.description, PLUGIN_NAME " device %d", index);
#endif
    p.total_memory = 1u << 20;
    p.dtypes = BP_DTYPE_BIT(BP_DTYPE_F32);
    bp_props_copy_out(props, &p);
    return BP_OK;
}

static bp_status hostile_open(void *backend, int index, void **out_device) {
    *out_device = &handle;
    return BP_OK;
}
static void hostile_close(void *device) {}
static bp_status hostile_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    *out_free = *out_total = 1u << 20;
    return BP_OK;
}
static bp_status hostile_ok(void *handle_) { return BP_OK; }
static bp_status hostile_create(void *device, int arg, void **out_handle) {
    *out_handle = &handle;
    return BP_OK;
}
static void hostile_destroy(void *handle_) {}
static bp_status hostile_unsupported(void) {
    return g_host->set_error(BP_ERR_UNSUPPORTED, PLUGIN_NAME ": only listing works");
}
static bp_status hostile_wait(void *stream, void *event) { return hostile_unsupported(); }
static bp_status hostile_record(void *event, void *stream) { return hostile_unsupported(); }
static bp_status hostile_alloc(void *device, size_t size, void **out_ptr) {
    return hostile_unsupported();
}
static void hostile_free(void *device, void *ptr) {}
static bp_status hostile_copy(void *stream, void *dst, const void *src, size_t size,
                              bp_copy_kind kind) {
    return hostile_unsupported();
}
static bp_status hostile_memset(void *stream, void *ptr, int value, size_t size) {
    return hostile_unsupported();
}

static const bp_device_vtable device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = hostile_count,
    .unavailable_reason = hostile_unavailable,
    .get_props = hostile_get_props,
    .open = hostile_open,
    .close = hostile_close,
    .mem_info = hostile_mem_info,
    .synchronize = hostile_ok,
};

static const bp_stream_vtable stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = hostile_create,
    .destroy = hostile_destroy,
    .synchronize = hostile_ok,
    .query = hostile_ok,
    .wait_event = hostile_wait,
};

static const bp_event_vtable event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = hostile_create,
    .destroy = hostile_destroy,
    .record = hostile_record,
    .query = hostile_ok,
    .synchronize = hostile_ok,
};

static const bp_memory_vtable memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = hostile_alloc,
    .free = hostile_free,
    .copy_async = hostile_copy,
    .memset_async = hostile_memset,
};

#if defined(HOSTILE_ALIASES)
static const char *const aliases[] = {"hpu", "opencl", "cuda", "cpu",  "tdev",
                                      "aaa", "shared", "ok_a", NULL};
#define ALIASES aliases
#elif defined(HOSTILE_ALIAS_SHARED)
static const char *const aliases[] = {"shared", "ok_b", NULL};
#define ALIASES aliases
#else
#define ALIASES NULL
#endif

/* Not const: the strings case fills the version in when the host asks. */
static bp_plugin_descriptor descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = PLUGIN_NAME,
    .aliases = ALIASES,
    .version = "0.0.1",
    .init = hostile_init,
    .device = &device_vtable,
    .stream = &stream_vtable,
    .event = &event_vtable,
    .memory = &memory_vtable,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) {
#ifdef HOSTILE_STRINGS
    descriptor.version = unterminated();
#endif
    return &descriptor;
}
