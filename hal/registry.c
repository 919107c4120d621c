/* The process-wide registry of backends and their devices.
 *
 * Initialised in three steps. The core (ops and the built-in cpu backend) runs under
 * pthread_once on the first call that needs it. Plugin discovery runs next, by that
 * first caller, without the registry lock: it finds, checks, dlopens and validates the
 * candidates and chooses among them, so that every chosen backend is listed here,
 * PENDING, with its name and aliases; no plugin's init runs. A backend's init, count
 * and get_props run when it is first needed (the loader lock serialises them; a second
 * thread asking for a backend whose init runs waits for it). What waits for what:
 *   - everything waits for the core (quick: no plugin code runs in it);
 *   - opening a device type other than "cpu" (by name or alias, BP_DEVICE),
 *     bp_kernel_register and bp_plugin_load wait until discovery has finished, then
 *     for the init of the backend they name (bp_plugin_load, and a name no backend
 *     has, whose error lists the types present: of every backend);
 *   - bp_device_count, bp_device_get and bp_plugin_count / get_info (bp-info) wait for
 *     discovery and for every found backend's init, run in list order;
 *   - opening "cpu", and ops, streams and memory on devices already open, never wait
 *     for discovery or any init: a slow plugin init does not stop them;
 *   - a plugin's own code (init, count, get_props, constructors) calling the API gets
 *     BP_ERR_INVALID_STATE instead of waiting for itself.
 * Backends and devices are only ever added, never removed (a backend whose init fails
 * is DROPPED: no longer found by name), so a bp_device pointer stays valid until the
 * process exits. Devices are listed by backend, in the order backends were added (the
 * built-in cpu, then discovery's order, then explicit loads), then by index, whichever
 * backend was initialised first. */
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

static bp_backend *backends[BP_MAX_DEVICES]; /* in the order they were added */
static int backend_count;
static int device_total;                     /* devices of READY backends; next slot */
static atomic_int pending_count;             /* PENDING backends: the fast path of ALL */

static void core_init(void) {
    bp_hal_client_get()->core_init();
    bp_loader_init_builtin();
}

/* Runs discovery on this thread if nobody has started it; else waits for it to finish
 * when asked to. */
static void start_or_wait(bool wait_for_discovery) {
    pthread_mutex_lock(&discovery_mutex);
    if (discovery == NOT_STARTED) {
        discovery = RUNNING;
        pthread_mutex_unlock(&discovery_mutex);
        bp_loader_discover_all();
        pthread_mutex_lock(&discovery_mutex);
        discovery = FINISHED;
        pthread_cond_broadcast(&discovery_finished);
    } else {
        while (wait_for_discovery && discovery != FINISHED)
            pthread_cond_wait(&discovery_finished, &discovery_mutex);
    }
    pthread_mutex_unlock(&discovery_mutex);
}

static void initialise_pending(void) {
    if (atomic_load_explicit(&pending_count, memory_order_acquire) > 0)
        bp_loader_initialise_all();
}

bp_status bp_registry_enter(const char *what, bp_registry_wait wait) {
    const char *running = bp_loader_running_plugin();
    if (running)
        return bp_set_error(BP_ERR_INVALID_STATE,
                            "%s was called from %s: a plugin must not call the backplane API "
                            "while the loader runs its code (it would wait for itself)",
                            what, running);
    pthread_once(&core_once, core_init);
    start_or_wait(wait != BP_WAIT_CORE);
    if (wait == BP_WAIT_ALL)
        initialise_pending();
    return BP_OK;
}

