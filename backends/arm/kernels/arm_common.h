/* What the data, elementwise, reduce and norm families of the arm backend share:
 * element conversions, a walker over strided (and broadcast) operands that hands out
 * runs along the innermost dim, f32 staging tiles, and the table of vector row
 * functions (arm_f32_ops) that the NEON (vec_neon.c) and SVE (vec_sve.c) files fill.
 *
 * The float drivers are portable C: they cut every tensor into runs, stage a run of
 * f16/bf16 or strided elements into an f32 tile on the stack, and call the row
 * functions of the variant the family picked (NEON or SVE), which are their only
 * vector code. Integer, where and data runs call the integer table (arm_int_ops) of
 * the variant: vec_int_neon.c or vec_int_sve.c. */
#ifndef BP_ARM_COMMON_H
#define BP_ARM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <backplane/plugin_util.h>

#include "arm_kernel.h"

/* Elements of an f32 staging tile: 4 KiB; a kernel keeps at most 6 on its stack (rope,
 * with its 16 KiB angle table: 40 KiB, within arm_kernel.h's 64 KiB). */
enum { AK_TILE = 1024 };

/* ---- scalar conversions (hardware f16 conversions, ties to even) ---- */

static inline float ak_f16_to_f32(uint16_t h) {
    __fp16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}

static inline uint16_t ak_f32_to_f16(float f) {
    __fp16 v = (__fp16)f;
    uint16_t h;
    memcpy(&h, &v, sizeof h);
    return h;
}

static inline float ak_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Nearest even on the upper 16 bits; a NaN stays a (quiet) NaN. */
static inline uint16_t ak_f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (f != f)
        return (uint16_t)((bits >> 16) | 0x40u);
    uint32_t lsb = (bits >> 16) & 1u;
    return (uint16_t)((bits + 0x7fffu + lsb) >> 16);
}

/* Element i of a float-dtype (f32, f16, bf16) buffer as f32, and the reverse. */
static inline float ak_get_f32(const void *p, bp_dtype dt, int64_t i) {
    if (dt == BP_DTYPE_F32)
        return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return dt == BP_DTYPE_F16 ? ak_f16_to_f32(h) : ak_bf16_to_f32(h);
}

static inline void ak_put_f32(void *p, bp_dtype dt, int64_t i, float v) {
    if (dt == BP_DTYPE_F32)
        ((float *)p)[i] = v;
    else
        ((uint16_t *)p)[i] = dt == BP_DTYPE_F16 ? ak_f32_to_f16(v) : ak_f32_to_bf16(v);
}

/* Index of a float dtype in the tables below: f32 0, f16 1, bf16 2. */
static inline int ak_fidx(bp_dtype dt) {
    return dt == BP_DTYPE_F32 ? 0 : dt == BP_DTYPE_F16 ? 1 : 2;
}

/* ---- shapes ---- */

/* Elements of a view and the size of an element: bp_plugin_numel and
 * bp_plugin_dtype_size of <backplane/plugin_util.h>. */

/* ---- the walker ----
 * Walks the elements of an output shape in row-major order, in runs along the
 * innermost dim, for up to AK_MAX_OPS operands (operand 0 is the output, the others
 * are broadcast to its shape: a missing or size-1 dim gets step 0). Dims that every
 * operand walks as one (each operand's stride of the outer dim equals its stride of
 * the inner one times the inner size) are merged first: contiguous operands give one
 * long run, a bias broadcast over the rows of a matrix a run per row. */
enum { AK_MAX_OPS = 4 };

typedef struct ak_walk {
    int ndim, nops;
    int64_t shape[BP_KERNEL_MAX_DIMS];
    int64_t stride[AK_MAX_OPS][BP_KERNEL_MAX_DIMS]; /* in elements */
    int64_t pos[BP_KERNEL_MAX_DIMS];
    char *base[AK_MAX_OPS];
    size_t esize[AK_MAX_OPS];
} ak_walk;

/* A run: n elements, operand k's first at ptr[k], the next step[k] elements further. */
typedef struct ak_run {
    int64_t n;
    char *ptr[AK_MAX_OPS];
    int64_t step[AK_MAX_OPS];
} ak_run;

void ak_walk_init(ak_walk *w, const bp_tensor_desc *out, int n_in,
                  const bp_tensor_desc *const *in);
/* Positions the walker at element `index` of the output (row-major). */
void ak_walk_seek(ak_walk *w, int64_t index);
/* The run at the walker's position, of at most `limit` elements; advances past it. */
void ak_walk_next(ak_walk *w, int64_t limit, ak_run *run);

/* True when every step of the run is 1 (all operands contiguous along it). */
static inline bool ak_run_unit(const ak_run *r, int nops) {
    for (int k = 0; k < nops; k++)
        if (r->step[k] != 1)
            return false;
    return true;
}

/* ---- rows of a reduction or normalisation ----
 * One output element (reduce) or output row (softmax, norms) per row of the input
 * along `dim`. The outer walker has operand 0 = the output, operand 1 = the input,
 * both with `dim` at size 1 (put back with size 1 where keepdim dropped it). */
