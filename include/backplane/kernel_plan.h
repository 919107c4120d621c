/* backplane: planning the operands of strided kernels, for plugins.
 *
 * A kernel that walks an output and reads its inputs at the same indices (an
 * elementwise op, a copy, the rows of a reduction) can address every operand through
 * one shape and per-operand strides, all in elements. Planning makes that shape as
 * small as possible, so that kernels do little index arithmetic:
 *   - inputs are aligned to the output's dims, trailing dims first (NumPy
 *     broadcasting); a dim that an input lacks, or has of size 1, gets stride 0;
 *   - dims of size 1 are dropped (they move nothing);
 *   - a dim is merged into the dim before it when the two are contiguous in every
 *     operand (outer stride == inner stride * inner size).
 * Dropping and merging keep the row-major order of the elements, so element i of a
 * plan (i = 0 .. numel-1, the last dim fastest) is element i of the output. Most
 * tensors end as one dim; operands that are all contiguous end as one dim of stride 1
 * (bp_plan_is_flat), which kernels take as a flat fast path.
 *
 *     bp_plan p;
 *     bp_plan_elementwise(&p, call->outputs[0], call->n_inputs, call->inputs);
 *     // element i: out at offset(p, 0, i), input k at offset(p, 1 + k, i)
 *
 * Everything is static inline, plain C11 and valid C++, needing nothing but the
 * descriptors of <backplane/plugin.h>: any plugin may include it. */
#ifndef BACKPLANE_KERNEL_PLAN_H
#define BACKPLANE_KERNEL_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <backplane/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Operands a plan holds: an output and up to three inputs (where). */
#define BP_PLAN_MAX_OPERANDS 4

/** Operands over one shape. Dims ndim .. BP_KERNEL_MAX_DIMS-1 have shape 1 and stride 0,
 *  so a kernel may also walk all BP_KERNEL_MAX_DIMS dims. */
typedef struct bp_plan {
    int ndim;                /**< 1 .. BP_KERNEL_MAX_DIMS (a single element is one dim of 1) */
    int n;                   /**< operands */
    int64_t numel;           /**< elements: the product of shape */
    int64_t shape[BP_KERNEL_MAX_DIMS];
    int64_t strides[BP_PLAN_MAX_OPERANDS][BP_KERNEL_MAX_DIMS]; /**< [operand][dim] */
} bp_plan;

/** Plans n operands (n <= BP_PLAN_MAX_OPERANDS) walking `shape` (ndim dims, each >= 0),
 *  operand k with strides[k] (0 where it broadcasts). */
static inline void bp_plan_operands(bp_plan *p, int n, int ndim, const int64_t *shape,
                                    const int64_t (*strides)[BP_KERNEL_MAX_DIMS]) {
    int m = 0;
    p->n = n;
    p->numel = 1;
    for (int d = 0; d < ndim; d++) {
        p->numel *= shape[d];
        if (shape[d] == 1)
            continue;
        bool merge = m > 0;
        for (int k = 0; k < n && merge; k++)
            merge = p->strides[k][m - 1] == strides[k][d] * shape[d];
        if (merge) {
            p->shape[m - 1] *= shape[d];
            for (int k = 0; k < n; k++)
                p->strides[k][m - 1] = strides[k][d];
        } else {
            p->shape[m] = shape[d];
            for (int k = 0; k < n; k++)
                p->strides[k][m] = strides[k][d];
            m++;
        }
    }
    if (m == 0) { /* a single element */
        p->shape[0] = 1;
        for (int k = 0; k < n; k++)
            p->strides[k][0] = 0;
        m = 1;
    }
    p->ndim = m;
    for (int d = m; d < BP_KERNEL_MAX_DIMS; d++)
        p->shape[d] = 1;
    for (int k = 0; k < BP_PLAN_MAX_OPERANDS; k++)
        for (int d = k < n ? m : 0; d < BP_KERNEL_MAX_DIMS; d++)
            p->strides[k][d] = 0;
}

