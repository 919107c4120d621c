/* gpu: the elementwise family as the host calls it: fill, copy, cat and where (every
 * dtype); add, sub, mul, div, scale, exp, tanh, silu, gelu; sum, max, mean; softmax;
 * rmsnorm, layernorm and rope (f32, f16, bf16); add, sub, mul, sum and max also for i32
 * and i64.
 *
 * Each kernel function plans its operands with <backplane/kernel_plan.h>, picks its
 * kernel of kernels/elementwise.cu and launches it on the call's stream; nothing else
 * touches the driver, and a call without output elements launches nothing. Grids are
 * 1-D and capped at a few waves of the device: the kernels loop (grid-stride). Row ops
 * run a block (or, for short softmax rows, a warp) per row when the row is contiguous,
 * and a thread per row for reductions whose rows are short or far apart in memory. */
#include <string.h>

#include <backplane/kernel_plan.h>

#include "gpu_internal.h"
#include "elementwise_args.h"

_Static_assert(GPU_EW_MAX_DIMS == BP_KERNEL_MAX_DIMS && GPU_EW_MAX_OPERANDS == BP_PLAN_MAX_OPERANDS,
               "a gpu_ew_layout holds a bp_plan");
_Static_assert(GPU_EW_F32 == BP_DTYPE_F32 && GPU_EW_F16 == BP_DTYPE_F16 &&
                   GPU_EW_BF16 == BP_DTYPE_BF16 && GPU_EW_F64 == BP_DTYPE_F64 &&
                   GPU_EW_I8 == BP_DTYPE_I8 && GPU_EW_U8 == BP_DTYPE_U8 &&
                   GPU_EW_I32 == BP_DTYPE_I32 && GPU_EW_I64 == BP_DTYPE_I64 &&
                   GPU_EW_BOOL == BP_DTYPE_BOOL,
               "ew_convert takes bp_dtype values");

/* Grids hold at most WAVES times the threads the device's SMs run at once. */
#define WAVES 4
#define THREADS_PER_SM 2048

#define FLOAT_DTYPES \
    (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | BP_DTYPE_BIT(BP_DTYPE_BF16))
/* The dtypes of add, sub, mul, sum and max (ops/elementwise.c, ops/reduce.c). */
#define ARITH_DTYPES (FLOAT_DTYPES | BP_DTYPE_BIT(BP_DTYPE_I32) | BP_DTYPE_BIT(BP_DTYPE_I64))
#define ALL_DTYPES ((1u << BP_DTYPE_COUNT) - 1u)

/* ---- kernels by dtype (indexed by bp_dtype: float kernels F32, F16, BF16; kernels of
 * ARITH_DTYPES also I32, I64) ---- */

