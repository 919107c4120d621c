/* The reduce family: sum, mean, max over one dim (f32 f16 bf16; sum and max also i32
 * i64) and softmax over the last dim (f32 f16 bf16).
 *
 * Each output element (softmax: each output row) has a row of the input along the
 * reduced dim (arm_common.h's ak_rows). A float row is read in tiles of AK_TILE
 * elements, staged as f32 (a strided row element by element), and reduced by the
 * vector row functions of the picked variant, which keep several partial sums; the
 * tiles' results are then added up. Contiguous integer rows go to the integer table
 * of the variant (vec_int_neon.c, vec_int_sve.c). Integer sums wrap in the dtype, like
 * the elementwise integer ops. */
#include <math.h>

#include "arm_common.h"

enum { GRAIN = 32768 };

typedef enum red_op { RED_SUM, RED_MEAN, RED_MAX } red_op;

typedef struct red_job {
    const bp_kernel_call *call;
    const arm_f32_ops *ops;
    const arm_int_ops *ints; /* integer sum, max */
    red_op op;
    ak_rows rows;
    int64_t sq; /* softmax: size of dim -2, for the causal row index */
} red_job;

static void launch(const arm_exec *ex, red_job *job, arm_range_fn range) {
    int64_t grain = job->rows.len > 0 ? GRAIN / job->rows.len : GRAIN;
    ak_parallel(ex, job->rows.count, grain, range, job);
}

/* The larger of a and b, a NaN in either winning (the selection is exact). */
static inline float max_nan(float a, float b) {
    if (a != a)
        return a;
    return b > a || b != b ? b : a;
}

/* ---- float sum, mean, max ---- */

static float reduce_row(const red_job *job, bp_dtype dt, const char *x) {
    const arm_f32_ops *ops = job->ops;
    const int64_t len = job->rows.len, step = job->rows.in_step;
    const size_t es = bp_plugin_dtype_size(dt);
    float tile[AK_TILE];
    float acc = job->op == RED_MAX ? -INFINITY : 0.0f;
    for (int64_t j = 0; j < len; j += AK_TILE) {
        int64_t m = len - j < AK_TILE ? len - j : AK_TILE;
        const float *v = ak_stage_in(ops, tile, x + j * step * (int64_t)es, dt, step, m);
        acc = job->op == RED_MAX ? max_nan(acc, ops->max(v, m)) : acc + ops->sum(v, m);
    }
    return job->op == RED_MEAN ? acc / (float)len : acc; /* mean of nothing: NaN */
}

/* Outputs whose rows start at adjacent input elements (a reduction over an outer dim
 * of a contiguous tensor): the rows are added up (or maxed) as vectors, row k of all
 * m outputs at once, in blocks of COLUMN_BLOCK rows whose sums are then added, so
 * no output adds more than COLUMN_BLOCK + len / COLUMN_BLOCK terms one by one. */
enum { COLUMN_BLOCK = 64 };

static void reduce_columns(const red_job *job, bp_dtype dt, const ak_run *r) {
    const arm_f32_ops *ops = job->ops;
    const int64_t len = job->rows.len, m = r->n;
    const int64_t step = job->rows.in_step * (int64_t)bp_plugin_dtype_size(dt);
    float total[AK_TILE], block[AK_TILE], tile[AK_TILE];
    memcpy(total, ak_stage_in(ops, tile, r->ptr[1], dt, 1, m), (size_t)m * sizeof *total);
    if (job->op == RED_MAX) {
        for (int64_t k = 1; k < len; k++)
            ops->max2(total, total, ak_stage_in(ops, tile, r->ptr[1] + k * step, dt, 1, m), m);
    } else {
        for (int64_t k = 1; k < len; k += COLUMN_BLOCK) {
            int64_t stop = k + COLUMN_BLOCK < len ? k + COLUMN_BLOCK : len;
            memcpy(block, ak_stage_in(ops, tile, r->ptr[1] + k * step, dt, 1, m),
                   (size_t)m * sizeof *block);
            for (int64_t j = k + 1; j < stop; j++)
                ops->add(block, block, ak_stage_in(ops, tile, r->ptr[1] + j * step, dt, 1, m), m);
            ops->add(total, total, block, m);
        }
        if (job->op == RED_MEAN)
            for (int64_t j = 0; j < m; j++)
                total[j] /= (float)len;
    }
    ak_stage_out(ops, r->ptr[0], dt, r->step[0], total, m);
}

