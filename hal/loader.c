/* Plugin loading: opens and validates candidates (found by plugin_discovery.c, checked
 * by plugin_file.c), hands the decision to plugin_choice.c, adds the winners to the
 * registry as PENDING backends, initialises each when it is first needed (its init,
 * count and get_props: bp_loader_initialise) and registers its devices, and keeps the
 * list of every candidate (loaded, built-in, skipped) that bp-info shows.
 *
 * Locks: the loader lock serialises all of this (discovery, each init, explicit loads,
 * reading the list). Plugin code (constructors, entry, init, count, get_props) runs
 * under it but never under the registry lock, which is taken only to add a backend or
 * its finished devices: threads using devices already registered (the built-in cpu)
 * do not wait for a slow init. While this thread runs plugin code the public API
 * refuses it (re-entrancy would otherwise deadlock on the loader lock or on
 * discovery); see bp_loader_running_plugin. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "loader_internal.h"

#define LOG_SRC "loader"
#define NAME_COPY_MAX 64

/* Variables, not macros, so that comparing an unsigned field against a minimum of 0
 * does not trip -Wtype-limits. */
static const uint32_t host_abi_minor_required = BP_PLUGIN_ABI_MINOR_REQUIRED;

static pthread_mutex_t loader_mutex = PTHREAD_MUTEX_INITIALIZER;
static plugin_record *g_records;
static int g_record_count;
static int g_record_cap;
static bp_trust_policy g_trust; /* read at the start of each pass or explicit load */
/* Strings bp_plugin_get_info may have handed out (they must live until exit) that a
 * record no longer points to: kept here. */
static char **g_retired;
static int g_retired_count;
static bp_plugin_observer g_observer;
static void *g_observer_ctx;

/* What plugin code this thread is running for the loader ("the init of plugin 'x'
 * (path)"), or NULL. */
static _Thread_local const char *tls_running;
static _Thread_local char tls_running_text[PATH_MAX_REASON + 64];

const char *bp_loader_running_plugin(void) { return tls_running; }

/* The backend whose init this thread runs (set around desc->init only). */
static _Thread_local const char *tls_initializing;

const char *bp_loader_initializing_backend(void) { return tls_initializing; }

__attribute__((format(printf, 1, 2))) static void enter_plugin_code(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_running_text, sizeof tls_running_text, fmt, ap);
    va_end(ap);
    tls_running = tls_running_text;
}

static void leave_plugin_code(void) { tls_running = NULL; }

/* Copies at most `max` bytes of a string a plugin handed over: it may be unterminated
 * or huge. "" for NULL or when out of memory. */
static const char *keep_n(const char *s, size_t max) {
    char *copy = s ? strndup(s, max) : NULL;
    return copy ? copy : "";
}

static const char *keep(const char *s) { return keep_n(s, PATH_MAX_REASON); }

plugin_record *bp_loader_record(int i) { return &g_records[i]; }

int bp_loader_record_count(void) { return g_record_count; }

int bp_loader_record_add(const char *path) {
    if (g_record_count == g_record_cap) {
        int cap = g_record_cap ? g_record_cap * 2 : 16;
        plugin_record *grown = realloc(g_records, (size_t)cap * sizeof *grown);
        if (!grown) {
            bp_log(BP_LOG_ERROR, LOG_SRC, "out of memory while listing plugin %s", path);
            return -1;
        }
        g_records = grown;
        g_record_cap = cap;
    }
    plugin_record *r = &g_records[g_record_count];
    memset(r, 0, sizeof *r);
    r->name = "";
    r->version = "";
    r->path = keep(path);
    r->reason = "";
    r->unavailable_reason = "";
    r->aliases_kept = "";
    r->state = BP_PLUGIN_SKIPPED;
    r->status = BP_OK;
    return g_record_count++;
}