typedef struct ak_rows {
    bp_tensor_desc in, out;  /* dim collapsed to 1 */
    int64_t len;             /* elements per row */
    int64_t in_step, out_step;
    int64_t count;           /* rows */
} ak_rows;

void ak_rows_init(ak_rows *rows, const bp_tensor_desc *in, const bp_tensor_desc *out, int dim);

/* The rows from row `first` on: `in` and `out` point at the current row's first
 * element; ak_row_iter_next moves both to the next row. */
typedef struct ak_row_iter {
    ak_walk w;
    char *in, *out;
} ak_row_iter;

void ak_row_iter_init(ak_row_iter *it, const ak_rows *rows, int64_t first);
void ak_row_iter_next(ak_row_iter *it);

/* Runs fn over [0, n) on the cluster, chunks of at least `grain`. */
static inline void ak_parallel(const arm_exec *ex, int64_t n, int64_t grain, arm_range_fn fn,
                               void *ctx) {
    if (n > 0)
        ex->parallel_for(ex, n, grain > 0 ? grain : 1, fn, ctx);
}

/* ---- staging: a run of float-dtype elements as a contiguous f32 array ---- */

/* The f32 vector row functions of one ISA. Every function takes contiguous f32
 * arrays of n elements; an output may be the same array as an input (in place). */
typedef struct arm_f32_ops {
    const char *variant; /* "neon", "sve" */
    /* dst = n elements of dtype f32/f16/bf16 (index ak_fidx) widened, and back
     * (rounded to nearest even). */
    void (*load[3])(float *dst, const void *src, int64_t n);
    void (*store[3])(void *dst, const float *src, int64_t n);
    void (*add)(float *o, const float *a, const float *b, int64_t n);
    void (*sub)(float *o, const float *a, const float *b, int64_t n);
    void (*mul)(float *o, const float *a, const float *b, int64_t n);
    void (*div)(float *o, const float *a, const float *b, int64_t n);
    void (*max2)(float *o, const float *a, const float *b, int64_t n); /* a NaN wins */
    void (*scale)(float *o, const float *a, float alpha, int64_t n);
    void (*exp)(float *o, const float *a, int64_t n);
    void (*tanh)(float *o, const float *a, int64_t n);
    void (*silu)(float *o, const float *a, int64_t n);
    void (*gelu_tanh)(float *o, const float *a, int64_t n);
    void (*gelu_erf)(float *o, const float *a, int64_t n);
    /* Reductions: sum, max (a NaN wins), sum of squares, sum of (x - c)^2. */
    float (*sum)(const float *x, int64_t n);
    float (*max)(const float *x, int64_t n);
    float (*sumsq)(const float *x, float c, int64_t n);
    /* softmax: max of x * s; y = exp(x * s - m) returning sum y; y *= k. */
    float (*max_scaled)(const float *x, float s, int64_t n);
    float (*exp_shift)(float *y, const float *x, float s, float m, int64_t n);
    /* norms: y = (x - c) * k * w + b (w, b may be NULL: 1, 0). */
    void (*affine)(float *y, const float *x, float c, float k, const float *w, const float *b,
                   int64_t n);
    /* rope: (y0, y1) = (x0 c - x1 s, x1 c + x0 s). */
    void (*rotate)(float *y0, float *y1, const float *x0, const float *x1, const float *c,
                   const float *s, int64_t n);
} arm_f32_ops;

/* The table of a vec_<isa>.c file: its row functions have these names. */
#define AK_F32_OPS_TABLE(name)                                                             \
    {                                                                                      \
        .variant = name, .load = {load_f32, load_f16, load_bf16},                          \
        .store = {store_f32, store_f16, store_bf16}, .add = add_row, .sub = sub_row,       \
        .mul = mul_row, .div = div_row, .max2 = max2_row, .scale = scale_row,              \
        .exp = exp_row, .tanh = tanh_row, .silu = silu_row, .gelu_tanh = gelu_tanh_row,    \
        .gelu_erf = gelu_erf_row, .sum = sum_row, .max = max_row, .sumsq = sumsq_row,      \
        .max_scaled = max_scaled_row, .exp_shift = exp_shift_row, .affine = affine_row,    \
        .rotate = rotate_row,                                                              \
    }

extern const arm_f32_ops arm_f32_neon; /* vec_neon.c */
extern const arm_f32_ops arm_f32_sve;  /* vec_sve.c: only when features->sve */

/* f16 arithmetic in f16 instructions: o = a op b on n contiguous f16 elements. One
 * +, -, * or / rounded to f16 equals the f32 result rounded once (f32 has more than
 * 2 * 11 + 2 bits), so these give the same bits as the f32 path. */
typedef void (*arm_f16_binary)(uint16_t *o, const uint16_t *a, const uint16_t *b, int64_t n);
typedef struct arm_f16_ops {
    arm_f16_binary add, sub, mul, div;
} arm_f16_ops;

extern const arm_f16_ops arm_f16_fp16; /* vec_fp16.c: only when features->fp16 */
extern const arm_f16_ops arm_f16_sve;  /* vec_sve.c: only when features->sve */

