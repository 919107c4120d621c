/* cpu kernels of op "matmul": out[..., M, N] = a[..., M, K] @ b[..., K, N] for f32,
 * f16 and bf16, accumulating in f32, with any strides and broadcast batch dims.
 *
 * Three engines, chosen by BP_CPU_MATMUL=auto|onednn|blas|builtin (read once; auto,
 * the default, takes the first available in this order; one asked for but
 * unavailable is a warning, once, and the next in that order runs; docs/ops.md):
 *  - oneDNN (backends/cpukit/cpukit_dnnl.c, loaded at the first call; x86-64 builds
 *    with dnnl.h): every dtype natively, operands in place with their strides and
 *    broadcast batch dims, one primitive call for the whole batch. A call it has no
 *    fast kernel for (only its reference one, or strides it cannot express) goes to
 *    the next engine.
 *  - CBLAS (OpenBLAS, loaded at the first call: blas.h; BP_BLAS=0 turns it off): f32
 *    operands whose strides BLAS can express
 *    (one unit stride, a leading dim at least the row length) go straight to
 *    cblas_sgemm, also a column-major out (as out^T = b^T a^T); anything else
 *    (f16/bf16, other strides) is converted panel by panel along K into f32 scratch,
 *    so each input element is converted once, and accumulated in an f32 M x N
 *    buffer that is converted into out at the end. If that scratch cannot be
 *    allocated, the item falls back to the blocked kernel, which needs none.
 *  - the blocked kernel: tiles of MC x NC outputs, K in panels of KC, operands packed
 *    into f32 buffers on the stack, and an MR x NR register tile of GNU C vectors
 *    (with an AVX2+FMA clone on x86-64).
 *
 * Threading. oneDNN (GNU OpenMP) and OpenBLAS have their own thread pools and our
 * bp_parallel_for pool has one thread per core too; library threads started inside
 * our pool's chunks would put two threads on every core (and OpenBLAS serialises
 * concurrent threaded calls). oneDNN is called once per kernel from the stream
 * worker, while our pool idles, with the worker's OpenMP thread count set to one per
 * DNNL_WORK_PER_THREAD of work, at most our pool's (bp_parallel_threads:
 * BP_NUM_THREADS, else one per core). We
 * leave OpenBLAS's thread count alone (it is process-wide, and the application may
 * use OpenBLAS itself) and keep the two pools apart within a call: a large item
 * (M*N*K above OpenBLAS's own single-thread threshold) is one sgemm call from the
 * stream worker, threaded by OpenBLAS while our pool idles; small items, which
 * OpenBLAS runs on the calling thread anyway, are spread over our pool, a batch range
 * per chunk. Measured on 2 cores, 1024^3 f32: 175 GFLOP/s this way against 87 with
 * OpenBLAS set to one thread and the rows split over two threads (4096^3: 184 / 177).
 * Kernels running at once on several streams can still overlap the pools. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>


#include "dtype_convert.h"
#include "simd.h"
#include "cpukit_blas.h"
#include "cpukit_dnnl.h"
#include "cpukit_matmul.h"
#include "ops_internal.h"

/* Blocked kernel: MR x NR register tile, MC x NC output tile, KC deep panels. The
 * packed panels and the f32 output tile take (MC*KC + KC*NC + MC*NC) floats (128 KiB)
 * of stack. */
enum { MR = TILE_MR, NR = TILE_NR, MC = 64, NC = 128, KC = 128 };

/* CBLAS: the depth of the converted K panels. */
#define BLAS_PANEL_K 256
/* OpenBLAS runs an sgemm with M*N*K up to this on the calling thread (its
 * SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD). */
#define BLAS_SERIAL_WORK (65536.0 * 4)
/* oneDNN gets one OpenMP thread per this much M*N*K (all items), at most the pool's
 * threads. Waking a team costs tens of microseconds, and its threads spin after the
 * parallel region, taking the cores from the pool's next kernel: on the 16-core Xeon
 * the demo's sliced_eager (products of 512 x 512 x 64 between softmaxes on the pool)
 * took 136 to 198 ms with 16 threads per product against 29 to 30 ms when the OpenMP
 * threads slept at once. 2^24 is about 0.1 to 0.3 ms of one core's work. */
