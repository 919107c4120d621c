/* The sdpa family: fused attention for f32, f16 and bf16, math in f32 (docs/ops.md:
 * scale, softcap, ALiBi, causal and window masks, grouped-query heads; the score order
 * is ops/sdpa.c's).
 *
 * Flash attention's forward pass (online softmax). One task per (batch, head, block of
 * BQ query rows), spread over the cluster with parallel_for. A task walks the visible
 * keys in blocks of BK, keeping per query row a running maximum m, a running sum l and
 * an f32 output accumulator O:
 *     S = (scale Q) K^T, then softcap, ALiBi and masks on S;
 *     m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m');
 *     l = l c + rowsum P;     O = O c + P V;     m = m'
 * and writes O / l (0 for a row that saw no key). Key blocks a causal or window mask
 * hides entirely are skipped. The Sq x Sk score matrix never exists.
 *
 * Bounded scratch: all of a task's buffers are on its stack (53 KiB, mm_sdpa.h) whatever
 * the head dim D: S accumulates over D in chunks of DQ, and O is computed DO columns at
 * a time; a D above DO walks the keys once per chunk of DO output columns (recomputing
 * the same S, m and l, which the chunks of O need). Both products (Q K^T and P V) run on
 * the register tile of mm_common.h, NEON or SVE (VLA): variants "neon" and "sve"; or,
 * for bf16 with FEAT_BF16, on BFMMLA (sdpa_bf16.c, "neon-bfmmla"). The softmax step is
 * NEON. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mm_sdpa.h"

/* exp(x) for lanes x <= 0 (or NaN, which stays NaN), 0 for x = -inf: x = n ln2 + r with
 * |r| <= ln2 / 2 (ln2 split in two for an exact n ln2), a degree-6 Taylor polynomial of
 * e^r (relative error below 2e-7), and 2^n put in the exponent. Lanes below -87 give
 * about 2^-126 instead of underflowing further, which no row sum notices. */
MM_INLINE float32x4_t exp_neg(float32x4_t x) {
    float32x4_t y = vmaxq_f32(x, vdupq_n_f32(-87.0f));
    float32x4_t n = vrndnq_f32(vmulq_n_f32(y, 1.44269504f));
    float32x4_t r = vfmsq_f32(y, n, vdupq_n_f32(0.693145752f));
    r = vfmsq_f32(r, n, vdupq_n_f32(1.42860677e-6f));
    float32x4_t p = vdupq_n_f32(1.0f / 720);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t two_n = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t e = vmulq_f32(p, vreinterpretq_f32_s32(two_n));
    return vbslq_f32(vceqq_f32(x, vdupq_n_f32(-INFINITY)), vdupq_n_f32(0.0f), e);
}

/* The online-softmax step for keys j0 .. j0 + bk - 1 of query rows i0 .. i0 + bq - 1:
 * softcap, ALiBi and the masks make s's scores final (columns bk .. BK: -inf), then
 * probabilities; m, l and corr (what O's rows must be scaled by) move on. */
static void softmax_block(const sdpa_job *j, sdpa_work *w, int64_t i0, int64_t bq, int64_t j0,
                          int64_t bk, float slope) {
    for (int64_t r = 0; r < bq; r++) {
        float *s = w->s + r * BK, mx = -INFINITY;
        int64_t row = i0 + r;
        for (int64_t c = 0; c < BK; c++) {
            int64_t key = j0 + c;
            float x = s[c];
            if (j->softcap > 0)
                x = tanhf(x * (1.0f / j->softcap)) * j->softcap;
            if (j->alibi) /* i - j, exact in floats below 2^24 */
                x -= (float)(row - key) * slope;
            if (c >= bk || (j->causal && key > row) || (j->window > 0 && key <= row - j->window))
                x = -INFINITY;
            s[c] = x;
            mx = x > mx ? x : mx;
        }
        float m_old = w->m[r], m_new = mx > m_old ? mx : m_old;
        /* A row with no key seen yet subtracts 0: its probabilities and corr are 0. */
        float m_use = m_new == -INFINITY ? 0.0f : m_new;
        float32x4_t sum = vdupq_n_f32(0.0f), sub = vdupq_n_f32(m_use);
        for (int64_t c = 0; c < BK; c += 4) {
            float32x4_t p = exp_neg(vsubq_f32(vld1q_f32(s + c), sub));
            vst1q_f32(s + c, p);
            sum = vaddq_f32(sum, p);
        }
        float corr = vgetq_lane_f32(exp_neg(vdupq_n_f32(m_old - m_use)), 0);
        w->l[r] = w->l[r] * corr + vaddvq_f32(sum);
        w->m[r] = m_new;
        w->corr[r] = corr;
    }
}