void bp_registry_ensure_init(void) {
    pthread_once(&core_once, core_init);
    /* From plugin code, discovery or an init is running on this thread: nothing to
     * start, and not waiting keeps it from waiting for itself. */
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

static bp_backend_readiness readiness(const bp_backend *backend) {
    return (bp_backend_readiness)atomic_load_explicit(&backend->readiness, memory_order_acquire);
}

bp_backend *bp_registry_find_backend(const char *name, size_t len) {
    for (int b = 0; b < backend_count; b++) {
        bp_backend *backend = backends[b];
        if (readiness(backend) == BP_BACKEND_DROPPED)
            continue;
        if (name_matches(backend->name, name, len))
            return backend;
        for (int a = 0; a < backend->alias_count; a++)
            if (name_matches(backend->aliases[a], name, len))
                return backend;
    }
    return NULL;
}

bp_backend *bp_registry_ready_backend(const char *name, size_t len) {
    for (;;) {
        bp_registry_lock();
        bp_backend *backend = bp_registry_find_backend(name, len);
        bool pending = backend && readiness(backend) == BP_BACKEND_PENDING;
        bp_registry_unlock();
        if (!pending)
            return backend;
        /* It becomes READY or DROPPED; look again, as an explicit load may have taken
         * the name meanwhile. */
        bp_loader_initialise(backend);
    }
}

bp_backend *bp_registry_next_pending(void) {
    bp_registry_lock();
    bp_backend *found = NULL;
    for (int b = 0; b < backend_count && !found; b++)
        if (readiness(backends[b]) == BP_BACKEND_PENDING)
            found = backends[b];
    bp_registry_unlock();
    return found;
}

void bp_registry_drop_alias(bp_backend *backend, const char *alias) {
    int kept = 0;
    for (int a = 0; a < backend->alias_count; a++)
        if (strcasecmp(backend->aliases[a], alias) != 0)
            memmove(backend->aliases[kept++], backend->aliases[a], BP_BACKEND_NAME_MAX);
    backend->alias_count = kept;
}

bp_status bp_registry_new_backend(const bp_plugin_descriptor *desc, void *dl_handle,
                                  const char *name, const char *version,
                                  bp_backend **out_backend) {
    bp_backend *backend = calloc(1, sizeof *backend);
    if (!backend)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate the backend record for '%s'",
                            name);
    backend->desc = desc;
    backend->dl_handle = dl_handle;
    atomic_init(&backend->readiness, BP_BACKEND_PENDING);
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

bp_status bp_registry_add_pending(bp_backend *backend) {
    bp_registry_lock();
    if (backend_count == BP_MAX_DEVICES) {
        bp_registry_unlock();
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "registry full: no room for backend '%s' "
                            "(at most %d backends)", backend->name, BP_MAX_DEVICES);
    }
    backends[backend_count++] = backend;
    atomic_fetch_add_explicit(&pending_count, 1, memory_order_release);
    bp_registry_unlock();
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

bp_status bp_registry_publish(bp_backend *backend, bp_device **new_devices, int count) {
    bp_registry_lock();
    if (count > BP_MAX_DEVICES - device_total) {
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
        device->slot = device_total++;
        backend->devices[backend->device_count++] = device;
    }
    atomic_store_explicit(&backend->readiness, BP_BACKEND_READY, memory_order_release);
    atomic_fetch_sub_explicit(&pending_count, 1, memory_order_release);
    bp_registry_unlock();
    bp_log(BP_LOG_INFO, "registry", "backend '%s' %s: %d device(s)", backend->name,
           backend->version, count);
    return BP_OK;
}

void bp_registry_drop(bp_backend *backend) {
    bp_registry_lock();
    atomic_store_explicit(&backend->readiness, BP_BACKEND_DROPPED, memory_order_release);
    atomic_fetch_sub_explicit(&pending_count, 1, memory_order_release);
    bp_registry_unlock();
}

int bp_registry_device_count(void) {
    bp_registry_lock();
    int n = device_total;
    bp_registry_unlock();
    return n;
}

bp_device *bp_registry_device_at(int ordinal) {
    bp_device *device = NULL;
    bp_registry_lock();
    /* Only READY backends have devices. */
    for (int b = 0, first = 0; b < backend_count && !device && ordinal >= first; b++) {
        const bp_backend *backend = backends[b];
        if (ordinal < first + backend->device_count)
            device = backend->devices[ordinal - first];
        first += backend->device_count;
    }
    bp_registry_unlock();
    return device;
}

void bp_registry_describe_types(char *buf, size_t size) {
    initialise_pending();
    size_t used = 0;
    buf[0] = '\0';
    bp_registry_lock();
    for (int b = 0; b < backend_count && used < size; b++) {
        const bp_backend *backend = backends[b];
        if (readiness(backend) != BP_BACKEND_READY)
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", backend->name);
        used += n > 0 ? (size_t)n : 0;
        for (int a = 0; a < backend->alias_count && used < size; a++) {
            n = snprintf(buf + used, size - used, "%s%s%s", a ? "/" : " (alias ",
                         backend->aliases[a], a + 1 == backend->alias_count ? ")" : "");
            used += n > 0 ? (size_t)n : 0;
        }
    }
    bp_registry_unlock();
}