bp_status bp_loader_reject(int i, bp_log_level level, bp_status status, const char *fmt, ...) {
    char why[REASON_LIMIT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    plugin_record *r = &g_records[i];
    r->state = BP_PLUGIN_SKIPPED;
    r->status = status;
    r->reason = keep(why);
    if (r->dl)
        dlclose(r->dl);
    r->dl = NULL;
    r->desc = NULL;
    bp_log(level, LOG_SRC, "skipping plugin %s: %s", *r->path ? r->path : r->name, why);
    return status;
}

/* Whether g_retired has room for one more string. */
static bool make_room_to_retire(void) {
    char **grown = realloc(g_retired, (size_t)(g_retired_count + 1) * sizeof *grown);
    if (grown)
        g_retired = grown;
    return grown != NULL;
}

void bp_loader_note(int i, const char *fmt, ...) {
    char sentence[REASON_LIMIT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    plugin_record *r = &g_records[i];
    bp_log(BP_LOG_WARN, LOG_SRC, "plugin %s: %s", *r->name ? r->name : r->path, sentence);
    size_t size = (r->notes ? strlen(r->notes) + 2 : 0) + strlen(sentence) + 1;
    char *grown = make_room_to_retire() ? malloc(size) : NULL;
    if (!grown)
        return; /* the log has it */
    snprintf(grown, size, "%s%s%s", r->notes ? r->notes : "", r->notes ? "; " : "", sentence);
    if (r->notes)
        g_retired[g_retired_count++] = r->notes;
    r->notes = grown;
}

bp_status bp_loader_reason(char *why, size_t n, bp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return status;
}

/* [a-z][a-z0-9_]*, shorter than BP_BACKEND_NAME_MAX. */
static bool valid_name(const char *s) {
    size_t len = strnlen(s, BP_BACKEND_NAME_MAX);
    if (len == 0 || len >= BP_BACKEND_NAME_MAX || s[0] < 'a' || s[0] > 'z')
        return false;
    for (size_t k = 1; k < len; k++) {
        char c = s[k];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* A vtable is present and its struct_size covers the ABI 1.0 fields. */
static bp_status check_table(const void *table, size_t min_size, const char *what, char *why,
                             size_t n) {
    if (!table)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT, "required %s vtable is NULL", what);
    uint32_t size = *(const uint32_t *)table;
    if (size < min_size)
        return bp_loader_reason(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin built against an older header: %s vtable is %u bytes, at least "
                    "%zu expected",
                    what, size, min_size);
    return BP_OK;
}

#define REQUIRE_FN(table, fn)                                                                      \
    do {                                                                                           \
        if (!d->table->fn)                                                                         \
            return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,                                           \
                        "required function " #table "->" #fn " is NULL");                          \
    } while (0)

#define REQUIRE_TABLE(table, min_size)                                                             \
    do {                                                                                           \
        bp_status table_st_ = check_table(d->table, (min_size), #table, why, n);                   \
        if (table_st_ != BP_OK)                                                                    \
            return table_st_;                                                                      \
    } while (0)

/* Checks everything the host relies on before calling init. On failure writes one
 * sentence to `why` and returns the status. */
static bp_status check_descriptor(const bp_plugin_descriptor *d, bool builtin, char *why,
                                  size_t n) {
    if (d->struct_size < BP_STRUCT_END(bp_plugin_descriptor, abi_minor))
        return bp_loader_reason(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin built against an older header: descriptor is %u bytes, at least "
                    "%zu expected",
                    d->struct_size, BP_PLUGIN_DESCRIPTOR_SIZE_1_0);
    if (d->abi_major != BP_PLUGIN_ABI_MAJOR)
        return bp_loader_reason(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin ABI %u.%u but this host needs ABI %d.x (x >= %d); rebuild the "
                    "plugin against this backplane's <backplane/plugin.h>",
                    d->abi_major, d->abi_minor, BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR_REQUIRED);
    if (d->struct_size < BP_PLUGIN_DESCRIPTOR_SIZE_1_0)
        return bp_loader_reason(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin built against an older header: descriptor is %u bytes, at least "
                    "%zu expected",
                    d->struct_size, BP_PLUGIN_DESCRIPTOR_SIZE_1_0);
    if (d->abi_minor < host_abi_minor_required)
        return bp_loader_reason(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin ABI %u.%u is older than this host supports: it needs ABI %d.x "
                    "(x >= %d)",
                    d->abi_major, d->abi_minor, BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR_REQUIRED);

    if (!d->name)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT, "plugin name is NULL");
    if (!valid_name(d->name))
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                    "invalid plugin name '%.40s': it must match [a-z][a-z0-9_]* and have at "
                    "most %d characters",
                    d->name, BP_BACKEND_NAME_MAX - 1);
    if (!builtin && strcmp(d->name, "cpu") == 0)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                    "name 'cpu' is reserved for the built-in backend");
    if (!d->version)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT, "plugin version is NULL");
    if (d->aliases) {
        int count = 0;
        for (const char *const *a = d->aliases; *a; a++, count++) {
            if (count == BP_MAX_ALIASES)
                return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                            "more than %d aliases (is the list NULL-terminated?)", BP_MAX_ALIASES);
            if (!valid_name(*a))
                return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                            "invalid alias '%.40s': it must match [a-z][a-z0-9_]* and have "
                            "at most %d characters",
                            *a, BP_BACKEND_NAME_MAX - 1);
        }
    }
    if (!d->init)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT, "required function init is NULL");

    REQUIRE_TABLE(device, BP_DEVICE_VTABLE_SIZE_1_0);
    REQUIRE_FN(device, count);
    REQUIRE_FN(device, get_props);
    REQUIRE_FN(device, open);
    REQUIRE_FN(device, close);
    REQUIRE_FN(device, mem_info);
    REQUIRE_FN(device, synchronize);

    REQUIRE_TABLE(stream, BP_STREAM_VTABLE_SIZE_1_0);
    REQUIRE_FN(stream, create);
    REQUIRE_FN(stream, destroy);
    REQUIRE_FN(stream, synchronize);
    REQUIRE_FN(stream, query);
    REQUIRE_FN(stream, wait_event);

    REQUIRE_TABLE(event, BP_EVENT_VTABLE_SIZE_1_0);
    REQUIRE_FN(event, create);
    REQUIRE_FN(event, destroy);
    REQUIRE_FN(event, record);
    REQUIRE_FN(event, query);
    REQUIRE_FN(event, synchronize);

    REQUIRE_TABLE(memory, BP_MEMORY_VTABLE_SIZE_1_0);
    REQUIRE_FN(memory, alloc);
    REQUIRE_FN(memory, free);
    REQUIRE_FN(memory, copy_async);
    REQUIRE_FN(memory, memset_async);
    if (!d->memory->host_alloc != !d->memory->host_free)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                    "memory->host_alloc and memory->host_free must both be set or both NULL");

    if (d->guard) {
        /* get_current (ABI 1.2) is optional: guard.c reads it only when the table's
         * struct_size reaches it, so a 1.0-sized table stays valid. */
        REQUIRE_TABLE(guard, BP_GUARD_VTABLE_SIZE_1_0);
        REQUIRE_FN(guard, set_current);
    }
    /* The region slot was reserved (NULL) before ABI 1.3. */
    if (d->region && d->abi_minor < 3)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                    "region vtable must be NULL in ABI %d.%u (it was defined in %d.3)",
                    BP_PLUGIN_ABI_MAJOR, d->abi_minor, BP_PLUGIN_ABI_MAJOR);
    if (d->region) {
        REQUIRE_TABLE(region, BP_REGION_VTABLE_SIZE_1_3);
        REQUIRE_FN(region, begin);
        REQUIRE_FN(region, end);
        REQUIRE_FN(region, abort);
    }
    return BP_OK;
}


