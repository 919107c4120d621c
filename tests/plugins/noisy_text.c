/* noisy: a plugin whose strings test what the host does with text a plugin hands it
 * (test_plugin_text.c): log lines and error messages with control bytes, longer than
 * any buffer, with a format that is not NUL-terminated within the host's bound
 * (BP_PLUGIN_TEXT_MAX, 4096 bytes) or NULL; a device description without a NUL; kernel
 * registrations with unterminated or unprintable names. With NOISY_NO_DEVICES it finds
 * no devices and gives an unprintable reason. Devices: noisy:0 opens (a stub: nothing
 * runs on it); opening noisy:1 to noisy:4 fails with one kind of message each. */
#include <stddef.h>
#include <string.h>

#include <backplane/plugin.h>

#ifdef NOISY_NO_DEVICES
#define PLUGIN_NAME "noisynodev"
#define DEVICE_COUNT 0
#else
#define PLUGIN_NAME "noisy"
#define DEVICE_COUNT 5
#endif

/* Well past the host's bound; the last byte is the only NUL, so reading the whole
 * array stays inside it (the test must not itself overrun memory). */
#define UNTERMINATED_LEN 8192

static const bp_host_services *host;
static int backend_state, device_state, queue_state;
static char unterminated[UNTERMINATED_LEN];
static char long_text[3000 + 5];

/* The host's log and set_error without their format attribute, so that a format that is
 * not a literal (or NULL) compiles: exactly what the host must survive. */
typedef void (*log_fn)(bp_log_level, const char *, const char *, ...);
typedef bp_status (*set_error_fn)(bp_status, const char *, ...);

#ifndef NOISY_NO_DEVICES
static bp_status noisy_kernel(const bp_kernel_call *call) {
    (void)call;
    return BP_OK;
}

static void log_noise(void) {
    log_fn log_any = host->log;
    host->log(BP_LOG_WARN, PLUGIN_NAME,
              "control: [\x1b[31m] bell [\a] newline [\n]FAKE backplane[cpu] error: forged "
              "[\r] del [\x7f] end");
    host->log(BP_LOG_WARN, PLUGIN_NAME, "long: %s", long_text);
    log_any(BP_LOG_WARN, PLUGIN_NAME, unterminated);
    log_any(BP_LOG_WARN, PLUGIN_NAME, NULL);
    host->log(BP_LOG_WARN, PLUGIN_NAME "\x1b[2J\n", "a source with control bytes");
    host->log(BP_LOG_WARN, unterminated, "an unterminated source");
    /* Names for register_kernel: the host must not read past a bound or echo them raw. */
    bp_status st = host->register_kernel(PLUGIN_NAME, unterminated, BP_DTYPE_F32,
                                         noisy_kernel, NULL, 0);
    host->log(BP_LOG_WARN, PLUGIN_NAME, "register_kernel(unterminated op name) -> %d", (int)st);
    st = host->register_kernel(PLUGIN_NAME, "fill\x1b[2J", BP_DTYPE_F32, noisy_kernel, NULL, 0);
    host->log(BP_LOG_WARN, PLUGIN_NAME, "register_kernel(op name with control bytes) -> %d",
              (int)st);
    st = host->register_kernel(unterminated, "fill", BP_DTYPE_F32, noisy_kernel, NULL, 0);
    host->log(BP_LOG_WARN, PLUGIN_NAME, "register_kernel(unterminated backend name) -> %d",
              (int)st);
}
#endif

static bp_status noisy_init(const bp_host_services *services, void **out_backend) {
    host = services;
    memset(unterminated, 'A', sizeof unterminated - 1);
    memset(long_text, 'y', sizeof long_text - 5);
    memcpy(long_text + sizeof long_text - 5, "TAIL", 5);
#ifndef NOISY_NO_DEVICES
    log_noise();
#endif
    *out_backend = &backend_state;
    return BP_OK;
}

static int noisy_count(void *backend) { return DEVICE_COUNT; }