#define BY_FLOAT_DTYPE(prefix)                                                               \
    {[BP_DTYPE_F32] = GPU_K_##prefix##_f32, [BP_DTYPE_F16] = GPU_K_##prefix##_f16,            \
     [BP_DTYPE_BF16] = GPU_K_##prefix##_bf16}
#define BY_ARITH_DTYPE(prefix)                                                               \
    {[BP_DTYPE_F32] = GPU_K_##prefix##_f32, [BP_DTYPE_F16] = GPU_K_##prefix##_f16,            \
     [BP_DTYPE_BF16] = GPU_K_##prefix##_bf16, [BP_DTYPE_I32] = GPU_K_##prefix##_i32,          \
     [BP_DTYPE_I64] = GPU_K_##prefix##_i64}
/* By element size: 1, 2, 4, 8 bytes (size_index). */
#define BY_SIZE(prefix)                                                                       \
    {GPU_K_##prefix##_1, GPU_K_##prefix##_2, GPU_K_##prefix##_4, GPU_K_##prefix##_8}

static const gpu_kernel_id unary_kernels[3] = BY_FLOAT_DTYPE(ew_unary);
static const gpu_kernel_id binary_kernels[BP_DTYPE_COUNT] = BY_ARITH_DTYPE(ew_binary);
static const gpu_kernel_id reduce_block_kernels[BP_DTYPE_COUNT] = BY_ARITH_DTYPE(ew_reduce_block);
static const gpu_kernel_id reduce_thread_kernels[BP_DTYPE_COUNT] =
    BY_ARITH_DTYPE(ew_reduce_thread);
static const gpu_kernel_id softmax_block_kernels[3] = BY_FLOAT_DTYPE(ew_softmax_block);
static const gpu_kernel_id norm_kernels[3] = BY_FLOAT_DTYPE(ew_norm);
static const gpu_kernel_id rope_kernels[3] = BY_FLOAT_DTYPE(ew_rope);
/* [dtype][e]: rows of up to warp size * (8 << e) elements. */
static const gpu_kernel_id softmax_warp_kernels[3][4] = {
    [BP_DTYPE_F32] = {GPU_K_ew_softmax_warp8_f32, GPU_K_ew_softmax_warp16_f32,
                      GPU_K_ew_softmax_warp32_f32, GPU_K_ew_softmax_warp64_f32},
    [BP_DTYPE_F16] = {GPU_K_ew_softmax_warp8_f16, GPU_K_ew_softmax_warp16_f16,
                      GPU_K_ew_softmax_warp32_f16, GPU_K_ew_softmax_warp64_f16},
    [BP_DTYPE_BF16] = {GPU_K_ew_softmax_warp8_bf16, GPU_K_ew_softmax_warp16_bf16,
                       GPU_K_ew_softmax_warp32_bf16, GPU_K_ew_softmax_warp64_bf16},
};
static const gpu_kernel_id move_kernels[4] = BY_SIZE(ew_move);
static const gpu_kernel_id fill_kernels[4] = BY_SIZE(ew_fill);
static const gpu_kernel_id where_kernels[4] = BY_SIZE(ew_where);
static const gpu_kernel_id convert_kernels[BP_DTYPE_COUNT] = {
    [BP_DTYPE_F32] = GPU_K_ew_convert_f32, [BP_DTYPE_F16] = GPU_K_ew_convert_f16,
    [BP_DTYPE_BF16] = GPU_K_ew_convert_bf16, [BP_DTYPE_F64] = GPU_K_ew_convert_f64,
    [BP_DTYPE_I8] = GPU_K_ew_convert_i8, [BP_DTYPE_U8] = GPU_K_ew_convert_u8,
    [BP_DTYPE_I32] = GPU_K_ew_convert_i32, [BP_DTYPE_I64] = GPU_K_ew_convert_i64,
    [BP_DTYPE_BOOL] = GPU_K_ew_convert_bool,
};

/* ---- helpers ---- */

/* Index of an element size in the BY_SIZE tables. */
static int size_index(size_t size) {
    return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
}

static void set_layout(gpu_ew_layout *l, const bp_plan *p) {
    l->ndim = p->ndim;
    l->path = bp_plan_is_flat(p) ? GPU_EW_FLAT : GPU_EW_STRIDED;
    l->numel = p->numel;
    memcpy(l->shape, p->shape, sizeof l->shape);
    memcpy(l->strides, p->strides, sizeof l->strides);
}

/* The rows of `in` along `dim` (bp_plan_rows). */
static void set_rows(gpu_ew_rows *r, const bp_tensor_desc *out, const bp_tensor_desc *in, int dim,
                     bool out_has_dim) {
    bp_row_plan plan;
    bp_plan_rows(&plan, out, in, dim, out_has_dim);
    set_layout(&r->rows, &plan.rows);
    r->len = plan.len;
    r->in_stride = plan.in_stride;
    r->out_stride = plan.out_stride;
}

/* Threads the device runs at once. */
static int64_t device_threads(const gpu_stream *s) {
    int sms = s->device->info.multiprocessors;
    return (int64_t)(sms > 0 ? sms : 1) * THREADS_PER_SM;
}

/* Enqueues kernel k with `blocks` blocks of `block` threads, the grid capped at WAVES
 * waves of the device (the kernels loop over the rest). */
static bp_status launch(gpu_stream *s, gpu_kernel_id k, int64_t blocks, unsigned block,
                        unsigned smem, void **params, const char *what) {
    int64_t cap = device_threads(s) / block * WAVES;
    if (blocks > cap)
        blocks = cap;
    const unsigned grid[3] = {blocks > 0 ? (unsigned)blocks : 1u, 1, 1};
    const unsigned threads[3] = {block, 1, 1};
    return gpu_launch(s, k, grid, threads, smem, params, what);
}

/* Lanes of the device's warp (wavefront): 32 on NVIDIA, 32 or 64 on AMD. */
static unsigned warp_size(const gpu_stream *s) {
    return (unsigned)s->device->info.warp_size;
}

/* A launch of `items` independent work items, a thread each; a small count gets one
 * small block (whole warps). */
static bp_status launch_items(gpu_stream *s, gpu_kernel_id k, int64_t items, void **params,
                              const char *what) {
    unsigned w = warp_size(s);
    unsigned block =
        items >= GPU_EW_MAX_BLOCK ? GPU_EW_MAX_BLOCK : ((unsigned)items + w - 1) / w * w;
    return launch(s, k, (items + block - 1) / block, block, 0, params, what);
}

/* The layout of a map kernel (ew_unary, ew_binary, ew_move, ew_fill) over plan p of
 * elements of `esize` bytes: set_layout's, or GPU_EW_INNER where it applies. */
static void set_map_layout(gpu_ew_layout *l, const bp_plan *p, size_t esize) {
    set_layout(l, p);
    int last = p->ndim - 1;
    int64_t per = (int64_t)(16 / esize);
    if (l->path == GPU_EW_FLAT || p->shape[last] % per != 0 || p->strides[0][last] != 1)
        return;
    for (int k = 0; k < p->n; k++) {
        int64_t s = p->strides[k][last];
        if (s != 0 && s != 1)
            return;
        for (int d = 0; s == 1 && d < last; d++)
            if (p->strides[k][d] % per != 0)
                return;
    }
    l->path = GPU_EW_INNER;
}

/* Work items of a map kernel: 16-byte packs of elements unless the layout is strided. */
static int64_t map_items(const gpu_ew_layout *l, size_t esize) {
    int64_t per = l->path != GPU_EW_STRIDED ? (int64_t)(16 / esize) : 1;
    return (l->numel + per - 1) / per;
}

/* Threads per block of a row kernel: about 8 elements a thread, a warp to 256. */
static unsigned row_block(const gpu_stream *s, int64_t len) {
    unsigned block = warp_size(s);
    while (block < GPU_EW_MAX_BLOCK && (int64_t)block * 8 < len)
        block *= 2;
    return block;
}

/* Dynamic shared memory of a block kernel of rows (ew_softmax_block, ew_norm): the row
 * in f32 when it caches it. */
static unsigned row_cache_bytes(const gpu_ew_rows *r, int cache) {
    return cache ? (unsigned)r->len * (unsigned)sizeof(float) : 0;
}

/* ---- fill, copy, cat, where ---- */

static bp_status op_fill(const bp_kernel_call *call) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    if (!BP_HOST_HAS(gpu_host, run_reference_kernel))
        return gpu_error(s->device, BP_ERR_UNSUPPORTED,
                         "fill: the host lacks run_reference_kernel (ABI 1.3), which converts "
                         "the value");
    uint64_t bits; /* the value as the dtype's bits, converted as the cpu backend does */
    bp_status st = bp_host_fill_bits(gpu_host, call, &bits);
    if (st != BP_OK)
        return st;
    bp_plan p;
    bp_plan_elementwise(&p, out, 0, NULL);
    size_t es = bp_plugin_dtype_size(out->dtype);
    gpu_ew_layout l;
    set_map_layout(&l, &p, es);
    void *o = out->data;
    void *params[] = {&o, &l, &bits};
    return launch_items(s, fill_kernels[size_index(es)], map_items(&l, es), params, "fill");
}

/* out = in (one dtype), in broadcast to out's shape. */
static bp_status move(gpu_stream *s, const bp_tensor_desc *out, const bp_tensor_desc *in,
                      const char *what) {
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    bp_plan p;
    bp_plan_elementwise(&p, out, 1, &in);
    size_t es = bp_plugin_dtype_size(out->dtype);
    gpu_ew_layout l;
    set_map_layout(&l, &p, es);
    void *o = out->data, *i = in->data;
    void *params[] = {&o, &i, &l};
    return launch_items(s, move_kernels[size_index(es)], map_items(&l, es), params, what);
}

/* copy's kernel is the destination dtype's; the source may be any dtype. */
static bp_status op_copy(const bp_kernel_call *call) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *out = call->outputs[0], *in = call->inputs[0];
    if (in->dtype == out->dtype)
        return move(s, out, in, "copy");
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    bp_plan p;
    bp_plan_elementwise(&p, out, 1, &in);
    gpu_ew_layout l;
    set_layout(&l, &p);
    void *o = out->data, *i = in->data;
    int src = in->dtype;
    void *params[] = {&o, &i, &l, &src};
    return launch_items(s, convert_kernels[out->dtype], l.numel, params, "copy");
}

static bp_status cat_move(void *s, const bp_tensor_desc *part, const bp_tensor_desc *in) {
    return move(s, part, in, "cat");
}

/* Each input moves into its slice of the output along attrs->dim. */
static bp_status op_cat(const bp_kernel_call *call) {
    return bp_plugin_cat(call, cat_move, call->stream);
}

/* out = cond ? a : b: the kernel moves elements, so one per element size. */
static bp_status op_where(const bp_kernel_call *call) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    bp_plan p;
    bp_plan_elementwise(&p, out, 3, call->inputs);
    gpu_ew_layout l;
    set_layout(&l, &p);
    void *o = out->data, *c = call->inputs[0]->data, *x = call->inputs[1]->data,
         *y = call->inputs[2]->data;
    void *params[] = {&o, &c, &x, &y, &l};
    return launch_items(s, where_kernels[size_index(bp_plugin_dtype_size(out->dtype))], l.numel,
                        params, "where");
}

