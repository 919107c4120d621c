/* Float64 references of the built-in ops: op_reference.h. Written for clarity, not
 * speed: plain loops over row-major indices, every sum in double. */
#include "op_reference.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* A result array of n doubles (one element when n is 0, so it is never NULL-sized),
 * zeroed, so references only write what is not 0. */
static double *alloc_result(int64_t n) {
    return calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

int64_t bp_ref_numel(bp_ref_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++)
        n *= s.d[i];
    return n;
}

/* ---- conversions ---- */

/* Round to a float with `mantissa_bits` explicit bits and the given exponent range. */
static double round_to_format(double v, int mantissa_bits, int min_exp, double max_finite) {
    if (!isfinite(v) || v == 0)
        return v;
    int e;
    frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
    if (e - 1 < min_exp)
        e = min_exp + 1; /* subnormal: fixed quantum */
    double quantum = ldexp(1.0, e - 1 - mantissa_bits);
    double r = nearbyint(v / quantum) * quantum; /* default rounding mode: to nearest even */
    if (fabs(r) > max_finite)
        return copysign(INFINITY, v);
    return r;
}

double bp_ref_round(double v, bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F32: return (double)(float)v;
    case BP_DTYPE_F16: return round_to_format(v, 10, -14, 65504.0);
    /* bf16 kernels convert through f32 (the upper half of its bits), as here */
    case BP_DTYPE_BF16: return round_to_format((double)(float)v, 7, -126, 3.3895313892515355e38);
    case BP_DTYPE_F64: return v;
    case BP_DTYPE_I8: return (double)(int8_t)trunc(v);
    case BP_DTYPE_U8: return (double)(uint8_t)trunc(v);
    case BP_DTYPE_I32: return (double)(int32_t)trunc(v);
    case BP_DTYPE_I64: return (double)(int64_t)trunc(v);
    case BP_DTYPE_BOOL: return v != 0;
    default: return NAN;
    }
}

double *bp_ref_fill(int64_t n, double value, bp_dtype dtype) {
    double *out = alloc_result(n);
    for (int64_t i = 0; i < n; i++)
        out[i] = bp_ref_round(value, dtype);
    return out;
}

double *bp_ref_copy(const double *src, bp_ref_shape src_shape, bp_ref_shape dst_shape,
                    bp_dtype dst_dtype) {
    int64_t n = bp_ref_numel(dst_shape);
    double *out = alloc_result(n);
    for (int64_t i = 0; i < n; i++)
        out[i] = bp_ref_round(src[bp_ref_broadcast_index(dst_shape, src_shape, i)], dst_dtype);
    return out;
}

/* ---- broadcasting ---- */

bp_ref_shape bp_ref_broadcast_shape(const bp_ref_shape *shapes, int n) {
    bp_ref_shape out = {0};
    for (int k = 0; k < n; k++)
        if (shapes[k].ndim > out.ndim)
            out.ndim = shapes[k].ndim;
    for (int i = 0; i < out.ndim; i++)
        out.d[i] = 1;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < shapes[k].ndim; i++) {
            int64_t *o = &out.d[out.ndim - shapes[k].ndim + i];
            if (shapes[k].d[i] != 1)
                *o = shapes[k].d[i];
        }
    return out;
}

int64_t bp_ref_broadcast_index(bp_ref_shape out, bp_ref_shape in, int64_t i) {
    int64_t idx = 0, mul = 1;
    for (int d = out.ndim - 1; d >= 0; d--) {
        int64_t pos = i % out.d[d];
        i /= out.d[d];
        int di = d - (out.ndim - in.ndim);
        if (di >= 0) {
            if (in.d[di] != 1)
                idx += pos * mul;
            mul *= in.d[di];
        }
    }
    return idx;
}

/* ---- elementwise ---- */

static bool is_integer(bp_dtype dtype) {
    return dtype != BP_DTYPE_F32 && dtype != BP_DTYPE_F16 && dtype != BP_DTYPE_BF16 &&
           dtype != BP_DTYPE_F64;
}

const char *bp_ref_binary_name(bp_ref_binary_op op) {
    static const char *const names[] = {"add", "sub", "mul", "div"};
    return names[op];
}

static double apply_binary(bp_ref_binary_op op, double x, double y) {
    switch (op) {
    case BP_REF_ADD: return x + y;
    case BP_REF_SUB: return x - y;
    case BP_REF_MUL: return x * y;
    default: return x / y;
    }
}

