/* Plugin discovery and loading: finds libbp_*.so candidates, validates their
 * descriptors, resolves duplicates and BP_PLUGINS, initialises the winners, and keeps
 * the list of every candidate (loaded, built-in, skipped) that bp-info shows.
 *
 * Everything here runs with the registry lock held: bp_loader_init_all is called
 * under it, and the public entry points take it. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "hal_internal.h"
#include "dispatcher_internal.h"

#ifndef BP_PLUGIN_INSTALL_DIR
#error "BP_PLUGIN_INSTALL_DIR must be defined by the build"
#endif
#ifndef BP_PLUGIN_DIR_BESIDE_LIBRARY
#error "BP_PLUGIN_DIR_BESIDE_LIBRARY must be defined by the build"
#endif

#define LOG_SRC "loader"
#define REASON_MAX 1024
#define NAME_COPY_MAX 64

/* Variables, not macros, so that comparing an unsigned field against a minimum of 0
 * does not trip -Wtype-limits. */
static const uint32_t host_abi_minor_required = BP_PLUGIN_ABI_MINOR_REQUIRED;

typedef struct plugin_record {
    const char *name; /* strings are strdup'ed (or "") and kept until exit */
    const char *version;
    const char *path;
    const char *reason;
    const char *unavailable_reason;
    char *real_path; /* NULL when the path could not be resolved */
    uint32_t abi_major;
    uint32_t abi_minor;
    int32_t priority;
    bp_plugin_state state;
    bp_status status;
    bp_backend *backend; /* loaded or built-in: its registry entry */
    /* A validated candidate waiting for the duplicate / BP_PLUGINS decision. */
    void *dl;
    const bp_plugin_descriptor *desc;
} plugin_record;

static plugin_record *g_records;
static int g_record_count;
static int g_record_cap;

static const char *keep(const char *s) {
    char *copy = s ? strdup(s) : NULL;
    return copy ? copy : "";
}

static const char *keep_n(const char *s, size_t max) {
    char *copy = s ? strndup(s, max) : NULL;
    return copy ? copy : "";
}

/* Appends a record for `path`, state SKIPPED until decided. -1 when out of memory. */
static int record_add(const char *path) {
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
    r->state = BP_PLUGIN_SKIPPED;
    r->status = BP_OK;
    return g_record_count++;
}

