/* sliced_attention's check: attention_check.h. */
#include "attention_check.h"

#include <math.h>
#include <stdlib.h>

#define EPS_ACC 0x1p-24  /* f32's unit roundoff: kernels compute in f32 */
#define EXP_ULPS 16.0    /* exp within 8 f32 ulps, in units of EPS_ACC */
#define FLOOR 0x1p-126   /* below f32's smallest normal, intermediates keep no precision */

/* g(K) of an f32 accumulation of K terms: K up to 64, 8 sqrt(K) beyond (Higham and
 * Mary's probabilistic bound), plus 2 for a divide and the store. */
static double growth(double k) {
    return fmin(k, 8 * sqrt(k)) + 2;
}

/* One query row: its reference and bounds into want[0..d) and bound[0..d). s, a: the
 * row's scores and their relative errors (scratch of sk elements). */
static void attend_row(const float *qr, const float *k, const float *v, int64_t sk, int64_t d,
                       double eps_out, double *s, double *a, double *want, double *bound) {
    double scale = 1 / sqrt((double)d), m = -INFINITY;
    for (int64_t j = 0; j < sk; j++) {
        double dot = 0, mag = 0;
        for (int64_t x = 0; x < d; x++) {
            double t = (double)qr[x] * k[j * d + x];
            dot += t;
            mag += fabs(t);
        }
        s[j] = dot * scale;
        /* the absolute error of the score: f32 dot product and scaling, and the scores
         * stored twice in the dtype (before and after the scale) */
        a[j] = EPS_ACC * (mag * scale * growth((double)d) + fabs(s[j])) + 2 * eps_out * fabs(s[j]);
        m = fmax(m, s[j]);
    }
    double sum = 0, weighted = 0;
    for (int64_t j = 0; j < sk; j++) {
        double e = exp(s[j] - m);
        /* e's relative error: its argument's (the score's, and f32 roundings of the
         * max subtraction and of any scale folded in) and exp's own */
        a[j] += EPS_ACC * (EXP_ULPS + 4 * (fabs(s[j]) + fabs(s[j] - m)));
        s[j] = e;
        sum += e;
        weighted += e * a[j];
    }
    /* the sum of sk positive terms, the divide, and p stored in the dtype */
    double common = EPS_ACC * growth((double)sk) + weighted / sum + eps_out;
    for (int64_t x = 0; x < d; x++) {
        double acc = 0, m_pv = 0, m_p = 0;
        for (int64_t j = 0; j < sk; j++) {
            double p = s[j] / sum, t = p * v[j * d + x];
            acc += t;
            m_pv += fabs(t);
            m_p += fabs(t) * a[j];
        }
        want[x] = acc;
        bound[x] = m_p + m_pv * (common + EPS_ACC * (growth((double)sk) + 2)) + eps_out * fabs(acc) +
                   FLOOR;
    }
}

int attention_reference(const float *q, const float *k, const float *v, int64_t bh, int64_t s,
                        int64_t d, int64_t row_stride, double eps_out, attention_ref *ref) {
    int64_t rows = (s + row_stride - 1) / row_stride;
    size_t n = (size_t)(bh * rows * d);
    *ref = (attention_ref){.n = n};
    ref->index = malloc((n ? n : 1) * sizeof *ref->index);
    ref->want = malloc((n ? n : 1) * sizeof *ref->want);
    ref->bound = malloc((n ? n : 1) * sizeof *ref->bound);
    double *scores = malloc((size_t)(s ? s : 1) * sizeof *scores);
    double *errs = malloc((size_t)(s ? s : 1) * sizeof *errs);
    int ok = ref->index && ref->want && ref->bound && scores && errs;
    size_t at = 0;
    for (int64_t b = 0; ok && b < bh; b++) {
        const float *kb = k + b * s * d, *vb = v + b * s * d;
        for (int64_t i = 0; i < s; i += row_stride) {
            size_t first = (size_t)((b * s + i) * d);
            attend_row(q + first, kb, vb, s, d, eps_out, scores, errs, ref->want + at,
                       ref->bound + at);
            for (int64_t x = 0; x < d; x++)
                ref->index[at + (size_t)x] = first + (size_t)x;
            at += (size_t)d;
        }
    }
    free(scores);
    free(errs);
    if (!ok)
        attention_reference_free(ref);
    return ok ? 0 : -1;
}

size_t attention_check(const attention_ref *ref, const float *got, double *max_error) {
    size_t bad = 0;
    *max_error = 0;
    for (size_t i = 0; i < ref->n; i++) {
        double err = fabs((double)got[ref->index[i]] - ref->want[i]);
        if (isnan(err))
            err = INFINITY;
        if (err > *max_error)
            *max_error = err;
        bad += !(err <= ref->bound[i]);
    }
    return bad;
}

void attention_reference_free(attention_ref *ref) {
    free(ref->index);
    free(ref->want);
    free(ref->bound);
    *ref = (attention_ref){0};
}