/* The row functions for the features: SVE where present, else NEON. */
static inline const arm_f32_ops *ak_f32_ops(const arm_features *f) {
    return f->sve ? &arm_f32_sve : &arm_f32_neon;
}

/* ---- integer and byte runs ----
 * The contiguous-run functions of the integer ops, where and the data moves, of one
 * ISA (vec_int_neon.c, vec_int_sve.c). Integers wrap (unsigned arithmetic); a strided
 * or broadcast run never gets here (the families walk it element by element). */
typedef void (*arm_u32_binary)(uint32_t *o, const uint32_t *a, const uint32_t *b, int64_t n);
typedef void (*arm_u64_binary)(uint64_t *o, const uint64_t *a, const uint64_t *b, int64_t n);
typedef struct arm_int_ops {
    const char *variant; /* "neon", "sve" */
    /* o = a op b: index 0 add, 1 sub, 2 mul (the order of the elementwise family). */
    arm_u32_binary arith32[3];
    arm_u64_binary arith64[3];
    /* The wrapping sum, and the max (n >= 1), of n elements. */
    uint32_t (*sum32)(const uint32_t *x, int64_t n);
    uint64_t (*sum64)(const uint64_t *x, int64_t n);
    int32_t (*max32)(const int32_t *x, int64_t n);
    int64_t (*max64)(const int64_t *x, int64_t n);
    /* o = c ? a : b for n elements of `size` bytes (1, 2, 4 or 8); c: n bytes, != 0 is
     * true. o may be a or b itself (in place). */
    void (*where)(uint8_t *o, const uint8_t *c, const uint8_t *a, const uint8_t *b, int64_t n,
                  size_t size);
    /* dst = src, `bytes` bytes (dst == src: nothing changes; no other overlap). */
    void (*move)(uint8_t *dst, const uint8_t *src, size_t bytes);
    /* `bytes` bytes of `pattern` (16 bytes: one element of 1 to 8 bytes, repeated)
     * from dst on, dst being the start of an element. */
    void (*fill)(uint8_t *dst, const uint8_t *pattern, size_t bytes);
    /* dst = n elements of src converted from dtype `from` to `to` (different dtypes,
     * not both of f32, f16, bf16), exactly as data.c converts one element; false
     * (nothing written) for a pair it has no vector path for. NULL: none. */
    bool (*convert)(uint8_t *dst, bp_dtype to, const uint8_t *src, bp_dtype from, int64_t n);
} arm_int_ops;

extern const arm_int_ops arm_int_neon; /* vec_int_neon.c */
extern const arm_int_ops arm_int_sve;  /* vec_int_sve.c: only when features->sve */

/* The integer functions for the features: SVE where present, else NEON. A family
 * names the variant at registration with ak_int_ops(f)->variant and its body picks
 * with ak_int_ops(ex->features): the same features (the backend's), so the same. */
static inline const arm_int_ops *ak_int_ops(const arm_features *f) {
    return f->sve ? &arm_int_sve : &arm_int_neon;
}

/* n elements of dtype dt at p, step apart, as f32: p itself when it is an f32 run of
 * step 1, else `tile` filled (a vector load for step 1, element by element otherwise). */
static inline const float *ak_stage_in(const arm_f32_ops *ops, float *tile, const void *p,
                                       bp_dtype dt, int64_t step, int64_t n) {
    if (step == 1) {
        if (dt == BP_DTYPE_F32)
            return p;
        ops->load[ak_fidx(dt)](tile, p, n);
        return tile;
    }
    for (int64_t i = 0; i < n; i++)
        tile[i] = ak_get_f32(p, dt, i * step);
    return tile;
}

/* Where to compute n output elements bound for p: p itself for an f32 run of step 1,
 * else `tile` (then ak_stage_out writes it back). */
static inline float *ak_out_buf(float *tile, void *p, bp_dtype dt, int64_t step) {
    return dt == BP_DTYPE_F32 && step == 1 ? p : tile;
}

static inline void ak_stage_out(const arm_f32_ops *ops, void *p, bp_dtype dt, int64_t step,
                                const float *buf, int64_t n) {
    if (buf == p)
        return;
    if (step == 1) {
        ops->store[ak_fidx(dt)](p, buf, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        ak_put_f32(p, dt, i * step, buf[i]);
}

/* ---- registration ---- */

/* Appends one kernel to out (when it fits) and counts it. */
static inline void ak_add(arm_kernel *out, size_t cap, size_t *n, const char *op, bp_dtype dt,
                          arm_kernel_body body, const char *variant) {
    if (*n < cap)
        out[*n] = (arm_kernel){.op = op, .dtype = dt, .body = body, .variant = variant};
    (*n)++;
}

/* Appends op for f32, f16 and bf16: the SVE body where the CPU has SVE, else NEON. */
static inline void ak_add_floats(arm_kernel *out, size_t cap, size_t *n, const arm_features *f,
                                 const char *op, arm_kernel_body neon, arm_kernel_body sve) {
    static const bp_dtype floats[] = {BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16};
    for (size_t d = 0; d < 3; d++)
        ak_add(out, cap, n, op, floats[d], f->sve ? sve : neon, f->sve ? "sve" : "neon");
}

#endif
