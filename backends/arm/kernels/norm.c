/* The norm family: rmsnorm, layernorm and rope over rows of the last dim (f32 f16
 * bf16), in f32. Rows split over the cluster; each row is read in tiles staged as f32
 * (arm_common.h) and computed by the vector row functions of the picked variant:
 * the sums (of squares, of squared deviations for layernorm's two-pass variance, which
 * does not cancel like E[x^2] - E[x]^2), the affine y = (x - c) k w + b, and rope's
 * rotation of pairs. rope's angles are taken in double, as the cpu kernel does:
 * position * frequency reaches thousands of radians, where f32 would lose the bits
 * that cos and sin depend on (rope_angles below). */
#include <math.h>

#include "arm_common.h"

enum { GRAIN = 32768 };

typedef struct norm_job {
    const bp_kernel_call *call;
    const arm_f32_ops *ops;
    ak_rows rows;
    int64_t seq; /* size of dim -2 (rope's positions) */
} norm_job;

typedef enum norm_op { NORM_RMS, NORM_LAYER } norm_op;

static void launch(const bp_kernel_call *call, const arm_exec *ex, const arm_f32_ops *ops,
                   arm_range_fn range) {
    const bp_tensor_desc *in = call->inputs[0];
    int last = in->ndim - 1; /* the op guarantees at least one dim */
    norm_job job = {.call = call, .ops = ops, .seq = last > 0 ? in->shape[last - 1] : 1};
    ak_rows_init(&job.rows, in, call->outputs[0], last);
    int64_t grain = job.rows.len > 0 ? GRAIN / job.rows.len : GRAIN;
    ak_parallel(ex, job.rows.count, grain, range, &job);
}

/* Per-feature input k (weight 1, bias 2), NULL when the call has none. */
static const bp_tensor_desc *param(const bp_kernel_call *call, int k) {
    return call->n_inputs > k ? call->inputs[k] : NULL;
}

/* Elements [j, j + c) of a [D] parameter as f32, or NULL without one. */
static const float *param_tile(const arm_f32_ops *ops, float *tile, const bp_tensor_desc *p,
                               int64_t j, int64_t c) {
    if (!p)
        return NULL;
    const char *at =
        (const char *)p->data + j * p->strides[0] * (int64_t)bp_plugin_dtype_size(p->dtype);
    return ak_stage_in(ops, tile, at, p->dtype, p->strides[0], c);
}

/* Sum over the row of x, or with `squares` of (x - c)^2. */
static float row_sum(const norm_job *job, bp_dtype dt, const char *x, float c, bool squares) {
    const int64_t n = job->rows.len, is = job->rows.in_step, es = (int64_t)bp_plugin_dtype_size(dt);
    float tile[AK_TILE], s = 0.0f;
    for (int64_t j = 0; j < n; j += AK_TILE) {
        int64_t m = n - j < AK_TILE ? n - j : AK_TILE;
        const float *v = ak_stage_in(job->ops, tile, x + j * is * es, dt, is, m);
        s += squares ? job->ops->sumsq(v, c, m) : job->ops->sum(v, m);
    }
    return s;
}

static void norm_range(void *ctx, int64_t begin, int64_t end, norm_op op) {
    const norm_job *job = ctx;
    const arm_f32_ops *ops = job->ops;
    const bp_kernel_call *call = job->call;
    const bp_dtype dt = call->outputs[0]->dtype;
    const bp_tensor_desc *w = param(call, 1), *b = op == NORM_LAYER ? param(call, 2) : NULL;
    const float eps = ((const bp_norm_attrs *)call->attrs)->eps;
    const int64_t n = job->rows.len, is = job->rows.in_step, os = job->rows.out_step;
    const int64_t es = (int64_t)bp_plugin_dtype_size(dt);
    float tx[AK_TILE], tw[AK_TILE], tb[AK_TILE], ty[AK_TILE];
    ak_row_iter it;
    ak_row_iter_init(&it, &job->rows, begin);
    for (int64_t r = begin; r < end; r++, ak_row_iter_next(&it)) {
        float mean = op == NORM_LAYER ? row_sum(job, dt, it.in, 0.0f, false) / (float)n : 0.0f;
        float rstd = 1.0f / sqrtf(row_sum(job, dt, it.in, mean, true) / (float)n + eps);
        for (int64_t j = 0; j < n; j += AK_TILE) {
            int64_t m = n - j < AK_TILE ? n - j : AK_TILE;
            const float *x = ak_stage_in(ops, tx, it.in + j * is * es, dt, is, m);
            float *y = ak_out_buf(ty, it.out + j * os * es, dt, os);
            const float *wt = param_tile(ops, tw, w, j, m), *bt = param_tile(ops, tb, b, j, m);
            ops->affine(y, x, mean, rstd, wt, bt, m);
            ak_stage_out(ops, it.out + j * os * es, dt, os, y, m);
        }
    }
}

static void rmsnorm_range(void *ctx, int64_t begin, int64_t end) {
    norm_range(ctx, begin, end, NORM_RMS);
}

static void layernorm_range(void *ctx, int64_t begin, int64_t end) {
    norm_range(ctx, begin, end, NORM_LAYER);
}

/* rope's angles: cos and sin of pair i's angle position * freq_i, freq_i = theta^(-2i/D).
 * For rows of up to 2 ROPE_CACHED elements they are kept in double and, from one row
 * to the next position, advanced by the angle-addition formula (four products a pair
 * instead of a cos and a sin); they are computed afresh at a chunk's first row, at
 * each new [S, D] matrix and every ROPE_SPAN positions, so the rounding drift stays
 * near 1e-14, far below f32's precision. */
