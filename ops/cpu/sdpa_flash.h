/* The f32 FlashAttention task of the cpu sdpa, written once over a vector width and a
 * register tile; ops/cpu/sdpa.c includes it for 8 lanes (4 x 16 tile, with an AVX2+FMA
 * clone), ops/cpu/sdpa_avx512.c for 16 lanes (8 x 32 tile, AVX-512). The includer
 * defines:
 *   VL          lanes of VF (8 or 16), VF and VI the GNU C float and int32 vectors,
 *   VSPLAT(x)   a VF of x in every lane, VLANES a VI of 0 .. VL - 1,
 * and, for the f32 task (sdpa_range_f32; the bf16 paths, ops/cpu/sdpa_avx512bf16.c and
 * sdpa_amx.c, take the softmax and the task loop flash_run with kernels of their own):
 *   MR, NR      the tile's rows and columns, NR a multiple of VL dividing SDPA_BQ,
 *   TILE(...)   the tile product, with simd.h's tile_4x16 arguments,
 *   TASK_ATTR   attributes of the task function (SIMD_CLONES, or nothing).
 *
 * One task per (batch, head, block of BQ query rows) keeps its queries, a running row
 * maximum m, a running row sum l and an output accumulator O in f32, and walks the
 * visible keys in blocks of BK:
 *     S = Q K^T (Q pre-scaled), then softcap, ALiBi and masks on S;
 *     m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m');
 *     l = l c + rowsum P;     O = O c + P V;     m = m'
 * and finally writes O / l (0 for a row that saw no key). The Sq x Sk score matrix
 * never exists: a task's scratch is O(BQ x BK + (BQ + BK) x D) floats. Key blocks a
 * causal or window mask hides entirely are skipped.
 *
 * Layout: the block keeps S transposed, S^T = K Q^T with query rows along the vector
 * lanes. Q is transposed once per task instead of K once per key block, and the
 * per-row softmax (max, exp, sum, masks by row) runs lane-wise with no horizontal
 * reductions. (Keys stored transposed too would give the tile's broadcasts constant
 * strides, but the transposition cost the 8-lane path more than it saved: about 8%.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "sdpa_kernel.h"

enum { BQ = SDPA_BQ, BK = SDPA_BK };

#include "vexp.h"

INLINE VF max_v(VF a, VF b) { return VSELECT(a > b, a, b); }

/* The per-block state every path keeps in f32. */
typedef struct softmax_state {
    float *st;           /* [BK][BQ] scores, then probabilities, transposed */
    float *m, *l, *corr; /* [BQ] running max, running sum, this block's rescale */
} softmax_state;

/* The online-softmax step for keys j0 .. j0 + bk - 1 of query rows i0 .. i0 + bq - 1:
 * scores times score_scale (1 where Q was pre-scaled), softcap, ALiBi and the masks
 * turn st's scores into final ones, then probabilities; m, l and corr (the factor O's
 * rows must be scaled by) move on. */
INLINE void softmax_block(const sdpa_job *j, const softmax_state *w, int64_t i0, int64_t bq,
                          int64_t j0, int64_t bk, float slope, float score_scale) {
    for (int64_t g = 0; g < bq; g += VL) {
        VI row = VLANES + (int32_t)(i0 + g);
        VF row_f = __builtin_convertvector(row, VF);
        VF mx = VSPLAT(-INFINITY);
        for (int64_t c = 0; c < bk; c++) {
            VF *sp = (VF *)(w->st + c * BQ + g);
            VF x = *sp * score_scale;
            int32_t key = (int32_t)(j0 + c);
            if (j->softcap > 0)
                x = tanh_v(x * (1.0f / j->softcap)) * j->softcap;
            if (j->alibi) /* i - j, exact in floats below 2^24 */
                x -= (row_f - (float)key) * slope;
            if (j->causal)
                x = VSELECT(row >= key, x, VSPLAT(-INFINITY));
            if (j->window > 0)
                x = VSELECT(row - (int32_t)j->window < key, x, VSPLAT(-INFINITY));
            *sp = x;
            mx = max_v(mx, x);
        }
        VF m_old = *(VF *)(w->m + g), m_new = max_v(m_old, mx);
        /* A row with no key seen yet subtracts 0: its probabilities and corr are 0. */
        VF m_use = VSELECT(m_new == VSPLAT(-INFINITY), VSPLAT(0.0f), m_new);
        VF sum = {0};
        for (int64_t c = 0; c < bk; c++) {
            VF *sp = (VF *)(w->st + c * BQ + g);
            VF p = exp_neg(*sp - m_use);
            *sp = p;
            sum += p;
        }
        VF corr = exp_neg(m_old - m_use);
        *(VF *)(w->l + g) = *(VF *)(w->l + g) * corr + sum;
        *(VF *)(w->m + g) = m_new;
        *(VF *)(w->corr + g) = corr;
    }
}

