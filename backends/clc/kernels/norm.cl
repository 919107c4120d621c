/* clc kernels of rmsnorm, layernorm and rope, built per dtype (BP_DT), all in f32.
 * Rows are the last dim: the host passes the tensors with the last dim taken out and
 * the row's length and strides. The norms take one work-group of RWG work-items per
 * row (reductions as in reduce.cl); rope one work-item per rotated pair. */

__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_rmsnorm(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
               long os, __global const T *w, long woff, long ws, int has_w, float eps) {
    __local float part[RWG];
    long r = get_group_id(0);
    int l = (int)get_local_id(0);
    __global const T *x = in + tpos(&id, r);
    __global T *y = out + tpos(&od, r);
    float ss = 0.0f;
    for (long j = l; j < len; j += RWG) {
        float v = LD(x[j * is]);
        ss += v * v;
    }
    float rstd = 1.0f / sqrt(wg_sum(ss, part) / (float)len + eps);
    for (long j = l; j < len; j += RWG)
        y[j * os] = ST(LD(x[j * is]) * rstd * (has_w ? LD(w[woff + j * ws]) : 1.0f));
}

/* Two passes, the mean and then squared deviations: E[x^2] - E[x]^2 would cancel for
 * rows far from 0. */
__kernel __attribute__((reqd_work_group_size(RWG, 1, 1)))
void k_layernorm(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
                 long os, __global const T *w, long woff, long ws, int has_w,
                 __global const T *b, long boff, long bs, int has_b, float eps) {
    __local float part[RWG];
    long r = get_group_id(0);
    int l = (int)get_local_id(0);
    __global const T *x = in + tpos(&id, r);
    __global T *y = out + tpos(&od, r);
    float s = 0.0f;
    for (long j = l; j < len; j += RWG)
        s += LD(x[j * is]);
    float mean = wg_sum(s, part) / (float)len;
    float v = 0.0f;
    for (long j = l; j < len; j += RWG) {
        float dv = LD(x[j * is]) - mean;
        v += dv * dv;
    }
    float rstd = 1.0f / sqrt(wg_sum(v, part) / (float)len + eps);
    for (long j = l; j < len; j += RWG) {
        float wj = has_w ? LD(w[woff + j * ws]) : 1.0f;
        float bj = has_b ? LD(b[boff + j * bs]) : 0.0f;
        y[j * os] = ST((LD(x[j * is]) - mean) * rstd * wj + bj);
    }
}

/* Pair i of row r: (i, i + len/2), or (2i, 2i + 1) when interleaved, rotated by
 * position * theta^(-2i/len), position = pos_off + r % seq. The angle is taken in
 * double where the device has it: it reaches hundreds of radians, where f32 would
 * lose the bits that cos and sin depend on. */
__kernel void k_rope(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
                     long os, long seq, float theta, int pos_off, int interleaved, long n) {
    long g = get_global_id(0);
    GUARD(g, n);
    long hl = len / 2;
    long r = g / hl, i = g - r * hl;
    __global const T *x = in + tpos(&id, r);
    __global T *y = out + tpos(&od, r);
    long pos = (long)pos_off + r % seq;
#if BP_FP64
    double ang = (double)pos * pow((double)theta, -2.0 * (double)i / (double)len);
    double cd;
    double sd = sincos(ang, &cd);
    float c = (float)cd, s = (float)sd;
#else
    float ang = (float)pos * pow(theta, -2.0f * (float)i / (float)len);
    float c;
    float s = sincos(ang, &c);
#endif
    long j0 = interleaved ? 2 * i : i, j1 = interleaved ? 2 * i + 1 : i + hl;
    float x0 = LD(x[j0 * is]), x1 = LD(x[j1 * is]);
    y[j0 * os] = ST(x0 * c - x1 * s);
    y[j1 * os] = ST(x1 * c + x0 * s);
}
