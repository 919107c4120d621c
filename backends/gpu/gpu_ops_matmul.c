/* gpu: the kernel of op "matmul" (bp_matmul, ops.h): out[..., M, N] = a[..., M, K] @
 * b[..., K, N] after the optional transposes of a's and b's last two dims, batch dims
 * broadcast, any element strides; f32, f16 and bf16, accumulated in f32.
 *
 * The call becomes a problem: an m x k, a k x n and an m x n matrix with their element
 * strides, over the batch dims of out, each operand with its own batch strides (0 where
 * broadcast). Batch dims of size 1 are dropped and neighbouring ones merged where every
 * operand's strides allow, so a contiguous batch is one dim.
 *
 * The driver's gemm provider first (gpu_driver.h: cuBLASLt for cuda, backends/cuda/
 * cu_blaslt.c) while fast paths are on, when each matrix has a unit stride along one of its dims
 * (row- or column-major, any leading dim): the innermost batch dim becomes one strided
 * batched gemm, or is folded into m (or n) when b (or a) is broadcast over it and the
 * other two operands' matrices follow each other along m (n), as x[B, S, K] @ w[K, N]
 * does; the outer batch dims are looped here, a gemm each. A column-major out is
 * computed as out^T = b^T a^T.
 *
 * The plugin's kernels (kernels/matmul.cu) take everything else in one launch: any
 * strides, every batch dim, k = 0 (zeros). When the provider declines a gemm (absent,
 * disabled, no algorithm), they take that gemm's items and all later ones. f16 and
 * bf16 run on the tensor-core kernels (matmul_*_mma, NVIDIA-only) while fast paths
 * are on, else on the portable matmul_*_simt kernels, as f32 always does (no
 * provider then: BP_GPU_PORTABLE_KERNELS=1, or AMD). They also
 * take small problems (SMALL_WORK; when the plugin was built with kernels), which they
 * finish sooner: measured on an H100, one 16^3 to 64^3 product every 4 to 7 us against
 * 6 to 11 through cuBLASLt, whose call alone costs the host 5 to 10 us; from 128^3 on,
 * cuBLASLt is as fast or faster. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"
#include "matmul_args.h"

_Static_assert(GPU_MATMUL_MAX_BATCH_DIMS == BP_KERNEL_MAX_DIMS - 2,
               "the kernels take every batch dim");

/* Problems of at most this many multiply-adds (items * m * n * k) skip the provider. */
#define SMALL_WORK 262144.0

typedef struct mm_problem {
    bp_dtype dtype;
    size_t esize;
    const char *a, *b; /* device addresses */
    char *c;
    int64_t m, n, k;
    int64_t sam, sak, sbk, sbn, scm, scn; /* element strides after the transposes */
    int nbatch;                           /* batch dims left after merging */
    int64_t bshape[GPU_MATMUL_MAX_BATCH_DIMS];
    int64_t bsa[GPU_MATMUL_MAX_BATCH_DIMS], bsb[GPU_MATMUL_MAX_BATCH_DIMS],
        bsc[GPU_MATMUL_MAX_BATCH_DIMS];
    int64_t items; /* product of bshape */
} mm_problem;