/* The visible keys lo .. hi - 1 of query rows i0 .. i0 + bq - 1. */
static inline void visible_keys(const sdpa_job *j, int64_t i0, int64_t bq, int64_t *lo,
                                int64_t *hi) {
    *lo = 0, *hi = j->sk;
    if (j->causal && i0 + bq < *hi)
        *hi = i0 + bq;
    if (j->window > 0 && i0 - j->window + 1 > *lo)
        *lo = i0 - j->window + 1;
}

/* O's rows times this block's corr, before P V adds to them (dp: a multiple of VL). */
INLINE void rescale_rows(const softmax_state *w, float *o, int64_t bq, int64_t dp) {
    for (int64_t r = 0; r < bq; r++) {
        float corr = w->corr[r], *orow = o + r * dp;
        if (corr != 1.0f)
            for (int64_t x = 0; x < dp; x += VL)
                *(VF *)(orow + x) *= corr;
    }
}

/* O / l into the output rows i0 .. i0 + bq - 1 of (b, h), in the output's dtype. */
static inline void store_rows(const sdpa_job *j, const softmax_state *w, float *o, int64_t dp,
                              int64_t b, int64_t h, int64_t i0, int64_t bq) {
    char *out = j->o + (size_t)(b * j->os[0] + h * j->os[1]) * j->esize;
    for (int64_t r = 0; r < bq; r++) {
        float *orow = o + r * dp;
        float inv = w->l[r] > 0 ? 1.0f / w->l[r] : 0.0f;
        for (int64_t x = 0; x < j->d; x++)
            orow[x] *= inv;
        bp_store_f32(out + (size_t)((i0 + r) * j->os[2]) * j->esize, j->dt, j->os[3], orow, j->d);
    }
}

/* Where task number task of job j lies: (batch b, head h, query rows i0 .. i0 + bq - 1),
 * element 0 of its queries and of its keys and values (head h / group), ALiBi's slope. */
typedef struct flash_task {
    int64_t b, h, i0, bq;
    const char *q, *k, *v;
    float slope;
} flash_task;

INLINE flash_task flash_task_at(const sdpa_job *j, int64_t task) {
    int64_t qb = task % j->qblocks, bh = task / j->qblocks;
    flash_task t = {.b = bh / j->heads, .h = bh % j->heads, .i0 = qb * BQ};
    int64_t hk = t.h / j->group;
    t.bq = j->sq - t.i0 < BQ ? j->sq - t.i0 : BQ;
    t.q = j->q + (size_t)(t.b * j->qs[0] + t.h * j->qs[1]) * j->esize;
    t.k = j->k + (size_t)(t.b * j->ks[0] + hk * j->ks[1]) * j->esize;
    t.v = j->v + (size_t)(t.b * j->vs[0] + hk * j->vs[1]) * j->esize;
    t.slope = j->alibi ? j->alibi[t.h * j->alibi_stride] : 0.0f;
    return t;
}

/* A path's kernels, called by flash_run with the path's scratch w:
 *   queries   packs the task's queries;
 *   scores    writes the scores of keys j0 .. j0 + bk - 1 into s->st ([BK][BQ]);
 *   values    adds P V of those keys (s->st's probabilities) to O. */
typedef void flash_queries_fn(void *w, const sdpa_job *j, const flash_task *t);
typedef void flash_block_fn(void *w, const sdpa_job *j, const flash_task *t, int64_t j0,
                            int64_t bk);

/* One task, the loop every path shares: O ([BQ][dp] f32, rows past bq free for the
 * path's tiles) and s start empty; each visible key block gets its scores, the online
 * softmax step (scores times score_scale), O's rescale and P V; then O / l is stored.
 * Inlined into each path, so the kernels are too. */
INLINE void flash_run(const sdpa_job *j, int64_t task, void *w, const softmax_state *s, float *o,
                      int64_t dp, float score_scale, flash_queries_fn *queries,
                      flash_block_fn *scores, flash_block_fn *values) {
    flash_task t = flash_task_at(j, task);
    queries(w, j, &t);
    for (int64_t r = 0; r < BQ; r++)
        s->m[r] = -INFINITY, s->l[r] = 0;
    memset(o, 0, (size_t)(BQ * dp) * sizeof *o);
    int64_t lo, hi;
    visible_keys(j, t.i0, t.bq, &lo, &hi);
    for (int64_t j0 = lo; j0 < hi; j0 += BK) {
        int64_t bk = hi - j0 < BK ? hi - j0 : BK;
        scores(w, j, &t, j0, bk);
        softmax_block(j, s, t.i0, t.bq, j0, bk, t.slope, score_scale);
        rescale_rows(s, o, t.bq, dp);
        values(w, j, &t, j0, bk);
    }
    store_rows(j, s, o, dp, t.b, t.h, t.i0, t.bq);
}

