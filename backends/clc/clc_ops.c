/* clc: the op kernels (clc.h). Each function prepares the tensor arguments of one op
 * call (buffers, offsets, planned descriptors), gets its program's kernel for the dtype
 * from the backend and enqueues it on the call's stream. This file is the only place
 * where kernel arguments are packed, for every backend. Ops with nothing to compute (no
 * output elements) enqueue nothing. The kernels are kernels/NAME.cl; docs/ops.md has
 * the semantics they follow.
 *
 * A tensor reaches a kernel as two arguments: its buffer, and a tdesc by value
 * (kernels/prelude.cl: the element offset in the buffer, dims, shape and strides in
 * elements). Operands are planned together with <backplane/kernel_plan.h> (aligned to
 * the output's dims, size-1 dims dropped, contiguous dims merged), so that most tensors
 * become one dim. */
#include "clc.h"

#include <backplane/kernel_plan.h>
#include <backplane/plugin_util.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define CLC_MAXD BP_KERNEL_MAX_DIMS

/* kernels/prelude.cl's tdesc; OpenCL C's long is 64 bits. */
typedef struct clc_tdesc {
    int64_t off;
    int64_t ndim;
    int64_t shape[CLC_MAXD];
    int64_t stride[CLC_MAXD];
} clc_tdesc;

/* A tensor argument: its buffer and descriptor. */
typedef struct clc_targ {
    void *mem;
    clc_tdesc d;
} clc_targ;

#define KARG(x) ((clc_karg){sizeof(x), &(x)})
#define KLOCAL(bytes) ((clc_karg){(bytes), NULL})

/* The plugin's own stream-to-device function (clc_register_kernels). */
static clc_stream_device_fn stream_device;

/* ---- helpers ---- */

/* Sets arg->mem and arg->d.off from t's data pointer, and d to t's own shape and
 * strides. A tensor without elements has no memory to name: it gets `empty_mem` (any
 * valid buffer; kernels never read it) at offset 0. */
static bp_status tensor_arg(clc_device *dev, const bp_tensor_desc *t, void *empty_mem,
                            clc_targ *arg, const char *what) {
    memset(arg, 0, sizeof *arg);
    arg->d.ndim = t->ndim;
    for (int d = 0; d < t->ndim && d < CLC_MAXD; d++) {
        arg->d.shape[d] = t->shape[d];
        arg->d.stride[d] = t->strides[d];
    }
    if (bp_plugin_numel(t) == 0) {
        arg->mem = empty_mem;
        return BP_OK;
    }
    size_t esize = bp_plugin_dtype_size(t->dtype), off = 0;
    bp_status st = dev->ops->translate(dev, t->data, esize, &arg->mem, &off, what);
    if (st != BP_OK)
        return st;
    if (off % esize != 0)
        return dev->host->set_error(
            BP_ERR_INVALID_ARGUMENT,
            "%s:%d: %s: the tensor's data is at byte %zu of its buffer, not a multiple of "
            "its %zu-byte elements",
            dev->type, dev->index, what, off, esize);
    arg->d.off = (int64_t)(off / esize);
    return BP_OK;
}

/* Sets every args[k].d's dims (k < p->n) to operand k of the plan, keeping its offset. */
static void plan_args(const bp_plan *p, clc_targ *args) {
    for (int k = 0; k < p->n; k++) {
        args[k].d.ndim = p->ndim;
        for (int d = 0; d < CLC_MAXD; d++) {
            args[k].d.shape[d] = p->shape[d];
            args[k].d.stride[d] = p->strides[k][d];
        }
    }
}

/* Plans an elementwise call: args[0] is `out`, args[1 + k] input k (their buffers and
 * offsets already set), the inputs broadcast to out's shape. */
static void plan_elementwise(const bp_tensor_desc *out, int n_in,
                             const bp_tensor_desc *const *ins, clc_targ *args) {
    bp_plan p;
    bp_plan_elementwise(&p, out, n_in, ins);
    plan_args(&p, args);
}

static bp_status get_kernel(clc_device *dev, clc_program_id id, int variant, const char *name,
                            void **k) {
    return dev->ops->get_kernel(dev, id, variant, name, k);
}

