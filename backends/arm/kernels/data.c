/* The data family: fill, copy and cat for every dtype.
 *
 * Same-dtype moves (copy, cat) copy element bytes, so NaN payloads survive; runs that
 * are contiguous on both sides are one memcpy. Conversions (copy between dtypes, fill's
 * value) round once: floats to a float dtype to nearest even, floats to integers
 * toward zero (through int64: NaN gives 0, values beyond int64 saturate, then the C
 * conversion wraps to a narrower type), anything to bool is != 0. Between f32, f16
 * and bf16 contiguous runs convert with SVE (where present) or NEON through an f32
 * tile (widening is exact, so the one rounding is the store's); the other pairs go
 * element by element through a double or an int64, which hold every source value
 * exactly. Where that middle step would round twice (f64 or a wide integer to bf16,
 * through f32), the first rounding is to odd, which the second then rounds as if it
 * were the only one. Contiguous moves and fills go to the integer table of the
 * variant (vec_int_neon.c, vec_int_sve.c: byte loads and stores), and so do the other
 * contiguous conversions where the table has them (SVE, into any dtype but bf16:
 * the same conversions in 64-bit lanes); the rest is the scalar code below. */
#include <arm_neon.h>

#include "arm_common.h"

enum { GRAIN = 65536 };

/* A source element, exactly: integers and bool as int64, floats as double. */
typedef struct wide {
    bool is_int;
    int64_t i;
    double d;
} wide;

static wide wide_load(bp_dtype dt, const char *p) {
    wide w = {.is_int = true};
    switch (dt) {
    case BP_DTYPE_F32: w.is_int = false, w.d = *(const float *)p; break;
    case BP_DTYPE_F16: w.is_int = false, w.d = ak_f16_to_f32(*(const uint16_t *)p); break;
    case BP_DTYPE_BF16: w.is_int = false, w.d = ak_bf16_to_f32(*(const uint16_t *)p); break;
    case BP_DTYPE_F64: w.is_int = false, w.d = *(const double *)p; break;
    case BP_DTYPE_I8: w.i = *(const int8_t *)p; break;
    case BP_DTYPE_U8: w.i = *(const uint8_t *)p; break;
    case BP_DTYPE_I32: w.i = *(const int32_t *)p; break;
    case BP_DTYPE_I64: w.i = *(const int64_t *)p; break;
    default: w.i = *(const uint8_t *)p != 0; break; /* bool */
    }
    return w;
}

/* v rounded to f32 to odd: truncated to 24 significant bits, the last set when any
 * dropped bit was. */
static float i64_to_f32_odd(int64_t v) {
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag < (UINT64_C(1) << 24))
        return (float)v;
    int drop = 64 - __builtin_clzll(mag) - 24;
    uint64_t kept = (mag >> drop) | ((mag & ((UINT64_C(1) << drop) - 1)) != 0);
    float f = (float)kept * (float)(UINT64_C(1) << drop); /* both exact */
    return v < 0 ? -f : f;
}

/* Truncation toward zero, saturating, NaN to 0 (FCVTZS). */
static int64_t trunc_i64(double d) { return vcvtd_s64_f64(d); }

static void wide_store(bp_dtype dt, char *p, wide w) {
    switch (dt) {
    case BP_DTYPE_F32: *(float *)p = w.is_int ? (float)w.i : (float)w.d; break;
    case BP_DTYPE_F16: { /* one rounding from double (FCVT h, d); a wider int is inf anyway */
        __fp16 h = (__fp16)(w.is_int ? (double)w.i : w.d);
        memcpy(p, &h, sizeof h);
        break;
    }
    case BP_DTYPE_BF16: /* to odd first (FCVTXN for a double), then nearest even */
        *(uint16_t *)p = ak_f32_to_bf16(w.is_int ? i64_to_f32_odd(w.i) : vcvtxd_f32_f64(w.d));
        break;
    case BP_DTYPE_F64: *(double *)p = w.is_int ? (double)w.i : w.d; break;
    case BP_DTYPE_I8: *(int8_t *)p = (int8_t)(w.is_int ? w.i : trunc_i64(w.d)); break;
    case BP_DTYPE_U8: *(uint8_t *)p = (uint8_t)(w.is_int ? w.i : trunc_i64(w.d)); break;
    case BP_DTYPE_I32: *(int32_t *)p = (int32_t)(w.is_int ? w.i : trunc_i64(w.d)); break;
    case BP_DTYPE_I64: *(int64_t *)p = w.is_int ? w.i : trunc_i64(w.d); break;
    default: *(uint8_t *)p = w.is_int ? w.i != 0 : w.d != 0; break; /* bool */
    }
}

static bool is_float16_or_32(bp_dtype dt) {
    return dt == BP_DTYPE_F32 || dt == BP_DTYPE_F16 || dt == BP_DTYPE_BF16;
}

/* ---- copy: out = in (broadcast to out's shape), converted ---- */

typedef struct copy_job {
    const bp_tensor_desc *out, *in;
    const arm_f32_ops *ops; /* conversions between f32, f16 and bf16 */
    const arm_int_ops *ints; /* moves, the other conversions */
} copy_job;

static void move_run(const arm_int_ops *ints, const ak_run *r, size_t size) {
    if (r->step[0] == 1 && r->step[1] == 1) {
        ints->move((uint8_t *)r->ptr[0], (const uint8_t *)r->ptr[1], (size_t)r->n * size);
        return;
    }
    for (int64_t i = 0; i < r->n; i++)
        memcpy(r->ptr[0] + i * r->step[0] * (int64_t)size,
               r->ptr[1] + i * r->step[1] * (int64_t)size, size);
}

