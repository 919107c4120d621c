/* The process-wide registry of backends and their devices.
 *
 * Initialised in two steps on the first call that needs it: the core (ops and the
 * built-in cpu backend) under pthread_once, then plugin discovery, run by that first
 * caller without the registry lock. What waits for what:
 *   - everything waits for the core (quick: no plugin code runs in it);
 *   - bp_device_count, bp_device_get, bp_plugin_*, bp_kernel_register and opening any
 *     device type but "cpu" wait until discovery has finished;
 *   - opening "cpu", and ops, streams and memory on devices already open, never wait
 *     for discovery: a slow plugin init does not stop them;
 *   - a plugin's own code (init, count, get_props, constructors) calling the API gets
 *     BP_ERR_INVALID_STATE instead of waiting for itself.
 * Backends and devices are only ever added, never removed, so a bp_device pointer
 * stays valid until the process exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal_internal.h"

static pthread_once_t core_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;

typedef enum discovery_state { NOT_STARTED, RUNNING, FINISHED } discovery_state;
static pthread_mutex_t discovery_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t discovery_finished = PTHREAD_COND_INITIALIZER;
static discovery_state discovery;

static bp_backend *backends[BP_MAX_DEVICES];
static int backend_count;
static bp_device *devices[BP_MAX_DEVICES];
static int device_total;

static void core_init(void) {
    bp_hal_client_get()->core_init();
    bp_loader_init_builtin();
}

/* Runs discovery on this thread if nobody has started it; else waits for it to finish
 * when asked to. */
static void start_or_wait(bool wait_for_plugins) {
    pthread_mutex_lock(&discovery_mutex);
    if (discovery == NOT_STARTED) {
        discovery = RUNNING;
        pthread_mutex_unlock(&discovery_mutex);
        bp_loader_discover_all();
        pthread_mutex_lock(&discovery_mutex);
        discovery = FINISHED;
        pthread_cond_broadcast(&discovery_finished);
    } else {
        while (wait_for_plugins && discovery != FINISHED)
            pthread_cond_wait(&discovery_finished, &discovery_mutex);
    }
    pthread_mutex_unlock(&discovery_mutex);
}

bp_status bp_registry_enter(const char *what, bool wait_for_plugins) {
    const char *running = bp_loader_running_plugin();
    if (running)
        return bp_set_error(BP_ERR_INVALID_STATE,
                            "%s was called from %s: a plugin must not call the backplane API "
                            "while the loader runs its code (it would wait for itself)",
                            what, running);
    pthread_once(&core_once, core_init);
    start_or_wait(wait_for_plugins);
    return BP_OK;
}

void bp_registry_ensure_init(void) {
    pthread_once(&core_once, core_init);
    /* From plugin code, discovery is running on this thread: nothing to start, and
     * not waiting keeps it from waiting for itself. */
    if (!bp_loader_running_plugin())
        start_or_wait(false);
}

bp_status bp_registry_before_discovery(void (*fn)(void *ctx), void *ctx) {
    pthread_mutex_lock(&discovery_mutex);
    bool before = discovery == NOT_STARTED;
    if (before)
        fn(ctx);
    pthread_mutex_unlock(&discovery_mutex);
    return before ? BP_OK : BP_ERR_INVALID_STATE;
}

void bp_registry_lock(void) { pthread_mutex_lock(&registry_mutex); }

void bp_registry_unlock(void) { pthread_mutex_unlock(&registry_mutex); }

static bool name_matches(const char *candidate, const char *name, size_t len) {
    return strlen(candidate) == len && strncasecmp(candidate, name, len) == 0;
}

bp_backend *bp_registry_find_backend(const char *name, size_t len) {
    for (int b = 0; b < backend_count; b++) {
        bp_backend *backend = backends[b];
        if (name_matches(backend->name, name, len))
            return backend;
        for (int a = 0; a < backend->alias_count; a++)
            if (name_matches(backend->aliases[a], name, len))
                return backend;
    }
    return NULL;
}

void bp_registry_drop_alias(bp_backend *backend, const char *alias) {
    int kept = 0;
    for (int a = 0; a < backend->alias_count; a++)
        if (strcasecmp(backend->aliases[a], alias) != 0)
            memmove(backend->aliases[kept++], backend->aliases[a], BP_BACKEND_NAME_MAX);
    backend->alias_count = kept;
}