/* ---- arithmetic and activations ---- */

static bp_status unary(const bp_kernel_call *call, int op, float param) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    bp_plan p;
    bp_plan_elementwise(&p, out, 1, call->inputs);
    size_t es = bp_plugin_dtype_size(call->dtype);
    gpu_ew_layout l;
    set_map_layout(&l, &p, es);
    void *o = out->data, *i = call->inputs[0]->data;
    void *params[] = {&o, &i, &l, &op, &param};
    return launch_items(s, unary_kernels[call->dtype], map_items(&l, es), params, call->op_name);
}

static bp_status binary(const bp_kernel_call *call, int op) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    bp_plan p;
    bp_plan_elementwise(&p, out, 2, call->inputs);
    size_t es = bp_plugin_dtype_size(call->dtype);
    gpu_ew_layout l;
    set_map_layout(&l, &p, es);
    void *o = out->data, *a = call->inputs[0]->data, *b = call->inputs[1]->data;
    void *params[] = {&o, &a, &b, &l, &op};
    return launch_items(s, binary_kernels[call->dtype], map_items(&l, es), params, call->op_name);
}

static bp_status op_add(const bp_kernel_call *call) { return binary(call, GPU_EW_ADD); }
static bp_status op_sub(const bp_kernel_call *call) { return binary(call, GPU_EW_SUB); }
static bp_status op_mul(const bp_kernel_call *call) { return binary(call, GPU_EW_MUL); }
static bp_status op_div(const bp_kernel_call *call) { return binary(call, GPU_EW_DIV); }

