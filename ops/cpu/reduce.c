/* Reference cpu kernels of sum, max, mean (over one dim) and softmax (over the last).
 *
 * Both walk "rows": the input with the reduced dim collapsed to size 1 gives, through
 * the strided iterator, the start of every row and the matching output element; the
 * row itself is then read with the reduced dim's stride. Float sums are pairwise in
 * f32: a plain running sum loses about n * eps, which at a million elements is more
 * than the tolerance, while pairwise loses about log2(n) * eps. */
#include <math.h>

#include "dtype_convert.h"
#include "ops_internal.h"
#include "strided.h"
#include "dtype_macros.h"

enum { GRAIN = 32768, PAIRWISE_BLOCK = 128 };

typedef struct row_job {
    const bp_kernel_call *call;
    bp_tensor_desc in, out; /* same ndim and shape, the row dim collapsed to 1 */
    int64_t len;            /* elements per row */
    int64_t in_stride, out_stride;
    int64_t sq;             /* softmax: size of dim -2, for the causal row index */
} row_job;

/* Sets up rows along `dim` of input 0. `out` is the output with the same dims as the
 * input, or one fewer when the reduction drops `dim`. A scalar is one row of one. */
static void row_job_init(row_job *job, const bp_kernel_call *call, int dim) {
    job->call = call;
    job->in = *call->inputs[0];
    job->out = *call->outputs[0];
    if (job->in.ndim == 0) {
        job->in.ndim = 1;
        job->in.shape[0] = 1;
        job->in.strides[0] = 0;
        dim = 0;
    }
    if (job->out.ndim < job->in.ndim) { /* keepdim off: put the dim back with size 1 */
        for (int d = job->out.ndim; d > dim; d--) {
            job->out.shape[d] = job->out.shape[d - 1];
            job->out.strides[d] = job->out.strides[d - 1];
        }
        job->out.ndim++;
        job->out.shape[dim] = 1;
        job->out.strides[dim] = 0;
    }
    job->len = job->in.shape[dim];
    job->in_stride = job->in.strides[dim];
    job->out_stride = job->out.strides[dim];
    job->in.shape[dim] = 1;
    job->out.shape[dim] = 1;
    job->sq = job->in.ndim >= 2 ? call->inputs[0]->shape[job->in.ndim - 2] : 1;
}

/* Positions `it` at row `row`: offset[0] is the output row's start, offset[1] the
 * input's. */
static void row_iter(bp_nd_iter *it, const row_job *job, int64_t row) {
    bp_nd_iter_init(it, &job->out, 1, (const bp_tensor_desc *const[]){&job->in}, row);
}

static void row_launch(row_job *job, void (*range)(void *, int64_t, int64_t)) {
    int64_t rows = 1;
    for (int d = 0; d < job->out.ndim; d++)
        rows *= job->out.shape[d];
    int64_t grain = job->len > 0 ? GRAIN / job->len : GRAIN;
    bp_parallel_for(rows, grain > 0 ? grain : 1, range, job);
}

/* ---- sum, mean, max ---- */

#define FLOAT_ROW_FNS(dt)                                                                   \
    static float sum_##dt(const T_##dt *p, int64_t stride, int64_t n) {                     \
        if (n > PAIRWISE_BLOCK) {                                                           \
            int64_t half = n / 2;                                                           \
            return sum_##dt(p, stride, half) + sum_##dt(p + half * stride, stride, n - half); \
        }                                                                                   \
        float s = 0.0f;                                                                     \
        for (int64_t k = 0; k < n; k++)                                                     \
            s += LD_##dt(p[k * stride]);                                                    \
        return s;                                                                           \
    }                                                                                       \
    static float mean_##dt(const T_##dt *p, int64_t stride, int64_t n) {                    \
        return sum_##dt(p, stride, n) / (float)n; /* 0/0: NaN for an empty row */           \
    }                                                                                       \
    /* NaN propagates: once m is NaN no comparison replaces it. */                          \
    static float max_##dt(const T_##dt *p, int64_t stride, int64_t n) {                     \
        float m = LD_##dt(p[0]);                                                            \
        for (int64_t k = 1; k < n && !isnan(m); k++) {                                      \
            float v = LD_##dt(p[k * stride]);                                               \
            if (v > m || isnan(v))                                                          \
                m = v;                                                                      \
        }                                                                                   \
        return m;                                                                           \
    }