#ifdef TILE
/* A task's f32 scratch, carved from one allocation per chunk of tasks. */
typedef struct scratch {
    softmax_state s;
    float *qt;  /* [d][BQ]   scaled queries, transposed */
    float *k;   /* [BK][d]   keys */
    float *v;   /* [BK][dp]  values, columns past d zero */
    float *o;   /* [BQ][dp]  output accumulator */
    float *row; /* [d]       one converted query row */
} scratch;

static size_t scratch_floats(int64_t d, int64_t dp) {
    return (size_t)(d * BQ + d * BK + BK * dp + BQ * dp + BK * BQ + 3 * BQ + d);
}

static void scratch_carve(scratch *w, float *mem, int64_t d, int64_t dp) {
    w->qt = mem;
    w->k = w->qt + d * BQ;
    w->v = w->k + BK * d;
    w->o = w->v + BK * dp;
    w->s.st = w->o + BQ * dp;
    w->s.m = w->s.st + BK * BQ;
    w->s.l = w->s.m + BQ;
    w->s.corr = w->s.l + BQ;
    w->row = w->s.corr + BQ;
}

/* Q^T, scaled, and zero in columns bq .. (their lanes are computed, never stored). */
INLINE void f32_queries(void *ws, const sdpa_job *j, const flash_task *t) {
    scratch *w = ws;
    int64_t d = j->d, bq_nr = (t->bq + NR - 1) / NR * NR;
    for (int64_t r = 0; r < bq_nr; r++) {
        if (r < t->bq)
            bp_load_f32(w->row, t->q + (size_t)((t->i0 + r) * j->qs[2]) * j->esize, j->dt, d,
                        j->qs[3]);
        for (int64_t x = 0; x < d; x++)
            w->qt[x * BQ + r] = r < t->bq ? w->row[x] * j->scale : 0.0f;
    }
}

/* Keys and values j0 .. j0 + bk - 1 in f32, and S^T = K Q^T. */
INLINE void f32_scores(void *ws, const sdpa_job *j, const flash_task *t, int64_t j0, int64_t bk) {
    scratch *w = ws;
    int64_t d = j->d, dp = (d + NR - 1) / NR * NR;
    int64_t bk_mr = (bk + MR - 1) / MR * MR, bq_nr = (t->bq + NR - 1) / NR * NR;
    for (int64_t c = 0; c < bk; c++) {
        bp_load_f32(w->k + c * d, t->k + (size_t)((j0 + c) * j->ks[2]) * j->esize, j->dt, d,
                    j->ks[3]);
        bp_load_f32(w->v + c * dp, t->v + (size_t)((j0 + c) * j->vs[2]) * j->esize, j->dt, d,
                    j->vs[3]);
    }
    /* Key rows bk .. bk_mr hold stale finite values: their scores are never read. */
    for (int64_t c = 0; c < bk_mr; c += MR)
        for (int64_t r = 0; r < bq_nr; r += NR)
            TILE(d, w->k + c * d, d, 1, w->qt + r, BQ, w->s.st + c * BQ + r, BQ, 0);
}

/* O += P V. */
INLINE void f32_values(void *ws, const sdpa_job *j, const flash_task *t, int64_t j0, int64_t bk) {
    (void)j0;
    scratch *w = ws;
    int64_t dp = (j->d + NR - 1) / NR * NR, bq_mr = (t->bq + MR - 1) / MR * MR;
    for (int64_t r = 0; r < bq_mr; r += MR)
        for (int64_t x = 0; x < dp; x += NR)
            TILE(bk, w->s.st + r, 1, BQ, w->v + x, dp, w->o + r * dp + x, dp, 1);
}

/* One (batch, head, query block) task. */
TASK_ATTR
static void sdpa_task(const sdpa_job *j, scratch *w, int64_t task) {
    flash_run(j, task, w, &w->s, w->o, (j->d + NR - 1) / NR * NR, 1.0f, f32_queries, f32_scores,
              f32_values);
}

/* Tasks begin .. end - 1 with one scratch allocation. */
static void sdpa_range_f32(const sdpa_job *j, int64_t begin, int64_t end) {
    int64_t dp = (j->d + NR - 1) / NR * NR;
    size_t floats = scratch_floats(j->d, dp);
    float *mem = calloc(floats, sizeof *mem);
    if (!mem) {
        bp_cpu_sdpa_out_of_memory(j, floats * sizeof *mem, begin, end);
        return;
    }
    scratch w;
    scratch_carve(&w, mem, j->d, dp);
    for (int64_t t = begin; t < end; t++)
        sdpa_task(j, &w, t);
    free(mem);
}
#endif
