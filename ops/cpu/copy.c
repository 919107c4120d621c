/* cpu kernels of fill, copy and cat for every dtype.
 *
 * Conversions (copy between dtypes, fill) follow tensor.h: float results round to
 * nearest even, float to integer truncates toward zero, anything to bool is != 0.
 * Float sources widen exactly to double and integer sources to int64, so each
 * conversion rounds once. Float to integer goes through int64 (NaN gives 0, values
 * beyond int64 saturate) and then wraps to the narrower type as C integer conversion
 * does. Same-dtype moves (copy, cat) copy element bytes, keeping NaN payloads. */
#include <math.h>
#include <string.h>

#include "dtype_convert.h"
#include "ops_internal.h"
#include "cpu/strided.h"

/* Elements per parallel chunk: below this a copy is not worth splitting. */
#define GRAIN 65536

/* Every dtype as (name, ENUM): the exported kernel names use the lower-case name
 * (only ever pasted: `bool` is a macro); everything internal uses ENUM. */
#define DTYPES(X, arg)                                                                     \
    X(f32, F32, arg) X(f16, F16, arg) X(bf16, BF16, arg) X(f64, F64, arg) X(i8, I8, arg)     \
    X(u8, U8, arg) X(i32, I32, arg) X(i64, I64, arg) X(bool, BOOL, arg)
/* The same list for the inner loop of a nested expansion (a macro cannot nest itself). */
#define SRC_DTYPES(X, arg)                                                                 \
    X(F32, arg) X(F16, arg) X(BF16, arg) X(F64, arg) X(I8, arg) X(U8, arg) X(I32, arg)      \
    X(I64, arg) X(BOOL, arg)

typedef float elem_F32;
typedef uint16_t elem_F16;
typedef uint16_t elem_BF16;
typedef double elem_F64;
typedef int8_t elem_I8;
typedef uint8_t elem_U8;
typedef int32_t elem_I32;
typedef int64_t elem_I64;
typedef uint8_t elem_BOOL;

/* ---- single-rounding helpers for the half types ---- */

/* Sets the last bit of an inexact result ("round to odd"): a value rounded this way
 * to f32 and then to nearest even with fewer bits rounds as if done in one step, as
 * f32 keeps at least two more bits than f16 or bf16. */
static float odd_float_from_double(double d) {
    float f = (float)d;
    if (!isfinite(f) || (double)f == d)
        return f;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (!(bits & 1u))
        f = nextafterf(f, d > (double)f ? INFINITY : -INFINITY);
    return f;
}

static float odd_float_from_int(int64_t v) {
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag < (1u << 24))
        return (float)v;
    int shift = 0;
    while ((mag >> shift) >= (1u << 24))
        shift++;
    uint64_t kept = mag >> shift;
    if (mag & ((UINT64_C(1) << shift) - 1))
        kept |= 1;
    float f = ldexpf((float)kept, shift);
    return v < 0 ? -f : f;
}

/* Float to int64, truncating; NaN gives 0 and out-of-range values saturate (a plain
 * cast would be undefined behaviour). */
static int64_t trunc_to_i64(double d) {
    if (isnan(d))
        return 0;
    if (d >= 9223372036854775808.0)
        return INT64_MAX;
    if (d <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)d;
}

/* ---- stores: DST_from_float(double), DST_from_int(int64) ---- */

static inline elem_F32 F32_from_float(double d) { return (float)d; }
static inline elem_F32 F32_from_int(int64_t v) { return (float)v; }
static inline elem_F16 F16_from_float(double d) { return bp_f32_to_f16(odd_float_from_double(d)); }
static inline elem_F16 F16_from_int(int64_t v) { return bp_f32_to_f16(odd_float_from_int(v)); }
static inline elem_BF16 BF16_from_float(double d) {
    return bp_f32_to_bf16(odd_float_from_double(d));
}
static inline elem_BF16 BF16_from_int(int64_t v) { return bp_f32_to_bf16(odd_float_from_int(v)); }
static inline elem_F64 F64_from_float(double d) { return d; }
static inline elem_F64 F64_from_int(int64_t v) { return (double)v; }
static inline elem_I8 I8_from_float(double d) { return (int8_t)trunc_to_i64(d); }
static inline elem_I8 I8_from_int(int64_t v) { return (int8_t)v; }
static inline elem_U8 U8_from_float(double d) { return (uint8_t)trunc_to_i64(d); }
static inline elem_U8 U8_from_int(int64_t v) { return (uint8_t)v; }
static inline elem_I32 I32_from_float(double d) { return (int32_t)trunc_to_i64(d); }
static inline elem_I32 I32_from_int(int64_t v) { return (int32_t)v; }
static inline elem_I64 I64_from_float(double d) { return trunc_to_i64(d); }
static inline elem_I64 I64_from_int(int64_t v) { return v; }
static inline elem_BOOL BOOL_from_float(double d) { return d != 0; }
static inline elem_BOOL BOOL_from_int(int64_t v) { return v != 0; }

