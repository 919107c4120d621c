/* Conformance group "abi": the plugin's descriptor as the host reads it, and how the
 * loader lists the backend. The descriptor tests open the plugin file themselves
 * (dlopen of a loaded library returns the same copy) and read what its entry returns;
 * a built-in backend has no file, and those tests skip. */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <backplane/plugin.h>

#include "conformance.h"

/* The plugin library, opened for the test; dlclose'd by the caller. */
typedef struct plugin_file {
    void *dl;
    bp_plugin_entry_fn entry;
} plugin_file;

/* Opens bp_conf.plugin_path and finds its entry, or skips when there is no file. */
static plugin_file open_plugin(void) {
    if (!bp_conf.plugin_path)
        BP_CONF_SKIP("backend '%s' is built in: it has no plugin file to inspect",
                     bp_conf.props.backend_name);
    plugin_file f = {0};
    f.dl = dlopen(bp_conf.plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (!f.dl)
        fail_msg("dlopen(\"%s\", RTLD_NOW | RTLD_LOCAL) failed: %s", bp_conf.plugin_path,
                 dlerror());
    void *sym = dlsym(f.dl, BP_PLUGIN_ENTRY_SYMBOL);
    if (!sym)
        fail_msg("%s does not export %s", bp_conf.plugin_path, BP_PLUGIN_ENTRY_SYMBOL);
    /* POSIX allows converting a dlsym result to a function pointer. */
    memcpy(&f.entry, &sym, sizeof f.entry);
    return f;
}

/* [a-z][a-z0-9_]*, at most 31 characters. */
static bool valid_name(const char *s) {
    size_t len = strnlen(s, BP_PLUGIN_NAME_MAX + 1);
    if (len == 0 || len > BP_PLUGIN_NAME_MAX || s[0] < 'a' || s[0] > 'z')
        return false;
    for (size_t i = 1; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* ---- descriptor_fields ---- */

static void expect_table_size(const void *table, size_t min, const char *what) {
    if (!table)
        fail_msg("descriptor's %s vtable is NULL", what);
    uint32_t size = *(const uint32_t *)table;
    if (size < min)
        fail_msg("%s vtable struct_size is %u, the ABI 1.0 layout needs at least %zu", what, size,
                 min);
}

/* A function a vtable must set: always (cap 0) or when the device reports `cap`. */
typedef struct required_fn {
    size_t offset;    /* of the function pointer in its vtable */
    const char *name; /* "d->device->count", as the failure names it */
    uint32_t cap;
} required_fn;

#define REQUIRED(table, type, fn, cap) {offsetof(type, fn), "d->" #table "->" #fn, cap}

/* A vtable of the descriptor: its ABI 1.0 size and the functions it must set. */
typedef struct vtable_check {
    const char *what; /* "device" */
    size_t min_size;
    const required_fn *fns;
    size_t n_fns;
} vtable_check;

#define FNS(list) list, sizeof list / sizeof list[0]

static const required_fn device_fns[] = {
    REQUIRED(device, bp_device_vtable, count, 0),
    REQUIRED(device, bp_device_vtable, get_props, 0),
    REQUIRED(device, bp_device_vtable, open, 0),
    REQUIRED(device, bp_device_vtable, close, 0),
    REQUIRED(device, bp_device_vtable, mem_info, 0),
    REQUIRED(device, bp_device_vtable, synchronize, 0),
};
static const required_fn stream_fns[] = {
    REQUIRED(stream, bp_stream_vtable, create, 0),
    REQUIRED(stream, bp_stream_vtable, destroy, 0),
    REQUIRED(stream, bp_stream_vtable, synchronize, 0),
    REQUIRED(stream, bp_stream_vtable, query, 0),
    REQUIRED(stream, bp_stream_vtable, wait_event, 0),
};
static const required_fn event_fns[] = {
    REQUIRED(event, bp_event_vtable, create, 0),
    REQUIRED(event, bp_event_vtable, destroy, 0),
    REQUIRED(event, bp_event_vtable, record, 0),
    REQUIRED(event, bp_event_vtable, query, 0),
    REQUIRED(event, bp_event_vtable, synchronize, 0),
    REQUIRED(event, bp_event_vtable, elapsed_ms, BP_CAP_TIMED_EVENTS),
};
static const required_fn memory_fns[] = {
    REQUIRED(memory, bp_memory_vtable, alloc, 0),
    REQUIRED(memory, bp_memory_vtable, free, 0),
    REQUIRED(memory, bp_memory_vtable, copy_async, 0),
    REQUIRED(memory, bp_memory_vtable, memset_async, 0),
    REQUIRED(memory, bp_memory_vtable, copy_peer_async, BP_CAP_PEER_COPY),
};
/* Checked after the memory table's host_alloc/host_free pairing. */
static const required_fn pinned_host_fns[] = {
    REQUIRED(memory, bp_memory_vtable, host_alloc, BP_CAP_PINNED_HOST),
    REQUIRED(memory, bp_memory_vtable, host_free, BP_CAP_PINNED_HOST),
};
static const required_fn guard_fns[] = {
    REQUIRED(guard, bp_guard_vtable, set_current, 0),
};

static const vtable_check device_check = {"device", BP_DEVICE_VTABLE_SIZE_1_0, FNS(device_fns)};
static const vtable_check stream_check = {"stream", BP_STREAM_VTABLE_SIZE_1_0, FNS(stream_fns)};
static const vtable_check event_check = {"event", BP_EVENT_VTABLE_SIZE_1_0, FNS(event_fns)};
static const vtable_check memory_check = {"memory", BP_MEMORY_VTABLE_SIZE_1_0, FNS(memory_fns)};
static const vtable_check guard_check = {"guard", BP_GUARD_VTABLE_SIZE_1_0, FNS(guard_fns)};

/* Fails unless `table` sets each of fns[0, n) that the device's capabilities require. */
static void expect_fns(const void *table, const required_fn *fns, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (fns[i].cap && !(bp_conf.props.capabilities & fns[i].cap))
            continue;
        void (*fn)(void);
        /* Function pointers of every type have one representation (POSIX). */
        memcpy(&fn, (const char *)table + fns[i].offset, sizeof fn);
        if (!fn)
            fail_msg("required function %s is NULL", fns[i].name);
    }
}

/* The table's size, then its required functions. */
static void expect_vtable(const void *table, const vtable_check *check) {
    expect_table_size(table, check->min_size, check->what);
    expect_fns(table, check->fns, check->n_fns);
}

/* The name and the aliases: well-formed, the name the device reports, no duplicates. */
static void expect_names(const bp_plugin_descriptor *d) {
    if (!d->name)
        fail_msg("descriptor name is NULL");
    if (!valid_name(d->name))
        fail_msg("descriptor name '%.40s' does not match [a-z][a-z0-9_]* of at most %d characters",
                 d->name, BP_PLUGIN_NAME_MAX);
    if (strcmp(d->name, bp_conf.props.type) != 0)
        fail_msg("descriptor name '%s' differs from the device's type '%s'", d->name,
                 bp_conf.props.type);
    if (!d->version || !d->version[0])
        fail_msg("descriptor version is %s", d->version ? "empty" : "NULL");
    if (!d->aliases)
        return;
    int n = 0;
    for (const char *const *a = d->aliases; *a; a++, n++) {
        if (n >= 16)
            fail_msg("more than 16 aliases: is the list NULL-terminated?");
        if (!valid_name(*a))
            fail_msg("alias '%.40s' does not match [a-z][a-z0-9_]* of at most %d characters", *a,
                     BP_PLUGIN_NAME_MAX);
        if (strcasecmp(*a, d->name) == 0)
            fail_msg("alias '%s' repeats the backend's name", *a);
        for (const char *const *b = d->aliases; b < a; b++)
            if (strcasecmp(*a, *b) == 0)
                fail_msg("alias '%s' is listed twice", *a);
    }
}

static void expect_tables(const bp_plugin_descriptor *d) {
    uint32_t caps = bp_conf.props.capabilities;
    if (!d->init)
        fail_msg("required function init is NULL");
    expect_vtable(d->device, &device_check);
    expect_vtable(d->stream, &stream_check);
    expect_vtable(d->event, &event_check);
    expect_vtable(d->memory, &memory_check);
    if (!d->memory->host_alloc != !d->memory->host_free)
        fail_msg("memory->host_alloc and memory->host_free must be both set or both NULL");
    expect_fns(d->memory, FNS(pinned_host_fns));
    if (d->guard)
        expect_vtable(d->guard, &guard_check);
    /* Reserved for region execution: NULL unless the backend claims the capability. */
    if (d->region && !(caps & BP_CAP_REGIONS))
        fail_msg("descriptor region is set but the device does not report BP_CAP_REGIONS (the "
                 "field is reserved: NULL)");
}

static void test_descriptor_fields(void **state) {
    plugin_file f = open_plugin();
    const bp_plugin_descriptor *d = f.entry();
    if (!d)
        fail_msg("%s() returned NULL", BP_PLUGIN_ENTRY_SYMBOL);
    if (d->struct_size < BP_PLUGIN_DESCRIPTOR_SIZE_1_0)
        fail_msg("descriptor struct_size is %u, the ABI 1.0 layout needs at least %zu",
                 d->struct_size, BP_PLUGIN_DESCRIPTOR_SIZE_1_0);
    if (d->abi_major != BP_PLUGIN_ABI_MAJOR)
        fail_msg("descriptor abi_major is %u, this host's is %d", d->abi_major,
                 BP_PLUGIN_ABI_MAJOR);
    print_message("plugin %s: ABI %u.%u (this suite: %d.%d), version '%s', struct_size %u\n",
                  d->name ? d->name : "(null)", d->abi_major, d->abi_minor, BP_PLUGIN_ABI_MAJOR,
                  BP_PLUGIN_ABI_MINOR, d->version ? d->version : "(null)", d->struct_size);
    if (d->abi_minor > BP_PLUGIN_ABI_MINOR)
        print_message("note: the plugin is built against a newer minor than this suite knows; "
                      "fields past ABI %d.%d are not checked\n", BP_PLUGIN_ABI_MAJOR,
                      BP_PLUGIN_ABI_MINOR);
    expect_names(d);
    expect_tables(d);
    dlclose(f.dl);
}

/* ---- entry_is_stable ---- */

static void test_entry_is_stable(void **state) {
    plugin_file f = open_plugin();
    const bp_plugin_descriptor *first = f.entry(), *second = f.entry();
    if (!first || first != second)
        fail_msg("%s() returned %p, then %p: it must return the same static descriptor",
                 BP_PLUGIN_ENTRY_SYMBOL, (const void *)first, (const void *)second);
    plugin_file g = open_plugin();
    if (g.entry() != first)
        fail_msg("a second dlopen of the plugin returned another descriptor");
    dlclose(g.dl);
    dlclose(f.dl);
}

/* ---- plugin_listed ---- */

/* Whether two paths name one file. */
static bool same_file(const char *a, const char *b) {
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    bool same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}

static void test_plugin_listed(void **state) {
    const char *type = bp_conf.props.type;
    int n = bp_plugin_count();
    int found = -1;
    bp_plugin_info info;
    for (int i = 0; i < n && found < 0; i++) {
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        BP_CONF_OK(bp_plugin_get_info(i, &info));
        if (strcmp(info.name, type) == 0 &&
            (info.state == BP_PLUGIN_LOADED || info.state == BP_PLUGIN_BUILTIN))
            found = i;
    }
    if (found < 0)
        fail_msg("no loaded or built-in plugin named '%s' among the %d listed", type, n);
    if (info.state == BP_PLUGIN_BUILTIN && bp_conf.plugin_path)
        fail_msg("'%s' is listed as built in, but the run names the plugin file %s", type,
                 bp_conf.plugin_path);
    if (info.state == BP_PLUGIN_LOADED && bp_conf.plugin_path &&
        !same_file(info.path, bp_conf.plugin_path))
        fail_msg("'%s' is loaded from %s, not from %s", type, info.path, bp_conf.plugin_path);
    if (info.abi_major != BP_PLUGIN_ABI_MAJOR)
        fail_msg("listed ABI %u.%u, this host's major is %d", info.abi_major, info.abi_minor,
                 BP_PLUGIN_ABI_MAJOR);
    if (!info.version[0])
        fail_msg("listed with an empty version");
    if (info.device_count < 1 || bp_conf.props.index >= info.device_count)
        fail_msg("listed with %d device(s), but %s is open", info.device_count,
                 bp_conf.props.name);
    if (info.status != BP_OK || info.reason[0])
        fail_msg("listed with status %s and reason '%s'; a loaded plugin has BP_OK and none",
                 bp_status_str(info.status), info.reason);
    if (strcmp(info.version, bp_conf.props.backend_version) != 0)
        fail_msg("listed version '%s' differs from the device's backend_version '%s'",
                 info.version, bp_conf.props.backend_version);
    print_message("%s: %s, ABI %u.%u, version %s, %d device(s)\n", type,
                  info.state == BP_PLUGIN_BUILTIN ? "built in" : info.path, info.abi_major,
                  info.abi_minor, info.version, info.device_count);
}

/* ---- aliases_open_same_device ---- */

static void expect_opens_to(const char *name) {
    bp_device *dev = NULL;
    BP_CONF_OK(bp_device_open(name, &dev));
    if (dev != bp_conf.device)
        fail_msg("bp_device_open(\"%s\") gave %s, expected %s", name,
                 dev ? bp_device_name(dev) : "NULL", bp_conf.props.name);
}

static void test_aliases_open_same_device(void **state) {
    char name[BP_NAME_MAX * 2];
    int index = bp_conf.props.index;
    snprintf(name, sizeof name, "%s:%d", bp_conf.props.type, index);
    for (char *c = name; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    expect_opens_to(name);
    if (!bp_conf.plugin_path) {
        print_message("built-in backend: its aliases are not visible; checked the upper-cased "
                      "name only\n");
        return;
    }
    plugin_file f = open_plugin();
    const bp_plugin_descriptor *d = f.entry();
    int n = 0;
    for (const char *const *a = d && d->aliases ? d->aliases : NULL; a && *a && n < 16; a++, n++) {
        snprintf(name, sizeof name, "%s:%d", *a, index);
        expect_opens_to(name);
        if (index == 0)
            expect_opens_to(*a);
    }
    print_message("%d alias(es) checked\n", n);
    dlclose(f.dl);
}

static const bp_conf_test abi_tests[] = {
    {"descriptor_fields", test_descriptor_fields,
     "the descriptor has the ABI's sizes, version, well-formed names and required functions",
     NULL},
    {"entry_is_stable", test_entry_is_stable, "the entry returns the same descriptor every call",
     NULL},
    {"plugin_listed", test_plugin_listed,
     "bp_plugin_get_info lists the backend loaded, with ABI, version and devices", NULL},
    {"aliases_open_same_device", test_aliases_open_same_device,
     "every alias and the upper-cased name open the same device", NULL},
};

const bp_conf_group bp_conf_group_abi = {
    .name = "abi",
    .summary = "the plugin descriptor, struct sizes, names and aliases, the loader's listing",
    .tests = abi_tests,
    .n_tests = sizeof abi_tests / sizeof abi_tests[0],
    .timeout_s = 30,
};
