/* cpu kernels of op "sdpa": fused attention for f32, f16 and bf16 (math in f32).
 *
 * FlashAttention's forward pass: one task per (batch, head, block of BQ query rows)
 * keeps its queries, a running row maximum m, a running row sum l and an output
 * accumulator O in f32, and walks the visible keys in blocks of BK:
 *     S = Q K^T (Q pre-scaled), then softcap, ALiBi and masks on S;
 *     m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m');
 *     l = l c + rowsum P;     O = O c + P V;     m = m'
 * and finally writes O / l (0 for a row that saw no key). The Sq x Sk score matrix
 * never exists: a task's scratch is O(BQ x BK + (BQ + BK) x D) floats, allocated once
 * per chunk of tasks. Key blocks a causal or window mask hides entirely are skipped.
 * Tasks are spread over bp_parallel_for. See ops/sdpa.c for the score order.
 *
 * Layout: the block keeps S transposed, S^T = K Q^T with query rows along the vector
 * lanes. Q is transposed once per task instead of K once per key block, and the
 * per-row softmax (max, exp, sum, masks by row) runs lane-wise with no horizontal
 * reductions. Both products use one register tile of MR x NR (4 x 16) outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "simd.h"
#include "ops_internal.h"

enum { BQ = 64, BK = 64, MR = TILE_MR, NR = TILE_NR };

typedef struct sdpa_job {
    bp_dtype dt;
    size_t esize;
    const char *q, *k, *v;
    char *o;
    const float *alibi;
    int64_t alibi_stride;
    int64_t heads, group, sq, sk, d, dp; /* dp: d rounded up to NR */
    int64_t qs[4], ks[4], vs[4], os[4];
    float scale, softcap;
    int causal;
    int64_t window;
    int64_t qblocks;
} sdpa_job;

/* A task's scratch, carved from one allocation per chunk of tasks. */
typedef struct scratch {
    float *qt;   /* [d][BQ]   scaled queries, transposed */
    float *k;    /* [BK][d]   keys */
    float *v;    /* [BK][dp]  values, columns past d zero */
    float *o;    /* [BQ][dp]  output accumulator */
    float *st;   /* [BK][BQ]  scores, then probabilities, transposed */
    float *m, *l, *corr; /* [BQ] running max, running sum, this block's rescale */
    float *row;  /* [d]       one converted query row */
} scratch;

static size_t scratch_floats(const sdpa_job *j) {
    return (size_t)(j->d * BQ + BK * j->d + BK * j->dp + BQ * j->dp + BK * BQ + 3 * BQ + j->d);
}

/* exp(x) of lanes x <= 0, and exactly 0 for x = -inf: Cody-Waite reduction to
 * x = n ln2 + r, |r| <= ln2/2, and a degree-6 polynomial (relative error ~2e-7), as
 * vector arithmetic (libm's expf has no vector form without -ffast-math). Lanes below
 * -87 give about 2^-126 instead of underflowing, which no row sum notices. */
INLINE vf8 exp_neg8(vf8 x) {
    vf8 y = SELECT(x < SPLAT(-87.0f), SPLAT(-87.0f), x);
    vf8 n = y * 1.44269504f + 12582912.0f; /* + 1.5 * 2^23 rounds to an integer */
    n = n - 12582912.0f;
    vf8 r = y - n * 0.693145752f;
    r = r - n * 1.42860677e-6f;
    vf8 p = SPLAT(1.0f / 720.0f);
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    vi8 two_n = (__builtin_convertvector(n, vi8) + 127) << 23;
    return SELECT(x == SPLAT(-INFINITY), SPLAT(0.0f), p * (vf8)two_n);
}

/* tanh as sign(y) (1 - e) / (1 + e) with e = exp(-2|y|): absolute error ~1e-7. */
INLINE vf8 tanh8(vf8 y) {
    vi8 sign = (vi8)y & (int32_t)0x80000000u;
    vf8 e = exp_neg8((vf8)((vi8)y | (int32_t)0x80000000u) * 2.0f);
    return (vf8)((vi8)((1.0f - e) / (1.0f + e)) | sign);
}

INLINE vf8 max8(vf8 a, vf8 b) { return SELECT(a > b, a, b); }

/* The online-softmax step for keys j0 .. j0 + bk - 1 of query rows i0 .. i0 + bq - 1:
 * softcap, ALiBi and the masks turn st's scores into final ones, then probabilities;
 * m, l and corr (the factor O's rows must be scaled by) move on. */
