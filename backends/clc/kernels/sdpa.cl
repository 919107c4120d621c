/* clc kernel of sdpa (fused attention), built per dtype (BP_DT), math in f32.
 *
 * One work-group of RWG work-items per query row (b, h, i), with an online softmax
 * over blocks of RWG keys: work-item l scores key j0 + l against the row's scaled
 * query (in local memory), the group takes the block's max and sum, and the output
 * accumulator (in local memory, D floats, each work-item owning dims l, l + RWG, ...)
 * is rescaled by exp(m_old - m_new) and gets the block's probabilities times V. Only
 * keys that a causal or window mask leaves visible are visited; no Sq x Sk matrix is
 * ever stored. Score order as docs/ops.md: scale * q.k, softcap, ALiBi, masks. */
__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_sdpa(__global T *o, tdesc od, __global const T *q, tdesc qd, __global const T *k,
            tdesc kd, __global const T *v, tdesc vd, __global const float *alibi, long aoff,
            long astride, int has_alibi, long H, long group, long Sq, long Sk, long D,
            float scale, float softcap, int causal, long window, __local float *qrow,
            __local float *acc) {
    __local float part[RWG];
    __local float p[RWG];
    long g = get_group_id(0);
    int l = (int)get_local_id(0);
    long i = g % Sq, bh = g / Sq;
    long h = bh % H, b = bh / H, hk = h / group;
    long qo = qd.off + b * qd.stride[0] + h * qd.stride[1] + i * qd.stride[2];
    long ko = kd.off + b * kd.stride[0] + hk * kd.stride[1];
    long vo = vd.off + b * vd.stride[0] + hk * vd.stride[1];
    long oo = od.off + b * od.stride[0] + h * od.stride[1] + i * od.stride[2];
    for (long x = l; x < D; x += RWG) {
        qrow[x] = LD(q[qo + x * qd.stride[3]]) * scale;
        acc[x] = 0.0f;
    }
    float slope = has_alibi ? alibi[aoff + h * astride] : 0.0f;
    long lo = 0, hi = Sk;
    if (causal && i + 1 < hi)
        hi = i + 1;
    if (window > 0 && i - window + 1 > lo)
        lo = i - window + 1;
    float m = -INFINITY, lsum = 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long j0 = lo; j0 < hi; j0 += RWG) {
        long j = j0 + l;
        float s = -INFINITY;
        if (j < hi) {
            __global const T *kr = k + ko + j * kd.stride[2];
            float dot = 0.0f;
            for (long x = 0; x < D; x++)
                dot += qrow[x] * LD(kr[x * kd.stride[3]]);
            s = dot;
            if (softcap > 0.0f)
                s = softcap * tanh(s / softcap);
            if (has_alibi)
                s -= slope * (float)(i - j);
        }
        float mnew = fmax(m, wg_max(s, part));
        /* While every score so far is -inf (or NaN, which the max leaves out) subtract
         * 0: a -inf score then weighs 0 and a NaN one poisons the row, as it must. */
        float m_use = mnew == -INFINITY ? 0.0f : mnew;
        float pj = j < hi ? exp(s - m_use) : 0.0f;
        p[l] = pj;
        float corr = exp(m - m_use); /* 0 while m is -inf */
        lsum = lsum * corr + wg_sum(pj, part); /* its barriers publish p */
        long nkeys = hi - j0 < RWG ? hi - j0 : RWG;
        for (long x = l; x < D; x += RWG) {
            float a = acc[x] * corr;
            __global const T *vc = v + vo + x * vd.stride[3];
            for (long c = 0; c < nkeys; c++)
                a += p[c] * LD(vc[(j0 + c) * vd.stride[2]]);
            acc[x] = a;
        }
        m = mnew;
        barrier(CLK_LOCAL_MEM_FENCE); /* p is rewritten by the next block */
    }
    float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f;
    for (long x = l; x < D; x += RWG)
        o[oo + x * od.stride[3]] = ST(acc[x] * inv);
}

