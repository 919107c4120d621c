/* The elementwise family: add sub mul div scale exp tanh silu gelu (f32 f16 bf16),
 * add sub mul (i32 i64, wrapping like unsigned arithmetic) and where (every dtype).
 *
 * A kernel walks the output in runs (arm_common.h's walker, which merges the dims all
 * operands walk as one): float runs are staged as f32 tiles and computed by the row
 * functions of the picked variant (vec_neon.c, vec_sve.c; f16 add/sub/mul/div in f16
 * instructions straight from memory with vec_fp16.c or vec_sve.c); contiguous integer
 * and where runs go to the integer table of the variant (vec_int_neon.c,
 * vec_int_sve.c), strided or broadcast ones element by element here. */
#include "arm_common.h"

enum { GRAIN = 32768 };

/* The binary ops first: op <= EW_DIV takes two inputs. */
typedef enum ew_op {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_SCALE, EW_EXP, EW_TANH, EW_SILU, EW_GELU
} ew_op;

typedef struct ew_job {
    const bp_kernel_call *call;
    ew_op op;
    const arm_f32_ops *ops;
    const arm_f16_ops *f16; /* NULL: f16 runs go through f32 tiles */
    const arm_int_ops *ints; /* integer ops and where */
    float param;            /* scale's alpha; gelu: 1 for the tanh form */
    int nin;
} ew_job;

static void launch(const arm_exec *ex, ew_job *job, arm_range_fn range) {
    ak_parallel(ex, bp_plugin_numel(job->call->outputs[0]), GRAIN, range, job);
}

static void walk_start(ak_walk *w, const ew_job *job, int64_t begin) {
    ak_walk_init(w, job->call->outputs[0], job->nin, job->call->inputs);
    ak_walk_seek(w, begin);
}

/* ---- float ops ---- */

static bool f16_direct(const ew_job *job, bp_dtype dt, const ak_run *r) {
    return job->f16 && dt == BP_DTYPE_F16 && job->op <= EW_DIV && ak_run_unit(r, 3);
}

static void f16_run(const ew_job *job, const ak_run *r) {
    const arm_f16_binary fns[] = {job->f16->add, job->f16->sub, job->f16->mul, job->f16->div};
    fns[job->op]((uint16_t *)r->ptr[0], (const uint16_t *)r->ptr[1],
                 (const uint16_t *)r->ptr[2], r->n);
}

static void float_run(const ew_job *job, bp_dtype dt, const ak_run *r) {
    const arm_f32_ops *ops = job->ops;
    float ta[AK_TILE], tb[AK_TILE], to[AK_TILE];
    const float *a = ak_stage_in(ops, ta, r->ptr[1], dt, r->step[1], r->n);
    const float *b = job->nin > 1 ? ak_stage_in(ops, tb, r->ptr[2], dt, r->step[2], r->n) : a;
    float *o = ak_out_buf(to, r->ptr[0], dt, r->step[0]);
    switch (job->op) {
    case EW_ADD: ops->add(o, a, b, r->n); break;
    case EW_SUB: ops->sub(o, a, b, r->n); break;
    case EW_MUL: ops->mul(o, a, b, r->n); break;
    case EW_DIV: ops->div(o, a, b, r->n); break;
    case EW_SCALE: ops->scale(o, a, job->param, r->n); break;
    case EW_EXP: ops->exp(o, a, r->n); break;
    case EW_TANH: ops->tanh(o, a, r->n); break;
    case EW_SILU: ops->silu(o, a, r->n); break;
    case EW_GELU: (job->param != 0 ? ops->gelu_tanh : ops->gelu_erf)(o, a, r->n); break;
    }
    ak_stage_out(ops, r->ptr[0], dt, r->step[0], o, r->n);
}

static void float_range(void *ctx, int64_t begin, int64_t end) {
    const ew_job *job = ctx;
    bp_dtype dt = job->call->outputs[0]->dtype;
    ak_walk w;
    walk_start(&w, job, begin);
    for (int64_t i = begin; i < end;) {
        ak_run r;
        ak_walk_next(&w, end - i < AK_TILE ? end - i : AK_TILE, &r);
        if (f16_direct(job, dt, &r))
            f16_run(job, &r);
        else
            float_run(job, dt, &r);
        i += r.n;
    }
}