INLINE void softmax_block(const sdpa_job *j, scratch *w, int64_t i0, int64_t bq, int64_t j0,
                          int64_t bk, float slope) {
    const vi8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int64_t g = 0; g < bq; g += 8) {
        vi8 row = lane + (int32_t)(i0 + g);
        vf8 row_f = __builtin_convertvector(row, vf8);
        vf8 mx = SPLAT(-INFINITY);
        for (int64_t c = 0; c < bk; c++) {
            vf8 *sp = (vf8 *)(w->st + c * BQ + g);
            vf8 x = *sp;
            int32_t key = (int32_t)(j0 + c);
            if (j->softcap > 0)
                x = tanh8(x * (1.0f / j->softcap)) * j->softcap;
            if (j->alibi) /* i - j, exact in floats below 2^24 */
                x -= (row_f - (float)key) * slope;
            if (j->causal)
                x = SELECT(row >= key, x, SPLAT(-INFINITY));
            if (j->window > 0)
                x = SELECT(row - (int32_t)j->window < key, x, SPLAT(-INFINITY));
            *sp = x;
            mx = max8(mx, x);
        }
        vf8 m_old = *(vf8 *)(w->m + g), m_new = max8(m_old, mx);
        /* A row with no key seen yet subtracts 0: its probabilities and corr are 0. */
        vf8 m_use = SELECT(m_new == SPLAT(-INFINITY), SPLAT(0.0f), m_new);
        vf8 sum = {0};
        for (int64_t c = 0; c < bk; c++) {
            vf8 *sp = (vf8 *)(w->st + c * BQ + g);
            vf8 p = exp_neg8(*sp - m_use);
            *sp = p;
            sum += p;
        }
        vf8 corr = exp_neg8(m_old - m_use);
        *(vf8 *)(w->l + g) = *(vf8 *)(w->l + g) * corr + sum;
        *(vf8 *)(w->m + g) = m_new;
        *(vf8 *)(w->corr + g) = corr;
    }
}

/* One (batch, head, query block) task. */
SIMD_CLONES
static void sdpa_task(const sdpa_job *j, scratch *w, int64_t task) {
    int64_t qb = task % j->qblocks, bh = task / j->qblocks;
    int64_t b = bh / j->heads, h = bh % j->heads, hk = h / j->group;
    int64_t i0 = qb * BQ, bq = j->sq - i0 < BQ ? j->sq - i0 : BQ;
    int64_t d = j->d, dp = j->dp;
    int64_t bq_mr = (bq + MR - 1) / MR * MR, bq_nr = (bq + NR - 1) / NR * NR;
    const char *q = j->q + (size_t)(b * j->qs[0] + h * j->qs[1]) * j->esize;
    const char *k = j->k + (size_t)(b * j->ks[0] + hk * j->ks[1]) * j->esize;
    const char *v = j->v + (size_t)(b * j->vs[0] + hk * j->vs[1]) * j->esize;
    float slope = j->alibi ? j->alibi[h * j->alibi_stride] : 0.0f;

    /* Query columns past bq are zero; their lanes are computed and never stored. */
    for (int64_t r = 0; r < bq_nr; r++) {
        if (r < bq)
            bp_load_f32(w->row, q + (size_t)((i0 + r) * j->qs[2]) * j->esize, j->dt, d, j->qs[3]);
        for (int64_t x = 0; x < d; x++)
            w->qt[x * BQ + r] = r < bq ? w->row[x] * j->scale : 0.0f;
    }
    for (int64_t r = 0; r < BQ; r++)
        w->m[r] = -INFINITY, w->l[r] = 0;
    memset(w->o, 0, (size_t)(bq_mr * dp) * sizeof *w->o);

    int64_t lo = 0, hi = j->sk;
    if (j->causal && i0 + bq < hi)
        hi = i0 + bq;
    if (j->window > 0 && i0 - j->window + 1 > lo)
        lo = i0 - j->window + 1;
    for (int64_t j0 = lo; j0 < hi; j0 += BK) {
        int64_t bk = hi - j0 < BK ? hi - j0 : BK, bk_mr = (bk + MR - 1) / MR * MR;
        for (int64_t c = 0; c < bk; c++) {
            bp_load_f32(w->k + c * d, k + (size_t)((j0 + c) * j->ks[2]) * j->esize, j->dt, d,
                     j->ks[3]);
            bp_load_f32(w->v + c * dp, v + (size_t)((j0 + c) * j->vs[2]) * j->esize, j->dt, d,
                     j->vs[3]);
        }
        /* Key rows bk .. bk_mr hold stale finite values: their scores are never read. */
        for (int64_t c = 0; c < bk_mr; c += MR)
            for (int64_t r = 0; r < bq_nr; r += NR)
                tile_4x16(d, w->k + c * d, d, 1, w->qt + r, BQ, w->st + c * BQ + r, BQ, 0);
        softmax_block(j, w, i0, bq, j0, bk, slope);
        for (int64_t r = 0; r < bq; r++) {
            float corr = w->corr[r], *o = w->o + r * dp;
            if (corr != 1.0f)
                for (int64_t x = 0; x < dp; x++)
                    o[x] *= corr;
        }
        for (int64_t r = 0; r < bq_mr; r += MR)
            for (int64_t x = 0; x < dp; x += NR)
                tile_4x16(bk, w->st + r, 1, BQ, w->v + x, dp, w->o + r * dp + x, dp, 1);
    }

    char *o = j->o + (size_t)(b * j->os[0] + h * j->os[1]) * j->esize;
    for (int64_t r = 0; r < bq; r++) {
        float *orow = w->o + r * dp;
        float inv = w->l[r] > 0 ? 1.0f / w->l[r] : 0.0f;
        for (int64_t x = 0; x < d; x++)
            orow[x] *= inv;
        bp_store_f32(o + (size_t)((i0 + r) * j->os[2]) * j->esize, j->dt, j->os[3], orow, d);
    }
}