/* Copies what can safely be read from a descriptor into the record, for the listing
 * even when validation fails. Only fields of a matching major version are trusted, and
 * strings are copied with a bound. */
static void read_identity(int i, const bp_plugin_descriptor *d) {
    plugin_record *r = &g_records[i];
    if (d->struct_size < BP_STRUCT_END(bp_plugin_descriptor, abi_minor))
        return;
    r->abi_major = d->abi_major;
    r->abi_minor = d->abi_minor;
    if (d->abi_major != BP_PLUGIN_ABI_MAJOR ||
        d->struct_size < BP_STRUCT_END(bp_plugin_descriptor, priority))
        return;
    r->name = keep_n(d->name, NAME_COPY_MAX);
    /* Short enough for bp_device_props.backend_version. */
    r->version = keep_n(d->version, BP_NAME_MAX - 1);
    r->priority = d->priority;
}

/* After check_descriptor: the aliases (valid names, so bounded) become the record's. */
static void read_aliases(int i, const bp_plugin_descriptor *d) {
    plugin_record *r = &g_records[i];
    for (const char *const *a = d->aliases; a && *a; a++) {
        snprintf(r->aliases[r->alias_count], BP_BACKEND_NAME_MAX, "%s", *a);
        r->alias_kept[r->alias_count++] = true;
    }
}