enum { ROPE_CACHED = 512, ROPE_SPAN = 64 };

typedef struct rope_angles {
    int64_t half, since;
    double ratio;
    bool cached;
    double c[ROPE_CACHED], s[ROPE_CACHED], step_c[ROPE_CACHED], step_s[ROPE_CACHED];
} rope_angles;

static void angles_init(rope_angles *g, double ratio, int64_t half) {
    g->half = half;
    g->since = 0;
    g->ratio = ratio;
    g->cached = half <= ROPE_CACHED;
    double freq = 1.0;
    for (int64_t i = 0; g->cached && i < half; i++, freq *= ratio) {
        g->step_c[i] = cos(freq);
        g->step_s[i] = sin(freq);
    }
}

/* Moves the angles to `pos`: one position after the previous call's, unless `fresh`. */
static void angles_at(rope_angles *g, double pos, bool fresh) {
    if (!g->cached)
        return;
    if (fresh || ++g->since >= ROPE_SPAN) {
        double freq = 1.0;
        for (int64_t i = 0; i < g->half; i++, freq *= g->ratio) {
            g->c[i] = cos(pos * freq);
            g->s[i] = sin(pos * freq);
        }
        g->since = 0;
        return;
    }
    for (int64_t i = 0; i < g->half; i++) {
        double c = g->c[i], s = g->s[i];
        g->c[i] = c * g->step_c[i] - s * g->step_s[i];
        g->s[i] = s * g->step_c[i] + c * g->step_s[i];
    }
}

/* tc, ts = cos, sin (f32) of pairs [i, i + m) at pos. */
static void angles_fill(const rope_angles *g, double pos, int64_t i, int64_t m, float *tc,
                        float *ts) {
    for (int64_t k = 0; k < m; k++) {
        if (g->cached) {
            tc[k] = (float)g->c[i + k];
            ts[k] = (float)g->s[i + k];
        } else {
            double angle = pos * pow(g->ratio, (double)(i + k));
            tc[k] = (float)cos(angle);
            ts[k] = (float)sin(angle);
        }
    }
}

/* Pair i of a row is (i, i + D/2), or (2i, 2i + 1) when interleaved, at position
 * position_offset + (row index within dim -2). */
static void rope_range(void *ctx, int64_t begin, int64_t end) {
    const norm_job *job = ctx;
    const arm_f32_ops *ops = job->ops;
    const bp_rope_attrs *a = job->call->attrs;
    const bp_dtype dt = job->call->outputs[0]->dtype;
    const int64_t n = job->rows.len, half = n / 2, es = (int64_t)bp_plugin_dtype_size(dt);
    const int64_t apart = a->interleaved ? 1 : half;   /* from a pair's first to second */
    const int64_t next = a->interleaved ? 2 : 1;        /* from a pair to the next */
    const int64_t is = job->rows.in_step * next, os = job->rows.out_step * next;
    const int64_t i1 = job->rows.in_step * apart * es, o1 = job->rows.out_step * apart * es;
    float t0[AK_TILE], t1[AK_TILE], tc[AK_TILE], ts[AK_TILE], u0[AK_TILE], u1[AK_TILE];
    rope_angles angles;
    angles_init(&angles, pow((double)a->theta, -2.0 / (double)n), half);
    ak_row_iter it;
    ak_row_iter_init(&it, &job->rows, begin);
    for (int64_t r = begin; r < end; r++, ak_row_iter_next(&it)) {
        const double pos = (double)a->position_offset + (double)(r % job->seq);
        angles_at(&angles, pos, r == begin || r % job->seq == 0);
        for (int64_t i = 0; i < half; i += AK_TILE) {
            int64_t m = half - i < AK_TILE ? half - i : AK_TILE;
            angles_fill(&angles, pos, i, m, tc, ts);
            const char *x0 = it.in + i * is * es;
            char *y0 = it.out + i * os * es;
            const float *v0 = ak_stage_in(ops, t0, x0, dt, is, m);
            const float *v1 = ak_stage_in(ops, t1, x0 + i1, dt, is, m);
            float *w0 = ak_out_buf(u0, y0, dt, os), *w1 = ak_out_buf(u1, y0 + o1, dt, os);
            ops->rotate(w0, w1, v0, v1, tc, ts, m);
            ak_stage_out(ops, y0, dt, os, w0, m);
            ak_stage_out(ops, y0 + o1, dt, os, w1, m);
        }
    }
}

/* ---- the family ---- */

#define NORM_BODIES(name)                                                                  \
    static void name##_neon(const bp_kernel_call *call, const arm_exec *ex) {              \
        launch(call, ex, &arm_f32_neon, name##_range);                                     \
    }                                                                                      \
    static void name##_sve(const bp_kernel_call *call, const arm_exec *ex) {               \
        launch(call, ex, &arm_f32_sve, name##_range);                                      \
    }
NORM_BODIES(rmsnorm)
NORM_BODIES(layernorm)
NORM_BODIES(rope)

size_t arm_kernels_norm(const arm_features *f, arm_kernel *out, size_t cap) {
    size_t n = 0;
    ak_add_floats(out, cap, &n, f, "rmsnorm", rmsnorm_neon, rmsnorm_sve);
    ak_add_floats(out, cap, &n, f, "layernorm", layernorm_neon, layernorm_sve);
    ak_add_floats(out, cap, &n, f, "rope", rope_neon, rope_sve);
    return n;
}
