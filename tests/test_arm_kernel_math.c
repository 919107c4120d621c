/* The arm kernels' vector row functions (backends/arm/kernels/vec_*.c) on their own,
 * aarch64 builds only (under qemu-user in the cross build): the transcendentals of
 * NEON and SVE against float64 over their whole range, where the conformance suite's
 * random inputs do not go (overflow and underflow edges, subnormals, +-inf, NaN, every
 * tail length), with the bounds of docs/ops.md "Numerics"; the f16/bf16 conversions
 * bit for bit on random bit patterns; f16 arithmetic in FP16 and SVE instructions
 * against f32 rounded once; the reductions' NaN and tails; rope over a sequence longer
 * than the suite's (its angles are carried from one position to the next). SVE and
 * FP16 cases are skipped, with the reason, on a CPU without them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/auxv.h>
#include <asm/hwcap.h>

#include "kernels/arm_common.h"

enum { N = 4099 }; /* odd: every vector length leaves a tail */

/* Skips the test, with the reason, where the CPU lacks the hwcap bit. */
static void require_hwcap(unsigned long bit, const char *what) {
    if (!(getauxval(AT_HWCAP) & bit)) {
        printf("skipped: the CPU has no %s\n", what);
        skip();
    }
}

static void require(const arm_f32_ops *ops) {
    if (ops == &arm_f32_sve)
        require_hwcap(HWCAP_SVE, "SVE");
}

static uint32_t rng_state = 12345u;
static uint32_t rng(void) { /* xorshift32: the same inputs every run */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* Inputs: special values, a sweep across the range, random bit patterns. */
static void inputs(float *x, int n, float range) {
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f,
                                    1e-30f, -1e-30f, 88.72f, 88.7228f, 88.73f, 89.0f,
                                    -87.33f, -88.73f, -103.97f, -104.0f, -110.0f, 9.02f,
                                    -9.02f, 0.5f, -0.5f, 0.55f, 13.0f, -13.0f, -14.5f};
    int k = 0;
    for (; k < (int)(sizeof special / sizeof *special); k++)
        x[k] = special[k];
    for (; k < n / 2; k++)
        x[k] = -range + 2.0f * range * (float)k / (float)(n / 2);
    for (; k < n; k++) {
        uint32_t bits = rng();
        float v;
        memcpy(&v, &bits, sizeof v);
        x[k] = isfinite(v) && fabsf(v) <= range ? v : ldexpf((float)(bits & 0xffff), -14);
    }
}

/* The allowance of docs/ops.md in units of 2^-24, for input x and exact result y. */
typedef double (*bound_fn)(double x, double y);
static double b_exp(double x, double y) { (void)x; return 16 * fabs(y); }
static double b_silu(double x, double y) { (void)x; return 20 * fabs(y); }
static double b_gelu_erf(double x, double y) { return (40 + (x < 0 ? x * x : 0)) * fabs(y); }
static double b_gelu_tanh(double x, double y) {
    double z = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = tanh(z);
    return 4 * fabs(y) + 0.5 * fabs(x) * (16 * fabs(t) + 4 * fabs(z) * (1 - t * t));
}