#define DNNL_WORK_PER_THREAD 16777216.0

typedef struct mm_job {
    bp_dtype dt;
    size_t esize;
    const char *a, *b;
    char *c;
    cpukit_mm_geometry g;  /* sizes, strides after the transposes, batch dims */
    cpukit_sgemm_fn sgemm;     /* the CBLAS engine, or NULL */
    int64_t mtiles, ntiles; /* blocked kernel tiles per item */
} mm_job;

/* ---- conversions between the operands and f32 ---- */

/* Copies rows x cols of a strided matrix into a row-major f32 buffer (row stride ld). */
static void pack_rows(float *dst, int64_t ld, const char *src, bp_dtype dt, size_t esize,
                      int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    for (int64_t r = 0; r < rows; r++)
        bp_load_f32(dst + r * ld, src + (size_t)(r * rs) * esize, dt, cols, cs);
}

/* ---- the blocked kernel ---- */

/* cp[rows][cols] += ap[rows][kc] @ bp[kc][cols]; rows and cols are multiples of the
 * register tile. */
SIMD_CLONES
static void block_product(int64_t kc, const float *ap, const float *bp, float *cp, int64_t rows,
                          int64_t cols) {
    for (int64_t r = 0; r < rows; r += MR)
        for (int64_t q = 0; q < cols; q += NR)
            tile_4x16(kc, ap + r * KC, KC, 1, bp + q, NC, cp + r * NC + q, NC, 1);
}

/* Output tile (mt, nt) of batch item t. */
static void blocked_tile(const mm_job *j, int64_t t, int64_t mt, int64_t nt) {
    float ap[MC * KC], bp[KC * NC], cp[MC * NC];
    size_t oa, ob, oc;
    cpukit_mm_item_offsets(&j->g, t, j->esize, &oa, &ob, &oc);
    int64_t i0 = mt * MC, j0 = nt * NC;
    int64_t mc = j->g.m - i0 < MC ? j->g.m - i0 : MC;
    int64_t nc = j->g.n - j0 < NC ? j->g.n - j0 : NC;
    int64_t mc_pad = (mc + MR - 1) / MR * MR, nc_pad = (nc + NR - 1) / NR * NR;
    memset(cp, 0, sizeof cp);
    /* Padding rows of A and columns of B are zero, so partial tiles need no edge code. */
    for (int64_t r = mc; r < mc_pad; r++)
        memset(ap + r * KC, 0, sizeof ap[0] * KC);
    for (int64_t p = 0; nc < nc_pad && p < KC; p++)
        memset(bp + p * NC + nc, 0, sizeof bp[0] * (size_t)(nc_pad - nc));
    const char *a = j->a + oa + (size_t)(i0 * j->g.sam) * j->esize;
    const char *b = j->b + ob + (size_t)(j0 * j->g.sbn) * j->esize;
    for (int64_t k0 = 0; k0 < j->g.k; k0 += KC) {
        int64_t kc = j->g.k - k0 < KC ? j->g.k - k0 : KC;
        pack_rows(ap, KC, a + (size_t)(k0 * j->g.sak) * j->esize, j->dt, j->esize, mc, kc,
                  j->g.sam, j->g.sak);
        pack_rows(bp, NC, b + (size_t)(k0 * j->g.sbk) * j->esize, j->dt, j->esize, kc, nc,
                  j->g.sbk, j->g.sbn);
        block_product(kc, ap, bp, cp, mc_pad, nc_pad);
    }
    char *c = j->c + oc + (size_t)(i0 * j->g.scm + j0 * j->g.scn) * j->esize;
    for (int64_t r = 0; r < mc; r++)
        bp_store_f32(c + (size_t)(r * j->g.scm) * j->esize, j->dt, j->g.scn, cp + r * NC, nc);
}

