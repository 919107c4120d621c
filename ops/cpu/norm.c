/* Reference cpu kernels of rmsnorm, layernorm and rope: each works on rows of the last
 * dim, in f32. The strided iterator over the input with its last dim collapsed to 1
 * gives the start of every row (in and out), and rows split over the pool. */
#include <math.h>

#include "dtype_convert.h"
#include "ops_internal.h"
#include "strided.h"
#include "dtype_macros.h"

enum { GRAIN = 32768 };

typedef struct row_job {
    const bp_kernel_call *call;
    bp_tensor_desc in, out; /* the last dim collapsed to 1 */
    int64_t len, in_stride, out_stride;
    int64_t seq;            /* size of dim -2 (rope's positions) */
} row_job;

static void row_launch(const bp_kernel_call *call, void (*range)(void *, int64_t, int64_t)) {
    row_job job = {.call = call, .in = *call->inputs[0], .out = *call->outputs[0]};
    int last = job.in.ndim - 1; /* the op guarantees at least one dim */
    job.len = job.in.shape[last];
    job.in_stride = job.in.strides[last];
    job.out_stride = job.out.strides[last];
    job.seq = last > 0 ? job.in.shape[last - 1] : 1;
    job.in.shape[last] = 1;
    job.out.shape[last] = 1;
    int64_t rows = 1;
    for (int d = 0; d < last; d++)
        rows *= job.in.shape[d];
    int64_t grain = job.len > 0 ? GRAIN / job.len : GRAIN;
    bp_parallel_for(rows, grain > 0 ? grain : 1, range, &job);
}

/* Per-feature tensor k (weight, bias) or NULL when the call has none. */
#define PARAM(call, k) ((call)->n_inputs > (k) ? (call)->inputs[k] : NULL)

/* Declares the row loop's variables: job, call, the row length n and strides is/os,
 * and an iterator `it` at row `begin`. */
#define ROW_VARS                                                                           \
    const row_job *job = ctx;                                                              \
    const bp_kernel_call *call = job->call;                                                \
    const int64_t n = job->len, is = job->in_stride, os = job->out_stride;                 \
    bp_nd_iter it;                                                                         \
    bp_nd_iter_init(&it, &job->out, 1, (const bp_tensor_desc *const[]){&job->in}, begin);

/* Inside the row loop: x and y point at row r of the input and the output. */
#define ROW_POINTERS(dt)                                                                   \
    const T_##dt *x = (const T_##dt *)job->in.data + it.offset[1];                         \
    T_##dt *y = (T_##dt *)job->out.data + it.offset[0];

/* w[j] (1 without a weight), b[j] (0 without a bias). */
#define W(dt, j) (w ? LD_##dt(wp[(j) * ws]) : 1.0f)
#define B(dt, j) (b ? LD_##dt(bp[(j) * bs]) : 0.0f)
#define AFFINE_VARS(dt)                                                                    \
    const bp_tensor_desc *w = PARAM(call, 1), *b = PARAM(call, 2);                         \
    const T_##dt *wp = w ? w->data : NULL, *bp = b ? b->data : NULL;                       \
    const int64_t ws = w ? w->strides[0] : 0, bs = b ? b->strides[0] : 0;                  \
    const float eps = ((const bp_norm_attrs *)call->attrs)->eps;

#define NORM_KERNELS(dt)                                                                   \
    static void rmsnorm_##dt##_range(void *ctx, int64_t begin, int64_t end) {              \
        ROW_VARS                                                                           \
        AFFINE_VARS(dt)                                                                    \
        (void)bp;                                                                          \
        (void)bs;                                                                          \
        for (int64_t r = begin; r < end; r++, bp_nd_iter_next(&it)) {                      \
            ROW_POINTERS(dt)                                                               \
            float ss = 0.0f;                                                               \
            for (int64_t j = 0; j < n; j++) {                                              \
                float v = LD_##dt(x[j * is]);                                              \
                ss += v * v;                                                               \
            }                                                                              \
            float rstd = 1.0f / sqrtf(ss / (float)n + eps);                                \
            for (int64_t j = 0; j < n; j++)                                                \
                y[j * os] = ST_##dt(LD_##dt(x[j * is]) * rstd * W(dt, j));                \
        }                                                                                  \
    }                                                                                      \
    void bp_cpu_rmsnorm_##dt(const bp_kernel_call *call) {                                 \
        row_launch(call, rmsnorm_##dt##_range);                                            \
    }                                                                                      \
    /* Two passes (mean, then squared deviations) avoid E[x^2] - E[x]^2 cancelling. */     \
    static void layernorm_##dt##_range(void *ctx, int64_t begin, int64_t end) {            \
        ROW_VARS                                                                           \
        AFFINE_VARS(dt)                                                                    \
        for (int64_t r = begin; r < end; r++, bp_nd_iter_next(&it)) {                      \
            ROW_POINTERS(dt)                                                               \
            float sum = 0.0f;                                                              \
            for (int64_t j = 0; j < n; j++)                                                \
                sum += LD_##dt(x[j * is]);                                                 \
            float mean = sum / (float)n, var = 0.0f;                                       \
            for (int64_t j = 0; j < n; j++) {                                              \
                float dv = LD_##dt(x[j * is]) - mean;                                      \
                var += dv * dv;                                                            \
            }                                                                              \
            float rstd = 1.0f / sqrtf(var / (float)n + eps);                               \
            for (int64_t j = 0; j < n; j++)                                                \
                y[j * os] = ST_##dt((LD_##dt(x[j * is]) - mean) * rstd * W(dt, j) + B(dt, j)); \
        }                                                                                  \
    }                                                                                      \
    void bp_cpu_layernorm_##dt(const bp_kernel_call *call) {                               \
        row_launch(call, layernorm_##dt##_range);                                          \
    }                                                                                      \
    /* Pair i is elements (i, i + n/2), or (2i, 2i + 1) when interleaved; its frequency */ \
    /* theta^(-2i/n) is ratio^i. Angles are in double: position * frequency reaches    */ \
    /* thousands of radians, where f32 would lose the bits that cos and sin depend on. */ \
    static void rope_##dt##_range(void *ctx, int64_t begin, int64_t end) {                 \
        ROW_VARS                                                                           \
        const bp_rope_attrs *a = call->attrs;                                              \
        const int64_t half = n / 2;                                                        \
        const int64_t step = a->interleaved ? 2 : 1, other = a->interleaved ? 1 : half;    \
        const double ratio = pow((double)a->theta, -2.0 / (double)n);                      \
        for (int64_t r = begin; r < end; r++, bp_nd_iter_next(&it)) {                      \
            ROW_POINTERS(dt)                                                               \
            double pos = (double)a->position_offset + (double)(r % job->seq), freq = 1.0;  \
            for (int64_t i = 0; i < half; i++, freq *= ratio) {                            \
                double s, c;                                                               \
                sincos(pos * freq, &s, &c);                                                \
                int64_t j0 = i * step, j1 = i * step + other;                              \
                float x0 = LD_##dt(x[j0 * is]), x1 = LD_##dt(x[j1 * is]);                  \
                y[j0 * os] = ST_##dt(x0 * (float)c - x1 * (float)s);                       \
                y[j1 * os] = ST_##dt(x1 * (float)c + x0 * (float)s);                       \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    void bp_cpu_rope_##dt(const bp_kernel_call *call) { row_launch(call, rope_##dt##_range); }

NORM_KERNELS(f32)
NORM_KERNELS(f16)
NORM_KERNELS(bf16)
