/* Float64 references of the built-in ops: op_reference.h. Written for clarity, not
 * speed: plain loops over row-major indices, every sum in double. The magnitudes follow
 * docs/ops.md "Numerics"; each op's comment says what it accumulates. */
#include "op_reference.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "tolerances.h"

/* n zeroed doubles (one element when n is 0, so it is never NULL-sized), so references
 * only write what is not 0. */
static double *alloc_values(int64_t n) {
    return calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

/* An exact result of n elements. */
static bp_ref_result alloc_exact(int64_t n) {
    return (bp_ref_result){alloc_values(n), NULL};
}

/* A rounded result of n elements, with magnitudes. */
static bp_ref_result alloc_result(int64_t n) {
    return (bp_ref_result){alloc_values(n), alloc_values(n)};
}

void bp_ref_free(bp_ref_result *r) {
    free(r->v);
    free(r->mag);
    *r = (bp_ref_result){0};
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
    /* one rounding of the exact value: a kernel converting f64 through f32 must round
     * to odd first (as the cuda and opencl kernels do), or a value just off a bf16 tie
     * lands on it and rounds the wrong way */
    case BP_DTYPE_BF16: return round_to_format(v, 7, -126, 3.3895313892515355e38);
    case BP_DTYPE_F64: return v;
    case BP_DTYPE_I8: return (double)(int8_t)trunc(v);
    case BP_DTYPE_U8: return (double)(uint8_t)trunc(v);
    case BP_DTYPE_I32: return (double)(int32_t)trunc(v);
    case BP_DTYPE_I64: return (double)(int64_t)trunc(v);
    case BP_DTYPE_BOOL: return v != 0;
    default: return NAN;
    }
}

/* Conversions are exact: the value rounded once to the destination dtype. */
bp_ref_result bp_ref_fill(int64_t n, double value, bp_dtype dtype) {
    bp_ref_result out = alloc_exact(n);
    for (int64_t i = 0; i < n; i++)
        out.v[i] = bp_ref_round(value, dtype);
    return out;
}