/* Marks record i skipped with a reason, unloads its library, logs, returns `status`. */
__attribute__((format(printf, 4, 5))) static bp_status
reject(int i, bp_log_level level, bp_status status, const char *fmt, ...) {
    char why[REASON_MAX];
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

__attribute__((format(printf, 4, 5))) static bp_status fail(char *why, size_t n, bp_status status,
                                                            const char *fmt, ...) {
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
        return fail(why, n, BP_ERR_INVALID_ARGUMENT, "required %s vtable is NULL", what);
    uint32_t size = *(const uint32_t *)table;
    if (size < min_size)
        return fail(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin built against an older header: %s vtable is %u bytes, at least "
                    "%zu expected",
                    what, size, min_size);
    return BP_OK;
}

#define REQUIRE_FN(table, fn)                                                                      \
    do {                                                                                           \
        if (!d->table->fn)                                                                         \
            return fail(why, n, BP_ERR_INVALID_ARGUMENT,                                           \
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
        return fail(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin built against an older header: descriptor is %u bytes, at least "
                    "%zu expected",
                    d->struct_size, BP_PLUGIN_DESCRIPTOR_SIZE_1_0);
    if (d->abi_major != BP_PLUGIN_ABI_MAJOR)
        return fail(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin ABI %u.%u but this host needs ABI %d.x (x >= %d); rebuild the "
                    "plugin against this backplane's <backplane/plugin.h>",
                    d->abi_major, d->abi_minor, BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR_REQUIRED);
    if (d->struct_size < BP_PLUGIN_DESCRIPTOR_SIZE_1_0)
        return fail(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin built against an older header: descriptor is %u bytes, at least "
                    "%zu expected",
                    d->struct_size, BP_PLUGIN_DESCRIPTOR_SIZE_1_0);
    if (d->abi_minor < host_abi_minor_required)
        return fail(why, n, BP_ERR_ABI_MISMATCH,
                    "plugin ABI %u.%u is older than this host supports: it needs ABI %d.x "
                    "(x >= %d)",
                    d->abi_major, d->abi_minor, BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR_REQUIRED);

    if (!d->name)
        return fail(why, n, BP_ERR_INVALID_ARGUMENT, "plugin name is NULL");
    if (!valid_name(d->name))
        return fail(why, n, BP_ERR_INVALID_ARGUMENT,
                    "invalid plugin name '%.40s': it must match [a-z][a-z0-9_]* and have at "
                    "most %d characters",
                    d->name, BP_BACKEND_NAME_MAX - 1);
    if (!builtin && strcmp(d->name, "cpu") == 0)
        return fail(why, n, BP_ERR_INVALID_ARGUMENT,
                    "name 'cpu' is reserved for the built-in backend");
    if (!d->version)
        return fail(why, n, BP_ERR_INVALID_ARGUMENT, "plugin version is NULL");
    if (d->aliases) {
        int count = 0;
        for (const char *const *a = d->aliases; *a; a++, count++) {
            if (count == BP_MAX_ALIASES)
                return fail(why, n, BP_ERR_INVALID_ARGUMENT,
                            "more than %d aliases (is the list NULL-terminated?)", BP_MAX_ALIASES);
            if (!valid_name(*a))
                return fail(why, n, BP_ERR_INVALID_ARGUMENT,
                            "invalid alias '%.40s': it must match [a-z][a-z0-9_]* and have "
                            "at most %d characters",
                            *a, BP_BACKEND_NAME_MAX - 1);
        }
    }
    if (!d->init)
        return fail(why, n, BP_ERR_INVALID_ARGUMENT, "required function init is NULL");

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
        return fail(why, n, BP_ERR_INVALID_ARGUMENT,
                    "memory->host_alloc and memory->host_free must both be set or both NULL");

    if (d->guard) {
        /* get_current (ABI 1.2) is optional: guard.c reads it only when the table's
         * struct_size reaches it, so a 1.0-sized table stays valid. */
        REQUIRE_TABLE(guard, BP_GUARD_VTABLE_SIZE_1_0);
        REQUIRE_FN(guard, set_current);
    }
    /* The region slot was reserved (NULL) before ABI 1.3. */
    if (d->region && d->abi_minor < 3)
        return fail(why, n, BP_ERR_INVALID_ARGUMENT,
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
 * even when validation fails. Only fields of a matching major version are trusted. */
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
    r->version = keep_n(d->version, NAME_COPY_MAX);
    r->priority = d->priority;
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

/* Opens and validates one candidate file, appending its record. Candidates of this
 * pass start at record `first`: a file seen earlier in the pass is skipped; an
 * explicit load is instead checked against every loaded plugin. On success the
 * record holds the library and descriptor, awaiting the decision. */
static bp_status consider_file(const char *path, int first, bool explicit_load) {
    /* An explicit load returns its error to the caller; autoload has only the log. */
    bp_log_level skip = explicit_load ? BP_LOG_INFO : BP_LOG_WARN;
    bp_log(BP_LOG_DEBUG, LOG_SRC, "candidate %s", path);
    int i = record_add(path);
    if (i < 0)
        return BP_ERR_OUT_OF_MEMORY;

    struct stat sb;
    if (stat(path, &sb) != 0) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            return reject(i, skip, BP_ERR_NOT_FOUND, "file does not exist");
        return reject(i, skip, BP_ERR_NOT_FOUND, "cannot access the file: %s", strerror(err));
    }
    if (!S_ISREG(sb.st_mode))
        return reject(i, skip, BP_ERR_INVALID_ARGUMENT, "not a regular file");
    char *real = realpath(path, NULL);
    if (!real)
        return reject(i, skip, BP_ERR_NOT_FOUND, "cannot resolve the path: %s", strerror(errno));
    g_records[i].real_path = real;

    if (explicit_load) {
        int j = find_loaded_by_path(real);
        if (j >= 0)
            return reject(i, skip, BP_ERR_INVALID_ARGUMENT,
                          "this library is already loaded (as plugin '%s' from %s)",
                          g_records[j].name, g_records[j].path);
    } else {
        for (int j = first; j < i; j++) {
            if (g_records[j].real_path && strcmp(g_records[j].real_path, real) == 0)
                return reject(i, skip, BP_ERR_INVALID_ARGUMENT, "same file as %s",
                              g_records[j].path);
        }
    }

    /* The real path always holds a slash, so dlopen never searches library paths. */
    dlerror();
    void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *err = dlerror();
        char msg[REASON_MAX];
        snprintf(msg, sizeof msg, "%s", err ? err : "unknown dlopen error");
        if (!looks_like_elf(real))
            return reject(i, skip, BP_ERR_INVALID_ARGUMENT, "not a shared library: %s", msg);
        return reject(i, skip, BP_ERR_INVALID_ARGUMENT, "cannot be loaded: %s", msg);
    }
    g_records[i].dl = dl;
    bp_log(BP_LOG_DEBUG, LOG_SRC, "opened %s", real);

    bp_plugin_entry_fn entry = (bp_plugin_entry_fn)dlsym(dl, BP_PLUGIN_ENTRY_SYMBOL);
    if (!entry)
        return reject(i, skip, BP_ERR_NOT_FOUND,
                      "no %s symbol: the library does not export the backplane plugin entry "
                      "point (declare it with BP_PLUGIN_EXPORT)",
                      BP_PLUGIN_ENTRY_SYMBOL);
    const bp_plugin_descriptor *d = entry();
    if (!d)
        return reject(i, skip, BP_ERR_INVALID_ARGUMENT, "%s() returned NULL",
                      BP_PLUGIN_ENTRY_SYMBOL);
    read_identity(i, d);
    char why[REASON_MAX];
    bp_status st = check_descriptor(d, false, why, sizeof why);
    if (st != BP_OK)
        return reject(i, skip, st, "%s", why);
    g_records[i].desc = d;
    bp_log(BP_LOG_DEBUG, LOG_SRC, "%s: plugin '%s' version %s, ABI %u.%u, priority %d: valid", path,
           d->name, d->version, d->abi_major, d->abi_minor, (int)d->priority);
    return BP_OK;
}

static int record_of_backend(const bp_backend *backend) {
    for (int j = 0; j < g_record_count; j++)
        if (g_records[j].backend == backend)
            return j;
    return -1;
}

/* Initialises record i's validated plugin and adds it to the registry. */
static bp_status activate(int i, bp_log_level skip, bool builtin) {
    plugin_record *r = &g_records[i];
    const bp_plugin_descriptor *d = r->desc;

    bp_backend *existing = bp_registry_find_backend(d->name, strlen(d->name));
    if (existing) {
        int j = record_of_backend(existing);
        return reject(i, skip, BP_ERR_INVALID_ARGUMENT,
                      "the name '%s' is already taken by loaded backend '%s' (%s)", d->name,
                      existing->name, j >= 0 ? g_records[j].path : "?");
    }

    char msg[REASON_MAX];
    void *state = NULL;
    bp_clear_error();
    /* Kernels a plugin registers from init belong to it; if it is rejected after all,
     * they go with it. */
    bp_dispatcher_set_initializing(d->name);
    bp_status st = d->init(bp_host_services_table(), &state);
    bp_dispatcher_set_initializing(NULL);
    if (st != BP_OK) {
        snprintf(msg, sizeof msg, "%s", bp_last_error());
        bp_dispatcher_drop_backend(d->name);
        return reject(i, skip, st, "init failed (%s): %s", bp_status_str(st),
                      *msg ? msg : "the plugin gave no reason");
    }

    bp_backend *backend = NULL;
    bp_clear_error();
    st = bp_registry_add_backend(d, state, r->dl, &backend);
    if (st != BP_OK) {
        snprintf(msg, sizeof msg, "%s", bp_last_error());
        if (d->shutdown)
            d->shutdown(state);
        bp_dispatcher_drop_backend(d->name);
        return reject(i, skip, st, "not registered: %s", *msg ? msg : bp_status_str(st));
    }

    r->state = builtin ? BP_PLUGIN_BUILTIN : BP_PLUGIN_LOADED;
    r->status = BP_OK;
    r->backend = backend;
    r->dl = NULL; /* the registry owns the library now */
    r->desc = NULL;
    if (backend->device_count == 0 && d->device->unavailable_reason) {
        const char *why = d->device->unavailable_reason(state);
        if (why)
            r->unavailable_reason = keep(why);
    }
    bp_log(BP_LOG_DEBUG, LOG_SRC, "loaded '%s' %s from %s: %d device(s)%s%s", d->name, d->version,
           r->path, backend->device_count, *r->unavailable_reason ? ": " : "",
           r->unavailable_reason);
    return BP_OK;
}

static void load_builtin_cpu(void) {
    int i = record_add("(built-in)");
    if (i < 0)
        return;
    const bp_plugin_descriptor *d = bp_cpu_backend_descriptor();
    read_identity(i, d);
    char why[REASON_MAX];
    bp_status st = check_descriptor(d, true, why, sizeof why);
    if (st != BP_OK) {
        reject(i, BP_LOG_ERROR, BP_ERR_INTERNAL, "built-in cpu backend is invalid: %s", why);
        return;
    }
    g_records[i].desc = d;
    activate(i, BP_LOG_ERROR, true);
}

/* ---- discovery ---- */

typedef struct dir_set {
    char **dirs; /* real paths of directories already searched */
    int count;
} dir_set;

static bool dir_set_add(dir_set *set, const char *real) {
    for (int k = 0; k < set->count; k++)
        if (strcmp(set->dirs[k], real) == 0)
            return false;
    char **grown = realloc(set->dirs, (size_t)(set->count + 1) * sizeof *grown);
    char *copy = strdup(real);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            set->dirs = grown;
        return true; /* searching twice is harmless: files are de-duplicated */
    }
    set->dirs = grown;
    set->dirs[set->count++] = copy;
    return true;
}

static void dir_set_free(dir_set *set) {
    for (int k = 0; k < set->count; k++)
        free(set->dirs[k]);
    free(set->dirs);
}

static bool is_candidate_name(const char *name) {
    size_t len = strlen(name);
    return len > strlen("libbp_.so") && strncmp(name, "libbp_", 6) == 0 &&
           strcmp(name + len - 3, ".so") == 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Considers every libbp_*.so in `dir`, in name (byte) order. A missing default
 * directory is normal; one the user named is listed. */
static void scan_dir(const char *dir, bool user_named, dir_set *searched, int first) {
    char *real = realpath(dir, NULL);
    if (!real) {
        int err = errno;
        if (!user_named) {
            bp_log(BP_LOG_DEBUG, LOG_SRC, "plugin directory %s does not exist", dir);
            return;
        }
        int i = record_add(dir);
        if (i >= 0) {
            if (err == ENOENT || err == ENOTDIR)
                reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND, "directory does not exist");
            else
                reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND, "cannot access the directory: %s",
                       strerror(err));
        }
        return;
    }
    if (!dir_set_add(searched, real)) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "plugin directory %s already searched", dir);
        free(real);
        return;
    }
    free(real);

    DIR *dp = opendir(dir);
    if (!dp) {
        int err = errno;
        if (user_named) {
            int i = record_add(dir);
            if (i >= 0)
                reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND, "cannot read the directory: %s",
                       strerror(err));
        } else {
            bp_log(BP_LOG_WARN, LOG_SRC, "cannot read plugin directory %s: %s", dir, strerror(err));
        }
        return;
    }
    bp_log(BP_LOG_DEBUG, LOG_SRC, "searching %s", dir);
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(dp)) != NULL) {
        if (!is_candidate_name(ent->d_name))
            continue;
        if (count == cap) {
            size_t new_cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, new_cap * sizeof *grown);
            if (!grown)
                break;
            names = grown;
            cap = new_cap;
        }
        names[count] = strdup(ent->d_name);
        if (names[count])
            count++;
    }
    closedir(dp);
    if (count)
        qsort(names, count, sizeof *names, compare_names);

    for (size_t k = 0; k < count; k++) {
        size_t len = strlen(dir) + 1 + strlen(names[k]) + 1;
        char *path = malloc(len);
        if (path) {
            snprintf(path, len, "%s/%s", dir, names[k]);
            struct stat sb;
            if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
                consider_file(path, first, false);
            else
                bp_log(BP_LOG_DEBUG, LOG_SRC, "%s: not a regular file, ignored", path);
            free(path);
        }
        free(names[k]);
    }
    free(names);
}