double *bp_ref_binary(bp_ref_binary_op op, bp_dtype dtype, bp_ref_shape sa, const double *a,
                      bp_ref_shape sb, const double *b) {
    bp_ref_shape so = bp_ref_broadcast_shape((const bp_ref_shape[]){sa, sb}, 2);
    int64_t n = bp_ref_numel(so);
    double *out = alloc_result(n);
    for (int64_t i = 0; i < n; i++) {
        out[i] = apply_binary(op, a[bp_ref_broadcast_index(so, sa, i)],
                              b[bp_ref_broadcast_index(so, sb, i)]);
        if (is_integer(dtype))
            out[i] = bp_ref_round(out[i], dtype);
    }
    return out;
}

const char *bp_ref_unary_name(bp_ref_unary_op op) {
    static const char *const names[] = {"exp", "tanh", "silu", "gelu", "gelu", "scale"};
    return names[op];
}

double bp_ref_unary_value(bp_ref_unary_op op, double x, double alpha) {
    switch (op) {
    case BP_REF_EXP: return exp(x);
    case BP_REF_TANH: return tanh(x);
    case BP_REF_SILU: return x / (1 + exp(-x));
    /* erfc keeps the relative precision of the tiny results of large negative x */
    case BP_REF_GELU: return 0.5 * x * erfc(-x / sqrt(2));
    case BP_REF_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    default: return x * alpha;
    }
}

double *bp_ref_unary(bp_ref_unary_op op, const double *x, int64_t n, double alpha) {
    double *out = alloc_result(n);
    for (int64_t i = 0; i < n; i++)
        out[i] = bp_ref_unary_value(op, x[i], alpha);
    return out;
}

double *bp_ref_where(bp_ref_shape sc, const double *cond, bp_ref_shape sa, const double *a,
                     bp_ref_shape sb, const double *b) {
    bp_ref_shape so = bp_ref_broadcast_shape((const bp_ref_shape[]){sc, sa, sb}, 3);
    int64_t n = bp_ref_numel(so);
    double *out = alloc_result(n);
    for (int64_t i = 0; i < n; i++)
        out[i] = cond[bp_ref_broadcast_index(so, sc, i)] != 0
                     ? a[bp_ref_broadcast_index(so, sa, i)]
                     : b[bp_ref_broadcast_index(so, sb, i)];
    return out;
}

/* ---- reductions and normalisations ---- */

/* dim in [0, ndim) (0 for a scalar). */
static int normalize_dim(int dim, int ndim) {
    if (ndim == 0)
        return 0;
    return dim < 0 ? dim + ndim : dim;
}

const char *bp_ref_reduce_name(bp_ref_reduce_op op) {
    static const char *const names[] = {"sum", "max", "mean"};
    return names[op];
}

bp_ref_shape bp_ref_reduced_shape(bp_ref_shape s, int dim, int keepdim) {
    int d = normalize_dim(dim, s.ndim);
    bp_ref_shape o = {0};
    for (int i = 0; i < s.ndim; i++)
        if (i != d || keepdim)
            o.d[o.ndim++] = i == d ? 1 : s.d[i];
    return o;
}

double *bp_ref_reduce(bp_ref_reduce_op op, const double *x, bp_ref_shape s, int dim,
                      bp_dtype dtype) {
    int d = normalize_dim(dim, s.ndim);
    int64_t outer = 1, len = s.ndim ? s.d[d] : 1, inner = 1;
    for (int i = 0; i < d; i++)
        outer *= s.d[i];
    for (int i = d + 1; i < s.ndim; i++)
        inner *= s.d[i];
    double *out = alloc_result(outer * inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = op == BP_REF_MAX ? -INFINITY : 0;
            for (int64_t j = 0; j < len; j++) {
                double v = x[(o * len + j) * inner + i];
                acc = op == BP_REF_MAX ? fmax(acc, v) : acc + v;
            }
            if (op == BP_REF_MEAN)
                acc /= (double)len; /* 0/0 = NaN for an empty dim */
            if (is_integer(dtype))
                acc = bp_ref_round(acc, dtype);
            out[o * inner + i] = acc;
        }
    return out;
}

double *bp_ref_softmax(const double *x, bp_ref_shape s, float scale, int causal) {
    int64_t n = bp_ref_numel(s), len = s.ndim ? s.d[s.ndim - 1] : 1;
    int64_t sq = s.ndim >= 2 ? s.d[s.ndim - 2] : 1, rows = len ? n / len : 0;
    double *out = alloc_result(n);
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * len;
        double *y = out + r * len;
        int64_t kept = causal && r % sq + 1 < len ? r % sq + 1 : len;
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < kept; j++)
            m = fmax(m, xr[j] * (double)scale);
        for (int64_t j = 0; j < kept; j++)
            sum += exp(xr[j] * (double)scale - m);
        for (int64_t j = 0; j < len; j++)
            y[j] = j < kept && m != -INFINITY ? exp(xr[j] * (double)scale - m) / sum : 0;
    }
    return out;
}