/* A 1-D launch of n work-items (rounded up to the local size: kernels GUARD). */
static bp_status launch_1d(void *s, clc_device *dev, void *k, const char *what, int nargs,
                           const clc_karg *args, int64_t n) {
    size_t limit = dev->max_wg < 256 ? dev->max_wg : 256, local = 1;
    while (local * 2 <= limit)
        local *= 2;
    size_t global = ((size_t)n + local - 1) / local * local;
    return dev->ops->launch(s, k, what, nargs, args, 1, &global, &local);
}

static bool contiguous_1d(const clc_targ *a) {
    return a->d.ndim == 1 && (a->d.stride[0] == 1 || a->d.shape[0] == 1);
}

/* A contiguous fill, with the element as the pattern. */
static bp_status fill_buffer(void *s, clc_device *dev, const clc_targ *t, size_t esize,
                             uint64_t bits, int64_t n) {
    union {
        uint8_t b1;
        uint16_t b2;
        uint32_t b4;
        uint64_t b8;
    } pat;
    switch (esize) {
    case 1: pat.b1 = (uint8_t)bits; break;
    case 2: pat.b2 = (uint16_t)bits; break;
    case 4: pat.b4 = (uint32_t)bits; break;
    default: pat.b8 = bits; break;
    }
    return dev->ops->fill(s, t->mem, (size_t)t->d.off * esize, &pat, esize, (size_t)n * esize);
}
/* out = in (one dtype), in broadcast to out's shape. */
static bp_status move(void *s, clc_device *dev, const bp_tensor_desc *out,
                      const bp_tensor_desc *in, const char *what) {
    int64_t n = bp_plugin_numel(out);
    if (n == 0)
        return BP_OK;
    size_t es = bp_plugin_dtype_size(out->dtype);
    clc_targ t[2];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], what);
    if (st == BP_OK)
        st = tensor_arg(dev, in, t[0].mem, &t[1], what);
    if (st != BP_OK)
        return st;
    plan_elementwise(out, 1, &in, t);
    bool same_range = t[0].mem == t[1].mem && t[0].d.off < t[1].d.off + n &&
                      t[1].d.off < t[0].d.off + n;
    if (contiguous_1d(&t[0]) && contiguous_1d(&t[1]) && !same_range)
        return dev->ops->copy(s, t[0].mem, (size_t)t[0].d.off * es, t[1].mem,
                              (size_t)t[1].d.off * es, (size_t)n * es);
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_MOVE, (int)es, "k_move", &k)) != BP_OK)
        return st;
    int64_t nn = n;
    clc_karg args[] = {KARG(t[0].mem), KARG(t[0].d), KARG(t[1].mem), KARG(t[1].d), KARG(nn)};
    return launch_1d(s, dev, k, what, 5, args, n);
}

/* ---- fill, copy, cat ---- */

static bp_status op_fill(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *out = call->outputs[0];
    int64_t n = bp_plugin_numel(out);
    if (n == 0)
        return BP_OK;
    uint64_t bits;
    bp_status st = bp_host_fill_bits(dev->host, call, &bits);
    if (st != BP_OK)
        return st;
    size_t es = bp_plugin_dtype_size(out->dtype);
    clc_targ t;
    st = tensor_arg(dev, out, NULL, &t, "fill");
    if (st != BP_OK)
        return st;
    plan_elementwise(out, 0, NULL, &t);
    if (contiguous_1d(&t))
        return fill_buffer(s, dev, &t, es, bits, n);
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_MOVE, (int)es, "k_fill", &k)) != BP_OK)
        return st;
    int64_t nn = n;
    clc_karg args[] = {KARG(t.mem), KARG(t.d), KARG(nn), KARG(bits)};
    return launch_1d(s, dev, k, "fill", 4, args, n);
}

/* copy's kernel is the destination dtype's; the source may be any dtype. */
static bp_status op_copy(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *out = call->outputs[0], *in = call->inputs[0];
    if (in->dtype == out->dtype)
        return move(s, dev, out, in, "copy");
    int64_t n = bp_plugin_numel(out);
    if (n == 0)
        return BP_OK;
    clc_targ t[2];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], "copy");
    if (st == BP_OK)
        st = tensor_arg(dev, in, t[0].mem, &t[1], "copy");
    if (st != BP_OK)
        return st;
    plan_elementwise(out, 1, &in, t);
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_CONVERT, out->dtype, "k_convert", &k)) != BP_OK)
        return st;
    int32_t sdt = in->dtype;
    int64_t nn = n;
    clc_karg args[] = {KARG(t[0].mem), KARG(t[0].d), KARG(t[1].mem), KARG(t[1].d), KARG(sdt),
                       KARG(nn)};
    return launch_1d(s, dev, k, "copy", 6, args, n);
}