/* ---- loads: CONV_SRC(DST, v) converts a stored SRC element to DST ---- */

#define CONV_F32(D, v) D##_from_float(v)
#define CONV_F16(D, v) D##_from_float(bp_f16_to_f32(v))
#define CONV_BF16(D, v) D##_from_float(bp_bf16_to_f32(v))
#define CONV_F64(D, v) D##_from_float(v)
#define CONV_I8(D, v) D##_from_int(v)
#define CONV_U8(D, v) D##_from_int(v)
#define CONV_I32(D, v) D##_from_int(v)
#define CONV_I64(D, v) D##_from_int(v)
#define CONV_BOOL(D, v) D##_from_int((v) != 0)

/* ---- chunk bodies run by bp_parallel_for ---- */

typedef void (*chunk_fn)(void *ctx, int64_t begin, int64_t end);

typedef struct copy_ctx {
    const bp_tensor_desc *out;
    const bp_tensor_desc *in;
    bool linear; /* both contiguous with equal numel: element i is at index i in both */
} copy_ctx;

/* convert_S_to_D: out (dtype D) = in (dtype S), over elements [begin, end). */
#define CONVERT_FN(S, D)                                                                   \
    static void convert_##S##_to_##D(void *ctx, int64_t begin, int64_t end) {              \
        const copy_ctx *c = ctx;                                                           \
        elem_##D *o = c->out->data;                                                        \
        const elem_##S *x = c->in->data;                                                   \
        if (c->linear) {                                                                   \
            for (int64_t i = begin; i < end; i++)                                          \
                o[i] = CONV_##S(D, x[i]);                                                  \
            return;                                                                        \
        }                                                                                  \
        bp_nd_iter it;                                                                     \
        bp_nd_iter_init(&it, c->out, 1, (const bp_tensor_desc *const[]){c->in}, begin);    \
        for (int64_t i = begin; i < end; i++, bp_nd_iter_next(&it))                        \
            o[it.offset[0]] = CONV_##S(D, x[it.offset[1]]);                                \
    }
#define CONVERT_TO(S, D) CONVERT_FN(S, D)
#define CONVERT_ALL(name, D, unused) SRC_DTYPES(CONVERT_TO, D)
DTYPES(CONVERT_ALL, _)

/* Same-dtype moves and fills only need the element size. */
#define SIZED(X) X(1, uint8_t) X(2, uint16_t) X(4, uint32_t) X(8, uint64_t)

#define MOVE_FN(size, T)                                                                   \
    static void move_##size(void *ctx, int64_t begin, int64_t end) {                       \
        const copy_ctx *c = ctx;                                                           \
        T *o = c->out->data;                                                               \
        const T *x = c->in->data;                                                          \
        if (c->linear) {                                                                   \
            memcpy(o + begin, x + begin, (size_t)(end - begin) * sizeof(T));               \
            return;                                                                        \
        }                                                                                  \
        bp_nd_iter it;                                                                     \
        bp_nd_iter_init(&it, c->out, 1, (const bp_tensor_desc *const[]){c->in}, begin);    \
        for (int64_t i = begin; i < end; i++, bp_nd_iter_next(&it))                        \
            o[it.offset[0]] = x[it.offset[1]];                                             \
    }
SIZED(MOVE_FN)

typedef struct fill_ctx {
    const bp_tensor_desc *out;
    uint64_t value; /* the element's bytes, in the low `size` bytes (memcpy'd) */
} fill_ctx;

