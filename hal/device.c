/* Devices: name parsing, enumeration, properties, lazy opening. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal_internal.h"
#include "text.h"

bp_status bp_device_ensure_open(bp_device *device) {
    if (atomic_load_explicit(&device->opened, memory_order_acquire))
        return BP_OK;
    pthread_mutex_lock(&device->open_lock);
    bp_status st = BP_OK;
    if (!atomic_load_explicit(&device->opened, memory_order_relaxed)) {
        const bp_plugin_descriptor *desc = device->backend->desc;
        st = desc->device->open(device->backend->state, device->index, &device->handle);
        if (st == BP_OK) {
            st = bp_allocator_create(device, &device->allocator);
            if (st == BP_OK)
                st = bp_stream_create_default(device, &device->default_stream);
            if (st == BP_OK)
                atomic_store_explicit(&device->opened, true, memory_order_release);
            /* A failed allocator or stream leaves the handle open for the next try;
             * the allocator, once made, is kept (it holds nothing yet). */
        }
        if (st != BP_OK) {
            char context[BP_NAME_MAX + 16];
            snprintf(context, sizeof context, "opening %s", device->name);
            bp_error_prefix(st, context);
        }
    }
    pthread_mutex_unlock(&device->open_lock);
    return st;
}

/* Splits "type[:index]" into the length of the type and the index text (digits with an
 * optional '-'; NULL when absent). Only the syntax is checked here: the value, however
 * large or negative, is compared with the devices present. */
static bp_status parse_device_name(const char *name, size_t *out_type_len,
                                   const char **out_index) {
    size_t len = strlen(name);
    if (len == 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "empty device name; expected 'type' or 'type:index', e.g. 'cpu' or "
                            "'cuda:1'");
    if (len >= BP_NAME_MAX)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "device name of %zu characters is too long "
                            "(at most %d)", len, BP_NAME_MAX - 1);
    size_t type_len = 0;
    while (name[type_len] && (isalnum((unsigned char)name[type_len]) || name[type_len] == '_'))
        type_len++;
    if (type_len == 0 || (name[type_len] != '\0' && name[type_len] != ':'))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "malformed device name '%s'; expected 'type' or 'type:index' with a "
                            "type of letters, digits and '_', e.g. 'cuda:1'", name);
    *out_type_len = type_len;
    *out_index = NULL;
    if (name[type_len] == ':') {
        const char *index = name + type_len + 1;
        const char *digits = index + (*index == '-');
        size_t ndigits = strspn(digits, "0123456789");
        if (ndigits == 0 || digits[ndigits] != '\0')
            return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                "malformed device index in '%s'; expected a decimal number after "
                                "':', e.g. 'cuda:1'", name);
        *out_index = index;
    }
    return BP_OK;
}

/* The index text as an int; false when negative or beyond INT_MAX (out of range for
 * any backend). */
static bool index_value(const char *text, int *out) {
    if (text == NULL) {
        *out = 0;
        return true;
    }
    if (*text == '-')
        return false;
    long long value = 0;
    for (; *text; text++) {
        value = value * 10 + (*text - '0');
        if (value > INT_MAX)
            return false;
    }
    *out = (int)value;
    return true;
}

/* Finds the device, initialising its backend first if that has not run yet. */
static bp_status lookup_device(const char *name, size_t type_len, const char *index_text,
                               bp_device **out_device) {
    int index = 0;
    bool in_range = index_value(index_text, &index);
    bp_backend *backend = bp_registry_ready_backend(name, type_len);
    if (!backend) {
        char types[512];
        bp_registry_describe_types(types, sizeof types);
        return bp_set_error(BP_ERR_NOT_FOUND, "unknown device type '%.*s' in '%s'; types present: %s",
                            (int)type_len, name, name, types);
    }
    bp_registry_lock();
    bp_device *found = NULL;
    for (int i = 0; in_range && i < backend->device_count; i++)
        if (backend->devices[i]->index == index)
            found = backend->devices[i];
    int count = backend->device_count;
    bp_registry_unlock();
    if (!found) {
        if (count == 0) {
            /* The reason as the plugin gave it at registration, copied with a bound. */
            char reason[512];
            const char *why = bp_text_from_plugin(backend->unavailable_reason, reason,
                                                  sizeof reason);
            return bp_set_error(BP_ERR_NOT_FOUND, "device '%s' not found: backend '%s' has no "
                                "devices%s%s%s", name, backend->name, *why ? " (" : "", why,
                                *why ? ")" : "");
        }
        return bp_set_error(BP_ERR_NOT_FOUND, "device '%s' not found: index %s is out of range: "
                            "backend '%s' has %d device(s), %s:0 to %s:%d", name,
                            index_text ? index_text : "0", backend->name, count, backend->name,
                            backend->name, count - 1);
    }
    *out_device = found;
    return BP_OK;
}