static bp_status cat_move(void *s, const bp_tensor_desc *part, const bp_tensor_desc *in) {
    return move(s, stream_device(s), part, in, "cat");
}

/* Each input moves into its slice of the output along attrs->dim. */
static bp_status op_cat(const bp_kernel_call *call) {
    return bp_plugin_cat(call, cat_move, call->stream);
}

/* ---- elementwise ---- */

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV };
enum { UN_SCALE, UN_EXP, UN_TANH, UN_SILU, UN_GELU };

static bp_status op_binary(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *out = call->outputs[0];
    int64_t n = bp_plugin_numel(out);
    if (n == 0)
        return BP_OK;
    clc_targ t[3];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], call->op_name);
    for (int i = 0; i < 2 && st == BP_OK; i++)
        st = tensor_arg(dev, call->inputs[i], t[0].mem, &t[1 + i], call->op_name);
    if (st != BP_OK)
        return st;
    plan_elementwise(out, 2, call->inputs, t);
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_ELEMWISE, call->dtype, "k_binary", &k)) != BP_OK)
        return st;
    int32_t op = (int32_t)(intptr_t)call->kernel_data;
    int64_t nn = n;
    clc_karg args[] = {KARG(t[0].mem), KARG(t[0].d), KARG(t[1].mem), KARG(t[1].d),
                       KARG(t[2].mem), KARG(t[2].d), KARG(op),       KARG(nn)};
    return launch_1d(s, dev, k, call->op_name, 8, args, n);
}

static bp_status op_unary(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *out = call->outputs[0];
    int64_t n = bp_plugin_numel(out);
    if (n == 0)
        return BP_OK;
    int32_t op = (int32_t)(intptr_t)call->kernel_data;
    float p = 0.0f;
    if (op == UN_SCALE)
        p = call->attrs ? (float)((const bp_scale_attrs *)call->attrs)->alpha : 1.0f;
    else if (op == UN_GELU)
        p = call->attrs && ((const bp_gelu_attrs *)call->attrs)->approximate_tanh ? 1.0f : 0.0f;
    clc_targ t[2];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], call->op_name);
    if (st == BP_OK)
        st = tensor_arg(dev, call->inputs[0], t[0].mem, &t[1], call->op_name);
    if (st != BP_OK)
        return st;
    plan_elementwise(out, 1, call->inputs, t);
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_ELEMWISE, call->dtype, "k_unary", &k)) != BP_OK)
        return st;
    int64_t nn = n;
    clc_karg args[] = {KARG(t[0].mem), KARG(t[0].d), KARG(t[1].mem), KARG(t[1].d),
                       KARG(op),       KARG(p),      KARG(nn)};
    return launch_1d(s, dev, k, call->op_name, 7, args, n);
}

/* where moves elements: one kernel per element size serves every dtype. */
static bp_status op_where(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *out = call->outputs[0];
    int64_t n = bp_plugin_numel(out);
    if (n == 0)
        return BP_OK;
    clc_targ t[4];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], "where");
    for (int i = 0; i < 3 && st == BP_OK; i++)
        st = tensor_arg(dev, call->inputs[i], t[0].mem, &t[1 + i], "where");
    if (st != BP_OK)
        return st;
    plan_elementwise(out, 3, call->inputs, t);
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_MOVE, (int)bp_plugin_dtype_size(out->dtype), "k_where", &k)) !=
        BP_OK)
        return st;
    int64_t nn = n;
    clc_karg args[] = {KARG(t[0].mem), KARG(t[0].d), KARG(t[1].mem), KARG(t[1].d), KARG(t[2].mem),
                       KARG(t[2].d),   KARG(t[3].mem), KARG(t[3].d), KARG(nn)};
    return launch_1d(s, dev, k, "where", 9, args, n);
}

/* ---- rows: reductions, softmax, norms, rope ---- */

/* A row op's layout: the rows of `len` elements along dim `dim` of `in`, and t[0] / t[1]
 * describing, per row, where the output's and the input's row start. */