static bool looks_like_elf(const char *path) {
    unsigned char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got == sizeof magic && memcmp(magic, "\177ELF", 4) == 0;
}

static int find_loaded_by_path(const char *real_path) {
    for (int j = 0; j < g_record_count; j++) {
        const plugin_record *r = &g_records[j];
        if (r->state != BP_PLUGIN_SKIPPED && r->real_path && strcmp(r->real_path, real_path) == 0)
            return j;
    }
    return -1;
}

/* Tells the application's observer (bp_plugin_set_observer) about a step; false when
 * it declines the plugin. */
static bool observe(bp_plugin_step step, const plugin_record *r) {
    return !g_observer || g_observer(step, r->name, r->path, g_observer_ctx) != 0;
}

/* Opens and validates one candidate file, appending its record. Candidates of this
 * pass start at record `first`: a file seen earlier in the pass is skipped; an
 * explicit load is instead checked against every loaded plugin. On success the
 * record holds the library and descriptor, awaiting the decision. */
bp_status bp_loader_consider_file(const char *path, int first, bool explicit_load) {
    /* An explicit load returns its error to the caller; autoload has only the log. */
    bp_log_level skip = explicit_load ? BP_LOG_INFO : BP_LOG_WARN;
    bp_log(BP_LOG_DEBUG, LOG_SRC, "candidate %s", path);
    int i = bp_loader_record_add(path);
    if (i < 0)
        return BP_ERR_OUT_OF_MEMORY;

    char why[REASON_LIMIT], note[REASON_LIMIT];
    char *real = NULL;
    bp_status st = bp_plugin_file_check(path, g_trust, &real, why, sizeof why, note, sizeof note);
    g_records[i].real_path = real;
    if (st != BP_OK)
        return bp_loader_reject(i, skip, st, "%s", why);
    if (*note)
        bp_loader_note(i, "%s", note);

    if (explicit_load) {
        int j = find_loaded_by_path(real);
        if (j >= 0)
            return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT,
                                    "this library is already loaded (as plugin '%s' from %s)",
                                    g_records[j].name, g_records[j].path);
    } else {
        for (int j = first; j < i; j++) {
            if (g_records[j].real_path && strcmp(g_records[j].real_path, real) == 0)
                return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT, "same file as %s",
                                        g_records[j].path);
        }
    }

    if (!observe(BP_PLUGIN_STEP_OPEN, &g_records[i]))
        return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT,
                                "declined by the application's plugin observer before opening");
    /* The real path always holds a slash, so dlopen never searches library paths. Its
     * constructors and entry function are plugin code. */
    enter_plugin_code("the loading of plugin file %s", path);
    dlerror();
    void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    const bp_plugin_descriptor *d = NULL;
    bp_plugin_entry_fn entry = NULL;
    char msg[REASON_LIMIT] = "";
    if (!dl) {
        const char *err = dlerror();
        snprintf(msg, sizeof msg, "%s", err ? err : "unknown dlopen error");
    } else {
        entry = (bp_plugin_entry_fn)dlsym(dl, BP_PLUGIN_ENTRY_SYMBOL);
        if (entry)
            d = entry();
    }
    leave_plugin_code();
    observe(BP_PLUGIN_STEP_DONE, &g_records[i]);
    if (!dl) {
        if (!looks_like_elf(real))
            return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT, "not a shared library: %s",
                                    msg);
        return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT, "cannot be loaded: %s", msg);
    }
    g_records[i].dl = dl;
    bp_log(BP_LOG_DEBUG, LOG_SRC, "opened %s", real);
    if (!entry)
        return bp_loader_reject(i, skip, BP_ERR_NOT_FOUND,
                                "no %s symbol: the library does not export the backplane plugin "
                                "entry point (declare it with BP_PLUGIN_EXPORT)",
                                BP_PLUGIN_ENTRY_SYMBOL);
    if (!d)
        return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT, "%s() returned NULL",
                                BP_PLUGIN_ENTRY_SYMBOL);
    read_identity(i, d);
    st = check_descriptor(d, false, why, sizeof why);
    if (st != BP_OK)
        return bp_loader_reject(i, skip, st, "%s", why);
    read_aliases(i, d);
    g_records[i].desc = d;
    bp_log(BP_LOG_DEBUG, LOG_SRC, "%s: plugin '%s' version %s, ABI %u.%u, priority %d: valid", path,
           g_records[i].name, g_records[i].version, d->abi_major, d->abi_minor, (int)d->priority);
    return BP_OK;
}