/* rmsnorm (centre = false) or layernorm over rows of length d. */
static double *norm(bool centre, const double *x, int64_t n, int64_t d, const double *w,
                    const double *b, float eps) {
    double *y = alloc_result(n);
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        const double *xr = x + r * d;
        double mean = 0, acc = 0;
        if (centre) {
            for (int64_t j = 0; j < d; j++)
                mean += xr[j];
            mean /= (double)d;
        }
        for (int64_t j = 0; j < d; j++)
            acc += (xr[j] - mean) * (xr[j] - mean);
        double rstd = 1 / sqrt(acc / (double)d + (double)eps);
        for (int64_t j = 0; j < d; j++)
            y[r * d + j] = (xr[j] - mean) * rstd * (w ? w[j] : 1) + (b ? b[j] : 0);
    }
    return y;
}

double *bp_ref_rmsnorm(const double *x, int64_t n, int64_t d, const double *w, float eps) {
    return norm(false, x, n, d, w, NULL, eps);
}

double *bp_ref_layernorm(const double *x, int64_t n, int64_t d, const double *w,
                         const double *b, float eps) {
    return norm(true, x, n, d, w, b, eps);
}

double *bp_ref_rope(const double *x, bp_ref_shape s, const bp_rope_attrs *attrs) {
    int64_t n = bp_ref_numel(s), d = s.d[s.ndim - 1], seq = s.d[s.ndim - 2], half = d / 2;
    double *y = alloc_result(n);
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        double pos = (double)attrs->position_offset + (double)(r % seq);
        for (int64_t i = 0; i < half; i++) {
            double ang = pos * pow((double)attrs->theta, -2.0 * (double)i / (double)d);
            int64_t j0 = attrs->interleaved ? 2 * i : i;
            int64_t j1 = attrs->interleaved ? 2 * i + 1 : i + half;
            double x0 = x[r * d + j0], x1 = x[r * d + j1];
            y[r * d + j0] = x0 * cos(ang) - x1 * sin(ang);
            y[r * d + j1] = x1 * cos(ang) + x0 * sin(ang);
        }
    }
    return y;
}

/* ---- matmul, cat, attention ---- */

bp_ref_shape bp_ref_matmul_shape(bp_ref_shape sa, bp_ref_shape sb, int ta, int tb) {
    bp_ref_shape o = {.ndim = sa.ndim > sb.ndim ? sa.ndim : sb.ndim};
    for (int d = 0; d < o.ndim - 2; d++) {
        int da = d - (o.ndim - sa.ndim), db = d - (o.ndim - sb.ndim);
        int64_t na = da >= 0 ? sa.d[da] : 1, nb = db >= 0 ? sb.d[db] : 1;
        o.d[d] = na == 1 ? nb : na;
    }
    o.d[o.ndim - 2] = sa.d[sa.ndim - (ta ? 1 : 2)];
    o.d[o.ndim - 1] = sb.d[sb.ndim - (tb ? 2 : 1)];
    return o;
}

/* Offset of the matrix of batch item t of the output batch dims (nb of them) in an
 * operand of shape s whose matrices have `mat` elements, broadcasting. */
static int64_t batch_offset(bp_ref_shape s, const int64_t *out_batch, int nb, int64_t t,
                            int64_t mat) {
    int64_t off = 0, mul = mat;
    for (int d = nb - 1; d >= 0; d--) {
        int64_t i = t % out_batch[d];
        t /= out_batch[d];
        int ds = d - (nb - (s.ndim - 2));
        if (ds >= 0) {
            if (s.d[ds] != 1)
                off += i * mul;
            mul *= s.d[ds];
        }
    }
    return off;
}

double *bp_ref_matmul(const double *a, bp_ref_shape sa, const double *b, bp_ref_shape sb,
                      int ta, int tb) {
    bp_ref_shape so = bp_ref_matmul_shape(sa, sb, ta, tb);
    int nb = so.ndim - 2;
    int64_t m = so.d[nb], n = so.d[nb + 1], k = sa.d[sa.ndim - (ta ? 2 : 1)];
    int64_t a_rows = sa.d[sa.ndim - 2], a_cols = sa.d[sa.ndim - 1];
    int64_t b_rows = sb.d[sb.ndim - 2], b_cols = sb.d[sb.ndim - 1];
    int64_t items = 1;
    for (int d = 0; d < nb; d++)
        items *= so.d[d];
    double *out = alloc_result(bp_ref_numel(so));
    for (int64_t t = 0; t < items; t++) {
        const double *at = a + batch_offset(sa, so.d, nb, t, a_rows * a_cols);
        const double *bt = b + batch_offset(sb, so.d, nb, t, b_rows * b_cols);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t p = 0; p < k; p++)
                    sum += (ta ? at[p * a_cols + i] : at[i * a_cols + p]) *
                           (tb ? bt[j * b_cols + p] : bt[p * b_cols + j]);
                out[t * m * n + i * n + j] = sum;
            }
    }
    return out;
}