static void float_kernel(const bp_kernel_call *call, const arm_exec *ex, ew_op op,
                         const arm_f32_ops *ops, const arm_f16_ops *f16) {
    ew_job job = {.call = call, .op = op, .ops = ops, .f16 = f16, .nin = op <= EW_DIV ? 2 : 1};
    if (op == EW_SCALE)
        job.param = call->attrs ? (float)((const bp_scale_attrs *)call->attrs)->alpha : 1.0f;
    if (op == EW_GELU)
        job.param = call->attrs && ((const bp_gelu_attrs *)call->attrs)->approximate_tanh;
    launch(ex, &job, float_range);
}

/* ---- integer add, sub, mul ---- */

/* A strided run element by element (unsigned: wrapping is defined). */
#define INT_STRIDED(T, r, OP)                                                              \
    for (int64_t k = 0; k < (r)->n; k++) {                                                 \
        T x = ((const T *)(r)->ptr[1])[k * (r)->step[1]];                                  \
        T y = ((const T *)(r)->ptr[2])[k * (r)->step[2]];                                  \
        ((T *)(r)->ptr[0])[k * (r)->step[0]] = (T)(OP);                                    \
    }

static void int_range(void *ctx, int64_t begin, int64_t end) {
    const ew_job *job = ctx;
    bool wide = job->call->outputs[0]->dtype == BP_DTYPE_I64;
    ak_walk w;
    walk_start(&w, job, begin);
    for (int64_t i = begin; i < end;) {
        ak_run r;
        ak_walk_next(&w, end - i, &r);
        if (ak_run_unit(&r, 3) && wide)
            job->ints->arith64[job->op]((uint64_t *)r.ptr[0], (const uint64_t *)r.ptr[1],
                         (const uint64_t *)r.ptr[2], r.n);
        else if (ak_run_unit(&r, 3))
            job->ints->arith32[job->op]((uint32_t *)r.ptr[0], (const uint32_t *)r.ptr[1],
                         (const uint32_t *)r.ptr[2], r.n);
        else if (wide && job->op == EW_ADD)
            INT_STRIDED(uint64_t, &r, x + y)
        else if (wide && job->op == EW_SUB)
            INT_STRIDED(uint64_t, &r, x - y)
        else if (wide)
            INT_STRIDED(uint64_t, &r, x * y)
        else if (job->op == EW_ADD)
            INT_STRIDED(uint32_t, &r, x + y)
        else if (job->op == EW_SUB)
            INT_STRIDED(uint32_t, &r, x - y)
        else
            INT_STRIDED(uint32_t, &r, x * y)
        i += r.n;
    }
}

static void int_kernel(const bp_kernel_call *call, const arm_exec *ex, ew_op op) {
    ew_job job = {.call = call, .op = op, .ints = ak_int_ops(ex->features), .nin = 2};
    launch(ex, &job, int_range);
}

/* ---- where ---- */

static void where_range(void *ctx, int64_t begin, int64_t end) {
    const ew_job *job = ctx;
    size_t size = bp_plugin_dtype_size(job->call->outputs[0]->dtype);
    ak_walk w;
    walk_start(&w, job, begin);
    for (int64_t i = begin; i < end;) {
        ak_run r;
        ak_walk_next(&w, end - i, &r);
        const uint8_t *c = (const uint8_t *)r.ptr[1];
        if (ak_run_unit(&r, 4)) {
            job->ints->where((uint8_t *)r.ptr[0], c, (const uint8_t *)r.ptr[2],
                       (const uint8_t *)r.ptr[3], r.n, size);
        } else {
            for (int64_t j = 0; j < r.n; j++) {
                const char *src = c[j * r.step[1]] ? r.ptr[2] + j * r.step[2] * (int64_t)size
                                                   : r.ptr[3] + j * r.step[3] * (int64_t)size;
                memmove(r.ptr[0] + j * r.step[0] * (int64_t)size, src, size);
            }
        }
        i += r.n;
    }
}