/* "tdev,gpu": the aliases record r keeps. */
static const char *kept_aliases(const plugin_record *r) {
    char list[BP_MAX_ALIASES * (BP_BACKEND_NAME_MAX + 1)] = "";
    size_t used = 0;
    for (int a = 0; a < r->alias_count; a++) {
        if (!r->alias_kept[a])
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? "," : "", r->aliases[a]);
        used += w > 0 ? (size_t)w : 0;
    }
    return keep(list);
}

void bp_loader_refresh_aliases(int i) {
    plugin_record *r = &g_records[i];
    if (*r->aliases_kept) {
        if (!make_room_to_retire())
            return;
        g_retired[g_retired_count++] = (char *)r->aliases_kept;
    }
    r->aliases_kept = kept_aliases(r);
}

static int record_of_backend(const bp_backend *backend) {
    for (int j = 0; j < g_record_count; j++)
        if (g_records[j].backend == backend)
            return j;
    return -1;
}

/* How many of the `reported` devices of record i to register: at most
 * BP_MAX_DEVICES_PER_BACKEND, and what the registry has room for (noted when cut). */
static int device_budget(int i, int reported) {
    int count = reported < 0 ? 0 : reported;
    if (count > BP_MAX_DEVICES_PER_BACKEND) {
        bp_loader_note(i, "it reports %d devices; only the first %d are registered (at most %d "
                          "per backend)",
                       reported, BP_MAX_DEVICES_PER_BACKEND, BP_MAX_DEVICES_PER_BACKEND);
        count = BP_MAX_DEVICES_PER_BACKEND;
    }
    int room = bp_registry_room();
    if (count > room) {
        bp_loader_note(i, "registry full: only %d of its %d devices fit (at most %d devices in "
                          "all)",
                       room, count, BP_MAX_DEVICES);
        count = room;
    }
    return count;
}

/* Makes record i's validated plugin a PENDING backend: known by its name and kept
 * aliases, its init not run yet (initialise below: when first needed after discovery,
 * at once for the built-in cpu and bp_plugin_load). */
static bp_status register_pending(int i, bp_log_level skip) {
    plugin_record *r = &g_records[i];
    bp_registry_lock();
    bp_backend *existing = bp_registry_find_backend(r->name, strlen(r->name));
    char existing_name[BP_BACKEND_NAME_MAX] = "";
    if (existing)
        snprintf(existing_name, sizeof existing_name, "%s", existing->name);
    bp_registry_unlock();
    if (existing) {
        int j = record_of_backend(existing);
        return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT,
                                "the name '%s' is already taken by loaded backend '%s' (%s)",
                                r->name, existing_name, j >= 0 ? g_records[j].path : "?");
    }
    bp_backend *backend = NULL;
    bp_status st = bp_registry_new_backend(r->desc, r->dl, r->name, r->version, &backend);
    if (st == BP_OK) {
        for (int a = 0; a < r->alias_count; a++)
            if (r->alias_kept[a] && backend->alias_count < BP_MAX_ALIASES)
                snprintf(backend->aliases[backend->alias_count++], BP_BACKEND_NAME_MAX, "%s",
                         r->aliases[a]);
        st = bp_registry_add_pending(backend);
        if (st != BP_OK)
            free(backend);
    }
    if (st != BP_OK)
        return bp_loader_reject(i, skip, st, "not registered: %s", bp_last_error());
    r->backend = backend;
    return BP_OK;
}

