/* The process-wide registry of backends and their devices.
 *
 * Initialised once (pthread_once) on the first call that needs it: the built-in cpu
 * backend, then autoloaded plugins. Backends and devices are only ever added, never
 * removed, so a bp_device pointer stays valid until the process exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal_internal.h"
#include "dispatcher_internal.h"

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;

static bp_backend *backends[BP_MAX_DEVICES];
static int backend_count;
static bp_device *devices[BP_MAX_DEVICES];
static int device_total;

static void registry_init(void) {
    pthread_mutex_lock(&registry_mutex);
    bp_dispatcher_init();
    bp_loader_init_all();
    pthread_mutex_unlock(&registry_mutex);
}

void bp_registry_ensure_init(void) { pthread_once(&registry_once, registry_init); }

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

static void add_aliases(bp_backend *backend) {
    for (const char *const *alias = backend->desc->aliases; alias && *alias; alias++) {
        size_t len = strlen(*alias);
        if (len == 0 || len >= BP_BACKEND_NAME_MAX || strchr(*alias, ':')) {
            bp_log(BP_LOG_WARN, "registry", "backend '%s': alias '%s' is not a valid device type; "
                   "ignored", backend->name, *alias);
            continue;
        }
        bp_backend *owner = bp_registry_find_backend(*alias, len);
        if (owner || name_matches(backend->name, *alias, len)) {
            bp_log(BP_LOG_WARN, "registry", "backend '%s': alias '%s' is already taken by '%s'; "
                   "ignored", backend->name, *alias, owner ? owner->name : backend->name);
            continue;
        }
        if (backend->alias_count == BP_MAX_ALIASES) {
            bp_log(BP_LOG_WARN, "registry", "backend '%s': more than %d aliases; '%s' ignored",
                   backend->name, BP_MAX_ALIASES, *alias);
            continue;
        }
        snprintf(backend->aliases[backend->alias_count++], BP_BACKEND_NAME_MAX, "%s", *alias);
    }
}

static bp_device *make_device(bp_backend *backend, int index) {
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

bp_status bp_registry_add_backend(const bp_plugin_descriptor *desc, void *state, void *dl_handle,
                                  bp_backend **out_backend) {
    size_t name_len = strlen(desc->name);
    if (name_len == 0 || name_len >= BP_BACKEND_NAME_MAX)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "backend name '%s' must have 1 to %d characters",
                            desc->name, BP_BACKEND_NAME_MAX - 1);
    bp_backend *owner = bp_registry_find_backend(desc->name, name_len);
    if (owner)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "device type '%s' is already provided by backend '%s'", desc->name,
                            owner->name);
    if (backend_count == BP_MAX_DEVICES)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "too many backends (at most %d)", BP_MAX_DEVICES);

    bp_backend *backend = calloc(1, sizeof *backend);
    if (!backend)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate the backend record for '%s'",
                            desc->name);
    backend->desc = desc;
    backend->state = state;
    backend->dl_handle = dl_handle;
    memcpy(backend->name, desc->name, name_len + 1);
    backend->type_slot = bp_dispatcher_type_slot(backend->name);
    if (backend->type_slot < 0) {
        free(backend);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "too many device types (at most %d)",
                            BP_MAX_DEVICE_TYPES);
    }
    add_aliases(backend);

    int count = desc->device->count(state);
    if (count < 0)
        count = 0;
    if (count > BP_MAX_DEVICES - device_total) {
        bp_log(BP_LOG_WARN, "registry", "backend '%s' reports %d devices; only %d fit the registry",
               backend->name, count, BP_MAX_DEVICES - device_total);
        count = BP_MAX_DEVICES - device_total;
    }
    backend->devices = calloc(count > 0 ? (size_t)count : 1, sizeof *backend->devices);
    if (!backend->devices) {
        free(backend);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate the device list of '%s'",
                            desc->name);
    }
    for (int i = 0; i < count; i++) {
        bp_device *device = make_device(backend, i);
        if (!device)
            continue;
        device->ordinal = device_total;
        devices[device_total++] = device;
        backend->devices[backend->device_count++] = device;
    }
    backends[backend_count++] = backend;
    bp_log(BP_LOG_INFO, "registry", "backend '%s' %s: %d device(s)", backend->name, desc->version,
           backend->device_count);
    if (out_backend)
        *out_backend = backend;
    return BP_OK;
}

int bp_registry_device_count(void) {
    bp_registry_ensure_init();
    bp_registry_lock();
    int n = device_total;
    bp_registry_unlock();
    return n;
}

bp_device *bp_registry_device_at(int ordinal) {
    bp_registry_ensure_init();
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
