/* The accuracy of the cpu sdpa's vector exp and tanh (ops/cpu/vexp.h) against libm in
 * double, over the range the online softmax uses (exp of x - max <= 0, clamped at -87)
 * and the softcap's tanh: exp within 4e-7 relative (well below 1e-6) on [-87, 0],
 * exactly 0 at -inf, tiny and non-negative below -87, NaN kept; tanh within 2e-7
 * absolute. Each build the kernels get is measured: plain, and on x86-64 the AVX2+FMA
 * clone (FMA contraction changes the roundings) and the AVX-512 form of the 16-lane
 * paths (tests/test_sdpa_exp_avx512.c: a file of its own, compiled for AVX-512), where
 * the CPU has them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "sdpa_exp_eval.h"

enum { POINTS = 1 << 20 };

EVAL(eval_plain, static __attribute__((noinline)))
#if defined(__x86_64__)
EVAL(eval_avx2, static __attribute__((noinline, target("avx2,fma"))))
#endif

typedef void (*eval_fn)(const float *, float *, int, int);

static float xs[POINTS], ys[POINTS];

static void check_build(const char *name, eval_fn eval) {
    /* exp: x evenly over [-87, 0], both ends included. */
    for (int i = 0; i < POINTS; i++)
        xs[i] = -87.0f * (float)i / (float)(POINTS - 1);
    eval(xs, ys, POINTS, 0);
    double worst = 0;
    for (int i = 0; i < POINTS; i++) {
        double want = exp((double)xs[i]);
        double rel = fabs((double)ys[i] - want) / want;
        worst = rel > worst ? rel : worst;
    }
    printf("%s: exp max relative error %.3g over [-87, 0]\n", name, worst);
    assert_true(worst < 4e-7);

    /* The special lanes: -inf, below the clamp, 0 and a value close to it. */
    float special[16] = {-INFINITY, -88.0f, -100.0f, -1e30f, 0.0f, -1e-30f, NAN, -105.0f};
    float out[16];
    eval(special, out, 16, 0);
    assert_true(out[0] == 0.0f);
    for (int i = 1; i < 4; i++)
        assert_true(out[i] >= 0.0f && out[i] < 1e-37f);
    assert_true(out[4] == 1.0f && out[5] == 1.0f);
    assert_true(isnan(out[6]));
    assert_true(out[7] >= 0.0f && out[7] < 1e-37f);

    /* tanh: the softcap's argument over [-20, 20]. */
    for (int i = 0; i < POINTS; i++)
        xs[i] = -20.0f + 40.0f * (float)i / (float)(POINTS - 1);
    eval(xs, ys, POINTS, 1);
    double worst_abs = 0;
    for (int i = 0; i < POINTS; i++) {
        double err = fabs((double)ys[i] - tanh((double)xs[i]));
        worst_abs = err > worst_abs ? err : worst_abs;
    }
    printf("%s: tanh max absolute error %.3g over [-20, 20]\n", name, worst_abs);
    assert_true(worst_abs < 2e-7);
}

static void test_plain(void **state) {
    (void)state;
    check_build("plain", eval_plain);
}

static void test_x86_builds(void **state) {
    (void)state;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        check_build("avx2+fma", eval_avx2);
    else
        printf("skipped: avx2+fma: the CPU lacks AVX2 or FMA\n");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
        check_build("avx512", eval_avx512);
    else
        printf("skipped: avx512: the CPU lacks AVX-512\n");
#else
    printf("skipped: the AVX2 and AVX-512 builds: not an x86-64 CPU\n");
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_x86_builds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
