/* Walking strided (and broadcast) tensors in cpu kernels.
 *
 * A bp_nd_iter steps through the elements of an output shape in row-major order and
 * keeps, for each of up to BP_ITER_MAX operands, the element offset into that
 * operand. An operand with fewer dims, or a dim of size 1, is broadcast (stride 0).
 *
 *     bp_nd_iter it;
 *     bp_nd_iter_init(&it, call->outputs[0], 2, call->inputs, 0);
 *     for (int64_t i = 0; i < it.numel; i++, bp_nd_iter_next(&it))
 *         out[it.offset[0]] = A[it.offset[1]] + B[it.offset[2]];
 *
 * offset[0] is the output's own offset; offset[1 + k] is input k's. bp_nd_iter_init
 * with `start` positions the iterator at linear index `start`, so bp_parallel_for
 * chunks can each start their own iterator. */
#ifndef BP_CPU_STRIDED_H
#define BP_CPU_STRIDED_H

#include <stdint.h>
#include <backplane/plugin.h>

#define BP_ITER_MAX 4

typedef struct bp_nd_iter {
    int ndim;
    int n;                                          /* operands, output included */
    int64_t numel;                                  /* elements of the output */
    int64_t shape[BP_KERNEL_MAX_DIMS];
    int64_t strides[BP_ITER_MAX][BP_KERNEL_MAX_DIMS];
    int64_t index[BP_KERNEL_MAX_DIMS];
    int64_t offset[BP_ITER_MAX];
} bp_nd_iter;

static inline void bp_nd_iter_init(bp_nd_iter *it, const bp_tensor_desc *out, int n_inputs,
                                   const bp_tensor_desc *const *inputs, int64_t start) {
    it->ndim = out->ndim;
    it->n = n_inputs + 1;
    it->numel = 1;
    for (int d = 0; d < out->ndim; d++) {
        it->shape[d] = out->shape[d];
        it->numel *= out->shape[d];
        it->strides[0][d] = out->strides[d];
    }
    for (int k = 0; k < n_inputs; k++) {
        const bp_tensor_desc *in = inputs[k];
        int lead = out->ndim - in->ndim;
        for (int d = 0; d < out->ndim; d++) {
            int di = d - lead;
            it->strides[k + 1][d] = di < 0 || in->shape[di] == 1 ? 0 : in->strides[di];
        }
    }
    for (int k = 0; k < it->n; k++)
        it->offset[k] = 0;
    int64_t rest = start;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t size = it->shape[d] > 0 ? it->shape[d] : 1;
        it->index[d] = rest % size;
        rest /= size;
        for (int k = 0; k < it->n; k++)
            it->offset[k] += it->index[d] * it->strides[k][d];
    }
}

static inline void bp_nd_iter_next(bp_nd_iter *it) {
    for (int d = it->ndim - 1; d >= 0; d--) {
        if (++it->index[d] < it->shape[d]) {
            for (int k = 0; k < it->n; k++)
                it->offset[k] += it->strides[k][d];
            return;
        }
        for (int k = 0; k < it->n; k++)
            it->offset[k] -= (it->shape[d] - 1) * it->strides[k][d];
        it->index[d] = 0;
    }
}

/* True when the desc is contiguous row-major. */
static inline int bp_desc_contiguous(const bp_tensor_desc *t) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect)
            return 0;
        expect *= t->shape[d];
    }
    return 1;
}

#endif