/* One BP_PLUGIN_PATH entry: a directory to search or a plugin file. */
static void consider_path_entry(const char *entry, dir_set *searched, int first) {
    struct stat sb;
    if (stat(entry, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        consider_file(entry, first, false);
        return;
    }
    size_t len = strlen(entry);
    if (len > 3 && strcmp(entry + len - 3, ".so") == 0 && stat(entry, &sb) != 0) {
        consider_file(entry, first, false); /* lists it as "file does not exist" */
        return;
    }
    scan_dir(entry, true, searched, first);
}

/* <directory of the running libbackplane>/BP_PLUGIN_DIR_BESIDE_LIBRARY, or NULL. */
static char *dir_beside_library(void) {
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)&bp_plugin_count, &info) || !info.dli_fname)
        return NULL;
    char *lib = realpath(info.dli_fname, NULL);
    if (!lib)
        return NULL;
    char *slash = strrchr(lib, '/');
    char *dir = NULL;
    if (slash) {
        *slash = '\0';
        size_t len = strlen(lib) + 1 + strlen(BP_PLUGIN_DIR_BESIDE_LIBRARY) + 1;
        dir = malloc(len);
        if (dir)
            snprintf(dir, len, "%s/%s", lib, BP_PLUGIN_DIR_BESIDE_LIBRARY);
    }
    free(lib);
    return dir;
}