bp_status bp_device_open(const char *name, bp_device **out_device) {
    if (!name || !out_device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_open: %s is NULL",
                            !name ? "name" : "out_device");
    size_t type_len = 0;
    const char *index_text = NULL;
    bp_status st = parse_device_name(name, &type_len, &index_text);
    if (st != BP_OK)
        return st;
    /* The built-in cpu is there once the core is up: opening it waits neither for
     * discovery nor for any plugin's init. Other types may come from plugins: their
     * names are known once discovery has finished, and lookup_device initialises the
     * one asked for. */
    bool builtin = type_len == 3 && strncasecmp(name, "cpu", 3) == 0;
    st = bp_registry_enter("bp_device_open", builtin ? BP_WAIT_CORE : BP_WAIT_DISCOVERY);
    if (st != BP_OK)
        return st;
    bp_device *device = NULL;
    st = lookup_device(name, type_len, index_text, &device);
    if (st == BP_OK)
        st = bp_device_ensure_open(device);
    if (st == BP_OK)
        *out_device = device;
    return st;
}

bp_status bp_device_default(bp_device **out_device) {
    if (!out_device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_default: out_device is NULL");
    const char *name = getenv("BP_DEVICE");
    if (!name || !*name)
        return bp_device_open("cpu", out_device);
    bp_status st = bp_device_open(name, out_device);
    return st == BP_OK ? st : bp_error_prefix(st, "BP_DEVICE");
}

int bp_device_count(void) {
    if (bp_registry_enter("bp_device_count", BP_WAIT_ALL) != BP_OK)
        return 0;
    return bp_registry_device_count();
}

bp_status bp_device_get(int ordinal, bp_device **out_device) {
    if (!out_device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_get: out_device is NULL");
    bp_status st = bp_registry_enter("bp_device_get", BP_WAIT_ALL);
    if (st != BP_OK)
        return st;
    bp_device *device = bp_registry_device_at(ordinal);
    if (!device)
        return bp_set_error(BP_ERR_NOT_FOUND, "no device at ordinal %d; there are %d device(s)",
                            ordinal, bp_registry_device_count());
    *out_device = device;
    return BP_OK;
}

const char *bp_capability_name(uint32_t capability) {
    switch (capability) {
    case BP_CAP_ASYNC_STREAMS: return "async_streams";
    case BP_CAP_TIMED_EVENTS: return "timed_events";
    case BP_CAP_PEER_COPY: return "peer_copy";
    case BP_CAP_REGIONS: return "regions";
    case BP_CAP_PINNED_HOST: return "pinned_host";
    case BP_CAP_REGION_STREAMS: return "region_streams";
    case BP_CAP_MODELLED_TIME: return "modelled_time";
    default: return NULL;
    }
}

const char *bp_device_name(const bp_device *device) { return device ? device->name : "(null)"; }

bp_status bp_device_get_props(bp_device *device, bp_device_props *props) {
    if (!device || !props)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_get_props: %s is NULL",
                            !device ? "device" : "props");
    if (props->struct_size == 0 || props->struct_size > sizeof(bp_device_props))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_get_props: props->struct_size is %u; "
                            "set it to sizeof(bp_device_props) (%zu)", props->struct_size,
                            sizeof(bp_device_props));
    bp_status st = bp_device_ensure_open(device);
    if (st != BP_OK)
        return st;
    bp_device_props full = {.struct_size = props->struct_size};
    const bp_backend *backend = device->backend;
    snprintf(full.name, sizeof full.name, "%s", device->name);
    snprintf(full.type, sizeof full.type, "%s", backend->name);
    full.index = device->index;
    snprintf(full.backend_name, sizeof full.backend_name, "%s", backend->name);
    snprintf(full.backend_version, sizeof full.backend_version, "%s", backend->version);
    /* The plugin's text: it may lack its NUL or hold control bytes. */
    const char *description = device->props.description;
    bp_text_escape(full.description, sizeof full.description, description,
                   strnlen(description, sizeof device->props.description), NULL);
    full.capabilities = device->props.capabilities;
    full.dtypes = device->props.dtypes;
    full.stream_priority_least = device->props.stream_priority_least;
    full.stream_priority_greatest = device->props.stream_priority_greatest;
    /* Empty for a plugin older than ABI 1.5: the registry's props start zeroed. */
    const char *features = device->props.features;
    bp_text_escape(full.features, sizeof full.features, features,
                   strnlen(features, sizeof device->props.features), NULL);
    st = backend->desc->device->mem_info(device->handle, &full.free_memory, &full.total_memory);
    if (st != BP_OK)
        return bp_error_prefix(st, device->name);
    memcpy(props, &full, props->struct_size);
    return BP_OK;
}

bp_status bp_device_synchronize(bp_device *device) {
    if (!device)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_device_synchronize: device is NULL");
    bp_status st = bp_device_ensure_open(device);
    if (st != BP_OK)
        return st;
    if (atomic_load(&device->capturing) > 0)
        return bp_capture_refuse(BP_CAPTURE_REFUSE_DEVICE_SYNCHRONIZE, "bp_device_synchronize",
                                 device);
    bp_host_funcs_device_wait(device);
    st = device->backend->desc->device->synchronize(device->handle);
    return st == BP_OK ? st : bp_error_prefix(st, device->name);
}

const char *bp_version(void) { return BP_VERSION_STRING; }