typedef struct rows {
    clc_targ t[2]; /* out, in */
    int64_t count; /* rows */
    int64_t len, is, os;
} rows;

/* Rows of `in` along `dim` (bp_plan_rows); out has in's dims when `out_has_dim`, else
 * in's dims without `dim`. */
static bp_status plan_rows(clc_device *dev, const bp_tensor_desc *in, const bp_tensor_desc *out,
                           int dim, bool out_has_dim, const char *what, rows *r) {
    bp_status st = tensor_arg(dev, out, NULL, &r->t[0], what);
    if (st == BP_OK)
        st = tensor_arg(dev, in, r->t[0].mem, &r->t[1], what);
    if (st != BP_OK)
        return st;
    bp_row_plan plan;
    bp_plan_rows(&plan, out, in, dim, out_has_dim);
    plan_args(&plan.rows, r->t);
    r->count = plan.rows.numel;
    r->len = plan.len;
    r->is = plan.in_stride;
    r->os = plan.out_stride;
    return BP_OK;
}

static bp_status launch_rows(void *s, clc_device *dev, void *k, const char *what, int nargs,
                             const clc_karg *args, int64_t count) {
    size_t local = dev->rwg, global = (size_t)count * local;
    return dev->ops->launch(s, k, what, nargs, args, 1, &global, &local);
}

enum { RED_SUM, RED_MAX, RED_MEAN };

static bp_status op_reduce(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_reduce_attrs *a = call->attrs;
    int dim = a && in->ndim ? a->dim : 0;
    rows r;
    bp_status st = plan_rows(dev, in, out, dim, out->ndim == in->ndim, call->op_name, &r);
    if (st != BP_OK)
        return st;
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_REDUCE, call->dtype, "k_reduce", &k)) != BP_OK)
        return st;
    int32_t op = (int32_t)(intptr_t)call->kernel_data;
    clc_karg args[] = {KARG(r.t[0].mem), KARG(r.t[0].d), KARG(r.t[1].mem), KARG(r.t[1].d),
                       KARG(r.len),      KARG(r.is),     KARG(op)};
    return launch_rows(s, dev, k, call->op_name, 7, args, r.count);
}

static bp_status op_softmax(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_softmax_attrs *a = call->attrs;
    rows r;
    bp_status st = plan_rows(dev, in, out, in->ndim - 1, true, "softmax", &r);
    if (st != BP_OK)
        return st;
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_REDUCE, call->dtype, "k_softmax", &k)) != BP_OK)
        return st;
    float scale = a ? a->scale : 1.0f;
    int32_t causal = a ? a->causal : 0;
    int64_t sq = in->ndim >= 2 ? in->shape[in->ndim - 2] : 1;
    clc_karg args[] = {KARG(r.t[0].mem), KARG(r.t[0].d), KARG(r.t[1].mem), KARG(r.t[1].d),
                       KARG(r.len),      KARG(r.is),     KARG(r.os),       KARG(scale),
                       KARG(causal),     KARG(sq)};
    return launch_rows(s, dev, k, "softmax", 10, args, r.count);
}

/* A per-feature vector (weight, bias): its buffer, offset and stride, or absent. */
typedef struct vec_arg {
    void *mem;
    int64_t off, stride;
    int32_t present;
} vec_arg;

static bp_status vector_arg(clc_device *dev, const bp_kernel_call *call, int index, void *empty,
                            vec_arg *v) {
    memset(v, 0, sizeof *v);
    v->mem = empty;
    if (call->n_inputs <= index || !call->inputs[index])
        return BP_OK;
    clc_targ t;
    bp_status st = tensor_arg(dev, call->inputs[index], empty, &t, call->op_name);
    if (st != BP_OK)
        return st;
    v->mem = t.mem;
    v->off = t.d.off;
    v->stride = t.d.ndim ? t.d.stride[0] : 0;
    v->present = 1;
    return BP_OK;
}