static bp_status op_scale(const bp_kernel_call *call) {
    const bp_scale_attrs *a = call->attrs;
    return unary(call, GPU_EW_SCALE, a ? (float)a->alpha : 1.0f);
}

static bp_status op_exp(const bp_kernel_call *call) { return unary(call, GPU_EW_EXP, 0.0f); }
static bp_status op_tanh(const bp_kernel_call *call) { return unary(call, GPU_EW_TANH, 0.0f); }
static bp_status op_silu(const bp_kernel_call *call) { return unary(call, GPU_EW_SILU, 0.0f); }

static bp_status op_gelu(const bp_kernel_call *call) {
    const bp_gelu_attrs *a = call->attrs;
    return unary(call, a && a->approximate_tanh ? GPU_EW_GELU_TANH : GPU_EW_GELU_ERF, 0.0f);
}

/* ---- reductions ---- */

/* A block per row when the row is contiguous, or when there are too few rows to give
 * every thread of the device one; else a thread per row (adjacent threads then read
 * adjacent rows). Short rows always take a thread. */
static bp_status reduce(const bp_kernel_call *call, int op) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_reduce_attrs *a = call->attrs;
    gpu_ew_rows r;
    set_rows(&r, out, in, a && in->ndim ? a->dim : 0, out->ndim == in->ndim);
    void *o = out->data, *i = in->data;
    void *params[] = {&o, &i, &r, &op};
    int64_t rows = r.rows.numel;
    if (r.len >= warp_size(s) && (r.in_stride == 1 || rows < device_threads(s)))
        return launch(s, reduce_block_kernels[call->dtype], rows, row_block(s, r.len), 0, params,
                      call->op_name);
    return launch_items(s, reduce_thread_kernels[call->dtype], rows, params, call->op_name);
}

