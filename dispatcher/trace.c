/* BP_TRACE_OPS=path.yaml: the (op, device type, dtype) triples a process dispatches,
 * written at exit in the format cmake/gen_cpu_kernels.cmake reads (BP_SELECTED_OPS):
 *
 *     # backplane selected ops, written by BP_TRACE_OPS
 *     operators:
 *       add:
 *         cpu: [f32, bf16]
 *
 * Ops sorted by name, device types by name, dtypes in enum order. The set is a dtype
 * bitmask per (op, device type slot), found through a small open-addressing table
 * keyed by the op record's address (records are never freed). A call whose triple is
 * already in the set costs a hash, a probe and a relaxed load; new triples, rare,
 * take the mutex. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dispatcher_internal.h"

/* A power of two at least twice BP_MAX_OPS keeps probe sequences short. */
#define TRACE_SLOTS 512

static bool trace_on;
static pid_t trace_pid;
static char *trace_path;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const bp_op_record *) trace_keys[TRACE_SLOTS];
static atomic_uint trace_masks[TRACE_SLOTS][BP_MAX_DEVICE_TYPES];
static char trace_type_names[BP_MAX_DEVICE_TYPES][BP_BACKEND_NAME_MAX];

static const char *const trace_header = "# backplane selected ops, written by BP_TRACE_OPS\n";

static unsigned trace_hash(const bp_op_record *op) {
    return (unsigned)((((uintptr_t)op >> 4) * 0x9e3779b97f4a7c15ull) >> 55) & (TRACE_SLOTS - 1);
}

/* The slot of `op`, inserting it when `insert` (call with trace_lock held then), or -1. */
static int trace_slot(const bp_op_record *op, bool insert) {
    unsigned h = trace_hash(op);
    for (unsigned i = 0; i < TRACE_SLOTS; i++) {
        unsigned slot = (h + i) & (TRACE_SLOTS - 1);
        const bp_op_record *key = atomic_load_explicit(&trace_keys[slot], memory_order_acquire);
        if (key == op)
            return (int)slot;
        if (!key) {
            if (!insert)
                return -1;
            atomic_store_explicit(&trace_keys[slot], op, memory_order_release);
            return (int)slot;
        }
    }
    return -1;
}

void bp_trace_note(const bp_op_record *op, const bp_device *device, bp_dtype dtype) {
    if (!trace_on)
        return;
    int type = device->backend->type_slot;
    if (type < 0 || type >= BP_MAX_DEVICE_TYPES || (unsigned)dtype >= BP_DTYPE_COUNT)
        return;
    unsigned bit = BP_DTYPE_BIT(dtype);
    int slot = trace_slot(op, false);
    if (slot >= 0 && (atomic_load_explicit(&trace_masks[slot][type], memory_order_relaxed) & bit))
        return;
    pthread_mutex_lock(&trace_lock);
    slot = trace_slot(op, true);
    if (slot >= 0) {
        if (!trace_type_names[type][0])
            snprintf(trace_type_names[type], BP_BACKEND_NAME_MAX, "%s", device->backend->name);
        atomic_fetch_or_explicit(&trace_masks[slot][type], bit, memory_order_relaxed);
    }
    pthread_mutex_unlock(&trace_lock);
}

bool bp_trace_enabled(void) { return trace_on; }

static int by_op_name(const void *a, const void *b) {
    const bp_op_record *x = atomic_load(&trace_keys[*(const int *)a]);
    const bp_op_record *y = atomic_load(&trace_keys[*(const int *)b]);
    return strcmp(x->name, y->name);
}

static int by_type_name(const void *a, const void *b) {
    return strcmp(trace_type_names[*(const int *)a], trace_type_names[*(const int *)b]);
}