bp_ref_result bp_ref_copy(const double *src, bp_ref_shape src_shape, bp_ref_shape dst_shape,
                          bp_dtype dst_dtype) {
    int64_t n = bp_ref_numel(dst_shape);
    bp_ref_result out = alloc_exact(n);
    for (int64_t i = 0; i < n; i++)
        out.v[i] =
            bp_ref_round(src[bp_ref_broadcast_index(dst_shape, src_shape, i)], dst_dtype);
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

/* One f32 operation: |y| (div: 5 |y|, the 2.5 ulps OpenCL allows an f32 divide).
 * Integer results are exact. */
bp_ref_result bp_ref_binary(bp_ref_binary_op op, bp_dtype dtype, bp_ref_shape sa,
                            const double *a, bp_ref_shape sb, const double *b) {
    bp_ref_shape so = bp_ref_broadcast_shape((const bp_ref_shape[]){sa, sb}, 2);
    int64_t n = bp_ref_numel(so);
    bool exact = is_integer(dtype);
    bp_ref_result out = exact ? alloc_exact(n) : alloc_result(n);
    for (int64_t i = 0; i < n; i++) {
        double y = apply_binary(op, a[bp_ref_broadcast_index(so, sa, i)],
                                b[bp_ref_broadcast_index(so, sb, i)]);
        out.v[i] = exact ? bp_ref_round(y, dtype) : y;
        if (!exact)
            out.mag[i] = (op == BP_REF_DIV ? 5 : 1) * fabs(y);
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

/* The magnitude of one element of a unary op: the f32 function's few ulps of |y| plus
 * its conditioning where the kernel's f32 steps feed it a rounded argument:
 *   scale: alpha rounded to f32 and the product, 2 |y|;
 *   exp, tanh: 8 ulps of |y|; silu x / (1 + exp(-x)): that plus the sum and divide;
 *   gelu (erf form, 0.5 x erfc(-x / sqrt 2)): erfc's 20 ulps, plus x^2 |y| for x < 0,
 *     where erfc(t)'s relative condition 2 t^2 meets the rounding of t = -x / sqrt 2;
 *   gelu (tanh form, 0.5 x (1 + tanh(z))): 1 + tanh cancels for z < 0, so tanh's error
 *     counts absolutely, 0.5 |x| 8 ulps |t|, plus the rounding of z (4 |z| units)
 *     through tanh' = 1 - t^2. */
static double unary_mag(bp_ref_unary_op op, double x, double y) {
    switch (op) {
    case BP_REF_EXP:
    case BP_REF_TANH: return BP_EPS_TRANSCENDENTAL * fabs(y);
    case BP_REF_SILU: return (BP_EPS_TRANSCENDENTAL + 4) * fabs(y);
    case BP_REF_GELU: return (BP_EPS_ERFC + 4 + (x < 0 ? x * x : 0)) * fabs(y);
    case BP_REF_GELU_TANH: {
        double z = sqrt(2 / M_PI) * (x + 0.044715 * x * x * x), t = tanh(z);
        return 4 * fabs(y) + 0.5 * fabs(x) * (BP_EPS_TRANSCENDENTAL * fabs(t) +
                                               4 * fabs(z) * (1 - t * t));
    }
    default: return 2 * fabs(y);
    }
}

bp_ref_result bp_ref_unary(bp_ref_unary_op op, const double *x, int64_t n, double alpha) {
    bp_ref_result out = alloc_result(n);
    for (int64_t i = 0; i < n; i++) {
        out.v[i] = bp_ref_unary_value(op, x[i], alpha);
        out.mag[i] = unary_mag(op, x[i], out.v[i]);
    }
    return out;
}

/* A selection: exact. */
bp_ref_result bp_ref_where(bp_ref_shape sc, const double *cond, bp_ref_shape sa,
                           const double *a, bp_ref_shape sb, const double *b) {
    bp_ref_shape so = bp_ref_broadcast_shape((const bp_ref_shape[]){sc, sa, sb}, 3);
    int64_t n = bp_ref_numel(so);
    bp_ref_result out = alloc_exact(n);
    for (int64_t i = 0; i < n; i++)
        out.v[i] = cond[bp_ref_broadcast_index(so, sc, i)] != 0
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

/* sum: M = sum |x| over K = len terms; mean: M = sum |x| / K; g = bp_growth(K) (which
 * counts the divide and the store). max selects an input and integer results are
 * exact. */
bp_ref_result bp_ref_reduce(bp_ref_reduce_op op, const double *x, bp_ref_shape s, int dim,
                            bp_dtype dtype) {
    int d = normalize_dim(dim, s.ndim);
    int64_t outer = 1, len = s.ndim ? s.d[d] : 1, inner = 1;
    for (int i = 0; i < d; i++)
        outer *= s.d[i];
    for (int i = d + 1; i < s.ndim; i++)
        inner *= s.d[i];
    bool exact = op == BP_REF_MAX || is_integer(dtype);
    bp_ref_result out = exact ? alloc_exact(outer * inner) : alloc_result(outer * inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = op == BP_REF_MAX ? -INFINITY : 0, mag = 0;
            for (int64_t j = 0; j < len; j++) {
                double v = x[(o * len + j) * inner + i];
                acc = op == BP_REF_MAX ? fmax(acc, v) : acc + v;
                mag += fabs(v);
            }
            mag *= bp_growth((double)len);
            if (op == BP_REF_MEAN) {
                acc /= (double)len; /* 0/0 = NaN for an empty dim */
                mag = len ? mag / (double)len : 0;
            }
            if (is_integer(dtype))
                acc = bp_ref_round(acc, dtype);
            out.v[o * inner + i] = acc;
            if (!exact)
                out.mag[o * inner + i] = mag;
        }
    return out;
}

/* The softmax of the logits s[0..n) where keep[j] (NULL: all) into y (0 where not kept;
 * all 0 when no kept logit is above -inf) and its magnitudes into mag,
 * in units of BP_EPS_ACC. err[j] (NULL: none): what the computation of s[j] may
 * already be off by. With d_j = s_j - max, e_j = exp(d_j) and S = sum e_j:
 *   a_j = err_j + 8 ulps of exp + 4 (|s_j| + |d_j|): the relative error of e_j, from
 *         its argument (the f32 roundings of s_j, of s_j - max, and of a scale or
 *         log2 e folded in) and from exp itself;
 *   S is a sum of K positive terms: relative error g(K) + sum e_j a_j / S;
 *   y_j = e_j / S: mag_j = y_j (a_j + that + 2). A NaN among the kept logits makes
 * the kept ones NaN. */
static void softmax_row(const double *s, const bool *keep, const double *err, int64_t n,
                        double *y, double *mag) {
    double m = -INFINITY, sum = 0, weighted = 0;
    int64_t kept = 0;
    bool nan = false;
    for (int64_t j = 0; j < n; j++)
        if (!keep || keep[j]) {
            m = fmax(m, s[j]);
            nan |= isnan(s[j]);
            kept++;
        }
    for (int64_t j = 0; j < n; j++) {
        bool in = (!keep || keep[j]) && (m != -INFINITY || nan);
        y[j] = in ? (nan ? NAN : exp(s[j] - m)) : 0;
        mag[j] = 0;
        if (in && y[j] != 0)
            mag[j] = (err ? err[j] : 0) + BP_EPS_TRANSCENDENTAL +
                     4 * (fabs(s[j]) + fabs(s[j] - m));
        sum += y[j];
        if (y[j] != 0)
            weighted += y[j] * mag[j];
    }
    double sum_err = bp_growth((double)kept) + weighted / sum;
    for (int64_t j = 0; j < n; j++)
        if (y[j] != 0) { /* not masked, not -inf, and the row not all -inf */
            y[j] /= sum;
            mag[j] = y[j] * (mag[j] + sum_err + 2);
        }
}

bp_ref_result bp_ref_softmax(const double *x, bp_ref_shape s, float scale, int causal) {
    int64_t n = bp_ref_numel(s), len = s.ndim ? s.d[s.ndim - 1] : 1;
    int64_t sq = s.ndim >= 2 ? s.d[s.ndim - 2] : 1, rows = len ? n / len : 0;
    bp_ref_result out = alloc_result(n);
    double *logits = alloc_values(len);
    bool *keep = calloc((size_t)len + 1, sizeof *keep);
    for (int64_t r = 0; r < rows; r++) {
        int64_t kept = causal && r % sq + 1 < len ? r % sq + 1 : len;
        for (int64_t j = 0; j < len; j++) {
            logits[j] = x[r * len + j] * (double)scale;
            keep[j] = j < kept;
        }
        softmax_row(logits, keep, NULL, len, out.v + r * len, out.mag + r * len);
    }
    free(logits);
    free(keep);
    return out;
}

/* rmsnorm (centre = false) or layernorm over rows of length d. The row's sum of
 * squares accumulates d nonnegative terms (relative error g(d)), the square root and
 * reciprocal add a few ulps: rstd is off by (g(d) + 16) / 2 relative, and y_j by
 * (g(d) + 16) |y_j| with the products by x and w. layernorm's mean has M = sum |x| / d
 * (g(d)), which moves every x_j - mean, scaled by rstd |w_j|; the bias adds 2 |y|. */
static bp_ref_result norm(bool centre, const double *x, int64_t n, int64_t d, const double *w,
                          const double *b, float eps) {
    bp_ref_result y = alloc_result(n);
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        const double *xr = x + r * d;
        double mean = 0, mean_mag = 0, acc = 0;
        if (centre) {
            for (int64_t j = 0; j < d; j++) {
                mean += xr[j];
                mean_mag += fabs(xr[j]);
            }
            mean /= (double)d;
            mean_mag *= bp_growth((double)d) / (double)d;
        }
        for (int64_t j = 0; j < d; j++)
            acc += (xr[j] - mean) * (xr[j] - mean);
        double rstd = 1 / sqrt(acc / (double)d + (double)eps);
        for (int64_t j = 0; j < d; j++) {
            double wj = w ? w[j] : 1, bj = b ? b[j] : 0;
            double scaled = (xr[j] - mean) * rstd * wj;
            y.v[r * d + j] = scaled + bj;
            y.mag[r * d + j] = fabs(scaled) * (bp_growth((double)d) + 16) +
                               rstd * fabs(wj) * mean_mag +
                               2 * fabs(scaled + bj);
        }
    }
    return y;
}

bp_ref_result bp_ref_rmsnorm(const double *x, int64_t n, int64_t d, const double *w, float eps) {
    return norm(false, x, n, d, w, NULL, eps);
}

bp_ref_result bp_ref_layernorm(const double *x, int64_t n, int64_t d, const double *w,
                               const double *b, float eps) {
    return norm(true, x, n, d, w, b, eps);
}

/* y0 = x0 cos - x1 sin, y1 = x1 cos + x0 sin: angles are taken in double by every
 * backend (f32 would lose them at large positions), the f32 sin, cos of the reduced
 * angle and the products and sum cost a few ulps of |x0| + |x1|: 16 (|x0| + |x1|). */
bp_ref_result bp_ref_rope(const double *x, bp_ref_shape s, const bp_rope_attrs *attrs) {
    int64_t n = bp_ref_numel(s), d = s.d[s.ndim - 1], seq = s.d[s.ndim - 2], half = d / 2;
    bp_ref_result y = alloc_result(n);
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        double pos = (double)attrs->position_offset + (double)(r % seq);
        for (int64_t i = 0; i < half; i++) {
            double ang = pos * pow((double)attrs->theta, -2.0 * (double)i / (double)d);
            int64_t j0 = attrs->interleaved ? 2 * i : i;
            int64_t j1 = attrs->interleaved ? 2 * i + 1 : i + half;
            double x0 = x[r * d + j0], x1 = x[r * d + j1];
            y.v[r * d + j0] = x0 * cos(ang) - x1 * sin(ang);
            y.v[r * d + j1] = x1 * cos(ang) + x0 * sin(ang);
            y.mag[r * d + j0] = y.mag[r * d + j1] = 16 * (fabs(x0) + fabs(x1));
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

/* M = sum_k |a_ik b_kj| over K products, g = bp_growth(K) (f32 products of f32, f16 or
 * bf16 inputs are exact or one rounding, within the growth's +2). */
bp_ref_result bp_ref_matmul(const double *a, bp_ref_shape sa, const double *b, bp_ref_shape sb,
                            int ta, int tb) {
    bp_ref_shape so = bp_ref_matmul_shape(sa, sb, ta, tb);
    int nb = so.ndim - 2;
    int64_t m = so.d[nb], n = so.d[nb + 1], k = sa.d[sa.ndim - (ta ? 2 : 1)];
    int64_t a_rows = sa.d[sa.ndim - 2], a_cols = sa.d[sa.ndim - 1];
    int64_t b_rows = sb.d[sb.ndim - 2], b_cols = sb.d[sb.ndim - 1];
    int64_t items = 1;
    for (int d = 0; d < nb; d++)
        items *= so.d[d];
    bp_ref_result out = alloc_result(bp_ref_numel(so));
    for (int64_t t = 0; t < items; t++) {
        const double *at = a + batch_offset(sa, so.d, nb, t, a_rows * a_cols);
        const double *bt = b + batch_offset(sb, so.d, nb, t, b_rows * b_cols);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    double term = (ta ? at[p * a_cols + i] : at[i * a_cols + p]) *
                                  (tb ? bt[j * b_cols + p] : bt[p * b_cols + j]);
                    sum += term;
                    mag += fabs(term);
                }
                out.v[t * m * n + i * n + j] = sum;
                out.mag[t * m * n + i * n + j] = mag * bp_growth((double)k);
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

/* A rearrangement: exact. */
bp_ref_result bp_ref_cat(const double *const *parts, const bp_ref_shape *shapes, int n,
                         int dim) {
    bp_ref_shape so = bp_ref_cat_shape(shapes, n, dim);
    int d = normalize_dim(dim, so.ndim);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; k++)
        outer *= so.d[k];
    for (int k = d + 1; k < so.ndim; k++)
        inner *= so.d[k];
    bp_ref_result out = alloc_exact(bp_ref_numel(so));
    /* Output element (o, j, i): j picks the part and the row within it. */
    int64_t pos = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int p = 0; p < n; p++) {
            int64_t run = shapes[p].d[d] * inner;
            for (int64_t j = 0; j < run; j++)
                out.v[pos++] = parts[p][o * run + j];
        }
    return out;
}

bp_ref_view4 bp_ref_view4_contiguous(const double *v, int64_t h, int64_t s, int64_t d) {
    return (bp_ref_view4){v, {h * s * d, s * d, d, 1}};
}

static double at4(bp_ref_view4 t, int64_t b, int64_t h, int64_t s, int64_t x) {
    return t.v[b * t.st[0] + h * t.st[1] + s * t.st[2] + x * t.st[3]];
}

/* Score (i, j) of query head h (key head hk) before the masks, and in *err what the
 * kernel's f32 computation of it may be off by, in units of BP_EPS_ACC: the dot product
 * (M = sum |q_x k_x| over d products, g(d)) and the scaling, then the softcap's
 * tanh (8 ulps of the cap, as its derivative is at most 1, and the roundings of the
 * divide and product), then ALiBi's product and subtraction. */
static double sdpa_score(const bp_sdpa_attrs *a, double scale, bp_ref_view4 q, bp_ref_view4 k,
                         int64_t b, int64_t h, int64_t hk, int64_t i, int64_t j, int64_t d,
                         const double *slopes, double *err) {
    double dot = 0, mag = 0;
    for (int64_t x = 0; x < d; x++) {
        double term = at4(q, b, h, i, x) * at4(k, b, hk, j, x);
        dot += term;
        mag += fabs(term);
    }
    double s = dot * scale;
    *err = mag * scale * bp_growth((double)d) + fabs(s);
    if (a->softcap > 0) {
        *err += 2 * fabs(s);
        s = a->softcap * tanh(s / a->softcap);
        *err += BP_EPS_TRANSCENDENTAL * a->softcap;
    }
    if (slopes) {
        double bias = slopes[h] * (double)(i - j);
        s -= bias;
        *err += 2 * (fabs(bias) + fabs(s));
    }
    return s;
}

/* One query row: out_x = sum_j p_j v_jx with p the softmax of the seen scores (their
 * errors as softmax_row's err). P.V accumulates sk products: M_pv = sum_j p_j |v_jx|,
 * g(sk) + 2 (the sum, the online rescaling of flash kernels, the final divide);
 * each p_j brings its own relative error mag_j / p_j, and a P rounded to a half dtype
 * before the product (flash kernels) eps(dtype) M_pv. */
static void sdpa_row(const double *p, const double *p_mag, int64_t sk, bp_ref_view4 v,
                     int64_t b, int64_t hk, int64_t d, double p_round, double *o, double *o_mag) {
    for (int64_t x = 0; x < d; x++) {
        double acc = 0, m_pv = 0, m_p = 0;
        for (int64_t j = 0; j < sk; j++) {
            if (p[j] == 0)
                continue;
            double vj = at4(v, b, hk, j, x);
            acc += p[j] * vj;
            m_pv += fabs(p[j] * vj);
            m_p += p_mag[j] * fabs(vj);
        }
        o[x] = acc;
        o_mag[x] = m_pv * (bp_growth((double)sk) + 2 + p_round) + m_p;
    }
}

bp_ref_result bp_ref_sdpa(bp_ref_sdpa_dims n, const bp_sdpa_attrs *attrs, bp_ref_view4 q,
                          bp_ref_view4 k, bp_ref_view4 v, const double *slopes, bp_dtype dtype) {
    const bp_sdpa_attrs defaults = {0}, *a = attrs ? attrs : &defaults;
    double scale = a->scale != 0 ? a->scale : 1.0 / sqrt((double)n.d);
    double p_round = dtype == BP_DTYPE_F16 || dtype == BP_DTYPE_BF16
                         ? bp_eps_out(dtype) / BP_EPS_ACC
                         : 0;
    bp_ref_result out = alloc_result(n.b * n.h * n.sq * n.d);
    double *s = alloc_values(n.sk), *err = alloc_values(n.sk);
    double *p = alloc_values(n.sk), *p_mag = alloc_values(n.sk);
    bool *seen = calloc((size_t)n.sk + 1, sizeof *seen);
    for (int64_t b = 0; b < n.b; b++)
        for (int64_t h = 0; h < n.h; h++) {
            int64_t hk = h / (n.h / n.hkv);
            for (int64_t i = 0; i < n.sq; i++) {
                for (int64_t j = 0; j < n.sk; j++) {
                    s[j] = sdpa_score(a, scale, q, k, b, h, hk, i, j, n.d, slopes, &err[j]);
                    seen[j] = !(a->causal && j > i) && !(a->window > 0 && j <= i - a->window);
                }
                softmax_row(s, seen, err, n.sk, p, p_mag);
                int64_t at = ((b * n.h + h) * n.sq + i) * n.d;
                sdpa_row(p, p_mag, n.sk, v, b, hk, n.d, p_round, out.v + at, out.mag + at);
            }
        }
    free(s);
    free(err);
    free(p);
    free(p_mag);
    free(seen);
    return out;
}