static void sdpa_range(void *ctx, int64_t begin, int64_t end) {
    const sdpa_job *j = ctx;
    float *mem = calloc(scratch_floats(j), sizeof *mem);
    if (!mem) {
        /* Nothing here can report an error; NaN outputs and a log line say it failed. */
        bp_log(BP_LOG_ERROR, "sdpa", "cpu kernel: no memory for %zu bytes of scratch; "
               "the output of %lld tasks is NaN", scratch_floats(j) * sizeof(float),
               (long long)(end - begin));
        float nan_row[NR];
        for (int c = 0; c < NR; c++)
            nan_row[c] = NAN;
        for (int64_t t = begin; t < end; t++) {
            int64_t qb = t % j->qblocks, bh = t / j->qblocks;
            int64_t b = bh / j->heads, h = bh % j->heads;
            char *o = j->o + (size_t)(b * j->os[0] + h * j->os[1]) * j->esize;
            for (int64_t r = qb * BQ; r < j->sq && r < (qb + 1) * BQ; r++)
                for (int64_t c = 0; c < j->d; c += NR)
                    bp_store_f32(o + (size_t)(r * j->os[2] + c * j->os[3]) * j->esize, j->dt,
                              j->os[3], nan_row, j->d - c < NR ? j->d - c : NR);
        }
        return;
    }
    scratch w;
    w.qt = mem;
    w.k = w.qt + j->d * BQ;
    w.v = w.k + BK * j->d;
    w.o = w.v + BK * j->dp;
    w.st = w.o + BQ * j->dp;
    w.m = w.st + BK * BQ;
    w.l = w.m + BQ;
    w.corr = w.l + BQ;
    w.row = w.corr + BQ;
    for (int64_t t = begin; t < end; t++)
        sdpa_task(j, &w, t);
    free(mem);
}

static void sdpa(const bp_kernel_call *call) {
    const bp_tensor_desc *q = call->inputs[0], *k = call->inputs[1], *v = call->inputs[2];
    const bp_tensor_desc *o = call->outputs[0];
    const bp_sdpa_attrs *a = call->attrs;
    sdpa_job j = {.dt = o->dtype, .esize = bp_dtype_size(o->dtype), .q = q->data, .k = k->data,
                  .v = v->data, .o = o->data};
    j.heads = q->shape[1];
    j.sq = q->shape[2];
    j.sk = k->shape[2];
    j.d = q->shape[3];
    if (q->shape[0] == 0 || j.heads == 0 || j.sq == 0 || j.d == 0)
        return;
    j.group = j.heads / k->shape[1];
    j.dp = (j.d + NR - 1) / NR * NR;
    for (int x = 0; x < 4; x++) {
        j.qs[x] = q->strides[x];
        j.ks[x] = k->strides[x];
        j.vs[x] = v->strides[x];
        j.os[x] = o->strides[x];
    }
    j.scale = a->scale;
    j.softcap = a->softcap;
    j.causal = a->causal;
    j.window = a->window;
    if (a->has_alibi && call->n_inputs > 3) {
        j.alibi = call->inputs[3]->data;
        j.alibi_stride = call->inputs[3]->strides[0];
    }
    j.qblocks = (j.sq + BQ - 1) / BQ;
    bp_parallel_for(q->shape[0] * j.heads * j.qblocks, 1, sdpa_range, &j);
}

void bp_cpu_sdpa_f32(const bp_kernel_call *call) { sdpa(call); }
void bp_cpu_sdpa_f16(const bp_kernel_call *call) { sdpa(call); }
void bp_cpu_sdpa_bf16(const bp_kernel_call *call) { sdpa(call); }