static bp_status op_sum(const bp_kernel_call *call) { return reduce(call, GPU_EW_SUM); }
static bp_status op_max(const bp_kernel_call *call) { return reduce(call, GPU_EW_MAX); }
static bp_status op_mean(const bp_kernel_call *call) { return reduce(call, GPU_EW_MEAN); }

/* ---- softmax, norms, rope: rows of the last dim ---- */

/* Rows up to GPU_EW_SOFTMAX_WARP_MAX long: a warp each, the row in registers (the
 * smallest kernel that holds it); longer rows: a block each, the row cached in shared
 * memory up to GPU_EW_ROW_CACHE_MAX elements. */
static bp_status op_softmax(const bp_kernel_call *call) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_softmax_attrs *a = call->attrs;
    float scale = a ? a->scale : 1.0f;
    int causal = a ? a->causal : 0;
    int64_t sq = in->ndim >= 2 ? in->shape[in->ndim - 2] : 1;
    gpu_ew_rows r;
    set_rows(&r, out, in, in->ndim - 1, true);
    void *o = out->data, *i = in->data;
    int64_t rows = r.rows.numel;
    if (r.len <= GPU_EW_SOFTMAX_WARP_MAX) {
        int e = 0;
        int64_t w = warp_size(s);
        while (e < 3 && w * (8 << e) < r.len)
            e++;
        const int64_t rows_per_block = GPU_EW_SOFTMAX_WARP_BLOCK / w;
        void *params[] = {&o, &i, &r, &scale, &causal, &sq};
        return launch(s, softmax_warp_kernels[call->dtype][e],
                      (rows + rows_per_block - 1) / rows_per_block, GPU_EW_SOFTMAX_WARP_BLOCK, 0,
                      params, "softmax");
    }
    int cache = r.len <= GPU_EW_ROW_CACHE_MAX;
    void *params[] = {&o, &i, &r, &scale, &causal, &sq, &cache};
    return launch(s, softmax_block_kernels[call->dtype], rows, row_block(s, r.len),
                  row_cache_bytes(&r, cache), params, "softmax");
}

