/* Reference cpu kernels of the elementwise ops (add, sub, mul, div, scale, exp, tanh,
 * silu, gelu, where). Float dtypes compute in f32; integers wrap like unsigned
 * arithmetic (no undefined overflow). Each kernel walks its range either flat (every
 * operand contiguous with the output's element count, so element i is at index i) or
 * with the strided/broadcast iterator, and large tensors are split over the pool. */
#include <math.h>

#include "dtype_convert.h"
#include "ops_internal.h"
#include "strided.h"
#include "dtype_macros.h"

enum { GRAIN = 32768 };

typedef struct ew_job {
    const bp_kernel_call *call;
    int flat;
    float p; /* the op's parameter: scale's alpha, gelu's approximate_tanh */
} ew_job;

static int64_t desc_numel(const bp_tensor_desc *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

static void ew_launch(const bp_kernel_call *call, void (*range)(void *, int64_t, int64_t),
                      float p) {
    int64_t n = desc_numel(call->outputs[0]);
    ew_job job = {.call = call, .flat = bp_desc_contiguous(call->outputs[0]), .p = p};
    for (int k = 0; k < call->n_inputs; k++)
        job.flat = job.flat && bp_desc_contiguous(call->inputs[k]) &&
                   desc_numel(call->inputs[k]) == n;
    bp_parallel_for(n, GRAIN, range, &job);
}

/* A kernel computing o = EXPR from x (and y for binary ops), with `p` in scope. */
#define EW_KERNEL(op, dt, NIN, EXPR, PARAM)                                                 \
    static void op##_##dt##_range(void *ctx, int64_t begin, int64_t end) {                  \
        const ew_job *job = ctx;                                                            \
        const bp_kernel_call *call = job->call;                                             \
        const T_##dt *a = call->inputs[0]->data;                                            \
        const T_##dt *b = NIN > 1 ? call->inputs[NIN - 1]->data : a;                        \
        T_##dt *o = call->outputs[0]->data;                                                 \
        float p = job->p;                                                                   \
        (void)p;                                                                            \
        if (job->flat) {                                                                    \
            for (int64_t i = begin; i < end; i++) {                                         \
                A_##dt x = LD_##dt(a[i]), y = LD_##dt(b[i]);                                \
                (void)y;                                                                    \
                o[i] = ST_##dt(EXPR);                                                       \
            }                                                                               \
            return;                                                                         \
        }                                                                                   \
        bp_nd_iter it;                                                                      \
        bp_nd_iter_init(&it, call->outputs[0], NIN,                                         \
                        (const bp_tensor_desc *const[]){call->inputs[0],                    \
                                                        call->inputs[NIN - 1]},             \
                        begin);                                                             \
        for (int64_t i = begin; i < end; i++, bp_nd_iter_next(&it)) {                       \
            A_##dt x = LD_##dt(a[it.offset[1]]), y = LD_##dt(b[it.offset[NIN]]);            \
            (void)y;                                                                        \
            o[it.offset[0]] = ST_##dt(EXPR);                                                \
        }                                                                                   \
    }                                                                                       \
    void bp_cpu_##op##_##dt(const bp_kernel_call *call) {                                   \
        ew_launch(call, op##_##dt##_range, PARAM);                                          \
    }

/* Integer results wrap (computed in the unsigned type); for floats U and A are float. */
#define WRAP(dt, e) ((A_##dt)(e))
#define ARITH_KERNELS(dt)                                                                   \
    EW_KERNEL(add, dt, 2, WRAP(dt, (U_##dt)x + (U_##dt)y), 0)                               \
    EW_KERNEL(sub, dt, 2, WRAP(dt, (U_##dt)x - (U_##dt)y), 0)                               \
    EW_KERNEL(mul, dt, 2, WRAP(dt, (U_##dt)x * (U_##dt)y), 0)

static inline float silu(float x) { return x / (1.0f + expf(-x)); }

/* 0.5 x (1 + erf(x / sqrt 2)) written with erfc, which keeps its precision for
 * negative x where 1 + erf cancels. */
static inline float gelu_erf(float x) { return 0.5f * x * erfcf(-x * (float)M_SQRT1_2); }

static inline float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

#define SCALE_PARAM (call->attrs ? (float)((const bp_scale_attrs *)call->attrs)->alpha : 1.0f)
#define GELU_PARAM                                                                          \
    (call->attrs && ((const bp_gelu_attrs *)call->attrs)->approximate_tanh ? 1.0f : 0.0f)

#define FLOAT_KERNELS(dt)                                                                   \
    ARITH_KERNELS(dt)                                                                       \
    EW_KERNEL(div, dt, 2, x / y, 0)                                                         \
    EW_KERNEL(scale, dt, 1, x * p, SCALE_PARAM)                                             \
    EW_KERNEL(exp, dt, 1, expf(x), 0)                                                       \
    EW_KERNEL(tanh, dt, 1, tanhf(x), 0)                                                     \
    EW_KERNEL(silu, dt, 1, silu(x), 0)                                                      \
    EW_KERNEL(gelu, dt, 1, p != 0 ? gelu_tanh(x) : gelu_erf(x), GELU_PARAM)

FLOAT_KERNELS(f32)
FLOAT_KERNELS(f16)
FLOAT_KERNELS(bf16)
ARITH_KERNELS(i32)
ARITH_KERNELS(i64)

/* where copies elements, so one kernel per element size serves every dtype. */
#define WHERE_KERNEL(dt, T)                                                                 \
    static void where_##dt##_range(void *ctx, int64_t begin, int64_t end) {                 \
        const ew_job *job = ctx;                                                            \
        const bp_kernel_call *call = job->call;                                             \
        const uint8_t *c = call->inputs[0]->data;                                           \
        const T *a = call->inputs[1]->data, *b = call->inputs[2]->data;                     \
        T *o = call->outputs[0]->data;                                                      \
        if (job->flat) {                                                                    \
            for (int64_t i = begin; i < end; i++)                                           \
                o[i] = c[i] ? a[i] : b[i];                                                  \
            return;                                                                         \
        }                                                                                   \
        bp_nd_iter it;                                                                      \
        bp_nd_iter_init(&it, call->outputs[0], 3,                                           \
                        (const bp_tensor_desc *const[]){call->inputs[0], call->inputs[1],   \
                                                        call->inputs[2]},                   \
                        begin);                                                             \
        for (int64_t i = begin; i < end; i++, bp_nd_iter_next(&it))                         \
            o[it.offset[0]] = c[it.offset[1]] ? a[it.offset[2]] : b[it.offset[3]];          \
    }                                                                                       \
    void bp_cpu_where_##dt(const bp_kernel_call *call) { ew_launch(call, where_##dt##_range, 0); }

WHERE_KERNEL(f32, uint32_t)
WHERE_KERNEL(f16, uint16_t)
WHERE_KERNEL(bf16, uint16_t)
WHERE_KERNEL(f64, uint64_t)
WHERE_KERNEL(i8, uint8_t)
WHERE_KERNEL(u8, uint8_t)
WHERE_KERNEL(i32, uint32_t)
WHERE_KERNEL(i64, uint64_t)
WHERE_KERNEL(bool, uint8_t)