static void where_kernel(const bp_kernel_call *call, const arm_exec *ex) {
    ew_job job = {.call = call, .ints = ak_int_ops(ex->features), .nin = 3};
    launch(ex, &job, where_range);
}

/* ---- the family ---- */

#define FLOAT_BODY(name, OP, isa, OPS, F16)                                                \
    static void name##_##isa(const bp_kernel_call *call, const arm_exec *ex) {             \
        float_kernel(call, ex, OP, OPS, F16);                                              \
    }
#define FLOAT_BODIES(name, OP)                                                             \
    FLOAT_BODY(name, OP, neon, &arm_f32_neon, NULL)                                        \
    FLOAT_BODY(name, OP, sve, &arm_f32_sve, &arm_f16_sve)
/* add, sub, mul, div also have f16 bodies with FP16 instructions. */
#define ARITH_BODIES(name, OP)                                                             \
    FLOAT_BODIES(name, OP)                                                                 \
    FLOAT_BODY(name, OP, fp16, &arm_f32_neon, &arm_f16_fp16)
#define INT_BODY(name, OP)                                                                 \
    static void name##_int(const bp_kernel_call *call, const arm_exec *ex) {               \
        int_kernel(call, ex, OP);                                                          \
    }

ARITH_BODIES(add, EW_ADD)
ARITH_BODIES(sub, EW_SUB)
ARITH_BODIES(mul, EW_MUL)
ARITH_BODIES(div, EW_DIV)
FLOAT_BODIES(scale, EW_SCALE)
FLOAT_BODIES(exp, EW_EXP)
FLOAT_BODIES(tanh, EW_TANH)
FLOAT_BODIES(silu, EW_SILU)
FLOAT_BODIES(gelu, EW_GELU)
INT_BODY(add, EW_ADD)
INT_BODY(sub, EW_SUB)
INT_BODY(mul, EW_MUL)

typedef struct float_entry {
    const char *op;
    arm_kernel_body neon, fp16, sve; /* fp16: NULL where f16 instructions do not apply */
} float_entry;

#define ENTRY(name, fp16) {#name, name##_neon, fp16, name##_sve}
static const float_entry float_ops[] = {
    ENTRY(add, add_fp16),    ENTRY(sub, sub_fp16),   ENTRY(mul, mul_fp16),
    ENTRY(div, div_fp16),    ENTRY(scale, NULL),     ENTRY(exp, NULL),
    ENTRY(tanh, NULL),       ENTRY(silu, NULL),      ENTRY(gelu, NULL),
};

size_t arm_kernels_elementwise(const arm_features *f, arm_kernel *out, size_t cap) {
    static const bp_dtype floats[] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16};
    size_t n = 0;
    for (size_t k = 0; k < sizeof float_ops / sizeof *float_ops; k++) {
        const float_entry *e = &float_ops[k];
        for (size_t d = 0; d < 3; d++) {
            if (f->sve)
                ak_add(out, cap, &n, e->op, floats[d], e->sve, "sve");
            else if (f->fp16 && e->fp16 && floats[d] == BP_DTYPE_F16)
                ak_add(out, cap, &n, e->op, floats[d], e->fp16, "neon-fp16");
            else
                ak_add(out, cap, &n, e->op, floats[d], e->neon, "neon");
        }
    }
    static const bp_dtype ints[] = {BP_DTYPE_I32, BP_DTYPE_I64};
    const char *int_variant = ak_int_ops(f)->variant;
    for (size_t d = 0; d < 2; d++) {
        ak_add(out, cap, &n, "add", ints[d], add_int, int_variant);
        ak_add(out, cap, &n, "sub", ints[d], sub_int, int_variant);
        ak_add(out, cap, &n, "mul", ints[d], mul_int, int_variant);
    }
    for (int d = 0; d < BP_DTYPE_COUNT; d++)
        ak_add(out, cap, &n, "where", (bp_dtype)d, where_kernel, int_variant);
    return n;
}
