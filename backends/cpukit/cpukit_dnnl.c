/* oneDNN's matmul primitive, loaded at run time (see cpukit_dnnl.h).
 *
 * Threads and streams. A oneDNN primitive is immutable once created and may be
 * executed from several threads at once, each through its own stream (a stream is not
 * thread-safe); the engine may be shared. So: one CPU engine for the process, and a
 * stack of idle streams that a call takes one from (or creates one) and puts back:
 * as many streams as calls ever ran at once. Not per-thread streams freed by a
 * thread-exit destructor: a stream worker that ends at process exit, after oneDNN's
 * own destructors ran, would call into a finalised library.
 *
 * Primitives. Creating a matmul primitive (choosing and JIT-compiling the kernel) costs
 * far more than a small product, so they are kept in a cache of CACHE_SIZE entries
 * keyed on everything the primitive depends on (dtype, sizes, every stride, batch
 * dims, threads), least recently used out first. An entry in use by another thread is
 * freed by the last user. A geometry that oneDNN implements only with its reference
 * kernel is cached too, as "no primitive", so the caller's fallback is not re-decided.
 *
 * Scratchpad: user mode. In library mode a build like PyPI's (DNNL_ENABLE_CONCURRENT_EXEC
 * off) shares one scratchpad among primitives and requires each primitive to run on
 * the thread that created it, which a cache shared by the stream workers cannot
 * promise (two streams' bf16 products were seen to corrupt each other). So each
 * primitive's scratchpad comes from a buffer that belongs to the stream the call took
 * (below): held by one call at a time, grown as needed, reused across calls.
 *
 * Process exit. A program may exit with a matmul still running on a stream worker, and
 * exit runs oneDNN's destructors (its primitive cache among them), after the atexit
 * handlers. Ours, registered when oneDNN loads, waits for the calls in flight and
 * turns later ones away (the caller's next engine runs them), so none runs into a
 * finalised library.
 *
 * f32 is computed in f32: the fpmath mode is strict (oneDNN would otherwise honour
 * ONEDNN_DEFAULT_FPMATH_MODE and may compute f32 in bf16). */
#include "cpukit_dnnl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#define LOG(...) (log ? log(__VA_ARGS__) : (void)0)

/* The oneDNN functions used, each resolved before any is called. */
#define DNNL_FUNCTIONS(X)                                                                   \
    X(version) X(engine_create) X(stream_create) X(stream_wait) X(stream_destroy)          \
    X(memory_desc_create_with_strides) X(memory_desc_destroy) X(memory_create)             \
    X(memory_destroy) X(primitive_attr_create) X(primitive_attr_destroy)                   \
    X(primitive_attr_set_fpmath_mode) X(primitive_attr_set_scratchpad_mode)                \
    X(matmul_primitive_desc_create) X(primitive_desc_query) X(primitive_desc_query_md)     \
    X(primitive_desc_destroy) X(memory_desc_clone) X(memory_desc_get_size)                 \
    X(primitive_create) X(primitive_execute) X(primitive_destroy)

