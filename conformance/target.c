/* bp-conformance runner: opening the device under test (target.h). */
#include "target.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "conformance.h"

/* The loader's entry for the backend of device type `type`: the plugin it was loaded
 * from, or NULL when it is built in (or not listed). The strings live until exit. */
static const char *loaded_plugin_path(const char *type, bool *builtin) {
    *builtin = false;
    int n = bp_plugin_count();
    for (int i = 0; i < n; i++) {
        bp_plugin_info info = {.struct_size = sizeof info};
        if (bp_plugin_get_info(i, &info) != BP_OK || strcasecmp(info.name, type) != 0)
            continue;
        if (info.state == BP_PLUGIN_BUILTIN) {
            *builtin = true;
            return NULL;
        }
        if (info.state == BP_PLUGIN_LOADED)
            return info.path;
    }
    return NULL;
}

bool bp_conf_target_open(const char *device, const char *plugin, uint64_t seed,
                         bp_conf_level level, char *err, size_t err_len) {
    bp_status st;
    if (plugin && (st = bp_plugin_load(plugin)) != BP_OK) {
        snprintf(err, err_len, "cannot load plugin '%s': %s", plugin,
                 bp_last_error()[0] ? bp_last_error() : bp_status_str(st));
        return false;
    }
    bp_device *dev = NULL;
    if ((st = bp_device_open(device, &dev)) != BP_OK) {
        snprintf(err, err_len, "cannot open device '%s': %s", device,
                 bp_last_error()[0] ? bp_last_error() : bp_status_str(st));
        return false;
    }
    bp_conf.device_name = device;
    bp_conf.device = dev;
    bp_conf.seed = seed;
    bp_conf.level = level;
    bp_conf.props = (bp_device_props){.struct_size = sizeof bp_conf.props};
    if ((st = bp_device_get_props(dev, &bp_conf.props)) != BP_OK) {
        snprintf(err, err_len, "cannot read the properties of '%s': %s", device,
                 bp_last_error()[0] ? bp_last_error() : bp_status_str(st));
        return false;
    }
    /* The plugin of the device's own backend: --plugin names it, unless the device is
     * a built-in one (--device cpu with some --plugin). */
    bool builtin = false;
    const char *loaded = loaded_plugin_path(bp_conf.props.type, &builtin);
    bp_conf.plugin_path = builtin ? NULL : plugin ? plugin : loaded;
    return true;
}

/* Appends `word` to the space-separated list `list` of size `cap` (cut when full). */
static void append_word(char *list, size_t cap, const char *word) {
    size_t used = strlen(list);
    snprintf(list + used, cap - used, "%s%s", used ? " " : "", word);
}

static void describe_capabilities(uint32_t caps, char *out, size_t cap) {
    out[0] = '\0';
    uint32_t unknown = 0;
    for (uint32_t bit = 1; bit; bit <<= 1) {
        const char *name = caps & bit ? bp_capability_name(bit) : NULL;
        if (name)
            append_word(out, cap, name);
        else
            unknown |= caps & bit;
    }
    if (unknown) {
        char hex[32];
        snprintf(hex, sizeof hex, "0x%x", (unsigned)unknown);
        append_word(out, cap, hex);
    }
}

void bp_conf_target_describe(bp_conf_header *h) {
    const bp_device_props *p = &bp_conf.props;
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", p->name);
    snprintf(h->description, sizeof h->description, "%s", p->description);
    snprintf(h->backend_name, sizeof h->backend_name, "%s", p->backend_name);
    snprintf(h->backend_version, sizeof h->backend_version, "%s", p->backend_version);
    snprintf(h->plugin_path, sizeof h->plugin_path, "%s",
             bp_conf.plugin_path ? bp_conf.plugin_path : "");
    h->total_memory = p->total_memory;
    describe_capabilities(p->capabilities, h->capabilities, sizeof h->capabilities);
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (p->dtypes & BP_DTYPE_BIT(dt))
            append_word(h->dtypes, sizeof h->dtypes, bp_dtype_name((bp_dtype)dt));
}