/* The same attention for many query rows at once: one work-group of RWG work-items
 * per RWG query rows of one (b, h), work-item l owning row i0 + l. Blocks of SBK keys
 * and values are staged in local memory once for all the rows; each work-item then
 * runs its own row's online softmax over the block (no work-group reductions), with
 * its scaled query, its accumulator and its block of scores in local memory laid out
 * [dim][row], so neighbouring work-items touch neighbouring words. Used when there
 * are enough rows and the device has the local memory for them (clc_ops.c). SBK is
 * a build option. */

__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_sdpa_rows(__global T *o, tdesc od, __global const T *q, tdesc qd, __global const T *k,
                 tdesc kd, __global const T *v, tdesc vd, __global const float *alibi,
                 long aoff, long astride, int has_alibi, long H, long group, long Sq, long Sk,
                 long D, float scale, float softcap, int causal, long window,
                 __local float *qs, __local float *acc, __local float *ks, __local float *vs,
                 __local float *ps) {
    long nqb = (Sq + RWG - 1) / RWG;
    long g = get_group_id(0);
    int l = (int)get_local_id(0);
    long i0 = (g % nqb) * RWG, bh = g / nqb;
    long h = bh % H, b = bh / H, hk = h / group;
    long i = i0 + l;
    bool active = i < Sq;
    long ko = kd.off + b * kd.stride[0] + hk * kd.stride[1];
    long vo = vd.off + b * vd.stride[0] + hk * vd.stride[1];
    if (active) {
        long qo = qd.off + b * qd.stride[0] + h * qd.stride[1] + i * qd.stride[2];
        for (long x = 0; x < D; x++) {
            qs[x * RWG + l] = LD(q[qo + x * qd.stride[3]]) * scale;
            acc[x * RWG + l] = 0.0f;
        }
    }
    float slope = has_alibi ? alibi[aoff + h * astride] : 0.0f;
    /* The keys any row of the group may see. */
    long last = i0 + RWG - 1 < Sq - 1 ? i0 + RWG - 1 : Sq - 1;
    long lo = 0, hi = Sk;
    if (causal && last + 1 < hi)
        hi = last + 1;
    if (window > 0 && i0 - window + 1 > lo)
        lo = i0 - window + 1;
    float m = -INFINITY, lsum = 0.0f;
    for (long j0 = lo; j0 < hi; j0 += SBK) {
        long nk = hi - j0 < SBK ? hi - j0 : SBK;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block is no longer read */
        for (long e = l; e < nk * D; e += RWG) {
            long c = e / D, x = e - c * D;
            ks[e] = LD(k[ko + (j0 + c) * kd.stride[2] + x * kd.stride[3]]);
            vs[e] = LD(v[vo + (j0 + c) * vd.stride[2] + x * vd.stride[3]]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!active)
            continue;
        float mb = -INFINITY;
        for (long c = 0; c < nk; c++) {
            long j = j0 + c;
            float s = -INFINITY;
            if ((!causal || j <= i) && (window <= 0 || j > i - window)) {
                float dot = 0.0f;
                for (long x = 0; x < D; x++)
                    dot = mad(qs[x * RWG + l], ks[c * D + x], dot);
                s = dot;
                if (softcap > 0.0f)
                    s = softcap * tanh(s / softcap);
                if (has_alibi)
                    s -= slope * (float)(i - j);
            }
            ps[c * RWG + l] = s;
            mb = fmax(mb, s);
        }
        float mnew = fmax(m, mb);
        /* nothing visible yet (or only NaN): subtract 0, so -inf weighs 0, NaN poisons */
        float m_use = mnew == -INFINITY ? 0.0f : mnew;
        float corr = exp(m - m_use), sum = 0.0f;
        for (long c = 0; c < nk; c++) {
            float p = exp(ps[c * RWG + l] - m_use);
            ps[c * RWG + l] = p;
            sum += p;
        }
        lsum = lsum * corr + sum;
        for (long x = 0; x < D; x++) {
            float a = acc[x * RWG + l] * corr;
            for (long c = 0; c < nk; c++)
                a = mad(ps[c * RWG + l], vs[c * D + x], a);
            acc[x * RWG + l] = a;
        }
        m = mnew;
    }
    if (active) {
        long oo = od.off + b * od.stride[0] + h * od.stride[1] + i * od.stride[2];
        float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f;
        for (long x = 0; x < D; x++)
            o[oo + x * od.stride[3]] = ST(acc[x * RWG + l] * inv);
    }
}
