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

#if !BP_FP64
/* Without fp64, rope's angle in float-float: a value hi + lo, |lo| at most half an ulp
 * of hi, about 44 bits (Dekker; products exact through fma). FP_CONTRACT stays off so
 * that the compiler does not fuse the error terms away. */
typedef struct ff {
    float hi, lo;
} ff;

inline ff ff_fast_sum(float a, float b) { /* |a| >= |b| */
#pragma OPENCL FP_CONTRACT OFF
    float s = a + b;
    return (ff){s, b - (s - a)};
}

inline ff ff_sum(float a, float b) {
#pragma OPENCL FP_CONTRACT OFF
    float s = a + b, bb = s - a;
    return (ff){s, (a - (s - bb)) + (b - bb)};
}

inline ff ff_mul(ff a, ff b) {
#pragma OPENCL FP_CONTRACT OFF
    float p = a.hi * b.hi;
    float e = fma(a.hi, b.hi, -p);
    e = fma(a.hi, b.lo, e);
    e = fma(a.lo, b.hi, e);
    return ff_fast_sum(p, e);
}

/* a - k 2pi, k the nearest integer to a / 2pi, as float-float: 2pi is hi + lo and both
 * products are taken exactly. */
inline ff ff_reduce_2pi(ff a) {
#pragma OPENCL FP_CONTRACT OFF
    const float two_pi_hi = 6.28318548202514648f, two_pi_lo = -1.74845560007448832e-7f;
    float k = rint(a.hi * 0.159154943091895336f);
    float p = k * two_pi_hi, pe = fma(k, two_pi_hi, -p);
    float q = k * two_pi_lo, qe = fma(k, two_pi_lo, -q);
    ff r = ff_sum(a.hi - p, -pe); /* a.hi - p is exact: the two are within a factor 2 */
    r = ff_sum(r.hi, r.lo + ((a.lo - q) - qe));
    return r;
}
#endif

/* Pair i of row r: (i, i + len/2), or (2i, 2i + 1) when interleaved, rotated by the
 * angle position * ratio^i, ratio = theta^(-2/len) (the host passes it as ratio_hi +
 * ratio_lo, from double), position = pos_off + r % seq. The angle reaches thousands of
 * radians, where f32 would lose the bits that cos and sin depend on: it is taken in
 * double where the device has it, else in float-float, reduced modulo 2pi, and
 * sin(h + l) is sin h + l cos h. */
__kernel void k_rope(__global T *out, tdesc od, __global const T *in, tdesc id, long len, long is,
                     long os, long seq, float ratio_hi, float ratio_lo, int pos_off,
                     int interleaved, long n) {
    long g = get_global_id(0);
    GUARD(g, n);
    long hl = len / 2;
    long r = g / hl, i = g - r * hl;
    __global const T *x = in + tpos(&id, r);
    __global T *y = out + tpos(&od, r);
    long pos = (long)pos_off + r % seq;
#if BP_FP64
    double ang = (double)pos * pown((double)ratio_hi + (double)ratio_lo, (int)i);
    double cd;
    double sd = sincos(ang, &cd);
    float c = (float)cd, s = (float)sd;
#else
    ff freq = {1.0f, 0.0f}, base = {ratio_hi, ratio_lo};
    for (long e = i; e > 0; e >>= 1) {
        if (e & 1)
            freq = ff_mul(freq, base);
        base = ff_mul(base, base);
    }
    float pos_hi = (float)pos;
    ff at = ff_reduce_2pi(ff_mul((ff){pos_hi, (float)(pos - (long)pos_hi)}, freq));
    float c0;
    float s0 = sincos(at.hi, &c0);
    float c = c0 - s0 * at.lo, s = s0 + c0 * at.lo;
#endif
    long j0 = interleaved ? 2 * i : i, j1 = interleaved ? 2 * i + 1 : i + hl;
    float x0 = LD(x[j0 * is]), x1 = LD(x[j1 * is]);
    y[j0 * os] = ST(x0 * c - x1 * s);
    y[j1 * os] = ST(x1 * c + x0 * s);
}