/* The record's PENDING backend leaves the registry (its name and aliases free again). */
static void forget_backend(plugin_record *r) {
    bp_registry_drop(r->backend);
    r->backend = NULL;
}

/* Record i's backend, whose init failed or which was rejected after it: dropped, with
 * what it registered from init, and the record skipped with `why`. */
static bp_status drop(int i, bp_log_level skip, bool builtin, bp_status status, const char *why) {
    plugin_record *r = &g_records[i];
    forget_backend(r);
    bp_hal_client_get()->backend_dropped(r->name);
    if (!builtin)
        observe(BP_PLUGIN_STEP_DONE, r);
    return bp_loader_reject(i, skip, status, "%s", why);
}

/* Runs the init of record i's PENDING backend, counts its devices and reads their
 * properties, and registers them: the backend becomes READY, or DROPPED with the
 * record skipped and its reason. Call under the loader lock. */
static bp_status initialise(int i, bp_log_level skip, bool builtin) {
    plugin_record *r = &g_records[i];
    const bp_plugin_descriptor *d = r->desc;
    bp_backend *backend = r->backend;
    char msg[REASON_LIMIT], why[REASON_LIMIT + 64];

    if (!builtin && !observe(BP_PLUGIN_STEP_INIT, r)) {
        forget_backend(r);
        return bp_loader_reject(i, skip, BP_ERR_INVALID_ARGUMENT,
                                "declined by the application's plugin observer before init");
    }
    bp_log(BP_LOG_INFO, LOG_SRC, "initialising %s from %s", r->name, r->path);
    bp_clear_error();
    /* Kernels a plugin registers from init belong to it; if it is rejected after all,
     * they go with it. */
    enter_plugin_code("the init of plugin '%s' (%s)", r->name, r->path);
    tls_initializing = r->name;
    bp_status st = d->init(bp_host_services_table(), &backend->state);
    tls_initializing = NULL;
    if (st != BP_OK) {
        leave_plugin_code();
        snprintf(msg, sizeof msg, "%s", bp_last_error());
        snprintf(why, sizeof why, "init failed (%s): %s", bp_status_str(st),
                 *msg ? msg : "the plugin gave no reason");
        return drop(i, skip, builtin, st, why);
    }

    int count = device_budget(i, d->device->count(backend->state));
    bp_device **devices = calloc(count > 0 ? (size_t)count : 1, sizeof *devices);
    int made = 0;
    if (!devices)
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "cannot allocate the device list of '%s'",
                          r->name);
    for (int k = 0; devices && k < count; k++) {
        bp_device *device = bp_registry_make_device(backend, k);
        if (device)
            devices[made++] = device;
    }
    if (devices && made == 0 && d->device->unavailable_reason) {
        const char *reason = d->device->unavailable_reason(backend->state);
        backend->unavailable_reason = keep_n(reason, REASON_LIMIT - 1);
    }
    leave_plugin_code();
    if (st == BP_OK)
        st = bp_registry_publish(backend, devices, made);
    if (st != BP_OK) {
        snprintf(msg, sizeof msg, "%s", bp_last_error());
        for (int k = 0; k < made; k++)
            bp_registry_free_device(devices[k]);
        free(devices);
        if (d->shutdown)
            d->shutdown(backend->state);
        snprintf(why, sizeof why, "not registered: %s", *msg ? msg : bp_status_str(st));
        return drop(i, skip, builtin, st, why);
    }
    free(devices);

    r->state = builtin ? BP_PLUGIN_BUILTIN : BP_PLUGIN_LOADED;
    r->status = BP_OK;
    r->dl = NULL; /* the registry owns the library now */
    r->desc = NULL;
    bp_loader_refresh_aliases(i);
    r->unavailable_reason = backend->unavailable_reason;
    if (!builtin)
        observe(BP_PLUGIN_STEP_DONE, r);
    bp_log(BP_LOG_DEBUG, LOG_SRC, "loaded '%s' %s from %s: %d device(s)%s%s", r->name, r->version,
           r->path, made, *r->unavailable_reason ? ": " : "", r->unavailable_reason);
    return BP_OK;
}