static void blocked_range(void *ctx, int64_t begin, int64_t end) {
    const mm_job *j = ctx;
    for (int64_t task = begin; task < end; task++) {
        int64_t nt = task % j->ntiles, rest = task / j->ntiles;
        blocked_tile(j, rest / j->mtiles, rest % j->mtiles, nt);
    }
}

/* ---- the CBLAS engine ---- */

/* How BLAS reads an f32 matrix (cpukit_blas_view_of); other dtypes it never reads. */
static cpukit_blas_view view_of(bp_dtype dt, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    if (dt != BP_DTYPE_F32)
        return (cpukit_blas_view){.ok = false};
    return cpukit_blas_view_of(rows, cols, rs, cs);
}

/* Scratch floats one item needs on the CBLAS engine (0: none). */
static size_t blas_scratch(const mm_job *j) {
    cpukit_blas_view va = view_of(j->dt, j->g.m, j->g.k, j->g.sam, j->g.sak);
    cpukit_blas_view vb = view_of(j->dt, j->g.k, j->g.n, j->g.sbk, j->g.sbn);
    cpukit_blas_view vc = view_of(j->dt, j->g.m, j->g.n, j->g.scm, j->g.scn);
    if (va.ok && vb.ok && vc.ok)
        return 0;
    int64_t kp = va.ok && vb.ok ? j->g.k : (j->g.k < BLAS_PANEL_K ? j->g.k : BLAS_PANEL_K);
    return (size_t)((va.ok ? 0 : j->g.m * kp) + (vb.ok ? 0 : kp * j->g.n) +
                    (vc.ok && vc.trans == CPUKIT_CBLAS_NO_TRANS ? 0 : j->g.m * j->g.n));
}

/* One batch item through cblas_sgemm; scratch holds blas_scratch(j) floats. */
static void blas_item(const mm_job *j, int64_t t, float *scratch) {
    size_t oa, ob, oc;
    cpukit_mm_item_offsets(&j->g, t, j->esize, &oa, &ob, &oc);
    const char *a = j->a + oa, *b = j->b + ob;
    char *c = j->c + oc;
    int m = (int)j->g.m, n = (int)j->g.n;
    cpukit_blas_view va = view_of(j->dt, j->g.m, j->g.k, j->g.sam, j->g.sak);
    cpukit_blas_view vb = view_of(j->dt, j->g.k, j->g.n, j->g.sbk, j->g.sbn);
    cpukit_blas_view vc = view_of(j->dt, j->g.m, j->g.n, j->g.scm, j->g.scn);
    if (va.ok && vb.ok && vc.ok) {
        if (vc.trans == CPUKIT_CBLAS_NO_TRANS)
            j->sgemm(CPUKIT_CBLAS_ROW_MAJOR, va.trans, vb.trans, m, n, (int)j->g.k, 1.0f,
                        (const float *)a, va.ld, (const float *)b, vb.ld, 0.0f, (float *)c, vc.ld);
        else /* a column-major out: out^T = b^T a^T */
            j->sgemm(CPUKIT_CBLAS_ROW_MAJOR, cpukit_blas_flipped(vb.trans),
                        cpukit_blas_flipped(va.trans), n, m, (int)j->g.k,
                        1.0f, (const float *)b, vb.ld, (const float *)a, va.ld, 0.0f, (float *)c,
                        vc.ld);
        return;
    }
    int64_t kp = va.ok && vb.ok ? j->g.k : (j->g.k < BLAS_PANEL_K ? j->g.k : BLAS_PANEL_K);
    float *ap = scratch, *bp = ap + (va.ok ? 0 : j->g.m * kp), *cp = bp + (vb.ok ? 0 : kp * j->g.n);
    bool c_direct = vc.ok && vc.trans == CPUKIT_CBLAS_NO_TRANS;
    float *cbuf = c_direct ? (float *)c : cp;
    int ldc = c_direct ? vc.ld : n;
    for (int64_t k0 = 0; k0 < j->g.k; k0 += kp) {
        int kc = (int)(j->g.k - k0 < kp ? j->g.k - k0 : kp);
        const char *ak = a + (size_t)(k0 * j->g.sak) * j->esize;
        const char *bk = b + (size_t)(k0 * j->g.sbk) * j->esize;
        if (!va.ok)
            pack_rows(ap, kc, ak, j->dt, j->esize, j->g.m, kc, j->g.sam, j->g.sak);
        if (!vb.ok)
            pack_rows(bp, n, bk, j->dt, j->esize, kc, j->g.n, j->g.sbk, j->g.sbn);
        j->sgemm(CPUKIT_CBLAS_ROW_MAJOR, va.ok ? va.trans : CPUKIT_CBLAS_NO_TRANS,
                    vb.ok ? vb.trans : CPUKIT_CBLAS_NO_TRANS, m, n, kc, 1.0f,
                    va.ok ? (const float *)ak : ap, va.ok ? va.ld : kc,
                    vb.ok ? (const float *)bk : bp, vb.ok ? vb.ld : n, k0 ? 1.0f : 0.0f, cbuf,
                    ldc);
    }
    if (!c_direct)
        for (int64_t r = 0; r < j->g.m; r++)
            bp_store_f32(c + (size_t)(r * j->g.scm) * j->esize, j->dt, j->g.scn, cp + r * n,
                         j->g.n);
}