static void float_range(void *ctx, int64_t begin, int64_t end) {
    const red_job *job = ctx;
    const bp_dtype dt = job->call->outputs[0]->dtype;
    const int64_t es = (int64_t)bp_plugin_dtype_size(dt);
    const bp_tensor_desc *in = &job->rows.in;
    ak_walk w;
    ak_walk_init(&w, &job->rows.out, 1, &in);
    ak_walk_seek(&w, begin);
    for (int64_t i = begin; i < end;) {
        ak_run r;
        ak_walk_next(&w, end - i < AK_TILE ? end - i : AK_TILE, &r);
        if (r.step[1] == 1 && job->rows.in_step != 1 && job->rows.len > 0)
            reduce_columns(job, dt, &r);
        else
            for (int64_t k = 0; k < r.n; k++)
                ak_put_f32(r.ptr[0], dt, k * r.step[0],
                           reduce_row(job, dt, r.ptr[1] + k * r.step[1] * es));
        i += r.n;
    }
}

static void float_kernel(const bp_kernel_call *call, const arm_exec *ex, red_op op,
                         const arm_f32_ops *ops) {
    red_job job = {.call = call, .ops = ops, .op = op};
    ak_rows_init(&job.rows, call->inputs[0], call->outputs[0],
                 ((const bp_reduce_attrs *)call->attrs)->dim);
    launch(ex, &job, float_range);
}

/* ---- integer sum, max (max never sees an empty row: the op rejects it) ---- */

/* row_<dt>: the row's sum or max; a contiguous row through the integer table. */
#define INT_ROW(dt, B, T, U)                                                               \
    static T row_##dt(const red_job *job, const char *p) {                                 \
        const int64_t n = job->rows.len, s = job->rows.in_step;                            \
        const T *x = (const T *)p;                                                         \
        if (s == 1 && job->op == RED_SUM)                                                  \
            return (T)job->ints->sum##B((const U *)x, n);                                  \
        if (s == 1)                                                                        \
            return job->ints->max##B(x, n);                                                \
        if (job->op == RED_SUM) {                                                          \
            U sum = 0;                                                                     \
            for (int64_t i = 0; i < n; i++)                                                \
                sum += (U)x[i * s];                                                        \
            return (T)sum;                                                                 \
        }                                                                                  \
        T m = x[0];                                                                        \
        for (int64_t i = 1; i < n; i++)                                                    \
            m = x[i * s] > m ? x[i * s] : m;                                               \
        return m;                                                                          \
    }
INT_ROW(i32, 32, int32_t, uint32_t)
INT_ROW(i64, 64, int64_t, uint64_t)

static void int_range(void *ctx, int64_t begin, int64_t end) {
    const red_job *job = ctx;
    bool wide = job->call->outputs[0]->dtype == BP_DTYPE_I64;
    ak_row_iter it;
    ak_row_iter_init(&it, &job->rows, begin);
    for (int64_t r = begin; r < end; r++, ak_row_iter_next(&it)) {
        if (wide)
            *(int64_t *)it.out = row_i64(job, it.in);
        else
            *(int32_t *)it.out = row_i32(job, it.in);
    }
}

static void int_kernel(const bp_kernel_call *call, const arm_exec *ex, red_op op) {
    red_job job = {.call = call, .ints = ak_int_ops(ex->features), .op = op};
    ak_rows_init(&job.rows, call->inputs[0], call->outputs[0],
                 ((const bp_reduce_attrs *)call->attrs)->dim);
    launch(ex, &job, int_range);
}

/* ---- softmax ----
 * Three passes over the kept part of the row: the max of x * scale, the sum of
 * exp(x * scale - max), and the output exp(...) / sum. A row that fits one tile keeps
 * its exponentials from the second pass; a longer one computes them again. With
 * `causal`, row i of each [Sq, Sk] matrix keeps keys j <= i; the rest become 0, and
 * so does a row whose kept logits are all -inf. */

