/* backplane: the attribute structs of the built-in ops, as kernels receive them in
 * bp_kernel_call.attrs. Part of the plugin ABI (included by <backplane/plugin.h>):
 * fields are only ever appended, with a minor ABI version bump. The ops that take
 * them are in <backplane/ops.h>. */
#ifndef BACKPLANE_OP_ATTRS_H
#define BACKPLANE_OP_ATTRS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_fill_attrs { double value; } bp_fill_attrs;
typedef struct bp_scale_attrs { double alpha; } bp_scale_attrs;
typedef struct bp_gelu_attrs { int32_t approximate_tanh; } bp_gelu_attrs;
typedef struct bp_reduce_attrs { int32_t dim; int32_t keepdim; } bp_reduce_attrs;
typedef struct bp_softmax_attrs { float scale; int32_t causal; } bp_softmax_attrs;
typedef struct bp_norm_attrs { float eps; } bp_norm_attrs;
typedef struct bp_rope_attrs {
    float theta;             /**< base, 10000 in Llama */
    int32_t position_offset; /**< position of the first row (dim -2) */
    int32_t interleaved;     /**< 0: rotate halves (Llama/HF); 1: rotate pairs (GPT-J) */
} bp_rope_attrs;
typedef struct bp_matmul_attrs { int32_t trans_a; int32_t trans_b; } bp_matmul_attrs;
typedef struct bp_cat_attrs { int32_t dim; } bp_cat_attrs;
typedef struct bp_sdpa_attrs {
    float scale;      /**< 0: 1/sqrt(head dim) */
    int32_t causal;   /**< query i sees keys j <= i (top-left aligned, as PyTorch SDPA) */
    int32_t window;   /**< > 0: query i sees keys j with i - window < j (sliding window) */
    float softcap;    /**< > 0: scores become softcap * tanh(scores / softcap) */
    int32_t has_alibi;/**< inputs[3] holds per-head ALiBi slopes (f32 [H]) */
} bp_sdpa_attrs;

#ifdef __cplusplus
}
#endif
#endif