static struct {
#define DNNL_FIELD(name) __typeof__(dnnl_##name) *name;
    DNNL_FUNCTIONS(DNNL_FIELD)
#undef DNNL_FIELD
    void (*omp_set_num_threads)(int); /* from the OpenMP runtime oneDNN loaded, or NULL */
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cpukit_log_fn load_log;
static const char *load_failure = "not loaded";
static char load_reason[512];
static dnnl_engine_t engine;

/* BP_ONEDNN_LIBRARY chooses code: read with secure_getenv. */
static const char *library_name(void) {
    const char *name = secure_getenv("BP_ONEDNN_LIBRARY");
    return name && *name ? name : "libdnnl.so.3";
}

static const char *fail(const char *fmt, const char *a, const char *b) {
    snprintf(load_reason, sizeof load_reason, fmt, a, b);
    return load_reason;
}

/* Loads the library and resolves every function; NULL or the reason. */
static const char *load_library(const char *name) {
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return fail("cannot load %s: %s", name, dlerror());
#define DNNL_RESOLVE(fn)                                                                   \
    {                                                                                      \
        void *sym = dlsym(lib, "dnnl_" #fn);                                               \
        if (!sym) {                                                                        \
            dlclose(lib);                                                                  \
            return fail("%s has no %s: not oneDNN 3", name, "dnnl_" #fn);                  \
        }                                                                                  \
        memcpy(&api.fn, &sym, sizeof api.fn);                                              \
    }
    DNNL_FUNCTIONS(DNNL_RESOLVE)
#undef DNNL_RESOLVE
    const dnnl_version_t *v = api.version();
    if (v->major != 3) {
        char version[32];
        snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
        dlclose(lib);
        return fail("%s is oneDNN %s, not 3.x", name, version);
    }
    /* With the library's handle dlsym also searches what it loaded: its libgomp. */
    void *sym = v->cpu_runtime == DNNL_RUNTIME_OMP ? dlsym(lib, "omp_set_num_threads") : NULL;
    memcpy(&api.omp_set_num_threads, &sym, sizeof sym);
    if (api.engine_create(&engine, dnnl_cpu, 0) != dnnl_success) {
        dlclose(lib);
        return fail("%s: no CPU engine%s", name, "");
    }
    return NULL; /* the library stays loaded for the life of the process */
}

/* Calls in flight, and whether the process is exiting (see "Process exit"). */
static pthread_mutex_t flight_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flight_done = PTHREAD_COND_INITIALIZER;
static int in_flight;
static bool exiting;

static void wait_for_calls_at_exit(void) {
    pthread_mutex_lock(&flight_lock);
    exiting = true;
    while (in_flight > 0)
        pthread_cond_wait(&flight_done, &flight_lock);
    pthread_mutex_unlock(&flight_lock);
}

/* A call may start: false once the process exits. */
static bool begin_call(void) {
    pthread_mutex_lock(&flight_lock);
    bool ok = !exiting;
    in_flight += ok;
    pthread_mutex_unlock(&flight_lock);
    return ok;
}

static void end_call(void) {
    pthread_mutex_lock(&flight_lock);
    if (--in_flight == 0)
        pthread_cond_broadcast(&flight_done);
    pthread_mutex_unlock(&flight_lock);
}

/* oneDNN builds some of its process-wide state (its primitive cache among them) at the
 * first primitive and registers that state's destructors then. One 1 x 1 primitive
 * made and dropped before our exit handler is registered makes the handler run before
 * those destructors (exit runs them in the reverse order of registration); otherwise a
 * call still in flight at exit could find the cache destroyed (seen: a crash in its
 * lock, 1 exit in 100). */
static const char *warm_up(void) {
    dnnl_dims_t dims = {1, 1}, strides = {1, 1};
    dnnl_memory_desc_t md = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t primitive = NULL;
    bool made =
        api.memory_desc_create_with_strides(&md, 2, dims, dnnl_f32, strides) == dnnl_success &&
        api.matmul_primitive_desc_create(&pd, engine, md, md, NULL, md, NULL) == dnnl_success &&
        api.primitive_create(&primitive, pd) == dnnl_success;
    if (primitive)
        api.primitive_destroy(primitive);
    if (pd)
        api.primitive_desc_destroy(pd);
    if (md)
        api.memory_desc_destroy(md);
    return made ? NULL : "a first 1 x 1 f32 matmul primitive could not be made";
}

static void load(void) {
    cpukit_log_fn log = load_log;
    load_failure = load_library(library_name());
    if (!load_failure)
        load_failure = warm_up();
    if (!load_failure && atexit(wait_for_calls_at_exit) != 0)
        load_failure = "no atexit handler could be registered to stop it at exit";
    if (load_failure) {
        LOG(BP_LOG_INFO, "matmul", "oneDNN: %s", load_failure);
        return;
    }
    const dnnl_version_t *v = api.version();
    LOG(BP_LOG_INFO, "matmul", "matmul: oneDNN %d.%d.%d (%s) from %s%s", v->major, v->minor,
        v->patch, v->hash, library_name(),
        api.omp_set_num_threads ? "" : "; its thread count is its own (not an OpenMP build)");
}

const char *cpukit_dnnl_load(cpukit_log_fn log) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock); /* load_log is read by the one load() */
    load_log = log;
    pthread_once(&load_once, load);
    pthread_mutex_unlock(&lock);
    return load_failure;
}

/* ---- the primitive cache ---- */

enum { CACHE_SIZE = 64 };

typedef struct dnnl_key {
    bp_dtype dt;
    int threads;
    cpukit_mm_geometry g;
} dnnl_key;

typedef struct dnnl_entry {
    dnnl_key key;
    dnnl_primitive_t primitive; /* NULL: oneDNN has only its reference kernel for it */
    dnnl_memory_desc_t md[4];   /* a, b, c, the scratchpad */
    size_t scratch_bytes;
    int users;                  /* calls executing it now */
    bool evicted;               /* out of the cache: the last user frees it */
    uint64_t last_use;
} dnnl_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_entry *cache[CACHE_SIZE];
static uint64_t cache_clock;
static bool logged_impl[BP_DTYPE_COUNT], logged_none[BP_DTYPE_COUNT]; /* under cache_lock */

/* True once per flag. */
static bool first_time(bool *flag) {
    bool first = !*flag;
    *flag = true;
    return first;
}

static void free_entry(dnnl_entry *e) {
    if (e->primitive)
        api.primitive_destroy(e->primitive);
    for (int i = 0; i < 4; i++)
        if (e->md[i])
            api.memory_desc_destroy(e->md[i]);
    free(e);
}

static dnnl_data_type_t dnnl_type(bp_dtype dt) {
    return dt == BP_DTYPE_BF16 ? dnnl_bf16 : dt == BP_DTYPE_F16 ? dnnl_f16 : dnnl_f32;
}

/* The dtype's name for the log (plugins link this file: no bp_dtype_name). */
static const char *dtype_name(bp_dtype dt) {
    return dt == BP_DTYPE_BF16 ? "bf16" : dt == BP_DTYPE_F16 ? "f16" : "f32";
}

/* A memory descriptor of batch dims (shape, strides; stride 0: broadcast, a dim of 1
 * for oneDNN) then rows x cols with strides (rs, cs). A dim of 1 gets a stride past
 * all the others', as a dense layout would give it, whatever the tensor says. NULL
 * when oneDNN cannot express it (a zero or negative stride on a longer dim). */
static dnnl_memory_desc_t matrix_desc(const cpukit_mm_geometry *g, const int64_t *bstrides,
                                      int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                                      bp_dtype dt) {
    int nd = g->nbatch + 2;
    dnnl_dims_t dims, strides;
    for (int d = 0; d < g->nbatch; d++) {
        dims[d] = bstrides[d] ? g->bshape[d] : 1;
        strides[d] = bstrides[d];
    }
    dims[nd - 2] = rows, strides[nd - 2] = rs;
    dims[nd - 1] = cols, strides[nd - 1] = cs;
    int64_t span = 1;
    for (int d = 0; d < nd; d++) {
        if (dims[d] > 1 && strides[d] <= 0)
            return NULL;
        if (dims[d] > 1 && (dims[d] - 1) * strides[d] + 1 > span)
            span = (dims[d] - 1) * strides[d] + 1;
    }
    for (int d = 0; d < nd; d++)
        if (dims[d] == 1)
            strides[d] = span;
    dnnl_memory_desc_t md;
    if (api.memory_desc_create_with_strides(&md, nd, dims, dnnl_type(dt), strides) != dnnl_success)
        return NULL;
    return md;
}

/* A new entry for key: its primitive, or none (reference kernel only, or unsupported). */
static dnnl_entry *create_entry(const dnnl_key *key, cpukit_log_fn log) {
    dnnl_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->key = *key;
    const cpukit_mm_geometry *g = &key->g;
    e->md[0] = matrix_desc(g, g->bsa, g->m, g->k, g->sam, g->sak, key->dt);
    e->md[1] = matrix_desc(g, g->bsb, g->k, g->n, g->sbk, g->sbn, key->dt);
    e->md[2] = matrix_desc(g, g->bsc, g->m, g->n, g->scm, g->scn, key->dt);
    if (!e->md[0] || !e->md[1] || !e->md[2] || g->nbatch + 2 > DNNL_MAX_NDIMS)
        return e;
    dnnl_primitive_attr_t attr;
    if (api.primitive_attr_create(&attr) != dnnl_success)
        return e;
    dnnl_primitive_desc_t pd = NULL;
    if (api.primitive_attr_set_fpmath_mode(attr, dnnl_fpmath_mode_strict) == dnnl_success &&
        api.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ==
            dnnl_success &&
        api.matmul_primitive_desc_create(&pd, engine, e->md[0], e->md[1], NULL, e->md[2], attr) !=
            dnnl_success)
        pd = NULL;
    api.primitive_attr_destroy(attr);
    if (!pd)
        return e;
    const char *impl = "";
    api.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    const_dnnl_memory_desc_t scratch = api.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (strncmp(impl, "ref", 3) != 0 && scratch &&
        api.memory_desc_clone(&e->md[3], scratch) == dnnl_success &&
        api.primitive_create(&e->primitive, pd) == dnnl_success) {
        e->scratch_bytes = api.memory_desc_get_size(e->md[3]);
        if (first_time(&logged_impl[key->dt]))
            LOG(BP_LOG_INFO, "matmul", "%s matmul on oneDNN (%s)", dtype_name(key->dt), impl);
    } else {
        e->primitive = NULL;
    }
    api.primitive_desc_destroy(pd);
    return e;
}

/* The entry for key, created if new, with one more user; NULL when out of memory. */
static dnnl_entry *acquire(const dnnl_key *key, cpukit_log_fn log) {
    pthread_mutex_lock(&cache_lock);
    int slot = 0;
    dnnl_entry *e = NULL;
    for (int i = 0; i < CACHE_SIZE && !e; i++) {
        if (cache[i] && memcmp(&cache[i]->key, key, sizeof *key) == 0)
            e = cache[i];
        else if (!cache[i] || (cache[slot] && cache[i]->last_use < cache[slot]->last_use))
            slot = i; /* an empty slot, else the least recently used */
    }
    if (!e) {
        /* Created under the lock: two threads never build the same primitive twice. */
        e = create_entry(key, log);
        if (e && !e->primitive && first_time(&logged_none[key->dt]))
            LOG(BP_LOG_INFO, "matmul", "oneDNN has no kernel but its reference one for some %s "
                "matmul (dims or strides) on this CPU: another engine runs those",
                dtype_name(key->dt));
        if (e) {
            dnnl_entry *old = cache[slot];
            if (old && old->users)
                old->evicted = true;
            else if (old)
                free_entry(old);
            cache[slot] = e;
        }
    }
    if (e) {
        e->users++;
        e->last_use = ++cache_clock;
    }
    pthread_mutex_unlock(&cache_lock);
    return e;
}

static void release(dnnl_entry *e) {
    pthread_mutex_lock(&cache_lock);
    bool orphan = --e->users == 0 && e->evicted;
    pthread_mutex_unlock(&cache_lock);
    if (orphan)
        free_entry(e);
}

/* ---- execution ---- */

typedef struct stream_node {
    dnnl_stream_t stream;
    void *scratch; /* the scratchpad of the call holding this stream */
    size_t scratch_bytes;
    struct stream_node *next;
} stream_node;

static pthread_mutex_t stream_lock = PTHREAD_MUTEX_INITIALIZER;
static stream_node *idle_streams;

/* An idle stream, or a new one; NULL when none can be made. */
static stream_node *take_stream(void) {
    pthread_mutex_lock(&stream_lock);
    stream_node *node = idle_streams;
    if (node)
        idle_streams = node->next;
    pthread_mutex_unlock(&stream_lock);
    if (node)
        return node;
    node = calloc(1, sizeof *node);
    if (node && api.stream_create(&node->stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        free(node);
        node = NULL;
    }
    return node;
}

static void put_stream(stream_node *node) {
    pthread_mutex_lock(&stream_lock);
    node->next = idle_streams;
    idle_streams = node;
    pthread_mutex_unlock(&stream_lock);
}

/* The stream's scratchpad grown to bytes (64-byte aligned); false when it cannot be. */
static bool reserve_scratch(stream_node *node, size_t bytes) {
    if (bytes <= node->scratch_bytes)
        return true;
    free(node->scratch);
    node->scratch = aligned_alloc(64, (bytes + 63) / 64 * 64);
    node->scratch_bytes = node->scratch ? bytes : 0;
    return node->scratch != NULL;
}

static bool execute(const dnnl_entry *e, const void *a, const void *b, void *c) {
    stream_node *node = take_stream();
    if (!node)
        return false;
    dnnl_memory_t mem[4] = {NULL, NULL, NULL, NULL};
    void *handles[4] = {(void *)a, (void *)b, c, NULL};
    bool ok = reserve_scratch(node, e->scratch_bytes);
    handles[3] = node->scratch;
    for (int i = 0; i < 4 && ok; i++)
        ok = api.memory_create(&mem[i], e->md[i], engine, handles[i]) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]},
                                   {DNNL_ARG_DST, mem[2]}, {DNNL_ARG_SCRATCHPAD, mem[3]}};
        ok = api.primitive_execute(e->primitive, node->stream, 4, args) == dnnl_success &&
             api.stream_wait(node->stream) == dnnl_success;
    }
    for (int i = 0; i < 4; i++)
        if (mem[i])
            api.memory_destroy(mem[i]);
    put_stream(node);
    return ok;
}