/** Plans an elementwise call: operand 0 is `out`, operand 1 + k is input k (n_in <=
 *  BP_PLAN_MAX_OPERANDS - 1), each input broadcast to out's shape. */
static inline void bp_plan_elementwise(bp_plan *p, const bp_tensor_desc *out, int n_in,
                                       const bp_tensor_desc *const *ins) {
    int64_t strides[BP_PLAN_MAX_OPERANDS][BP_KERNEL_MAX_DIMS];
    int nd = out->ndim;
    for (int d = 0; d < nd; d++)
        strides[0][d] = out->strides[d];
    for (int k = 0; k < n_in; k++) {
        const bp_tensor_desc *in = ins[k];
        int lead = nd - in->ndim;
        for (int d = 0; d < nd; d++) {
            int di = d - lead;
            strides[k + 1][d] = di < 0 || in->shape[di] == 1 ? 0 : in->strides[di];
        }
    }
    bp_plan_operands(p, n_in + 1, nd, out->shape, (const int64_t(*)[BP_KERNEL_MAX_DIMS])strides);
}

/** The rows of a row op (a reduction, softmax, a norm): rows of `len` elements along one
 *  dim of the input. `rows` walks the row starts: operand 0 the output's, operand 1
 *  the input's; row r of the plan is row r in the input's row-major order of its other
 *  dims. Within a row, element j is at j * in_stride (input) and j * out_stride
 *  (output; 0 when the output has no row dim). */
typedef struct bp_row_plan {
    bp_plan rows;
    int64_t len;
    int64_t in_stride, out_stride;
} bp_row_plan;

/** Plans the rows of `in` along `dim`. `out` has in's dims when out_has_dim (its row
 *  dim of size len, or 1 for a reduction with keepdim), else in's dims without `dim`.
 *  A scalar input is one row of one element. */
static inline void bp_plan_rows(bp_row_plan *r, const bp_tensor_desc *out,
                                const bp_tensor_desc *in, int dim, bool out_has_dim) {
    int64_t shape[BP_KERNEL_MAX_DIMS], strides[2][BP_KERNEL_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < in->ndim; d++) {
        if (d == dim)
            continue;
        shape[m] = in->shape[d];
        strides[0][m] = out->strides[out_has_dim || d < dim ? d : d - 1];
        strides[1][m] = in->strides[d];
        m++;
    }
    r->len = in->ndim ? in->shape[dim] : 1;
    r->in_stride = in->ndim ? in->strides[dim] : 0;
    r->out_stride = in->ndim && out_has_dim ? out->strides[dim] : 0;
    bp_plan_operands(&r->rows, 2, m, shape, (const int64_t(*)[BP_KERNEL_MAX_DIMS])strides);
}

/** True when every operand of p is contiguous: element i of the plan is element i of
 *  each operand's memory. */
static inline bool bp_plan_is_flat(const bp_plan *p) {
    if (p->ndim != 1)
        return false;
    for (int k = 0; k < p->n; k++)
        if (p->strides[k][0] != 1 && p->shape[0] != 1)
            return false;
    return true;
}

/** Cat as moves: the view of `out` that one input of a cat along `dim` fills, the
 *  `length` entries of dim from `start` on (start: the sum of the earlier inputs'
 *  shape[dim]). It has out's dtype and strides; elem_size is out's element size in
 *  bytes. Moving input k into bp_cat_slice(out, dim, start_k, inputs[k]->shape[dim], es)
 *  for every non-empty input makes the cat.
 *      bp_tensor_desc part = bp_cat_slice(out, dim, start, in->shape[dim], es); */
static inline bp_tensor_desc bp_cat_slice(const bp_tensor_desc *out, int dim, int64_t start,
                                          int64_t length, size_t elem_size) {
    bp_tensor_desc part = *out;
    part.shape[dim] = length;
    part.data = (char *)out->data + start * out->strides[dim] * (int64_t)elem_size;
    return part;
}

#ifdef __cplusplus
}
#endif
#endif