void bp_loader_init_builtin(void) {
    pthread_mutex_lock(&loader_mutex);
    int i = bp_loader_record_add("(built-in)");
    if (i >= 0) {
        const bp_plugin_descriptor *d = bp_cpu_backend_descriptor();
        read_identity(i, d);
        char why[REASON_LIMIT];
        bp_status st = check_descriptor(d, true, why, sizeof why);
        if (st != BP_OK) {
            bp_loader_reject(i, BP_LOG_ERROR, BP_ERR_INTERNAL, "built-in cpu backend is invalid: %s",
                             why);
        } else {
            read_aliases(i, d);
            g_records[i].desc = d;
            if (register_pending(i, BP_LOG_ERROR) == BP_OK)
                initialise(i, BP_LOG_ERROR, true);
        }
    }
    pthread_mutex_unlock(&loader_mutex);
}

/* Loading runs inside whatever call needed it; it must not leave plugin errors behind
 * in the caller's last error. */
typedef struct saved_error {
    char text[REASON_LIMIT];
} saved_error;

static void save_error(saved_error *saved) {
    snprintf(saved->text, sizeof saved->text, "%s", bp_last_error());
}

static void restore_error(const saved_error *saved) {
    if (*saved->text)
        bp_set_error(BP_OK, "%s", saved->text);
    else
        bp_clear_error();
}

void bp_loader_discover_all(void) {
    saved_error saved;
    save_error(&saved);
    pthread_mutex_lock(&loader_mutex);
    /* Fails closed: a value that is neither 0 nor 1 loads no plugin code. */
    if (!bp_env_switch("BP_AUTOLOAD", true, false, LOG_SRC, "plugin discovery is off")) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "BP_AUTOLOAD: plugin discovery is off");
    } else {
        g_trust = bp_trust_policy_read();
        int first = g_record_count;
        bp_loader_discover(first);
        int end = g_record_count;
        int *order = end > first ? malloc((size_t)(end - first) * sizeof *order) : NULL;
        if (end > first && !order) {
            for (int j = first; j < end; j++)
                if (g_records[j].desc)
                    bp_loader_reject(j, BP_LOG_ERROR, BP_ERR_OUT_OF_MEMORY, "out of memory");
        } else if (order) {
            int n = bp_loader_choose(first, end, order);
            for (int k = 0; k < n; k++)
                if (register_pending(order[k], BP_LOG_WARN) == BP_OK)
                    bp_log(BP_LOG_DEBUG, LOG_SRC, "'%s' from %s: its init runs when first needed",
                           g_records[order[k]].name, g_records[order[k]].path);
        }
        free(order);
    }
    pthread_mutex_unlock(&loader_mutex);
    restore_error(&saved);
}

/* Initialises record i's backend if it is still PENDING. Call under the loader lock. */
static void initialise_if_pending(int i) {
    bp_backend *backend = g_records[i].backend;
    if (backend && atomic_load(&backend->readiness) == BP_BACKEND_PENDING)
        initialise(i, BP_LOG_WARN, false);
}

void bp_loader_initialise(bp_backend *backend) {
    saved_error saved;
    save_error(&saved);
    pthread_mutex_lock(&loader_mutex);
    int i = record_of_backend(backend);
    if (i >= 0)
        initialise_if_pending(i);
    pthread_mutex_unlock(&loader_mutex);
    restore_error(&saved);
}