/* The call as a problem; false when out is empty. */
static bool problem_of(const bp_kernel_call *call, mm_problem *p) {
    const bp_tensor_desc *a = call->inputs[0], *b = call->inputs[1], *c = call->outputs[0];
    const bp_matmul_attrs *attrs = call->attrs;
    int ta = attrs && attrs->trans_a, tb = attrs && attrs->trans_b;
    int nb = c->ndim - 2;
    memset(p, 0, sizeof *p);
    p->dtype = c->dtype;
    p->esize = c->dtype == BP_DTYPE_F32 ? 4 : 2;
    p->a = a->data;
    p->b = b->data;
    p->c = c->data;
    p->m = c->shape[nb];
    p->n = c->shape[nb + 1];
    p->k = a->shape[a->ndim - (ta ? 2 : 1)];
    p->sam = a->strides[a->ndim - (ta ? 1 : 2)];
    p->sak = a->strides[a->ndim - (ta ? 2 : 1)];
    p->sbk = b->strides[b->ndim - (tb ? 1 : 2)];
    p->sbn = b->strides[b->ndim - (tb ? 2 : 1)];
    p->scm = c->strides[nb];
    p->scn = c->strides[nb + 1];
    p->items = 1;
    for (int d = 0; d < nb; d++) {
        int da = d - (c->ndim - a->ndim), db = d - (c->ndim - b->ndim);
        int64_t size = c->shape[d];
        int64_t sa = da >= 0 && a->shape[da] != 1 ? a->strides[da] : 0;
        int64_t sb = db >= 0 && b->shape[db] != 1 ? b->strides[db] : 0;
        int64_t sc = c->strides[d];
        p->items *= size;
        if (size == 1)
            continue;
        int last = p->nbatch - 1;
        if (last >= 0 && p->bsa[last] == sa * size && p->bsb[last] == sb * size &&
            p->bsc[last] == sc * size) { /* d continues the previous dim in every operand */
            p->bshape[last] *= size;
            p->bsa[last] = sa;
            p->bsb[last] = sb;
            p->bsc[last] = sc;
            continue;
        }
        p->bshape[p->nbatch] = size;
        p->bsa[p->nbatch] = sa;
        p->bsb[p->nbatch] = sb;
        p->bsc[p->nbatch] = sc;
        p->nbatch++;
    }
    return p->items > 0 && p->m > 0 && p->n > 0;
}

/* Element offsets in a, b and c of item t of the first `ndims` batch dims. */
static void item_offsets(const mm_problem *p, int ndims, int64_t t, int64_t *oa, int64_t *ob,
                         int64_t *oc) {
    *oa = *ob = *oc = 0;
    for (int d = ndims - 1; d >= 0; d--) {
        int64_t i = t % p->bshape[d];
        t /= p->bshape[d];
        *oa += i * p->bsa[d];
        *ob += i * p->bsb[d];
        *oc += i * p->bsc[d];
    }
}

/* ---- the gemm provider (cuBLASLt) ---- */

/* The provider runs only while fast paths are on. */
static bool provider_usable(const gpu_device *dev) {
    return dev->fast_paths && dev->drv->gemm;
}

bp_status gpu_provider_gemm(gpu_stream *s, const gpu_gemm *g) {
    gpu_device *dev = s->device;
    const gpu_gemm_provider *provider = dev->drv->gemm;
    bp_status st = gpu_enter(dev);
    if (st != BP_OK)
        return st;
    void *state = __atomic_load_n(&dev->gemm_state, __ATOMIC_ACQUIRE);
    if (!state) {
        pthread_mutex_lock(&dev->lock);
        state = dev->gemm_state;
        if (!state) {
            state = provider->device_open(gpu_host, dev->index);
            __atomic_store_n(&dev->gemm_state, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&dev->lock);
        if (!state)
            return BP_ERR_UNSUPPORTED;
    }
    return provider->gemm(state, s, g);
}

void gpu_provider_close(gpu_device *dev) {
    if (!dev->gemm_state)
        return;
    dev->drv->gemm->device_close(dev->gemm_state);
    dev->gemm_state = NULL;
}

/* How a rows x cols matrix with strides (rs, cs) is a gemm operand: stored row-major
 * with row stride ld (trans 0), or its transpose stored so (trans 1). False when
 * neither stride is 1 or the leading dim is shorter than a stored row. */
static bool gemm_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans,
                         int64_t *ld) {
    if (cols == 1) /* a stride never used may be anything: make it fit */
        cs = 1;
    if (rows == 1)
        rs = cs == 1 ? cols : 1;
    if (cs == 1 && rs >= cols) {
        *trans = 0;
        *ld = rs;
        return true;
    }
    if (rs == 1 && cs >= rows) {
        *trans = 1;
        *ld = cs;
        return true;
    }
    return false;
}

/* The gemms of a problem: g is that of outer item 0; outer item t's pointers move by
 * the offsets of item t of the problem's first `nouter` batch dims. */
typedef struct mm_gemms {
    gpu_gemm g;
    bool swapped;        /* g computes out^T = b^T a^T: its a is our b and its b our a */
    int nouter;
    int64_t outer_items; /* gemm calls */
    int64_t inner_items; /* problem items per gemm call */
} mm_gemms;

/* The problem with m x n matrices (the innermost batch dim folded into m or n, or not)
 * and `batch` items of batch strides bsa, bsb, bsc as one gemm, if the provider's layouts
 * can express it. */