static const char *noisy_unavailable(void *backend) {
    return "no \x1b[31mhardware\n(forged line)";
}

static bp_status noisy_get_props(void *backend, int index, bp_backend_device_props *props) {
    /* No NUL anywhere in the description, and control bytes in it. */
    memset(props->description, 'd', sizeof props->description);
    memcpy(props->description, "desc\x1b[31m\n", 10);
    /* The same in the features (ABI 1.5). */
    memset(props->features, 'f', sizeof props->features);
    memcpy(props->features, "sve\x1b[31m\n", 9);
    props->total_memory = 1 << 20;
    props->dtypes = 1u << BP_DTYPE_F32;
    return BP_OK;
}

static bp_status noisy_open(void *backend, int index, void **out_device) {
    set_error_fn set_error_any = host->set_error;
    switch (index) {
    case 0: *out_device = &device_state; return BP_OK;
    case 1: return host->set_error(BP_ERR_BACKEND, "control: [\x1b[31m] newline [\n] tab [\t]");
    case 2: return host->set_error(BP_ERR_BACKEND, "long: %s", long_text);
    case 3: return set_error_any(BP_ERR_BACKEND, unterminated);
    default: return set_error_any(BP_ERR_BACKEND, NULL);
    }
}

static void noisy_close(void *device) {}
static bp_status noisy_mem_info(void *device, uint64_t *out_free, uint64_t *out_total) {
    *out_free = *out_total = 1 << 20;
    return BP_OK;
}
static bp_status noisy_ok(void *handle) { return BP_OK; }
static bp_status noisy_create(void *device, int arg, void **out_handle) {
    *out_handle = &queue_state;
    return BP_OK;
}
static void noisy_destroy(void *handle) {}
static bp_status noisy_wait(void *stream, void *event) { return BP_OK; }
static bp_status noisy_record(void *event, void *stream) { return BP_OK; }
static bp_status noisy_alloc(void *device, size_t size, void **out_ptr) {
    return BP_ERR_OUT_OF_MEMORY;
}
static void noisy_free(void *device, void *ptr) {}
static bp_status noisy_copy(void *stream, void *dst, const void *src, size_t size,
                            bp_copy_kind kind) {
    return BP_ERR_UNSUPPORTED;
}
static bp_status noisy_memset(void *stream, void *ptr, int value, size_t size) {
    return BP_ERR_UNSUPPORTED;
}

static const bp_device_vtable device_vtable = {
    .struct_size = sizeof(bp_device_vtable),
    .count = noisy_count,
    .unavailable_reason = noisy_unavailable,
    .get_props = noisy_get_props,
    .open = noisy_open,
    .close = noisy_close,
    .mem_info = noisy_mem_info,
    .synchronize = noisy_ok,
};

static const bp_stream_vtable stream_vtable = {
    .struct_size = sizeof(bp_stream_vtable),
    .create = noisy_create,
    .destroy = noisy_destroy,
    .synchronize = noisy_ok,
    .query = noisy_ok,
    .wait_event = noisy_wait,
};

static const bp_event_vtable event_vtable = {
    .struct_size = sizeof(bp_event_vtable),
    .create = noisy_create,
    .destroy = noisy_destroy,
    .record = noisy_record,
    .query = noisy_ok,
    .synchronize = noisy_ok,
};

static const bp_memory_vtable memory_vtable = {
    .struct_size = sizeof(bp_memory_vtable),
    .alloc = noisy_alloc,
    .free = noisy_free,
    .copy_async = noisy_copy,
    .memset_async = noisy_memset,
};

static const bp_plugin_descriptor descriptor = {
    .struct_size = sizeof(bp_plugin_descriptor),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .name = PLUGIN_NAME,
    .version = "0.0.1",
    .init = noisy_init,
    .device = &device_vtable,
    .stream = &stream_vtable,
    .event = &event_vtable,
    .memory = &memory_vtable,
};

BP_PLUGIN_EXPORT const bp_plugin_descriptor *bp_plugin_entry(void) { return &descriptor; }