static void discover(int first) {
    dir_set searched = {NULL, 0};
    const char *env_path = secure_getenv("BP_PLUGIN_PATH");
    if (env_path && *env_path) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "BP_PLUGIN_PATH=%s", env_path);
        char *copy = strdup(env_path);
        char *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok;
             tok = strtok_r(NULL, ":", &save))
            consider_path_entry(tok, &searched, first);
        free(copy);
    }
    char *beside = dir_beside_library();
    if (beside)
        scan_dir(beside, false, &searched, first);
    else
        bp_log(BP_LOG_DEBUG, LOG_SRC,
               "cannot tell where libbackplane is; skipping the "
               "plugin directory beside it");
    free(beside);
    scan_dir(BP_PLUGIN_INSTALL_DIR, false, &searched, first);
    dir_set_free(&searched);
}

/* ---- decisions ---- */

/* The validated candidate of this pass named `name` with the highest priority, the
 * first found on a tie; -1 when none. */
static int best_of_name(int first, int end, const char *name) {
    int best = -1;
    for (int j = first; j < end; j++) {
        const plugin_record *r = &g_records[j];
        if (r->desc && strcasecmp(r->name, name) == 0 &&
            (best < 0 || r->priority > g_records[best].priority))
            best = j;
    }
    return best;
}