bp_status bp_registry_new_backend(const bp_plugin_descriptor *desc, void *state, void *dl_handle,
                                  const char *name, const char *version, bp_backend **out_backend) {
    bp_backend *backend = calloc(1, sizeof *backend);
    if (!backend)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate the backend record for '%s'",
                            name);
    backend->desc = desc;
    backend->state = state;
    backend->dl_handle = dl_handle;
    snprintf(backend->name, sizeof backend->name, "%s", name);
    snprintf(backend->version, sizeof backend->version, "%s", version);
    backend->unavailable_reason = "";
    backend->type_slot = bp_device_type_slot(backend->name);
    if (backend->type_slot < 0) {
        free(backend);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "too many device types (at most %d)",
                            BP_MAX_DEVICE_TYPES);
    }
    *out_backend = backend;
    return BP_OK;
}

bp_device *bp_registry_make_device(bp_backend *backend, int index) {
    bp_device *device = calloc(1, sizeof *device);
    if (!device)
        return NULL;
    device->props.struct_size = sizeof device->props;
    bp_status st = backend->desc->device->get_props(backend->state, index, &device->props);
    if (st != BP_OK) {
        bp_log(BP_LOG_WARN, "registry", "%s:%d: cannot read properties (%s: %s); device skipped",
               backend->name, index, bp_status_str(st), bp_last_error());
        free(device);
        return NULL;
    }
    /* The plugin may have filled the whole array. */
    device->props.description[sizeof device->props.description - 1] = '\0';
    device->props.features[sizeof device->props.features - 1] = '\0';
    if ((device->props.capabilities & BP_CAP_REGIONS) && !backend->desc->region) {
        bp_log(BP_LOG_ERROR, "registry",
               "%s:%d reports BP_CAP_REGIONS but the plugin has no region vtable; the "
               "core executor runs its regions", backend->name, index);
        device->props.capabilities &= ~(uint32_t)(BP_CAP_REGIONS | BP_CAP_REGION_STREAMS);
    }
    device->backend = backend;
    device->index = index;
    snprintf(device->name, sizeof device->name, "%s:%d", backend->name, index);
    pthread_mutex_init(&device->open_lock, NULL);
    atomic_init(&device->opened, false);
    return device;
}

void bp_registry_free_device(bp_device *device) {
    pthread_mutex_destroy(&device->open_lock);
    free(device);
}

int bp_registry_room(void) {
    bp_registry_lock();
    int room = BP_MAX_DEVICES - device_total;
    bp_registry_unlock();
    return room;
}

bp_status bp_registry_add_backend(bp_backend *backend, bp_device **new_devices, int count) {
    bp_registry_lock();
    if (backend_count == BP_MAX_DEVICES || count > BP_MAX_DEVICES - device_total) {
        bp_registry_unlock();
        return bp_set_error(BP_ERR_OUT_OF_MEMORY,
                            "registry full: no room for backend '%s' and its %d device(s)",
                            backend->name, count);
    }
    backend->devices = calloc(count > 0 ? (size_t)count : 1, sizeof *backend->devices);
    if (!backend->devices) {
        bp_registry_unlock();
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate the device list of '%s'",
                            backend->name);
    }
    for (int i = 0; i < count; i++) {
        bp_device *device = new_devices[i];
        device->ordinal = device_total;
        devices[device_total++] = device;
        backend->devices[backend->device_count++] = device;
    }
    backends[backend_count++] = backend;
    bp_registry_unlock();
    bp_log(BP_LOG_INFO, "registry", "backend '%s' %s: %d device(s)", backend->name,
           backend->version, count);
    return BP_OK;
}

int bp_registry_device_count(void) {
    if (bp_registry_enter("bp_device_count", true) != BP_OK)
        return 0;
    bp_registry_lock();
    int n = device_total;
    bp_registry_unlock();
    return n;
}

bp_device *bp_registry_device_at(int ordinal) {
    bp_registry_lock();
    bp_device *device = ordinal >= 0 && ordinal < device_total ? devices[ordinal] : NULL;
    bp_registry_unlock();
    return device;
}

void bp_registry_describe_types(char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int b = 0; b < backend_count && used < size; b++) {
        const bp_backend *backend = backends[b];
        int n = snprintf(buf + used, size - used, "%s%s", b ? ", " : "", backend->name);
        used += n > 0 ? (size_t)n : 0;
        for (int a = 0; a < backend->alias_count && used < size; a++) {
            n = snprintf(buf + used, size - used, "%s%s%s", a ? "/" : " (alias ",
                         backend->aliases[a], a + 1 == backend->alias_count ? ")" : "");
            used += n > 0 ? (size_t)n : 0;
        }
    }
}
