/* cuda: matmul through cuBLASLt, loaded at run time: the driver table's gemm provider
 * (cu_blaslt_provider, gpu_driver.h), which the GPU core's matmul asks first.
 *
 * Loading. libcublasLt.so.13, else .so.12, else libcublasLt.so ($BP_CUBLASLT_LIBRARY
 * names another; $BP_CUDA_BLASLT=0 turns cuBLASLt off) is opened once per process with
 * dlopen and never closed; its functions are looked up with dlsym and called with the
 * prototypes of the <cublasLt.h> the plugin was built with. The plugin never links it,
 * so it loads where cuBLASLt is absent and matmul then runs on its own kernels.
 *
 * Per device (the provider's state, made by the core at the device's first gemm under
 * its lock, with the device's context current): a cuBLASLt handle and a table of plans.
 *
 * Plans. A plan holds what cublasLtMatmul needs besides the pointers: the operation
 * descriptor, the three matrix layouts, the algorithm the heuristic chose and the
 * workspace it needs. Its key is the problem's signature: dtype, transposes, m, n, k,
 * leading dims, batch count and batch strides, and each operand's alignment (of its
 * pointer and batch stride: the heuristic is told, and leaves out algorithms that need
 * more). The table keeps the PLAN_SLOTS most recently used plans, found by hash in a
 * linear scan, so a repeated problem costs a lookup and the cublasLtMatmul call: no
 * heuristic query and no descriptor creation. A problem the heuristic declines is
 * cached too, as a plan without algorithm. cublasLtMatmul runs outside the table's
 * lock; the plan it uses is pinned meanwhile, so that another thread's miss never
 * replaces it (when every slot is pinned, the new plan runs once uncached).
 *
 * Workspace: the heuristic may plan for GPU_WORKSPACE_BYTES; a plan that needs any runs
 * with the stream's workspace of that size (what a region gives its streams before
 * capturing), so it grows once per stream.
 *
 * Mapping. cuBLASLt is column-major: a row-major m x n matrix with row stride ld is its
 * n x m matrix with leading dim ld. So row-major C = op(A) op(B) is computed as
 * C^T = op(B)^T op(A)^T, with our B as cuBLASLt's A and our A as its B; the transposes
 * carry over unchanged.
 *
 * Precision: compute type CUBLAS_COMPUTE_32F (never TF32), f32 alpha and beta. For f16
 * and bf16, split-k algorithms may only reduce their partial sums in f32 (the reduction
 * scheme mask), so every sum is accumulated in f32 and rounded once. */
#include "cu_driver.h"

#include <pthread.h>
#include <stdbool.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes" /* cublasLtLoggerForceDisable() */
#include <cublasLt.h>
#pragma GCC diagnostic pop

enum { PLAN_SLOTS = 64 };

/* ---- the library ---- */

#define BLASLT_FUNCTIONS(X)                                                                   \
    X(cublasLtCreate)                                                                         \
    X(cublasLtDestroy)                                                                        \
    X(cublasLtGetVersion)                                                                     \
    X(cublasLtGetStatusName)                                                                  \
    X(cublasLtMatmulDescCreate)                                                               \
    X(cublasLtMatmulDescDestroy)                                                              \
    X(cublasLtMatmulDescSetAttribute)                                                         \
    X(cublasLtMatrixLayoutCreate)                                                             \
    X(cublasLtMatrixLayoutDestroy)                                                            \
    X(cublasLtMatrixLayoutSetAttribute)                                                       \
    X(cublasLtMatmulPreferenceCreate)                                                         \
    X(cublasLtMatmulPreferenceDestroy)                                                        \
    X(cublasLtMatmulPreferenceSetAttribute)                                                   \
    X(cublasLtMatmulAlgoGetHeuristic)                                                         \
    X(cublasLtMatmul)

static struct {
    pthread_once_t once;
    const bp_host_services *host; /* for the log line of loading */
    bool loaded;
    char status[320]; /* what loading found, for the log */
#define BLASLT_MEMBER(name) __typeof__(&name) name;
    BLASLT_FUNCTIONS(BLASLT_MEMBER)
#undef BLASLT_MEMBER
} lt = {.once = PTHREAD_ONCE_INIT};

