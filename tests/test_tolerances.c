/* The error bounds of conformance/tolerances.h against the formula they replaced:
 * wrong results that the old per-dtype tolerance accepted and the new bounds reject,
 * the right results passing both; and the demo's own check (samples/attention_check.c)
 * rejecting an all-zero attention at its default shape in bf16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "op_check.h"
#include "../samples/attention_check.h"

/* The tolerance this suite used before the error model, kept here only to show what
 * it let through: |got - want| <= atol * sqrt(terms) + rtol * |want|, atol = rtol =
 * 1e-5 (f32), 2e-3 (f16), 1.6e-2 (bf16), where terms counted the accumulated values. */
static int old_accepts(bp_dtype dt, double terms, double got, double want) {
    double tol = dt == BP_DTYPE_BF16 ? 1.6e-2 : dt == BP_DTYPE_F16 ? 2e-3 : 1e-5;
    return fabs(got - want) <= tol * sqrt(terms) + tol * fabs(want);
}

/* Elements of got the old tolerance rejects. */
static int64_t old_rejects(bp_dtype dt, double terms, const double *got, const double *want,
                           int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += !old_accepts(dt, terms, got[i], want[i]);
    return bad;
}

/* n uniform values in [lo, hi) rounded to dt, from a xorshift of seed. */
static double *random_values(int64_t n, uint64_t seed, double lo, double hi, bp_dtype dt) {
    double *v = bp_test_alloc_values(n);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = bp_ref_round(lo + (hi - lo) * (double)(x >> 11) / 9007199254740992.0, dt);
    }
    return v;
}

/* v (exact in f32) rounded toward zero to bf16: the upper half of its f32 bits. */
static double truncate_bf16(double v) {
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    bits &= 0xffff0000u;
    memcpy(&f, &bits, 4);
    return f;
}

/* bf16 products truncated instead of rounded to nearest: up to an ulp off, which the
 * old 1.6e-2 relative tolerance (4 ulps) took; the new bound is half an ulp of |want|. */
static void test_truncated_bf16_products(void **state) {
    (void)state;
    enum { N = 4096 };
    double *a = random_values(N, 1, -3, 3, BP_DTYPE_BF16), *b = random_values(N, 2, -3, 3,
                                                                              BP_DTYPE_BF16);
    bp_ref_shape s = {1, {N}};
    bp_ref_result want = bp_ref_binary(BP_REF_MUL, BP_DTYPE_BF16, s, a, s, b);
    double *trunc = bp_test_alloc_values(N), *rounded = bp_test_alloc_values(N);
    for (int i = 0; i < N; i++) {
        trunc[i] = truncate_bf16(want.v[i]); /* bf16 x bf16 is exact in f32 */
        rounded[i] = bp_ref_round(want.v[i], BP_DTYPE_BF16);
    }
    assert_int_equal(old_rejects(BP_DTYPE_BF16, 1, trunc, want.v, N), 0);
    int64_t caught = bp_test_count_out_of_bounds(trunc, want, N, BP_DTYPE_BF16);
    assert_true(caught > N / 8);
    assert_int_equal(bp_test_count_out_of_bounds(rounded, want, N, BP_DTYPE_BF16), 0);
    bp_ref_free(&want);
    free(a);
    free(b);
    free(trunc);
    free(rounded);
}

/* A sum over K = 4096 bf16 values whose kernel accumulates in bf16 (as one whose
 * 8 threads each sum 512 values in a bf16 register; the partial sums are added in
 * f32). The values' exact sum is 0 (the second half negates the first, in reverse
 * order), so rounding the result adds nothing and what is left is the accumulation's
 * error: 0.14 to 0.84 on seeds 1-5, which the old atol * sqrt(K) = 1.02 took; the new
 * bound, 2^-24 g(4096) sum |x| = 0.06, does not. */
static void test_bf16_accumulated_sum(void **state) {
    (void)state;
    enum { K = 4096, BLOCK = 512 };
    for (uint64_t seed = 1; seed <= 5; seed++) {
        double *x = random_values(K, seed, -1, 1, BP_DTYPE_BF16);
        for (int i = 0; i < K / 2; i++)
            x[K - 1 - i] = -x[i];
        bp_ref_result want = bp_ref_reduce(BP_REF_SUM, x, (bp_ref_shape){1, {K}}, 0,
                                           BP_DTYPE_BF16);
        double total = 0;
        for (int blk = 0; blk < K / BLOCK; blk++) {
            double acc = 0;
            for (int i = 0; i < BLOCK; i++)
                acc = bp_ref_round(acc + x[blk * BLOCK + i], BP_DTYPE_BF16);
            total = (float)(total + acc);
        }
        double got = bp_ref_round(total, BP_DTYPE_BF16), right = bp_ref_round(want.v[0],
                                                                               BP_DTYPE_BF16);
        assert_true(old_accepts(BP_DTYPE_BF16, K, got, want.v[0]));
        assert_int_equal(bp_test_count_out_of_bounds(&got, want, 1, BP_DTYPE_BF16), 1);
        assert_int_equal(bp_test_count_out_of_bounds(&right, want, 1, BP_DTYPE_BF16), 0);
        bp_ref_free(&want);
        free(x);
    }
}