static bool gemm_of(const mm_problem *p, int64_t m, int64_t n, int64_t batch, int64_t bsa,
                    int64_t bsb, int64_t bsc, mm_gemms *out) {
    int64_t sam = p->sam, sak = p->sak, sbk = p->sbk, sbn = p->sbn, ldc;
    const char *a = p->a, *b = p->b;
    int trans_c, trans_a, trans_b;
    if (!gemm_operand(m, n, p->scm, p->scn, &trans_c, &ldc))
        return false;
    out->swapped = trans_c;
    if (trans_c) { /* out^T (n x m, row-major, row stride ldc) = b^T a^T */
        int64_t t = m;
        m = n;
        n = t;
        sam = p->sbn;
        sak = p->sbk;
        sbk = p->sak;
        sbn = p->sam;
        a = p->b;
        b = p->a;
        t = bsa;
        bsa = bsb;
        bsb = t;
    }
    int64_t lda, ldb;
    if (!gemm_operand(m, p->k, sam, sak, &trans_a, &lda) ||
        !gemm_operand(p->k, n, sbk, sbn, &trans_b, &ldb))
        return false;
    out->g = (gpu_gemm){.dtype = p->dtype,
                       .trans_a = trans_a,
                       .trans_b = trans_b,
                       .m = m,
                       .n = n,
                       .k = p->k,
                       .batch = batch,
                       .a = a,
                       .lda = lda,
                       .stride_a = bsa,
                       .b = b,
                       .ldb = ldb,
                       .stride_b = bsb,
                       .c = p->c,
                       .ldc = ldc,
                       .stride_c = bsc};
    return true;
}

/* The problem as gemms over its innermost batch dim, looped over the others; false when
 * the provider's layouts cannot express it. */
static bool as_gemms(const mm_problem *p, mm_gemms *out) {
    if (p->k == 0)
        return false;
    int nouter = p->nbatch;
    int64_t inner = 1, ia = 0, ib = 0, ic = 0;
    if (nouter > 0) {
        nouter--;
        inner = p->bshape[nouter];
        ia = p->bsa[nouter];
        ib = p->bsb[nouter];
        ic = p->bsc[nouter];
    }
    out->nouter = nouter;
    out->inner_items = inner;
    out->outer_items = p->items / inner;
    bool fold_m = inner > 1 && ib == 0 && ia == p->m * p->sam && ic == p->m * p->scm;
    bool fold_n = inner > 1 && ia == 0 && ib == p->n * p->sbn && ic == p->n * p->scn;
    if (fold_m && gemm_of(p, p->m * inner, p->n, 1, 0, 0, 0, out))
        return true;
    if (fold_n && gemm_of(p, p->m, p->n * inner, 1, 0, 0, 0, out))
        return true;
    return gemm_of(p, p->m, p->n, inner, ia, ib, ic, out);
}

/* Runs the gemms from the first on; *done: the problem items they computed, all unless
 * the provider declined one. */
static bp_status run_gemms(gpu_stream *s, const mm_problem *p, const mm_gemms *gm,
                           int64_t *done) {
    for (int64_t t = 0; t < gm->outer_items; t++) {
        int64_t oa, ob, oc;
        item_offsets(p, gm->nouter, t, &oa, &ob, &oc);
        gpu_gemm g = gm->g;
        g.a = (const char *)g.a + (size_t)(gm->swapped ? ob : oa) * p->esize;
        g.b = (const char *)g.b + (size_t)(gm->swapped ? oa : ob) * p->esize;
        g.c = (char *)g.c + (size_t)oc * p->esize;
        bp_status st = gpu_provider_gemm(s, &g);
        if (st == BP_ERR_UNSUPPORTED)
            return BP_OK;
        if (st != BP_OK)
            return st;
        *done += gm->inner_items;
    }
    return BP_OK;
}

/* ---- the plugin's kernels ---- */

/* How the kernels read an operand seen as rows x k with strides (rs, ks): 16 bytes at
 * a time when its k stride is 1 and every row of every item is 16-byte aligned (the
 * tensor-core kernel, `mma`), else element by element with neighbouring threads along
 * the smaller stride (every simt kernel reads so). */