/* Integer sums wrap around in the dtype, like the elementwise integer ops. */
#define INT_ROW_FNS(dt)                                                                     \
    static T_##dt sum_##dt(const T_##dt *p, int64_t stride, int64_t n) {                    \
        uint64_t s = 0;                                                                     \
        for (int64_t k = 0; k < n; k++)                                                     \
            s += (uint64_t)p[k * stride];                                                   \
        return (T_##dt)s;                                                                   \
    }                                                                                       \
    static T_##dt max_##dt(const T_##dt *p, int64_t stride, int64_t n) {                    \
        T_##dt m = p[0];                                                                    \
        for (int64_t k = 1; k < n; k++)                                                     \
            if (p[k * stride] > m)                                                          \
                m = p[k * stride];                                                          \
        return m;                                                                           \
    }

/* max never sees an empty row: the op rejects it. */
#define REDUCE_KERNEL(op, dt)                                                               \
    static void op##_##dt##_range(void *ctx, int64_t begin, int64_t end) {                  \
        const row_job *job = ctx;                                                           \
        const T_##dt *in = job->in.data;                                                    \
        T_##dt *out = job->out.data;                                                        \
        bp_nd_iter it;                                                                      \
        row_iter(&it, job, begin);                                                          \
        for (int64_t r = begin; r < end; r++, bp_nd_iter_next(&it))                         \
            out[it.offset[0]] = ST_##dt(op##_##dt(in + it.offset[1], job->in_stride, job->len)); \
    }                                                                                       \
    void bp_cpu_##op##_##dt(const bp_kernel_call *call) {                                   \
        row_job job;                                                                        \
        row_job_init(&job, call, ((const bp_reduce_attrs *)call->attrs)->dim);              \
        row_launch(&job, op##_##dt##_range);                                                \
    }

/* ---- softmax ---- */

/* Three passes over the row (max, sum of exponentials, output), all in f32; the max
 * is subtracted so that large logits do not overflow. Masked elements become 0. */
#define SOFTMAX_KERNEL(dt)                                                                  \
    static void softmax_##dt##_range(void *ctx, int64_t begin, int64_t end) {               \
        const row_job *job = ctx;                                                           \
        const bp_softmax_attrs *attrs = job->call->attrs;                                   \
        const float scale = attrs->scale;                                                   \
        const int64_t n = job->len, is = job->in_stride, os = job->out_stride;              \
        bp_nd_iter it;                                                                      \
        row_iter(&it, job, begin);                                                          \
        for (int64_t r = begin; r < end; r++, bp_nd_iter_next(&it)) {                       \
            const T_##dt *x = (const T_##dt *)job->in.data + it.offset[1];                  \
            T_##dt *y = (T_##dt *)job->out.data + it.offset[0];                             \
            int64_t kept = n;                                                               \
            if (attrs->causal && r % job->sq + 1 < n)                                       \
                kept = r % job->sq + 1;                                                     \
            float m = -INFINITY;                                                            \
            for (int64_t j = 0; j < kept; j++) {                                            \
                float v = LD_##dt(x[j * is]) * scale;                                       \
                if (v > m || isnan(v)) /* NaN in: NaN out */                                \
                    m = v;                                                                  \
            }                                                                               \
            if (m == -INFINITY) /* every kept logit is -inf: zeros, not NaN */              \
                kept = 0;                                                                   \
            float sum = 0.0f;                                                               \
            for (int64_t j = 0; j < kept; j++)                                              \
                sum += expf(LD_##dt(x[j * is]) * scale - m);                                \
            float inv = 1.0f / sum;                                                         \
            for (int64_t j = 0; j < kept; j++)                                              \
                y[j * os] = ST_##dt(expf(LD_##dt(x[j * is]) * scale - m) * inv);            \
            for (int64_t j = kept; j < n; j++)                                              \
                y[j * os] = ST_##dt(0.0f);                                                  \
        }                                                                                   \
    }                                                                                       \
    void bp_cpu_softmax_##dt(const bp_kernel_call *call) {                                  \
        row_job job;                                                                        \
        row_job_init(&job, call, call->inputs[0]->ndim - 1);                                \
        row_launch(&job, softmax_##dt##_range);                                             \
    }

#define FLOAT_KERNELS(dt)                                                                   \
    FLOAT_ROW_FNS(dt)                                                                       \
    REDUCE_KERNEL(sum, dt)                                                                  \
    REDUCE_KERNEL(mean, dt)                                                                 \
    REDUCE_KERNEL(max, dt)                                                                  \
    SOFTMAX_KERNEL(dt)

#define INT_KERNELS(dt)                                                                     \
    INT_ROW_FNS(dt)                                                                         \
    REDUCE_KERNEL(sum, dt)                                                                  \
    REDUCE_KERNEL(max, dt)

FLOAT_KERNELS(f32)
FLOAT_KERNELS(f16)
FLOAT_KERNELS(bf16)
INT_KERNELS(i32)
INT_KERNELS(i64)