/* rmsnorm (center 0) and layernorm (center 1): inputs {x}, {x, weight} or {x, weight,
 * bias} (ops/norm.c). A block per row, the row cached in shared memory up to
 * GPU_EW_ROW_CACHE_MAX elements. */
static bp_status norm(const bp_kernel_call *call, int center) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_norm_attrs *a = call->attrs;
    float eps = a ? a->eps : 0.0f;
    gpu_ew_rows r;
    set_rows(&r, out, in, in->ndim - 1, true);
    const bp_tensor_desc *w = call->n_inputs > 1 ? call->inputs[1] : NULL;
    const bp_tensor_desc *b = call->n_inputs > 2 ? call->inputs[2] : NULL;
    void *o = out->data, *i = in->data, *wp = w ? w->data : NULL, *bp = b ? b->data : NULL;
    int64_t ws = w ? w->strides[0] : 0, bs = b ? b->strides[0] : 0;
    int cache = r.len <= GPU_EW_ROW_CACHE_MAX;
    void *params[] = {&o, &i, &r, &wp, &ws, &bp, &bs, &eps, &center, &cache};
    return launch(s, norm_kernels[call->dtype], r.rows.numel, row_block(s, r.len),
                  row_cache_bytes(&r, cache), params, call->op_name);
}

static bp_status op_rmsnorm(const bp_kernel_call *call) { return norm(call, 0); }
static bp_status op_layernorm(const bp_kernel_call *call) { return norm(call, 1); }

/* A thread per rotated pair. */
static bp_status op_rope(const bp_kernel_call *call) {
    gpu_stream *s = call->stream;
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_rope_attrs *a = call->attrs;
    gpu_ew_rows r;
    set_rows(&r, out, in, in->ndim - 1, true);
    int64_t pairs = r.rows.numel * (r.len / 2);
    if (pairs == 0)
        return BP_OK;
    int64_t seq = in->ndim >= 2 ? in->shape[in->ndim - 2] : 1;
    float theta = a ? a->theta : 10000.0f;
    int pos = a ? a->position_offset : 0, interleaved = a ? a->interleaved : 0;
    void *o = out->data, *i = in->data;
    void *params[] = {&o, &i, &r, &seq, &theta, &pos, &interleaved};
    return launch_items(s, rope_kernels[call->dtype], pairs, params, "rope");
}

/* ---- registration ---- */

const gpu_op_entry gpu_ops_elementwise[] = {
    {"fill", op_fill, ALL_DTYPES},
    {"copy", op_copy, ALL_DTYPES},
    {"cat", op_cat, ALL_DTYPES},
    {"where", op_where, ALL_DTYPES},
    {"add", op_add, ARITH_DTYPES},
    {"sub", op_sub, ARITH_DTYPES},
    {"mul", op_mul, ARITH_DTYPES},
    {"div", op_div, FLOAT_DTYPES},
    {"scale", op_scale, FLOAT_DTYPES},
    {"exp", op_exp, FLOAT_DTYPES},
    {"tanh", op_tanh, FLOAT_DTYPES},
    {"silu", op_silu, FLOAT_DTYPES},
    {"gelu", op_gelu, FLOAT_DTYPES},
    {"sum", op_sum, ARITH_DTYPES},
    {"max", op_max, ARITH_DTYPES},
    {"mean", op_mean, FLOAT_DTYPES},
    {"softmax", op_softmax, FLOAT_DTYPES},
    {"rmsnorm", op_rmsnorm, FLOAT_DTYPES},
    {"layernorm", op_layernorm, FLOAT_DTYPES},
    {"rope", op_rope, FLOAT_DTYPES},
    {NULL, NULL, 0},
};