static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_gelu_erf(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double r_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static void check_unary(const char *name, void (*fn)(float *, const float *, int64_t),
                        double (*ref)(double), bound_fn bound, float range) {
    static float x[N], y[N];
    inputs(x, N, range);
    for (int n = 1; n <= N; n = n < 40 ? n + 1 : n * 3) {
        fn(y, x, n);
        for (int i = 0; i < n; i++) {
            double want = ref(x[i]);
            bool ok;
            if (isnan(want) || isinf((float)want))
                ok = isnan(want) ? isnan(y[i]) : y[i] == (float)want;
            else
                ok = fabs(y[i] - want) <= 0x1p-24 * bound(x[i], want) + 0x1p-126;
            if (!ok)
                fail_msg("%s(%.9g) = %.9g, want %.9g (n %d)", name, x[i], y[i], want, n);
        }
    }
}

static void transcendentals(const arm_f32_ops *ops) {
    require(ops);
    check_unary("exp", ops->exp, exp, b_exp, 120.0f);
    check_unary("tanh", ops->tanh, tanh, b_exp, 20.0f);
    check_unary("silu", ops->silu, r_silu, b_silu, 120.0f);
    check_unary("gelu erf", ops->gelu_erf, r_gelu_erf, b_gelu_erf, 30.0f);
    check_unary("gelu tanh", ops->gelu_tanh, r_gelu_tanh, b_gelu_tanh, 30.0f);
}

/* bf16 nearest even, found by comparing the two neighbours in double. */
static uint16_t bf16_reference(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t down = bits & 0xffff0000u, up = down + 0x10000u;
    float lo, hi;
    memcpy(&lo, &down, sizeof lo);
    memcpy(&hi, &up, sizeof hi);
    double dl = fabs((double)f - lo);
    double dh = fabs((double)f - (isinf(hi) ? copysign(0x1p128, f) : hi));
    if (dl < dh || (dl == dh && !((down >> 16) & 1u)))
        return (uint16_t)(down >> 16);
    return (uint16_t)(up >> 16);
}

static void conversions(const arm_f32_ops *ops) {
    require(ops);
    static float x[N], back[N];
    static uint16_t h[N];
    for (int i = 0; i < N; i++) {
        uint32_t bits = rng();
        memcpy(&x[i], &bits, sizeof x[i]);
    }
    for (int n = 1; n <= N; n = n < 40 ? n + 1 : n * 3) {
        ops->store[ak_fidx(BP_DTYPE_BF16)](h, x, n);
        for (int i = 0; i < n; i++) {
            if (isnan(x[i]))
                assert_true((h[i] & 0x7f80u) == 0x7f80u && (h[i] & 0x7fu) != 0);
            else
                assert_int_equal(h[i], bf16_reference(x[i]));
        }
        ops->load[ak_fidx(BP_DTYPE_BF16)](back, h, n);
        for (int i = 0; i < n; i++)
            assert_true(back[i] == ak_bf16_to_f32(h[i]) || isnan(back[i]));
        ops->store[ak_fidx(BP_DTYPE_F16)](h, x, n);
        ops->load[ak_fidx(BP_DTYPE_F16)](back, h, n);
        for (int i = 0; i < n; i++) {
            _Float16 want = (_Float16)x[i];
            uint16_t wbits;
            memcpy(&wbits, &want, sizeof wbits);
            if (isnan(x[i])) {
                assert_true(isnan(back[i]));
                continue;
            }
            assert_int_equal(h[i], wbits);
            assert_true(back[i] == (float)want);
        }
    }
}

static void reductions(const arm_f32_ops *ops) {
    require(ops);
    static float x[N];
    for (int n = 1; n <= N; n = n < 40 ? n + 1 : n * 3) {
        for (int i = 0; i < n; i++)
            x[i] = (float)(i % 7) - 3.0f;
        double sum = 0;
        float max = -INFINITY;
        for (int i = 0; i < n; i++)
            sum += x[i], max = x[i] > max ? x[i] : max;
        assert_true(ops->sum(x, n) == (float)sum); /* small integers: exact */
        assert_true(ops->max(x, n) == max);
        x[n - 1] = NAN; /* in the tail, wherever the tail starts */
        assert_true(isnan(ops->max(x, n)));
        assert_true(isnan(ops->max_scaled(x, 2.0f, n)));
    }
}

static void f16_arithmetic(const arm_f16_ops *f16) {
    static uint16_t a[N], b[N], o[N];
    for (int i = 0; i < N; i++)
        a[i] = (uint16_t)rng(), b[i] = (uint16_t)rng();
    const arm_f16_binary fns[] = {f16->add, f16->sub, f16->mul, f16->div};
    for (int op = 0; op < 4; op++) {
        fns[op](o, a, b, N);
        for (int i = 0; i < N; i++) {
            float x = ak_f16_to_f32(a[i]), y = ak_f16_to_f32(b[i]);
            float r = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
            if (isnan(r))
                assert_true(isnan(ak_f16_to_f32(o[i])));
            else
                assert_int_equal(o[i], ak_f32_to_f16(r));
        }
    }
}

static void f16_fp16(void **state) {
    (void)state;
    require_hwcap(HWCAP_ASIMDHP, "FP16 arithmetic");
    f16_arithmetic(&arm_f16_fp16);
}

static void f16_sve(void **state) {
    (void)state;
    require_hwcap(HWCAP_SVE, "SVE");
    f16_arithmetic(&arm_f16_sve);
}

/* The norm family's rope on f32 [S, D], S far beyond the angle recurrence's restart
 * span, at large positions, against float64 with the bound of docs/ops.md. */
static void split_range(const arm_exec *ex, int64_t n, int64_t grain, arm_range_fn fn,
                        void *ctx) {
    (void)ex;
    int64_t chunk = n / 3 + 7 > grain ? n / 3 + 7 : grain; /* chunks start mid-matrix */
    for (int64_t b = 0; b < n; b += chunk)
        fn(ctx, b, b + chunk < n ? b + chunk : n);
}

static void rope_long(int interleaved) {
    enum { S = 3000, D = 128, OFFSET = 30000 };
    static float x[S * D], y[S * D];
    for (int i = 0; i < S * D; i++)
        x[i] = (float)(rng() % 2001) / 1000.0f - 1.0f;
    arm_features f = {.asimd = true};
    arm_kernel ks[64];
    arm_kernel_body rope = NULL;
    size_t nk = arm_kernels_norm(&f, ks, 64);
    for (size_t i = 0; i < nk; i++)
        if (ks[i].dtype == BP_DTYPE_F32 && strcmp(ks[i].op, "rope") == 0)
            rope = ks[i].body;
    assert_non_null(rope);
    bp_tensor_desc in = {.data = x, .dtype = BP_DTYPE_F32, .ndim = 2, .shape = {S, D},
                         .strides = {D, 1}};
    bp_tensor_desc out = in;
    out.data = y;
    bp_rope_attrs attrs = {.theta = 10000.0f, .position_offset = OFFSET,
                           .interleaved = interleaved};
    const bp_tensor_desc *ins[] = {&in}, *outs[] = {&out};
    bp_kernel_call call = {.struct_size = sizeof call, .op_name = "rope", .dtype = BP_DTYPE_F32,
                           .n_inputs = 1, .n_outputs = 1, .inputs = ins, .outputs = outs,
                           .attrs = &attrs};
    arm_exec ex = {.features = &f, .threads = 1, .parallel_for = split_range};
    rope(&call, &ex);
    for (int r = 0; r < S; r++) {
        for (int i = 0; i < D / 2; i++) {
            int j0 = interleaved ? 2 * i : i, j1 = interleaved ? 2 * i + 1 : i + D / 2;
            double angle = (OFFSET + r) * pow(10000.0, -2.0 * i / D);
            double a = x[r * D + j0], b = x[r * D + j1];
            double bound = 16 * (fabs(a) + fabs(b)) * 0x1p-24;
            double e0 = fabs(y[r * D + j0] - (a * cos(angle) - b * sin(angle)));
            double e1 = fabs(y[r * D + j1] - (b * cos(angle) + a * sin(angle)));
            if (e0 > bound || e1 > bound)
                fail_msg("rope row %d pair %d: off by %g, %g (bound %g)", r, i, e0, e1, bound);
        }
    }
}

static void rope_long_halves(void **state) {
    (void)state;
    rope_long(0);
}

static void rope_long_interleaved(void **state) {
    (void)state;
    rope_long(1);
}

/* Test `name` on the row functions of `isa` (arm_f32_<isa>). */
#define ON(name, isa)                                                                      \
    static void name##_##isa(void **state) {                                               \
        (void)state;                                                                       \
        name(&arm_f32_##isa);                                                              \
    }
ON(transcendentals, neon)
ON(transcendentals, sve)
ON(conversions, neon)
ON(conversions, sve)
ON(reductions, neon)
ON(reductions, sve)

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(transcendentals_neon), cmocka_unit_test(transcendentals_sve),
        cmocka_unit_test(conversions_neon),     cmocka_unit_test(conversions_sve),
        cmocka_unit_test(reductions_neon),      cmocka_unit_test(reductions_sve),
        cmocka_unit_test(f16_fp16),             cmocka_unit_test(f16_sve),
        cmocka_unit_test(rope_long_halves),     cmocka_unit_test(rope_long_interleaved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