void bp_loader_initialise_all(void) {
    saved_error saved;
    save_error(&saved);
    pthread_mutex_lock(&loader_mutex);
    /* Every pending backend has its record (register_pending), and initialise leaves
     * none pending: the loop ends. */
    for (bp_backend *backend; (backend = bp_registry_next_pending()) != NULL;)
        initialise_if_pending(record_of_backend(backend));
    pthread_mutex_unlock(&loader_mutex);
    restore_error(&saved);
}

/* ---- public API ---- */

int bp_plugin_count(void) {
    if (bp_registry_enter("bp_plugin_count", BP_WAIT_ALL) != BP_OK)
        return 0;
    pthread_mutex_lock(&loader_mutex);
    int n = g_record_count;
    pthread_mutex_unlock(&loader_mutex);
    return n;
}

bp_status bp_plugin_get_info(int i, bp_plugin_info *info) {
    if (!info)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_plugin_get_info: info is NULL");
    if (info->struct_size < sizeof(uint32_t))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "bp_plugin_get_info: info->struct_size is %u; set it to "
                            "sizeof(bp_plugin_info) (%zu)",
                            info->struct_size, sizeof(bp_plugin_info));
    bp_status st = bp_registry_enter("bp_plugin_get_info", BP_WAIT_ALL);
    if (st != BP_OK)
        return st;
    pthread_mutex_lock(&loader_mutex);
    if (i < 0 || i >= g_record_count) {
        int n = g_record_count;
        pthread_mutex_unlock(&loader_mutex);
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "bp_plugin_get_info: index %d is out of range (%d plugins listed)", i,
                            n);
    }
    const plugin_record *r = &g_records[i];
    bp_plugin_info full = {
        .struct_size = info->struct_size,
        .name = r->name,
        .version = r->version,
        .path = r->path,
        .abi_major = r->abi_major,
        .abi_minor = r->abi_minor,
        .priority = r->priority,
        .state = r->state,
        .status = r->status,
        .reason = r->reason,
        .device_count = r->backend ? r->backend->device_count : 0,
        .unavailable_reason = r->unavailable_reason,
        .aliases = r->aliases_kept,
        .notes = r->notes ? r->notes : "",
    };
    pthread_mutex_unlock(&loader_mutex);
    size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
    memcpy(info, &full, n);
    return BP_OK;
}

bp_status bp_plugin_load(const char *path) {
    if (!path || !*path)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_plugin_load: path is NULL or empty");
    /* Its name and aliases are decided against every backend as it would be after
     * their inits (one that fails frees its names): they run first. */
    bp_status st = bp_registry_enter("bp_plugin_load", BP_WAIT_ALL);
    if (st != BP_OK)
        return st;
    pthread_mutex_lock(&loader_mutex);
    g_trust = bp_trust_policy_read();
    int first = g_record_count;
    st = bp_loader_consider_file(path, first, true);
    if (st == BP_OK) {
        bp_loader_settle_explicit(first);
        st = register_pending(first, BP_LOG_INFO);
        if (st == BP_OK)
            st = initialise(first, BP_LOG_INFO, false);
    }
    char reason[REASON_LIMIT];
    snprintf(reason, sizeof reason, "%s",
             g_record_count > first ? g_records[first].reason : "out of memory");
    pthread_mutex_unlock(&loader_mutex);
    if (st != BP_OK)
        return bp_set_error(st, "bp_plugin_load: plugin %s: %s", path, reason);
    return BP_OK;
}

typedef struct observer_setting {
    bp_plugin_observer fn;
    void *ctx;
} observer_setting;

static void set_observer(void *arg) {
    const observer_setting *s = arg;
    g_observer = s->fn;
    g_observer_ctx = s->ctx;
}

bp_status bp_plugin_set_observer(bp_plugin_observer observer, void *ctx) {
    observer_setting s = {observer, ctx};
    if (bp_registry_before_discovery(set_observer, &s) != BP_OK)
        return bp_set_error(BP_ERR_INVALID_STATE,
                            "bp_plugin_set_observer: plugin discovery has already started; set "
                            "the observer before the first call that loads plugins");
    return BP_OK;
}