/* sdpa_scores_fn on the f32 register tile: q is scaled as it is loaded. */
static void scores_f32(const sdpa_job *j, sdpa_work *w, const char *q, const char *k, int64_t i0,
                       int64_t bq, int64_t j0, int64_t bk) {
    float krow[DQ];
    int64_t bq_pad = mm_round_up(bq, j->row_pad);
    for (int64_t d0 = 0; d0 < j->d; d0 += DQ) {
        int64_t dc = j->d - d0 < DQ ? j->d - d0 : DQ;
        for (int64_t r = 0; r < bq_pad; r++) {
            float *qr = w->q.f + r * DQ;
            if (r >= bq) {
                memset(qr, 0, (size_t)dc * sizeof *qr);
                continue;
            }
            mm_load_f32(qr, q + (size_t)((i0 + r) * j->qs[2] + d0 * j->qs[3]) * j->esize, j->dt,
                        dc, j->qs[3]);
            for (int64_t x = 0; x < dc; x++)
                qr[x] *= j->scale;
        }
        for (int64_t c = 0; c < BK; c++) {
            if (c < bk)
                mm_load_f32(krow, k + (size_t)((j0 + c) * j->ks[2] + d0 * j->ks[3]) * j->esize,
                            j->dt, dc, j->ks[3]);
            for (int64_t x = 0; x < dc; x++)
                w->k.f[x * BK + c] = c < bk ? krow[x] : 0.0f;
        }
        mm_product(j->tile, dc, w->q.f, DQ, 1, w->k.f, BK, w->s, BK, bq_pad, BK, d0 > 0);
    }
}

/* sdpa_pv_fn on the f32 register tile. */
static void pv_f32(const sdpa_job *j, sdpa_work *w, const char *v, int64_t j0, int64_t bk,
                   int64_t bq, int64_t xc) {
    int64_t xc_pad = mm_round_up(xc, MM_PAD);
    for (int64_t c = 0; c < bk; c++) {
        float *vr = w->v.f + c * DO;
        mm_load_f32(vr, v + (size_t)((j0 + c) * j->vs[2]) * j->esize, j->dt, xc, j->vs[3]);
        memset(vr + xc, 0, (size_t)(xc_pad - xc) * sizeof *vr);
    }
    mm_product(j->tile, bk, w->s, BK, 1, w->v.f, DO, w->o, DO, mm_round_up(bq, j->row_pad), xc_pad,
               true);
}

/* Output columns x0 .. x0 + xc - 1 of one (batch, head, query block) task. */
static void task_columns(const sdpa_job *j, sdpa_work *w, int64_t task, int64_t x0, int64_t xc) {
    int64_t qb = task % j->qblocks, bh = task / j->qblocks;
    int64_t b = bh / j->heads, h = bh % j->heads, hk = h / j->group;
    int64_t i0 = qb * BQ, bq = j->sq - i0 < BQ ? j->sq - i0 : BQ;
    int64_t bq_pad = mm_round_up(bq, j->row_pad);
    const char *q = j->q + (size_t)(b * j->qs[0] + h * j->qs[1]) * j->esize;
    const char *k = j->k + (size_t)(b * j->ks[0] + hk * j->ks[1]) * j->esize;
    const char *v = j->v + (size_t)(b * j->vs[0] + hk * j->vs[1] + x0 * j->vs[3]) * j->esize;
    float slope = j->alibi ? j->alibi[h * j->alibi_stride] : 0.0f;

    for (int64_t r = 0; r < BQ; r++)
        w->m[r] = -INFINITY, w->l[r] = 0.0f;
    memset(w->o, 0, (size_t)(bq_pad * DO) * sizeof *w->o);
    int64_t lo = 0, hi = j->sk;
    if (j->causal && i0 + bq < hi)
        hi = i0 + bq;
    if (j->window > 0 && i0 - j->window + 1 > lo)
        lo = i0 - j->window + 1;
    for (int64_t j0 = lo; j0 < hi; j0 += BK) {
        int64_t bk = hi - j0 < BK ? hi - j0 : BK;
        j->scores(j, w, q, k, i0, bq, j0, bk);
        softmax_block(j, w, i0, bq, j0, bk, slope);
        for (int64_t r = 0; r < bq; r++) {
            float corr = w->corr[r], *o = w->o + r * DO;
            if (corr != 1.0f)
                for (int64_t x = 0; x < xc; x++)
                    o[x] *= corr;
        }
        j->pv(j, w, v, j0, bk, bq, xc);
    }

    char *o = j->o + (size_t)(b * j->os[0] + h * j->os[1] + x0 * j->os[3]) * j->esize;
    for (int64_t r = 0; r < bq; r++) {
        float *orow = w->o + r * DO;
        float inv = w->l[r] > 0 ? 1.0f / w->l[r] : 0.0f;
        for (int64_t x = 0; x < xc; x++)
            orow[x] *= inv;
        mm_store_f32(o + (size_t)((i0 + r) * j->os[2]) * j->esize, j->dt, j->os[3], orow, xc);
    }
}