static bool contains(const int *list, int n, int value) {
    for (int k = 0; k < n; k++)
        if (list[k] == value)
            return true;
    return false;
}

/* Picks which validated candidates of this pass to use, and in which order: the
 * BP_PLUGINS order when set, else discovery order. */
static int choose(int first, int end, int *order) {
    int n = 0;
    const char *selection = secure_getenv("BP_PLUGINS");
    bool selecting = selection && *selection;
    if (selecting) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "BP_PLUGINS=%s", selection);
        char *copy = strdup(selection);
        char *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
             tok = strtok_r(NULL, ",", &save)) {
            tok += strspn(tok, " \t");
            size_t len = strlen(tok);
            while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
                tok[--len] = '\0';
            if (!len || strcasecmp(tok, "cpu") == 0)
                continue; /* the built-in cpu backend is always there */
            int best = best_of_name(first, end, tok);
            if (best < 0) {
                bool listed = false;
                for (int j = end; j < g_record_count && !listed; j++)
                    listed = strcasecmp(g_records[j].name, tok) == 0;
                int i = listed ? -1 : record_add("");
                if (i >= 0) {
                    g_records[i].name = keep(tok);
                    reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND,
                           "requested by BP_PLUGINS but no plugin named '%s' was found", tok);
                }
            } else if (!contains(order, n, best)) {
                bp_log(BP_LOG_DEBUG, LOG_SRC, "selected '%s' from %s (BP_PLUGINS)", tok,
                       g_records[best].path);
                order[n++] = best;
            }
        }
        free(copy);
    } else {
        for (int j = first; j < end; j++) {
            if (g_records[j].desc && best_of_name(first, end, g_records[j].name) == j) {
                bp_log(BP_LOG_DEBUG, LOG_SRC, "selected '%s' from %s", g_records[j].name,
                       g_records[j].path);
                order[n++] = j;
            }
        }
    }

    for (int j = first; j < end; j++) {
        if (!g_records[j].desc || contains(order, n, j))
            continue;
        int best = best_of_name(first, end, g_records[j].name);
        if (contains(order, n, best))
            reject(j, BP_LOG_WARN, BP_ERR_INVALID_ARGUMENT,
                   "duplicate of '%s': kept %s (priority %d) over this one (priority %d)",
                   g_records[j].name, g_records[best].path, (int)g_records[best].priority,
                   (int)g_records[j].priority);
        else
            reject(j, BP_LOG_INFO, BP_ERR_INVALID_ARGUMENT, "not selected by BP_PLUGINS");
    }
    return n;
}