/* The fallback when scratch cannot be had. */
static void blocked_item(const mm_job *j, int64_t t) {
    for (int64_t mt = 0; mt < j->mtiles; mt++)
        for (int64_t nt = 0; nt < j->ntiles; nt++)
            blocked_tile(j, t, mt, nt);
}

/* A range of batch items, with scratch for one item at a time. */
static void blas_range(void *ctx, int64_t begin, int64_t end) {
    const mm_job *j = ctx;
    size_t floats = blas_scratch(j);
    float *scratch = floats ? malloc(floats * sizeof *scratch) : NULL;
    for (int64_t t = begin; t < end; t++) {
        if (floats && !scratch)
            blocked_item(j, t);
        else
            blas_item(j, t, scratch);
    }
    free(scratch);
}

static bool blas_fits(const mm_job *j) {
    return j->g.m <= INT_MAX && j->g.n <= INT_MAX && j->g.k <= INT_MAX &&
           (double)j->g.m * (double)j->g.n <= (double)INT_MAX;
}

/* ---- the engine choice ---- */

typedef enum { ENGINE_AUTO, ENGINE_ONEDNN, ENGINE_BLAS, ENGINE_BUILTIN } mm_engine;

static const char *const engine_names[] = {"auto", "onednn", "blas", "builtin"};
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static mm_engine engine_asked;

/* BP_CPU_MATMUL chooses code: read with secure_getenv. */
static void read_engine(void) {
    const char *value = secure_getenv("BP_CPU_MATMUL");
    engine_asked = ENGINE_AUTO;
    if (!value || !*value)
        return;
    for (int e = 0; e < (int)(sizeof engine_names / sizeof engine_names[0]); e++)
        if (strcmp(value, engine_names[e]) == 0) {
            engine_asked = (mm_engine)e;
            return;
        }
    bp_log(BP_LOG_WARN, "matmul", "BP_CPU_MATMUL='%s' is not auto, onednn, blas or builtin; "
           "using auto", value);
}

/* oneDNN, when asked for (or auto) and loadable. Asked for by name (BP_CPU_MATMUL=onednn
 * or a BP_ONEDNN_LIBRARY) but not loadable: a warning, once. */
static bool onednn_usable(void) {
    if (engine_asked != ENGINE_AUTO && engine_asked != ENGINE_ONEDNN)
        return false;
    const char *why = cpukit_dnnl_load(bp_log);
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    const char *library = secure_getenv("BP_ONEDNN_LIBRARY");
    bool named = engine_asked == ENGINE_ONEDNN || (library && *library);
    if (why && named && !atomic_flag_test_and_set(&warned))
        bp_log(BP_LOG_WARN, "matmul", "oneDNN asked for (BP_CPU_MATMUL=%s, BP_ONEDNN_LIBRARY=%s) "
               "but unavailable: %s; using %s", engine_names[engine_asked],
               library && *library ? library : "unset", why,
               cpukit_blas_enabled() ? "CBLAS when found, else the built-in kernel"
                                     : "the built-in kernel");
    return why == NULL;
}