static void write_ops(FILE *f) {
    int ops[TRACE_SLOTS], n_ops = 0;
    for (int slot = 0; slot < TRACE_SLOTS; slot++) {
        if (!atomic_load(&trace_keys[slot]))
            continue;
        for (int type = 0; type < BP_MAX_DEVICE_TYPES; type++)
            if (atomic_load(&trace_masks[slot][type])) {
                ops[n_ops++] = slot;
                break;
            }
    }
    qsort(ops, (size_t)n_ops, sizeof ops[0], by_op_name);
    int types[BP_MAX_DEVICE_TYPES], n_types = 0;
    for (int type = 0; type < BP_MAX_DEVICE_TYPES; type++)
        if (trace_type_names[type][0])
            types[n_types++] = type;
    qsort(types, (size_t)n_types, sizeof types[0], by_type_name);

    fputs(trace_header, f);
    fputs(n_ops ? "operators:\n" : "operators: {}\n", f);
    for (int i = 0; i < n_ops; i++) {
        fprintf(f, "  %s:\n", atomic_load(&trace_keys[ops[i]])->name);
        for (int t = 0; t < n_types; t++) {
            unsigned mask = atomic_load(&trace_masks[ops[i]][types[t]]);
            if (!mask)
                continue;
            fprintf(f, "    %s: [", trace_type_names[types[t]]);
            const char *sep = "";
            for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
                if (mask & BP_DTYPE_BIT(dt)) {
                    fprintf(f, "%s%s", sep, bp_dtype_name((bp_dtype)dt));
                    sep = ", ";
                }
            fputs("]\n", f);
        }
    }
}

/* Creates the temporary file beside the target (so that rename is atomic) and opens
 * it; NULL with errno set on failure. */
static FILE *open_temp(char *tmp, size_t size) {
    if ((size_t)snprintf(tmp, size, "%s.XXXXXX", trace_path) >= size) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = mkstemp(tmp);
    if (fd < 0)
        return NULL;
    /* mkstemp makes the file 0600; a build reads it like any source file. (Reading the
     * umask would mean setting it, which races with other threads.) */
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        errno = saved;
    }
    return f;
}

static void trace_write(void) {
    if (!trace_on || getpid() != trace_pid)
        return; /* a forked child does not overwrite its parent's file */
    char tmp[PATH_MAX + 8];
    pthread_mutex_lock(&trace_lock);
    FILE *f = open_temp(tmp, sizeof tmp);
    if (!f) {
        bp_log(BP_LOG_WARN, "trace", "BP_TRACE_OPS: cannot create a file beside %s: %s",
               trace_path, strerror(errno));
        pthread_mutex_unlock(&trace_lock);
        return;
    }
    write_ops(f);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, trace_path) != 0) {
        bp_log(BP_LOG_WARN, "trace", "BP_TRACE_OPS: cannot write %s: %s", trace_path,
               strerror(errno));
        unlink(tmp);
    }
    pthread_mutex_unlock(&trace_lock);
}

/* The absolute form of `path`, so that a later chdir does not move the output. */
static char *absolute_path(const char *path) {
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    size_t size = strlen(cwd) + strlen(path) + 2;
    char *abs = malloc(size);
    if (abs)
        snprintf(abs, size, "%s/%s", cwd, path);
    return abs;
}

/* A forked child must not inherit a held lock. */
static void before_fork(void) { pthread_mutex_lock(&trace_lock); }
static void after_fork(void) { pthread_mutex_unlock(&trace_lock); }

void bp_trace_init(void) {
    const char *value = secure_getenv("BP_TRACE_OPS");
    if (!value || !*value)
        return;
    trace_path = absolute_path(value);
    if (!trace_path) {
        bp_log(BP_LOG_WARN, "trace", "BP_TRACE_OPS=%s: %s; tracing is off", value,
               strerror(errno));
        return;
    }
    /* Find out now, not at exit, whether the file can be written there. */
    struct stat st;
    char tmp[PATH_MAX + 8];
    FILE *probe = NULL;
    if (stat(trace_path, &st) == 0 && S_ISDIR(st.st_mode))
        errno = EISDIR;
    else
        probe = open_temp(tmp, sizeof tmp);
    if (!probe) {
        bp_log(BP_LOG_WARN, "trace", "BP_TRACE_OPS=%s cannot be written: %s; tracing is off",
               value, strerror(errno));
        free(trace_path);
        trace_path = NULL;
        return;
    }
    fclose(probe);
    unlink(tmp);
    trace_pid = getpid();
    trace_on = true;
    if (pthread_atfork(before_fork, after_fork, after_fork) != 0 || atexit(trace_write) != 0) {
        bp_log(BP_LOG_WARN, "trace", "BP_TRACE_OPS: cannot register the writer at exit; "
               "tracing is off");
        trace_on = false;
        return;
    }
    bp_log(BP_LOG_INFO, "trace", "recording dispatched ops into %s at exit", trace_path);
}