static void convert_run(const copy_job *job, const ak_run *r, bp_dtype to, bp_dtype from) {
    const arm_f32_ops *ops = job->ops;
    if (ak_run_unit(r, 2) && is_float16_or_32(to) && is_float16_or_32(from)) {
        float tile[AK_TILE];
        ops->load[ak_fidx(from)](tile, r->ptr[1], r->n);
        ops->store[ak_fidx(to)](r->ptr[0], tile, r->n);
        return;
    }
    if (ak_run_unit(r, 2) && job->ints->convert &&
        job->ints->convert((uint8_t *)r->ptr[0], to, (const uint8_t *)r->ptr[1], from, r->n))
        return;
    const int64_t os = r->step[0] * (int64_t)bp_plugin_dtype_size(to);
    const int64_t is = r->step[1] * (int64_t)bp_plugin_dtype_size(from);
    for (int64_t i = 0; i < r->n; i++)
        wide_store(to, r->ptr[0] + i * os, wide_load(from, r->ptr[1] + i * is));
}

static void copy_range(void *ctx, int64_t begin, int64_t end) {
    const copy_job *job = ctx;
    const bp_dtype to = job->out->dtype, from = job->in->dtype;
    ak_walk w;
    ak_walk_init(&w, job->out, 1, &job->in);
    ak_walk_seek(&w, begin);
    for (int64_t i = begin; i < end;) {
        ak_run r;
        ak_walk_next(&w, end - i < AK_TILE ? end - i : AK_TILE, &r);
        if (to == from)
            move_run(job->ints, &r, bp_plugin_dtype_size(to));
        else
            convert_run(job, &r, to, from);
        i += r.n;
    }
}

static void copy_view(const arm_exec *ex, const bp_tensor_desc *out, const bp_tensor_desc *in) {
    copy_job job = {.out = out,
                    .in = in,
                    .ops = ak_f32_ops(ex->features),
                    .ints = ak_int_ops(ex->features)};
    ak_parallel(ex, bp_plugin_numel(out), GRAIN, copy_range, &job);
}

static void copy_body(const bp_kernel_call *call, const arm_exec *ex) {
    copy_view(ex, call->outputs[0], call->inputs[0]);
}

/* ---- cat: each input to its slice of the output along dim ---- */

static void cat_body(const bp_kernel_call *call, const arm_exec *ex) {
    const bp_tensor_desc *out = call->outputs[0];
    const int dim = ((const bp_cat_attrs *)call->attrs)->dim;
    const int64_t es = (int64_t)bp_plugin_dtype_size(out->dtype);
    int64_t at = 0;
    for (int k = 0; k < call->n_inputs; k++) {
        const bp_tensor_desc *in = call->inputs[k];
        bp_tensor_desc slice = *out;
        slice.shape[dim] = in->shape[dim];
        slice.data = (char *)out->data + at * out->strides[dim] * es;
        copy_view(ex, &slice, in); /* same dtype: moves only */
        at += in->shape[dim];
    }
}

/* ---- fill ---- */

typedef struct fill_job {
    const bp_tensor_desc *out;
    const arm_int_ops *ints;
    uint8_t pattern[16]; /* the value's bytes, repeated */
} fill_job;

static void fill_range(void *ctx, int64_t begin, int64_t end) {
    const fill_job *job = ctx;
    const size_t size = bp_plugin_dtype_size(job->out->dtype);
    ak_walk w;
    ak_walk_init(&w, job->out, 0, NULL);
    ak_walk_seek(&w, begin);
    for (int64_t i = begin; i < end;) {
        ak_run r;
        ak_walk_next(&w, end - i, &r);
        if (r.step[0] == 1) {
            job->ints->fill((uint8_t *)r.ptr[0], job->pattern, (size_t)r.n * size);
        } else {
            for (int64_t j = 0; j < r.n; j++)
                memcpy(r.ptr[0] + j * r.step[0] * (int64_t)size, job->pattern, size);
        }
        i += r.n;
    }
}

static void fill_body(const bp_kernel_call *call, const arm_exec *ex) {
    fill_job job = {.out = call->outputs[0], .ints = ak_int_ops(ex->features)};
    const size_t size = bp_plugin_dtype_size(job.out->dtype);
    wide value = {.d = ((const bp_fill_attrs *)call->attrs)->value};
    wide_store(job.out->dtype, (char *)job.pattern, value);
    for (size_t b = size; b < sizeof job.pattern; b += size)
        memcpy(job.pattern + b, job.pattern, size);
    ak_parallel(ex, bp_plugin_numel(job.out), GRAIN, fill_range, &job);
}

/* ---- the family ---- */

size_t arm_kernels_data(const arm_features *f, arm_kernel *out, size_t cap) {
    const char *variant = ak_int_ops(f)->variant;
    size_t n = 0;
    for (int d = 0; d < BP_DTYPE_COUNT; d++) {
        ak_add(out, cap, &n, "fill", (bp_dtype)d, fill_body, variant);
        ak_add(out, cap, &n, "copy", (bp_dtype)d, copy_body, variant);
        ak_add(out, cap, &n, "cat", (bp_dtype)d, cat_body, variant);
    }
    return n;
}