static int32_t load_mode(const mm_problem *p, bool mma, const void *base, int64_t rows,
                         int64_t rs, int64_t ks, const int64_t *bs) {
    if (ks != 1 && llabs(ks) >= llabs(rs))
        return GPU_MATMUL_LOAD_ROW_FAST;
    bool aligned = mma && (uintptr_t)base % 16 == 0 &&
                   (rows == 1 || rs % 8 == 0) && ks == 1;
    for (int d = 0; aligned && d < p->nbatch; d++)
        aligned = bs[d] % 8 == 0;
    return aligned ? GPU_MATMUL_LOAD_VEC16 : GPU_MATMUL_LOAD_K_FAST;
}

/* Launches the kernel of p's dtype for items [first, p->items). */
static bp_status launch_kernels(gpu_stream *s, const mm_problem *p, int64_t first) {
    gpu_device *dev = s->device;
    bool mma = p->dtype != BP_DTYPE_F32 && dev->fast_paths;
    int64_t tile = mma ? GPU_MATMUL_MMA_TILE : GPU_MATMUL_SIMT_TILE;
    int64_t tiles = ((p->m + tile - 1) / tile) * ((p->n + tile - 1) / tile);
    int64_t count = p->items - first;
    int64_t per_z = count < 65535 ? count : 65535;
    int64_t zs = (count + per_z - 1) / per_z;
    if (tiles > INT_MAX || zs > 65535)
        return gpu_error(dev, BP_ERR_UNSUPPORTED,
                         "matmul: %lld items of %lld x %lld outputs are more than one launch "
                         "takes",
                         (long long)count, (long long)p->m, (long long)p->n);
    gpu_matmul_args args = {
        .a = p->a, .b = p->b, .c = p->c,
        .m = p->m, .n = p->n, .k = p->k,
        .sam = p->sam, .sak = p->sak, .sbk = p->sbk, .sbn = p->sbn, .scm = p->scm, .scn = p->scn,
        .item_begin = first, .items = p->items,
        .load_a = load_mode(p, mma, p->a, p->m, p->sam, p->sak, p->bsa),
        .load_b = load_mode(p, mma, p->b, p->n, p->sbn, p->sbk, p->bsb),
        .nbatch = p->nbatch,
    };
    for (int d = 0; d < p->nbatch; d++) {
        args.bshape[d] = p->bshape[d];
        args.bsa[d] = p->bsa[d];
        args.bsb[d] = p->bsb[d];
        args.bsc[d] = p->bsc[d];
    }
    static const gpu_kernel_id mma_kernels[2] = {GPU_K_matmul_f16_mma, GPU_K_matmul_bf16_mma};
    static const gpu_kernel_id simt_kernels[3] = {GPU_K_matmul_f32_simt, GPU_K_matmul_f16_simt,
                                                  GPU_K_matmul_bf16_simt};
    int half = p->dtype == BP_DTYPE_F16 ? 1 : p->dtype == BP_DTYPE_BF16 ? 2 : 0;
    gpu_kernel_id kernel = mma ? mma_kernels[half - 1] : simt_kernels[half];
    unsigned threads = mma ? GPU_MATMUL_MMA_THREADS : GPU_MATMUL_SIMT_THREADS;
    const unsigned grid[3] = {(unsigned)tiles, (unsigned)per_z, (unsigned)zs};
    const unsigned block[3] = {threads, 1, 1};
    void *params[] = {&args};
    return gpu_launch(s, kernel, grid, block, 0, params, "matmul");
}

static bp_status op_matmul(const bp_kernel_call *call) {
    gpu_stream *s = call->stream;
    mm_problem p;
    if (!problem_of(call, &p))
        return BP_OK;
    int64_t done = 0;
    mm_gemms gm;
    double work = (double)p.items * (double)p.m * (double)p.n * (double)p.k;
    if (provider_usable(s->device) && (work > SMALL_WORK || !gpu_have_kernels()) &&
        as_gemms(&p, &gm)) {
        bp_status st = run_gemms(s, &p, &gm, &done);
        if (st != BP_OK || done == p.items)
            return st;
    }
    return launch_kernels(s, &p, done);
}

const gpu_op_entry gpu_ops_matmul[] = {
    {"matmul", op_matmul,
     BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | BP_DTYPE_BIT(BP_DTYPE_BF16)},
    {NULL, NULL, 0},
};