void bp_loader_init_all(void) {
    /* Loading runs inside whatever call came first; it must not leave plugin errors
     * behind in the caller's last error. */
    char saved_error[REASON_MAX];
    snprintf(saved_error, sizeof saved_error, "%s", bp_last_error());

    load_builtin_cpu();

    const char *autoload = secure_getenv("BP_AUTOLOAD");
    if (autoload && strcmp(autoload, "0") == 0) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "BP_AUTOLOAD=0: plugin discovery is off");
    } else {
        int first = g_record_count;
        discover(first);
        int end = g_record_count;
        int *order = end > first ? malloc((size_t)(end - first) * sizeof *order) : NULL;
        if (end > first && !order) {
            for (int j = first; j < end; j++)
                if (g_records[j].desc)
                    reject(j, BP_LOG_ERROR, BP_ERR_OUT_OF_MEMORY, "out of memory");
        } else if (order) {
            int n = choose(first, end, order);
            for (int k = 0; k < n; k++)
                activate(order[k], BP_LOG_WARN, false);
        }
        free(order);
    }

    if (*saved_error)
        bp_set_error(BP_OK, "%s", saved_error);
    else
        bp_clear_error();
}

/* ---- public API ---- */

int bp_plugin_count(void) {
    bp_registry_ensure_init();
    bp_registry_lock();
    int n = g_record_count;
    bp_registry_unlock();
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
    bp_registry_ensure_init();
    bp_registry_lock();
    if (i < 0 || i >= g_record_count) {
        int n = g_record_count;
        bp_registry_unlock();
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
        .aliases = "",
        .notes = "",
    };
    bp_registry_unlock();
    size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
    memcpy(info, &full, n);
    return BP_OK;
}

bp_status bp_plugin_load(const char *path) {
    if (!path || !*path)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_plugin_load: path is NULL or empty");
    bp_registry_ensure_init();
    bp_registry_lock();
    int first = g_record_count;
    bp_status st = consider_file(path, first, true);
    if (st == BP_OK)
        st = activate(first, BP_LOG_INFO, false);
    char reason[REASON_MAX];
    snprintf(reason, sizeof reason, "%s",
             g_record_count > first ? g_records[first].reason : "out of memory");
    bp_registry_unlock();
    if (st != BP_OK)
        return bp_set_error(st, "bp_plugin_load: plugin %s: %s", path, reason);
    return BP_OK;
}