static bp_status op_norm(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    bool layer = (intptr_t)call->kernel_data != 0;
    const bp_norm_attrs *a = call->attrs;
    float eps = a ? a->eps : 0.0f;
    rows r;
    bp_status st = plan_rows(dev, in, out, in->ndim - 1, true, call->op_name, &r);
    vec_arg w, b;
    if (st == BP_OK)
        st = vector_arg(dev, call, 1, r.t[0].mem, &w);
    if (st == BP_OK)
        st = vector_arg(dev, call, 2, r.t[0].mem, &b);
    if (st != BP_OK)
        return st;
    void *k;
    const char *name = layer ? "k_layernorm" : "k_rmsnorm";
    if ((st = get_kernel(dev, CLC_PROG_NORM, call->dtype, name, &k)) != BP_OK)
        return st;
    if (!layer) {
        clc_karg args[] = {KARG(r.t[0].mem), KARG(r.t[0].d), KARG(r.t[1].mem), KARG(r.t[1].d),
                           KARG(r.len),      KARG(r.is),     KARG(r.os),       KARG(w.mem),
                           KARG(w.off),      KARG(w.stride), KARG(w.present),  KARG(eps)};
        return launch_rows(s, dev, k, "rmsnorm", 12, args, r.count);
    }
    clc_karg args[] = {KARG(r.t[0].mem), KARG(r.t[0].d), KARG(r.t[1].mem), KARG(r.t[1].d),
                       KARG(r.len),      KARG(r.is),     KARG(r.os),       KARG(w.mem),
                       KARG(w.off),      KARG(w.stride), KARG(w.present),  KARG(b.mem),
                       KARG(b.off),      KARG(b.stride), KARG(b.present),  KARG(eps)};
    return launch_rows(s, dev, k, "layernorm", 16, args, r.count);
}

static bp_status op_rope(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *in = call->inputs[0], *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_rope_attrs *a = call->attrs;
    rows r;
    bp_status st = plan_rows(dev, in, out, in->ndim - 1, true, "rope", &r);
    if (st != BP_OK)
        return st;
    int64_t n = r.count * (r.len / 2);
    if (n == 0)
        return BP_OK;
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_NORM, call->dtype, "k_rope", &k)) != BP_OK)
        return st;
    int64_t seq = in->ndim >= 2 ? in->shape[in->ndim - 2] : 1, nn = n;
    /* The frequency ratio theta^(-2/len) in double, split into two floats (kernels/norm.cl:
     * the angle is taken in double, or in float-float without fp64). */
    double ratio = pow(a ? (double)a->theta : 10000.0, -2.0 / (double)r.len);
    float ratio_hi = (float)ratio, ratio_lo = (float)(ratio - (double)ratio_hi);
    int32_t pos = a ? a->position_offset : 0, inter = a ? a->interleaved : 0;
    clc_karg args[] = {KARG(r.t[0].mem), KARG(r.t[0].d), KARG(r.t[1].mem), KARG(r.t[1].d),
                       KARG(r.len),      KARG(r.is),     KARG(r.os),       KARG(seq),
                       KARG(ratio_hi),   KARG(ratio_lo), KARG(pos),        KARG(inter),
                       KARG(nn)};
    return launch_1d(s, dev, k, "rope", 13, args, n);
}

/* ---- matmul ---- */

/* Batch strides of operand t (nb_t batch dims) aligned to out's nb batch dims (stride
 * 0 where it broadcasts), then its matrix strides (rows, cols) after the transpose. */
static void matmul_operand(clc_targ *arg, const bp_tensor_desc *t, const bp_tensor_desc *out,
                           int nb, int trans) {
    int tb = t->ndim - 2, lead = nb - tb;
    for (int d = 0; d < nb; d++) {
        int di = d - lead;
        arg->d.shape[d] = out->shape[d];
        arg->d.stride[d] = di < 0 || t->shape[di] == 1 ? 0 : t->strides[di];
    }
    int64_t rs = t->strides[t->ndim - 2], cs = t->strides[t->ndim - 1];
    arg->d.shape[nb] = t->shape[t->ndim - (trans ? 1 : 2)];
    arg->d.shape[nb + 1] = t->shape[t->ndim - (trans ? 2 : 1)];
    arg->d.stride[nb] = trans ? cs : rs;
    arg->d.stride[nb + 1] = trans ? rs : cs;
    arg->d.ndim = nb + 2;
}