bool cpukit_dnnl_matmul(const cpukit_mm_geometry *g, bp_dtype dt, const void *a, const void *b,
                        void *c, int threads, cpukit_log_fn log) {
    if (cpukit_dnnl_load(log) || g->k <= 0)
        return false;
    if (dt != BP_DTYPE_F32 && dt != BP_DTYPE_BF16 && dt != BP_DTYPE_F16)
        return false;
    if (!begin_call())
        return false;
    /* Set before creating the primitive too: oneDNN sizes some kernels' work split
     * by the thread count it sees then. */
    if (api.omp_set_num_threads)
        api.omp_set_num_threads(threads);
    dnnl_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp: padding included */
    key.dt = dt;
    key.threads = threads;
    key.g.m = g->m, key.g.n = g->n, key.g.k = g->k;
    key.g.sam = g->sam, key.g.sak = g->sak, key.g.sbk = g->sbk;
    key.g.sbn = g->sbn, key.g.scm = g->scm, key.g.scn = g->scn;
    key.g.nbatch = g->nbatch;
    for (int d = 0; d < g->nbatch; d++) {
        key.g.bshape[d] = g->bshape[d];
        key.g.bsa[d] = g->bsa[d], key.g.bsb[d] = g->bsb[d], key.g.bsc[d] = g->bsc[d];
    }
    key.g.items = g->items;
    dnnl_entry *e = acquire(&key, log);
    bool done = e && e->primitive && execute(e, a, b, c);
    if (e)
        release(e);
    end_call();
    return done;
}