/* cblas_sgemm unless builtin is asked for; BLAS asked for but not found: a warning. */
static cpukit_sgemm_fn blas_engine(void) {
    if (engine_asked == ENGINE_BUILTIN)
        return NULL;
    cpukit_sgemm_fn sgemm = cpukit_blas_sgemm(bp_log);
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (!sgemm && engine_asked == ENGINE_BLAS && !atomic_flag_test_and_set(&warned))
        bp_log(BP_LOG_WARN, "matmul", "BP_CPU_MATMUL=blas but no CBLAS library is usable (see "
               "BP_BLAS and the lines above); using the built-in kernel");
    return sgemm;
}

/* ---- the kernel ---- */

static void zero_out(const mm_job *j) {
    float zeros[NC] = {0};
    for (int64_t t = 0; t < j->g.items; t++) {
        size_t oa, ob, oc;
        cpukit_mm_item_offsets(&j->g, t, j->esize, &oa, &ob, &oc);
        for (int64_t r = 0; r < j->g.m; r++)
            for (int64_t q = 0; q < j->g.n; q += NC)
                bp_store_f32(j->c + oc + (size_t)(r * j->g.scm + q * j->g.scn) * j->esize, j->dt,
                          j->g.scn, zeros, j->g.n - q < NC ? j->g.n - q : NC);
    }
}

/* oneDNN's OpenMP threads for `work` (M*N*K of all items): see DNNL_WORK_PER_THREAD. */
static int dnnl_threads(double work) {
    int pool = bp_parallel_threads();
    double threads = work / DNNL_WORK_PER_THREAD;
    return threads < 1.0 ? 1 : threads >= (double)pool ? pool : (int)threads;
}

static void matmul(const bp_kernel_call *call) {
    const bp_tensor_desc *a = call->inputs[0], *b = call->inputs[1], *c = call->outputs[0];
    mm_job j = {.dt = c->dtype, .esize = bp_dtype_size(c->dtype), .a = a->data, .b = b->data,
                .c = c->data};
    if (!cpukit_mm_geometry_of(call, &j.g))
        return;
    if (j.g.k == 0) {
        zero_out(&j);
        return;
    }
    pthread_once(&engine_once, read_engine);
    double work = (double)j.g.m * (double)j.g.n * (double)j.g.k;
    if (onednn_usable() &&
        cpukit_dnnl_matmul(&j.g, j.dt, j.a, j.b, j.c, dnnl_threads(work * (double)j.g.items),
                           bp_log))
        return;
    j.mtiles = (j.g.m + MC - 1) / MC;
    j.ntiles = (j.g.n + NC - 1) / NC;
    j.sgemm = blas_engine();
    if (j.sgemm && blas_fits(&j)) {
        if (j.g.items > 1 && work <= BLAS_SERIAL_WORK)
            bp_parallel_for(j.g.items, (int64_t)(1048576.0 / work) + 1, blas_range, &j);
        else
            blas_range(&j, 0, j.g.items);
        return;
    }
    double tile_work =
        (double)(j.g.m < MC ? j.g.m : MC) * (double)(j.g.n < NC ? j.g.n : NC) * (double)j.g.k;
    bp_parallel_for(j.g.items * j.mtiles * j.ntiles, (int64_t)(1048576.0 / tile_work) + 1,
                    blocked_range, &j);
}

void bp_cpu_matmul_f32(const bp_kernel_call *call) { matmul(call); }
void bp_cpu_matmul_f16(const bp_kernel_call *call) { matmul(call); }
void bp_cpu_matmul_bf16(const bp_kernel_call *call) { matmul(call); }
