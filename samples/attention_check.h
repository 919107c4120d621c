/* sliced_attention's check: a float64 reference of attention with a per-element error
 * bound, the model of docs/ops.md "Numerics" in the sample's own small code (a sample
 * cannot include the test headers). tests/test_attention_check.c compiles it too.
 *
 * The attention is out = softmax(q k^T / sqrt(D)) v per [S, D] slice (no mask). A
 * result computed in f32 and stored in a dtype of half ulp eps_out may be off by
 *     2^-24 * g(K) * M + eps_out * |want| + 2^-126
 * where the reference follows each term of the computation: the dot products of the
 * scores (M = sum |q_x k_x|, g(D)), their rounding to the dtype between ops (the
 * sliced program stores scores, scaled scores and probabilities in the dtype), exp's
 * few ulps and its argument's conditioning, the softmax's sum over S positive terms
 * and the P.V accumulation (M = sum_j p_j |v_j|, g(S) + 2), with g(K) = min(K, 8
 * sqrt(K)) + 2 as in conformance/tolerances.h. */
#ifndef SAMPLES_ATTENTION_CHECK_H
#define SAMPLES_ATTENTION_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* The reference values and bounds of the checked elements. */
typedef struct attention_ref {
    size_t n;       /* checked elements */
    size_t *index;  /* their row-major indices in the [BH, S, D] output */
    double *want;   /* the exact attention */
    double *bound;  /* the largest |got - want| the model allows */
} attention_ref;

/* The reference of attention over q, k, v, each [bh, s, d] row-major, for the query
 * rows i (of every slice) with i % row_stride == 0, for a result stored in a dtype of
 * half ulp eps_out (2^-24 f32, 2^-11 f16, 2^-8 bf16). Returns 0, or -1 when out of
 * memory. */
int attention_reference(const float *q, const float *k, const float *v, int64_t bh, int64_t s,
                        int64_t d, int64_t row_stride, double eps_out, attention_ref *ref);

/* How many checked elements of got (the whole [bh, s, d] output) are off by more than
 * their bound (NaN counts); *max_error gets the largest |got - want| (inf for NaN). */
size_t attention_check(const attention_ref *ref, const float *got, double *max_error);

void attention_reference_free(attention_ref *ref);

#endif