static void sdpa_range(void *ctx, int64_t begin, int64_t end) {
    const sdpa_job *j = ctx;
    sdpa_work w;
    for (int64_t t = begin; t < end; t++)
        for (int64_t x0 = 0; x0 < j->d; x0 += DO)
            task_columns(j, &w, t, x0, j->d - x0 < DO ? j->d - x0 : DO);
}

void sdpa_run(const bp_kernel_call *call, const arm_exec *ex, sdpa_job *job) {
    const bp_tensor_desc *q = call->inputs[0], *k = call->inputs[1], *v = call->inputs[2];
    const bp_tensor_desc *o = call->outputs[0];
    const bp_sdpa_attrs *a = call->attrs;
    sdpa_job j = *job;
    j.dt = o->dtype;
    j.esize = o->dtype == BP_DTYPE_F32 ? 4 : 2;
    j.q = q->data;
    j.k = k->data;
    j.v = v->data;
    j.o = o->data;
    j.heads = q->shape[1];
    j.sq = q->shape[2];
    j.sk = k->shape[2];
    j.d = q->shape[3];
    if (q->shape[0] == 0 || j.heads == 0 || j.sq == 0 || j.d == 0)
        return;
    j.group = j.heads / k->shape[1];
    for (int x = 0; x < 4; x++) {
        j.qs[x] = q->strides[x];
        j.ks[x] = k->strides[x];
        j.vs[x] = v->strides[x];
        j.os[x] = o->strides[x];
    }
    j.scale = a->scale;
    j.softcap = a->softcap;
    j.causal = a->causal != 0;
    j.window = a->window;
    if (a->has_alibi && call->n_inputs > 3) {
        j.alibi = call->inputs[3]->data;
        j.alibi_stride = call->inputs[3]->strides[0];
    }
    j.qblocks = (j.sq + BQ - 1) / BQ;
    ex->parallel_for(ex, q->shape[0] * j.heads * j.qblocks, 1, sdpa_range, &j);
}

/* The f32 products on register tile t. */
static void sdpa_tiled(const bp_kernel_call *call, const arm_exec *ex, mm_tile t) {
    sdpa_job j = {.row_pad = t.mr, .tile = t, .scores = scores_f32, .pv = pv_f32};
    sdpa_run(call, ex, &j);
}

static void sdpa_neon(const bp_kernel_call *call, const arm_exec *ex) {
    sdpa_tiled(call, ex, mm_tile_neon());
}

static void sdpa_sve(const bp_kernel_call *call, const arm_exec *ex) {
    sdpa_tiled(call, ex, mm_tile_sve());
}

size_t arm_kernels_sdpa(const arm_features *f, arm_kernel *out, size_t cap) {
    arm_kernel_body body = f->sve ? sdpa_sve : sdpa_neon;
    const char *name = f->sve ? "sve" : "neon";
    const bp_dtype dtypes[] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16};
    size_t n = sizeof dtypes / sizeof dtypes[0];
    for (size_t i = 0; i < n && i < cap; i++) {
        out[i] = (arm_kernel){"sdpa", dtypes[i], body, name};
        if (dtypes[i] == BP_DTYPE_BF16 && f->bf16)
            out[i] = (arm_kernel){"sdpa", dtypes[i], sdpa_bfmmla, "neon-bfmmla"};
    }
    return n;
}