static void open_library(void) {
    const char *enabled = getenv("BP_CUDA_BLASLT");
    if (enabled && strcmp(enabled, "0") == 0) {
        snprintf(lt.status, sizeof lt.status, "cuBLASLt disabled (BP_CUDA_BLASLT=0)");
        return;
    }
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                        "libcublasLt.so"};
    const char *chosen = secure_getenv("BP_CUBLASLT_LIBRARY");
    const char *path = NULL;
    void *lib = NULL;
    if (chosen && *chosen) {
        path = chosen;
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
            path = names[i];
            lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!lib) {
        const char *why = dlerror();
        snprintf(lt.status, sizeof lt.status, "cuBLASLt not found: %s", why ? why : path);
        return;
    }
#define BLASLT_LOAD(name)                                                                     \
    {                                                                                         \
        void *fn = dlsym(lib, #name);                                                         \
        if (!fn) {                                                                            \
            snprintf(lt.status, sizeof lt.status, "cuBLASLt unusable: %s has no %s", path,    \
                     #name);                                                                  \
            dlclose(lib);                                                                     \
            return;                                                                           \
        }                                                                                     \
        memcpy(&lt.name, &fn, sizeof fn);                                                     \
    }
    BLASLT_FUNCTIONS(BLASLT_LOAD)
#undef BLASLT_LOAD
    size_t v = lt.cublasLtGetVersion();
    snprintf(lt.status, sizeof lt.status, "cuBLASLt %zu.%zu.%zu (%s)", v / 10000, v / 100 % 100,
             v % 100, path);
    lt.loaded = true;
}

/* Once per process; the outcome goes to the log (BP_LOG=info shows it). */
static void load_library(void) {
    open_library();
    const bp_host_services *host = __atomic_load_n(&lt.host, __ATOMIC_RELAXED);
    host->log(BP_LOG_INFO, CU_NAME, "cuda: matmul: %s", lt.status);
}

static bool library_loaded(const bp_host_services *host) {
    __atomic_store_n(&lt.host, host, __ATOMIC_RELAXED); /* the same host from every device */
    pthread_once(&lt.once, load_library);
    return lt.loaded;
}

static const char *status_name(cublasStatus_t r) {
    const char *name = lt.cublasLtGetStatusName(r);
    return name ? name : "unknown cuBLAS status";
}

/* ---- plans ---- */

typedef struct plan_key {
    int32_t dtype, trans_a, trans_b;
    uint32_t align_a, align_b, align_c; /* bytes, at most 256 */
    int64_t m, n, k, batch;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c; /* 0 when batch is 1 */
} plan_key;
_Static_assert(sizeof(plan_key) == 13 * sizeof(uint64_t), "plan_key has no padding");

typedef struct plan {
    plan_key key;
    uint64_t hash;
    bool used;     /* the slot holds a plan */
    bool runnable; /* the heuristic found an algorithm: else the problem is declined */
    int pins;      /* calls running it now */
    uint64_t last_use;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t layout_a, layout_b, layout_c; /* of our A, B and C */
    cublasLtMatmulAlgo_t algo;
    size_t workspace; /* bytes the algorithm needs */
} plan;

typedef struct cu_blaslt {
    const bp_host_services *host;
    int device_index;
    cublasLtHandle_t handle; /* NULL when cuBLASLt is absent or creating it failed */
    char status[400];
    pthread_mutex_t lock; /* the plans */
    uint64_t clock;
    plan plans[PLAN_SLOTS];
} cu_blaslt;

/* The largest power of two (up to 256) dividing the address of every batch item. */
static uint32_t alignment(const void *ptr, int64_t batch, int64_t stride, size_t esize) {
    uint64_t bits = (uint64_t)(uintptr_t)ptr | 256u;
    if (batch > 1)
        bits |= (uint64_t)stride * esize;
    return (uint32_t)(bits & (~bits + 1));
}

static uint64_t key_hash(const plan_key *key) {
    uint64_t words[sizeof *key / sizeof(uint64_t)];
    memcpy(words, key, sizeof words);
    uint64_t h = 0x243f6a8885a308d3u;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        h = (h ^ words[i]) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    return h;
}

static void destroy_plan(plan *p) {
    if (p->layout_a)
        lt.cublasLtMatrixLayoutDestroy(p->layout_a);
    if (p->layout_b)
        lt.cublasLtMatrixLayoutDestroy(p->layout_b);
    if (p->layout_c)
        lt.cublasLtMatrixLayoutDestroy(p->layout_c);
    if (p->op)
        lt.cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

/* A column-major rows x cols layout with leading dim ld, strided over `batch` items. */
static cublasStatus_t make_layout(cublasLtMatrixLayout_t *out, cudaDataType_t type,
                                  int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                  int64_t stride) {
    cublasStatus_t r = lt.cublasLtMatrixLayoutCreate(out, type, (uint64_t)rows, (uint64_t)cols, ld);
    if (r == CUBLAS_STATUS_SUCCESS && batch > 1) {
        int32_t count = (int32_t)batch;
        r = lt.cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                sizeof count);
        if (r == CUBLAS_STATUS_SUCCESS)
            r = lt.cublasLtMatrixLayoutSetAttribute(
                *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    }
    return r;
}

/* Asks the heuristic for p's algorithm (descriptors made); false when it has none. */
static bool choose_algorithm(cu_blaslt *bl, plan *p) {
    const plan_key *key = &p->key;
    cublasLtMatmulPreference_t pref = NULL;
    cublasStatus_t r = lt.cublasLtMatmulPreferenceCreate(&pref);
    uint64_t workspace = GPU_WORKSPACE_BYTES;
    uint32_t schemes = key->dtype == BP_DTYPE_F32 ? CUBLASLT_REDUCTION_SCHEME_MASK
                                                  : CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    /* cuBLASLt's A, B, C and D are our B, A, C and C. */
    const struct {
        cublasLtMatmulPreferenceAttributes_t attr;
        const void *value;
        size_t size;
    } prefs[] = {
        {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace},
        {CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key->align_b, sizeof key->align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key->align_a, sizeof key->align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key->align_c, sizeof key->align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key->align_c, sizeof key->align_c},
    };
    for (size_t i = 0; r == CUBLAS_STATUS_SUCCESS && i < sizeof prefs / sizeof prefs[0]; i++)
        r = lt.cublasLtMatmulPreferenceSetAttribute(pref, prefs[i].attr, prefs[i].value,
                                                    prefs[i].size);
    cublasLtMatmulHeuristicResult_t result;
    memset(&result, 0, sizeof result);
    int found = 0;
    if (r == CUBLAS_STATUS_SUCCESS)
        r = lt.cublasLtMatmulAlgoGetHeuristic(bl->handle, p->op, p->layout_b, p->layout_a,
                                              p->layout_c, p->layout_c, pref, 1, &result, &found);
    if (pref)
        lt.cublasLtMatmulPreferenceDestroy(pref);
    if (r != CUBLAS_STATUS_SUCCESS || found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return false;
    p->algo = result.algo;
    p->workspace = result.workspaceSize;
    return true;
}

/* Makes the plan of `key` into *p: runnable, or declined (no descriptors kept). Fails
 * only when cuBLASLt runs out of host memory. */
static bp_status build_plan(cu_blaslt *bl, const plan_key *key, uint64_t hash, plan *p) {
    memset(p, 0, sizeof *p);
    p->key = *key;
    p->hash = hash;
    p->used = true;
    cudaDataType_t type = key->dtype == BP_DTYPE_F32   ? CUDA_R_32F
                          : key->dtype == BP_DTYPE_F16 ? CUDA_R_16F
                                                       : CUDA_R_16BF;
    int32_t op_a = key->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A: our B */
    int32_t op_b = key->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t r = lt.cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = lt.cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
                                              sizeof op_a);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = lt.cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
                                              sizeof op_b);
    /* Each operand as stored: row-major (rows x cols, row stride ld), so column-major
     * cols x rows. A is stored m x k, or k x m when transposed; B k x n, or n x k. */
    if (r == CUBLAS_STATUS_SUCCESS)
        r = make_layout(&p->layout_a, type, key->trans_a ? key->m : key->k,
                        key->trans_a ? key->k : key->m, key->lda, key->batch, key->stride_a);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = make_layout(&p->layout_b, type, key->trans_b ? key->k : key->n,
                        key->trans_b ? key->n : key->k, key->ldb, key->batch, key->stride_b);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = make_layout(&p->layout_c, type, key->n, key->m, key->ldc, key->batch, key->stride_c);
    if (r == CUBLAS_STATUS_ALLOC_FAILED) {
        destroy_plan(p);
        return bl->host->set_error(BP_ERR_OUT_OF_MEMORY, "cuda:%d: matmul: cuBLASLt: %s",
                                   bl->device_index, status_name(r));
    }
    p->runnable = r == CUBLAS_STATUS_SUCCESS && choose_algorithm(bl, p);
    if (!p->runnable) {
        destroy_plan(p);
        p->key = *key;
        p->hash = hash;
        p->used = true;
    }
    return BP_OK;
}

/* Under bl->lock: the plan of `key`, or NULL. */
static plan *find_plan(cu_blaslt *bl, const plan_key *key, uint64_t hash) {
    for (int i = 0; i < PLAN_SLOTS; i++) {
        plan *p = &bl->plans[i];
        if (p->used && p->hash == hash && memcmp(&p->key, key, sizeof *key) == 0)
            return p;
    }
    return NULL;
}

/* Under bl->lock: an empty slot, else the least recently used plan that is not pinned,
 * destroyed; NULL when every plan is pinned. */
static plan *free_slot(cu_blaslt *bl) {
    plan *victim = NULL;
    for (int i = 0; i < PLAN_SLOTS; i++) {
        plan *p = &bl->plans[i];
        if (!p->used)
            return p;
        if (!p->pins && (!victim || p->last_use < victim->last_use))
            victim = p;
    }
    if (victim)
        destroy_plan(victim);
    return victim;
}

/* ---- per device ---- */

/* The device's state (its context current): a handle when cuBLASLt is loaded and
 * cublasLtCreate works, else none, and every gemm declines. NULL without memory. */
static void *device_open(const bp_host_services *host, int device_index) {
    cu_blaslt *bl = calloc(1, sizeof *bl);
    if (!bl)
        return NULL;
    bl->host = host;
    bl->device_index = device_index;
    pthread_mutex_init(&bl->lock, NULL);
    if (!library_loaded(host))
        return bl;
    cublasStatus_t r = lt.cublasLtCreate(&bl->handle);
    if (r != CUBLAS_STATUS_SUCCESS) {
        bl->handle = NULL;
        snprintf(bl->status, sizeof bl->status, "%s: cublasLtCreate failed: %s", lt.status,
                 status_name(r));
        host->log(BP_LOG_WARN, CU_NAME, "cuda:%d: %s; matmul runs on the plugin's kernels",
                  device_index, bl->status);
    }
    return bl;
}

static void device_close(void *state) {
    cu_blaslt *bl = state;
    if (bl->handle) {
        for (int i = 0; i < PLAN_SLOTS; i++)
            destroy_plan(&bl->plans[i]);
        lt.cublasLtDestroy(bl->handle);
    }
    pthread_mutex_destroy(&bl->lock);
    free(bl);
}

/* ---- gemm ---- */

/* Whether cuBLASLt can express g: sizes in its int32 range, each operand's leading dim
 * at least its stored row, non-negative batch strides. */
static bool expressible(const gpu_gemm *g) {
    int64_t limit = INT32_MAX;
    if (g->dtype != BP_DTYPE_F32 && g->dtype != BP_DTYPE_F16 && g->dtype != BP_DTYPE_BF16)
        return false;
    if (g->m < 1 || g->m > limit || g->n < 1 || g->n > limit || g->k < 1 || g->k > limit ||
        g->batch < 1 || g->batch > limit)
        return false;
    if (g->lda < (g->trans_a ? g->m : g->k) || g->ldb < (g->trans_b ? g->k : g->n) ||
        g->ldc < g->n)
        return false;
    return g->batch == 1 || (g->stride_a >= 0 && g->stride_b >= 0 && g->stride_c >= 0);
}

static plan_key key_of(const gpu_gemm *g) {
    size_t esize = g->dtype == BP_DTYPE_F32 ? 4 : 2;
    bool batched = g->batch > 1;
    plan_key key;
    memset(&key, 0, sizeof key);
    key.dtype = g->dtype;
    key.trans_a = g->trans_a != 0;
    key.trans_b = g->trans_b != 0;
    key.align_a = alignment(g->a, g->batch, g->stride_a, esize);
    key.align_b = alignment(g->b, g->batch, g->stride_b, esize);
    key.align_c = alignment(g->c, g->batch, g->stride_c, esize);
    key.m = g->m;
    key.n = g->n;
    key.k = g->k;
    key.batch = g->batch;
    key.lda = g->lda;
    key.ldb = g->ldb;
    key.ldc = g->ldc;
    key.stride_a = batched ? g->stride_a : 0;
    key.stride_b = batched ? g->stride_b : 0;
    key.stride_c = batched ? g->stride_c : 0;
    return key;
}

static bp_status run_plan(gpu_stream *s, cu_blaslt *bl, const plan *p, const gpu_gemm *g) {
    if (!p->runnable)
        return BP_ERR_UNSUPPORTED;
    void *workspace = NULL;
    size_t workspace_size = 0;
    if (p->workspace > 0) {
        bp_status st = gpu_stream_workspace(s, GPU_WORKSPACE_BYTES, &workspace);
        if (st != BP_OK)
            return st;
        workspace_size = GPU_WORKSPACE_BYTES;
    }
    static const float one = 1.0f, zero = 0.0f;
    cublasStatus_t r = lt.cublasLtMatmul(bl->handle, p->op, &one, g->b, p->layout_b, g->a,
                                         p->layout_a, &zero, g->c, p->layout_c, g->c,
                                         p->layout_c, &p->algo, workspace, workspace_size,
                                         (cudaStream_t)gpu_stream_handle(s));
    if (r != CUBLAS_STATUS_SUCCESS)
        return bl->host->set_error(BP_ERR_BACKEND, "cuda:%d: matmul: cublasLtMatmul failed: %s",
                                   bl->device_index, status_name(r));
    return gpu_stream_enqueued(s);
}

/* The provider's gemm (gpu_driver.h): the device's context is current. */
static bp_status gemm(void *state, gpu_stream *s, const gpu_gemm *g) {
    cu_blaslt *bl = state;
    if (!bl->handle || !expressible(g))
        return BP_ERR_UNSUPPORTED;
    bp_status st;
    plan_key key = key_of(g);
    uint64_t hash = key_hash(&key);

    pthread_mutex_lock(&bl->lock);
    plan *p = find_plan(bl, &key, hash);
    if (p) {
        p->pins++;
        p->last_use = ++bl->clock;
    }
    pthread_mutex_unlock(&bl->lock);

    plan fresh; /* a plan made now: moved into the table, or run once when it is full */
    if (!p) {
        if ((st = build_plan(bl, &key, hash, &fresh)) != BP_OK)
            return st;
        pthread_mutex_lock(&bl->lock);
        if ((p = find_plan(bl, &key, hash)) != NULL) { /* another thread made it meanwhile */
            destroy_plan(&fresh);
        } else if ((p = free_slot(bl)) != NULL) {
            *p = fresh;
        }
        if (p) {
            p->pins++;
            p->last_use = ++bl->clock;
        }
        pthread_mutex_unlock(&bl->lock);
    }

    if (!p) {
        st = run_plan(s, bl, &fresh, g);
        destroy_plan(&fresh);
        return st;
    }
    st = run_plan(s, bl, p, g);
    pthread_mutex_lock(&bl->lock);
    p->pins--;
    pthread_mutex_unlock(&bl->lock);
    return st;
}

const gpu_gemm_provider cu_blaslt_provider = {
    .device_open = device_open,
    .device_close = device_close,
    .gemm = gemm,
};