/* The demo's default shape is 1,32,512,64 in bf16; two heads of it (the per-element
 * figures depend on S and D only) keep this test quick. */
enum { HEADS = 2, S = 512, D = 64 };
#define NUMEL ((int64_t)HEADS * S * D)

/* q, k, v as the demo makes them (multiples of 1/1000 in [-1, 1]) rounded to bf16. */
static void demo_inputs(double *q, double *k, double *v, float *qf, float *kf, float *vf) {
    double *src[3] = {q, k, v};
    float *dst[3] = {qf, kf, vf};
    for (int t = 0; t < 3; t++) {
        uint64_t x = (uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull + 1;
        for (int64_t i = 0; i < NUMEL; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            src[t][i] = bp_ref_round((float)((x >> 11) % 2001) / 1000.0f - 1.0f, BP_DTYPE_BF16);
            dst[t][i] = (float)src[t][i];
        }
    }
}

/* An all-zero attention output: every |want| is far below the old tolerance 0.378 =
 * 1.6e-2 sqrt(512) + 1.6e-2 |want|, so it passed; the new bound (sdpa's reference with
 * bf16 P) and the demo's check reject it, and the correctly rounded output passes. */
static void test_zero_attention(void **state) {
    (void)state;
    double *q = bp_test_alloc_values(NUMEL), *k = bp_test_alloc_values(NUMEL),
           *v = bp_test_alloc_values(NUMEL);
    float *qf = malloc(NUMEL * sizeof *qf), *kf = malloc(NUMEL * sizeof *kf),
          *vf = malloc(NUMEL * sizeof *vf), *zeros_f = calloc(NUMEL, sizeof *zeros_f),
          *rounded_f = malloc(NUMEL * sizeof *rounded_f);
    double *zeros = calloc(NUMEL, sizeof *zeros), *rounded = bp_test_alloc_values(NUMEL);
    demo_inputs(q, k, v, qf, kf, vf);
    bp_ref_sdpa_dims n = {1, HEADS, HEADS, S, S, D};
    bp_ref_result want = bp_ref_sdpa(n, NULL, bp_ref_view4_contiguous(q, HEADS, S, D),
                                     bp_ref_view4_contiguous(k, HEADS, S, D),
                                     bp_ref_view4_contiguous(v, HEADS, S, D), NULL,
                                     BP_DTYPE_BF16);
    for (int64_t i = 0; i < NUMEL; i++) {
        rounded[i] = bp_ref_round(want.v[i], BP_DTYPE_BF16);
        rounded_f[i] = (float)rounded[i];
    }
    assert_int_equal(old_rejects(BP_DTYPE_BF16, S, zeros, want.v, NUMEL), 0);
    assert_true(bp_test_count_out_of_bounds(zeros, want, NUMEL, BP_DTYPE_BF16) > NUMEL / 2);
    assert_int_equal(bp_test_count_out_of_bounds(rounded, want, NUMEL, BP_DTYPE_BF16), 0);

    /* the demo's check: rejects zeros, takes the right answer, bounds below |want| */
    attention_ref ref;
    assert_int_equal(attention_reference(qf, kf, vf, HEADS, S, D, 1, 0x1p-8, &ref), 0);
    double max_error, max_bound = 0, mean_out = 0;
    assert_true(attention_check(&ref, zeros_f, &max_error) > (size_t)NUMEL / 2);
    assert_int_equal(attention_check(&ref, rounded_f, &max_error), 0);
    for (size_t i = 0; i < ref.n; i++) {
        max_bound = fmax(max_bound, ref.bound[i]);
        mean_out += fabs(ref.want[i]) / (double)ref.n;
    }
    assert_true(max_bound < mean_out);
    attention_reference_free(&ref);

    bp_ref_free(&want);
    double *dbl[] = {q, k, v, zeros, rounded};
    float *flt[] = {qf, kf, vf, zeros_f, rounded_f};
    for (int i = 0; i < 5; i++) {
        free(dbl[i]);
        free(flt[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_bf16_products),
        cmocka_unit_test(test_bf16_accumulated_sum),
        cmocka_unit_test(test_zero_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