static bp_status op_matmul(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
    const bp_tensor_desc *a = call->inputs[0], *b = call->inputs[1], *out = call->outputs[0];
    const bp_matmul_attrs *at = call->attrs;
    int ta = at ? at->trans_a : 0, tb = at ? at->trans_b : 0;
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    int nb = out->ndim - 2;
    clc_targ t[3];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], "matmul");
    if (st == BP_OK)
        st = tensor_arg(dev, a, t[0].mem, &t[1], "matmul");
    if (st == BP_OK)
        st = tensor_arg(dev, b, t[0].mem, &t[2], "matmul");
    if (st != BP_OK)
        return st;
    matmul_operand(&t[1], a, out, nb, ta);
    matmul_operand(&t[2], b, out, nb, tb);
    int64_t M = out->shape[nb], N = out->shape[nb + 1], K = t[1].d.shape[nb + 1];
    int64_t batches = 1;
    for (int d = 0; d < nb; d++)
        batches *= out->shape[d];
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_MATMUL, call->dtype, "k_matmul", &k)) != BP_OK)
        return st;
    int32_t nbi = nb;
    /* TS x TS work-items per BM x BM block of c (kernels/matmul.cl: BM = WPT TS). */
    size_t ts = (size_t)dev->ts, bm = CLC_MATMUL_WPT * ts;
    size_t local[3] = {ts, ts, 1};
    size_t global[3] = {((size_t)N + bm - 1) / bm * ts, ((size_t)M + bm - 1) / bm * ts,
                        (size_t)batches};
    clc_karg args[] = {KARG(t[0].mem), KARG(t[0].d), KARG(t[1].mem), KARG(t[1].d), KARG(t[2].mem),
                       KARG(t[2].d),   KARG(M),      KARG(N),       KARG(K),      KARG(nbi)};
    return dev->ops->launch(s, k, "matmul", 10, args, 3, global, local);
}

/* ---- sdpa ---- */

static bp_status op_sdpa(const bp_kernel_call *call) {
    void *s = call->stream;
    clc_device *dev = stream_device(s);
        const bp_tensor_desc *q = call->inputs[0], *kt = call->inputs[1], *v = call->inputs[2];
    const bp_tensor_desc *out = call->outputs[0];
    if (bp_plugin_numel(out) == 0)
        return BP_OK;
    const bp_sdpa_attrs *a = call->attrs;
    int64_t H = q->shape[1], Sq = q->shape[2], D = q->shape[3];
    int64_t Hkv = kt->shape[1], Sk = kt->shape[2];
    int64_t group = Hkv > 0 ? H / Hkv : 1;
    float scale = a && a->scale != 0.0f ? a->scale : 1.0f / sqrtf((float)D);
    float softcap = a ? a->softcap : 0.0f;
    int32_t causal = a ? a->causal : 0;
    int64_t window = a ? a->window : 0;
    /* Many query rows: the kernel with a work-item per row and the keys staged in local
     * memory, when it fits; else a work-group per row (keys spread over work-items). */
    size_t wg = dev->rwg, fl = sizeof(float);
    size_t rows_bytes = (2 * (size_t)D * wg + 2 * (size_t)CLC_SDPA_SBK * (size_t)D +
                         (size_t)CLC_SDPA_SBK * wg) * fl;
    size_t row_bytes = 2 * (size_t)D * fl;
    uint64_t room = dev->local_mem > 4096 ? dev->local_mem - 4096 : 0;
    bool many = Sq >= (int64_t)(wg / 4) && rows_bytes <= room;
    if (!many && row_bytes + 2 * wg * fl > room)
        return dev->host->set_error(
            BP_ERR_UNSUPPORTED,
            "%s:%d: sdpa: head dim %lld needs %zu bytes of local memory; the device has "
            "%llu",
            dev->type, dev->index, (long long)D, row_bytes + 2 * wg * fl,
            (unsigned long long)dev->local_mem);
    clc_targ t[4];
    bp_status st = tensor_arg(dev, out, NULL, &t[0], "sdpa");
    if (st == BP_OK)
        st = tensor_arg(dev, q, t[0].mem, &t[1], "sdpa");
    if (st == BP_OK)
        st = tensor_arg(dev, kt, t[0].mem, &t[2], "sdpa");
    if (st == BP_OK)
        st = tensor_arg(dev, v, t[0].mem, &t[3], "sdpa");
    vec_arg alibi = {.mem = t[0].mem};
    if (st == BP_OK && (!a || a->has_alibi))
        st = vector_arg(dev, call, 3, t[0].mem, &alibi);
    if (st != BP_OK)
        return st;
    void *k;
    if ((st = get_kernel(dev, CLC_PROG_SDPA, call->dtype, many ? "k_sdpa_rows" : "k_sdpa", &k)) !=
        BP_OK)
        return st;
    clc_karg args[] = {
        KARG(t[0].mem),  KARG(t[0].d),     KARG(t[1].mem),       KARG(t[1].d),
        KARG(t[2].mem),  KARG(t[2].d),     KARG(t[3].mem),       KARG(t[3].d),
        KARG(alibi.mem), KARG(alibi.off),  KARG(alibi.stride),   KARG(alibi.present),
        KARG(H),         KARG(group),      KARG(Sq),             KARG(Sk),
        KARG(D),         KARG(scale),      KARG(softcap),        KARG(causal),
        KARG(window),    KLOCAL(D * wg * fl), KLOCAL(D * wg * fl),
        KLOCAL(CLC_SDPA_SBK * D * fl), KLOCAL(CLC_SDPA_SBK * D * fl),
        KLOCAL(CLC_SDPA_SBK * wg * fl)};
    int64_t bh = q->shape[0] * H;
    if (many)
        return launch_rows(s, dev, k, "sdpa", 26, args,
                           bh * ((Sq + (int64_t)wg - 1) / (int64_t)wg));
    args[21] = KLOCAL(D * fl);
    args[22] = KLOCAL(D * fl);
    return launch_rows(s, dev, k, "sdpa", 23, args, bh * Sq);
}