bp_ref_shape bp_ref_cat_shape(const bp_ref_shape *shapes, int n, int dim) {
    bp_ref_shape o = shapes[0];
    int d = normalize_dim(dim, o.ndim);
    o.d[d] = 0;
    for (int i = 0; i < n; i++)
        o.d[d] += shapes[i].d[d];
    return o;
}

double *bp_ref_cat(const double *const *parts, const bp_ref_shape *shapes, int n, int dim) {
    bp_ref_shape so = bp_ref_cat_shape(shapes, n, dim);
    int d = normalize_dim(dim, so.ndim);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; k++)
        outer *= so.d[k];
    for (int k = d + 1; k < so.ndim; k++)
        inner *= so.d[k];
    double *out = alloc_result(bp_ref_numel(so));
    /* Output element (o, j, i): j picks the part and the row within it. */
    int64_t pos = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int p = 0; p < n; p++) {
            int64_t run = shapes[p].d[d] * inner;
            for (int64_t j = 0; j < run; j++)
                out[pos++] = parts[p][o * run + j];
        }
    return out;
}

bp_ref_view4 bp_ref_view4_contiguous(const double *v, int64_t h, int64_t s, int64_t d) {
    return (bp_ref_view4){v, {h * s * d, s * d, d, 1}};
}

static double at4(bp_ref_view4 t, int64_t b, int64_t h, int64_t s, int64_t x) {
    return t.v[b * t.st[0] + h * t.st[1] + s * t.st[2] + x * t.st[3]];
}

/* Score (i, j) of query head h (key head hk) before the masks. */
static double sdpa_score(const bp_sdpa_attrs *a, double scale, bp_ref_view4 q, bp_ref_view4 k,
                         int64_t b, int64_t h, int64_t hk, int64_t i, int64_t j, int64_t d,
                         const double *slopes) {
    double dot = 0;
    for (int64_t x = 0; x < d; x++)
        dot += at4(q, b, h, i, x) * at4(k, b, hk, j, x);
    double s = dot * scale;
    if (a->softcap > 0)
        s = a->softcap * tanh(s / a->softcap);
    if (slopes)
        s -= slopes[h] * (double)(i - j);
    return s;
}

double *bp_ref_sdpa(bp_ref_sdpa_dims n, const bp_sdpa_attrs *attrs, bp_ref_view4 q,
                    bp_ref_view4 k, bp_ref_view4 v, const double *slopes) {
    const bp_sdpa_attrs defaults = {0}, *a = attrs ? attrs : &defaults;
    double scale = a->scale != 0 ? a->scale : 1.0 / sqrt((double)n.d);
    double *out = alloc_result(n.b * n.h * n.sq * n.d);
    double *w = malloc((size_t)(n.sk + 1) * sizeof *w);
    bool *seen = malloc((size_t)(n.sk + 1) * sizeof *seen);
    for (int64_t b = 0; b < n.b; b++)
        for (int64_t h = 0; h < n.h; h++) {
            int64_t hk = h / (n.h / n.hkv);
            for (int64_t i = 0; i < n.sq; i++) {
                double mx = -INFINITY;
                for (int64_t j = 0; j < n.sk; j++) {
                    w[j] = sdpa_score(a, scale, q, k, b, h, hk, i, j, n.d, slopes);
                    seen[j] = !(a->causal && j > i) && !(a->window > 0 && j <= i - a->window);
                    if (seen[j] && w[j] > mx)
                        mx = w[j];
                }
                double sum = 0;
                for (int64_t j = 0; j < n.sk; j++) {
                    w[j] = seen[j] ? exp(w[j] - mx) : 0;
                    sum += w[j];
                }
                double *o = out + ((b * n.h + h) * n.sq + i) * n.d;
                for (int64_t x = 0; x < n.d && sum > 0; x++) {
                    double acc = 0;
                    for (int64_t j = 0; j < n.sk; j++)
                        acc += w[j] * at4(v, b, hk, j, x);
                    o[x] = acc / sum;
                }
            }
        }
    free(w);
    free(seen);
    return out;
}