static void softmax_row(const red_job *job, bp_dtype dt, int64_t kept, const char *x,
                        char *y) {
    const arm_f32_ops *ops = job->ops;
    const float scale = ((const bp_softmax_attrs *)job->call->attrs)->scale;
    const int64_t n = job->rows.len, is = job->rows.in_step, os = job->rows.out_step;
    const int64_t es = (int64_t)bp_plugin_dtype_size(dt);
    float tin[AK_TILE], tout[AK_TILE];
    float m = -INFINITY;
    for (int64_t j = 0; j < kept; j += AK_TILE) {
        int64_t c = kept - j < AK_TILE ? kept - j : AK_TILE;
        const float *v = ak_stage_in(ops, tin, x + j * is * es, dt, is, c);
        m = max_nan(m, ops->max_scaled(v, scale, c));
    }
    if (m == -INFINITY)
        kept = 0;
    float sum = 0.0f;
    for (int64_t j = 0; j < kept; j += AK_TILE) {
        int64_t c = kept - j < AK_TILE ? kept - j : AK_TILE;
        const float *v = ak_stage_in(ops, tin, x + j * is * es, dt, is, c);
        sum += ops->exp_shift(tout, v, scale, m, c);
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < kept; j += AK_TILE) {
        int64_t c = kept - j < AK_TILE ? kept - j : AK_TILE;
        float *o = ak_out_buf(tin, y + j * os * es, dt, os);
        if (kept <= AK_TILE) {
            ops->scale(o, tout, inv, c);
        } else {
            const float *v = ak_stage_in(ops, tout, x + j * is * es, dt, is, c);
            ops->exp_shift(o, v, scale, m, c);
            ops->scale(o, o, inv, c);
        }
        ak_stage_out(ops, y + j * os * es, dt, os, o, c);
    }
    if (kept < n) {
        memset(tout, 0, sizeof tout);
        for (int64_t j = kept; j < n; j += AK_TILE) {
            int64_t c = n - j < AK_TILE ? n - j : AK_TILE;
            ak_stage_out(ops, y + j * os * es, dt, os, tout, c);
        }
    }
}

static void softmax_range(void *ctx, int64_t begin, int64_t end) {
    const red_job *job = ctx;
    const bp_softmax_attrs *attrs = job->call->attrs;
    bp_dtype dt = job->call->outputs[0]->dtype;
    ak_row_iter it;
    ak_row_iter_init(&it, &job->rows, begin);
    for (int64_t r = begin; r < end; r++, ak_row_iter_next(&it)) {
        int64_t kept = job->rows.len;
        if (attrs->causal && r % job->sq + 1 < kept)
            kept = r % job->sq + 1;
        softmax_row(job, dt, kept, it.in, it.out);
    }
}

static void softmax_kernel(const bp_kernel_call *call, const arm_exec *ex,
                           const arm_f32_ops *ops) {
    const bp_tensor_desc *in = call->inputs[0];
    red_job job = {.call = call, .ops = ops, .sq = in->ndim >= 2 ? in->shape[in->ndim - 2] : 1};
    ak_rows_init(&job.rows, in, call->outputs[0], in->ndim > 0 ? in->ndim - 1 : 0);
    launch(ex, &job, softmax_range);
}

/* ---- the family ---- */

#define RED_BODIES(name, OP)                                                               \
    static void name##_neon(const bp_kernel_call *call, const arm_exec *ex) {              \
        float_kernel(call, ex, OP, &arm_f32_neon);                                         \
    }                                                                                      \
    static void name##_sve(const bp_kernel_call *call, const arm_exec *ex) {               \
        float_kernel(call, ex, OP, &arm_f32_sve);                                          \
    }
RED_BODIES(sum, RED_SUM)
RED_BODIES(mean, RED_MEAN)
RED_BODIES(max, RED_MAX)

static void softmax_neon(const bp_kernel_call *call, const arm_exec *ex) {
    softmax_kernel(call, ex, &arm_f32_neon);
}

static void softmax_sve(const bp_kernel_call *call, const arm_exec *ex) {
    softmax_kernel(call, ex, &arm_f32_sve);
}

static void sum_int(const bp_kernel_call *call, const arm_exec *ex) {
    int_kernel(call, ex, RED_SUM);
}

static void max_int(const bp_kernel_call *call, const arm_exec *ex) {
    int_kernel(call, ex, RED_MAX);
}

size_t arm_kernels_reduce(const arm_features *f, arm_kernel *out, size_t cap) {
    size_t n = 0;
    ak_add_floats(out, cap, &n, f, "sum", sum_neon, sum_sve);
    ak_add_floats(out, cap, &n, f, "mean", mean_neon, mean_sve);
    ak_add_floats(out, cap, &n, f, "max", max_neon, max_sve);
    ak_add_floats(out, cap, &n, f, "softmax", softmax_neon, softmax_sve);
    static const bp_dtype ints[] = {BP_DTYPE_I32, BP_DTYPE_I64};
    for (size_t d = 0; d < 2; d++) {
        ak_add(out, cap, &n, "sum", ints[d], sum_int, ak_int_ops(f)->variant);
        ak_add(out, cap, &n, "max", ints[d], max_int, ak_int_ops(f)->variant);
    }
    return n;
}