/* ---- registration ---- */

#define ALL_DTYPES 0x1ffu
#define FLOAT_DTYPES \
    (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | BP_DTYPE_BIT(BP_DTYPE_BF16))
#define ARITH_DTYPES (FLOAT_DTYPES | BP_DTYPE_BIT(BP_DTYPE_I32) | BP_DTYPE_BIT(BP_DTYPE_I64))

typedef struct op_entry {
    const char *op;
    bp_kernel_fn fn;
    intptr_t code; /* the kernel_data: which op of a shared function */
    uint32_t dtypes;
} op_entry;

static const op_entry op_table[] = {
    {"fill", op_fill, 0, ALL_DTYPES},
    {"copy", op_copy, 0, ALL_DTYPES},
    {"cat", op_cat, 0, ALL_DTYPES},
    {"where", op_where, 0, ALL_DTYPES},
    {"add", op_binary, BIN_ADD, ARITH_DTYPES},
    {"sub", op_binary, BIN_SUB, ARITH_DTYPES},
    {"mul", op_binary, BIN_MUL, ARITH_DTYPES},
    {"div", op_binary, BIN_DIV, FLOAT_DTYPES},
    {"scale", op_unary, UN_SCALE, FLOAT_DTYPES},
    {"exp", op_unary, UN_EXP, FLOAT_DTYPES},
    {"tanh", op_unary, UN_TANH, FLOAT_DTYPES},
    {"silu", op_unary, UN_SILU, FLOAT_DTYPES},
    {"gelu", op_unary, UN_GELU, FLOAT_DTYPES},
    {"sum", op_reduce, RED_SUM, ARITH_DTYPES},
    {"max", op_reduce, RED_MAX, ARITH_DTYPES},
    {"mean", op_reduce, RED_MEAN, FLOAT_DTYPES},
    {"softmax", op_softmax, 0, FLOAT_DTYPES},
    {"rmsnorm", op_norm, 0, FLOAT_DTYPES},
    {"layernorm", op_norm, 1, FLOAT_DTYPES},
    {"rope", op_rope, 0, FLOAT_DTYPES},
    {"matmul", op_matmul, 0, FLOAT_DTYPES},
    {"sdpa", op_sdpa, 0, FLOAT_DTYPES},
};

bp_status clc_register_kernels(const bp_host_services *host, const char *backend,
                               clc_stream_device_fn device_of) {
    stream_device = device_of;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++) {
        const op_entry *e = &op_table[i];
        /* fill converts its value with the host's reference kernel (ABI 1.3). */
        if (e->fn == op_fill && !BP_HOST_HAS(host, run_reference_kernel))
            continue;
        for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
            if (!(e->dtypes & BP_DTYPE_BIT(dt)))
                continue;
            bp_status st = host->register_kernel(backend, e->op, (bp_dtype)dt, e->fn,
                                                 (void *)e->code, 0);
            if (st != BP_OK)
                return st;
        }
    }
    return BP_OK;
}
