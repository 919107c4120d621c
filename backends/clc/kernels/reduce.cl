/* clc kernels of sum, max, mean (over one dim) and softmax (over the last), built
 * per dtype (BP_DT).
 *
 * One work-group of RWG work-items per row: the host passes the rows as tensors with
 * the reduced dim taken out (`id` for the input, `od` for the output, of one shape),
 * and the row's length and stride. Work-item l takes elements l, l + RWG, ... and the
 * partial results meet in a tree in local memory, so a float sum loses about
 * (len / RWG + log2 RWG) roundings rather than len. */

#define OP_SUM 0
#define OP_MAX 1
#define OP_MEAN 2

#if IS_FLOAT

__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_reduce(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
              int op) {
    __local float part[RWG];
    long r = get_group_id(0);
    int l = (int)get_local_id(0);
    __global const T *x = in + tpos(&id, r);
    float res;
    if (op == OP_MAX) {
        float m = -INFINITY;
        for (long j = l; j < len; j += RWG) {
            float v = LD(x[j * is]);
            if (v > m || isnan(v))
                m = v;
        }
        res = wg_max(m, part);
    } else {
        float s = 0.0f;
        for (long j = l; j < len; j += RWG)
            s += LD(x[j * is]);
        res = wg_sum(s, part);
        if (op == OP_MEAN)
            res = res / (float)len; /* an empty row: 0 / 0, NaN */
    }
    if (l == 0)
        out[tpos(&od, r)] = ST(res);
}

/* Softmax of row r of x * scale; with `causal`, row r keeps keys j <= r % sq and the
 * rest become 0. A row whose kept logits are all -inf becomes zeros. */
__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_softmax(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
               long os, float scale, int causal, long sq) {
    __local float part[RWG];
    long r = get_group_id(0);
    int l = (int)get_local_id(0);
    __global const T *x = in + tpos(&id, r);
    __global T *y = out + tpos(&od, r);
    long kept = len;
    if (causal && r % sq + 1 < len)
        kept = r % sq + 1;
    float m = -INFINITY;
    for (long j = l; j < kept; j += RWG) {
        float v = LD(x[j * is]) * scale;
        if (v > m || isnan(v))
            m = v;
    }
    m = wg_max(m, part);
    if (m == -INFINITY)
        kept = 0;
    float s = 0.0f;
    for (long j = l; j < kept; j += RWG)
        s += exp(LD(x[j * is]) * scale - m);
    float inv = 1.0f / wg_sum(s, part);
    for (long j = l; j < len; j += RWG)
        y[j * os] = ST(j < kept ? exp(LD(x[j * is]) * scale - m) * inv : 0.0f);
}

#else /* integers: sum wraps, max */

__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_reduce(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
              int op) {
    __local long part[RWG];
    long r = get_group_id(0);
    int l = (int)get_local_id(0);
    __global const T *x = in + tpos(&id, r);
    long acc = op == OP_MAX ? (long)T_MIN : 0;
    for (long j = l; j < len; j += RWG) {
        long v = (long)x[j * is];
        acc = op == OP_MAX ? max(acc, v) : (long)((ulong)acc + (ulong)v);
    }
    part[l] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = RWG / 2; s > 0; s >>= 1) {
        if (l < s) {
            long o = part[l + s];
            part[l] = op == OP_MAX ? max(part[l], o) : (long)((ulong)part[l] + (ulong)o);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[tpos(&od, r)] = (T)part[0];
}

#endif