#define FILL_FN(size, T)                                                                   \
    static void fill_##size(void *ctx, int64_t begin, int64_t end) {                       \
        const fill_ctx *c = ctx;                                                           \
        T *o = c->out->data, v;                                                            \
        memcpy(&v, &c->value, sizeof v);                                                   \
        if (bp_desc_contiguous(c->out)) {                                                  \
            for (int64_t i = begin; i < end; i++)                                          \
                o[i] = v;                                                                  \
            return;                                                                        \
        }                                                                                  \
        bp_nd_iter it;                                                                     \
        bp_nd_iter_init(&it, c->out, 0, NULL, begin);                                      \
        for (int64_t i = begin; i < end; i++, bp_nd_iter_next(&it))                        \
            o[it.offset[0]] = v;                                                           \
    }
SIZED(FILL_FN)

static chunk_fn move_for_size(size_t size) {
    switch (size) {
    case 1: return move_1;
    case 2: return move_2;
    case 4: return move_4;
    default: return move_8;
    }
}

static chunk_fn fill_for_size(size_t size) {
    switch (size) {
    case 1: return fill_1;
    case 2: return fill_2;
    case 4: return fill_4;
    default: return fill_8;
    }
}

static int64_t desc_numel(const bp_tensor_desc *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* Runs `fn` over out's elements: out = in, broadcast to out's shape. */
static void run_copy(const bp_tensor_desc *out, const bp_tensor_desc *in, chunk_fn fn) {
    int64_t n = desc_numel(out);
    if (n == 0)
        return;
    copy_ctx ctx = {
        .out = out,
        .in = in,
        .linear = desc_numel(in) == n && bp_desc_contiguous(out) && bp_desc_contiguous(in),
    };
    bp_parallel_for(n, GRAIN, fn, &ctx);
}

/* ---- kernels ---- */

/* The converters into each destination dtype, indexed by source dtype. */
#define CONVERTER(S, D) [BP_DTYPE_##S] = convert_##S##_to_##D,
#define CONVERTERS_TO(name, D, unused)                                                     \
    static const chunk_fn converters_to_##D[BP_DTYPE_COUNT] = {SRC_DTYPES(CONVERTER, D)};
DTYPES(CONVERTERS_TO, _)

static void copy_kernel(const bp_kernel_call *call, const chunk_fn *converters) {
    const bp_tensor_desc *out = call->outputs[0], *in = call->inputs[0];
    chunk_fn fn = in->dtype == out->dtype ? move_for_size(bp_dtype_size(out->dtype))
                                          : converters[in->dtype];
    run_copy(out, in, fn);
}

static void fill_kernel(const bp_kernel_call *call, const void *value, size_t size) {
    fill_ctx ctx = {.out = call->outputs[0], .value = 0};
    memcpy(&ctx.value, value, size);
    int64_t n = desc_numel(ctx.out);
    if (n > 0)
        bp_parallel_for(n, GRAIN, fill_for_size(size), &ctx);
}

/* Each input goes to its slice of the output along attrs->dim. */
static void cat_kernel(const bp_kernel_call *call) {
    const bp_cat_attrs *attrs = call->attrs;
    const bp_tensor_desc *out = call->outputs[0];
    size_t size = bp_dtype_size(out->dtype);
    int dim = attrs->dim;
    int64_t start = 0;
    for (int k = 0; k < call->n_inputs; k++) {
        const bp_tensor_desc *in = call->inputs[k];
        if (desc_numel(in) > 0) {
            bp_tensor_desc part = *out;
            part.shape[dim] = in->shape[dim];
            part.data = (char *)out->data + start * out->strides[dim] * (int64_t)size;
            run_copy(&part, in, move_for_size(size));
        }
        start += in->shape[dim];
    }
}

/* The registered kernels bp_cpu_{copy,fill,cat}_<dtype> (listed in copy.list). */
#define KERNELS(name, D, unused)                                                           \
    void bp_cpu_copy_##name(const bp_kernel_call *call);                                   \
    void bp_cpu_copy_##name(const bp_kernel_call *call) {                                  \
        copy_kernel(call, converters_to_##D);                                              \
    }                                                                                      \
    void bp_cpu_fill_##name(const bp_kernel_call *call);                                   \
    void bp_cpu_fill_##name(const bp_kernel_call *call) {                                  \
        const bp_fill_attrs *attrs = call->attrs;                                          \
        elem_##D v = D##_from_float(attrs->value);                                         \
        fill_kernel(call, &v, sizeof v);                                                   \
    }                                                                                      \
    void bp_cpu_cat_##name(const bp_kernel_call *call);                                    \
    void bp_cpu_cat_##name(const bp_kernel_call *call) { cat_kernel(call); }
DTYPES(KERNELS, _)
