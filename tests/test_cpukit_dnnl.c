/* The kit's oneDNN matmul engine (backends/cpukit/cpukit_dnnl.c) on its own, linked as
 * a backend links it: more distinct geometries than its primitive cache holds (so
 * entries are evicted and made again), the same from several threads at once
 * (entries evicted while another thread runs them), bf16 with broadcast batch dims and
 * a transposed, padded operand, alone and from several threads at once, each product against a float64 reference within the
 * f32 accumulation's bound. Loads the library BP_ONEDNN_LIBRARY names (ctest: the one
 * of scripts/onednn.sh); prints "skipped: <why>" when it cannot. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpukit_dnnl.h"

/* More than the cache's 64 entries. */
enum { SHAPES = 150, THREADS = 4 };

/* The shape of case s: every s its own (m, n, k). */
static void shape_of(int s, int64_t *m, int64_t *n, int64_t *k) {
    *m = 1 + s % 9;
    *n = 3 + s;
    *k = 5 + (s * 7) % 61;
}

static float random_value(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) * 0x1p-24 * 2.0 - 1.0);
}

/* Outcomes of a case (threads report them to the test's thread, which asserts). */
typedef enum { CASE_OK, CASE_DECLINED, CASE_WRONG } case_result;

/* |got - want| within K's f32 accumulation bound, plus the output's rounding (rel);
 * else false, the difference printed. */
static bool within_bound(const char *what, double got, double want, double abs_sum, int64_t k,
                         double rel) {
    double u = 0x1p-24, gamma = (double)k * u / (1 - (double)k * u);
    double bound = gamma * abs_sum + rel * fabs(want) + 1e-30;
    if (fabs(got - want) <= bound)
        return true;
    fprintf(stderr, "%s: got %.9g, want %.9g (bound %.3g)\n", what, got, want, bound);
    return false;
}

/* c = a @ b in f32 for shape s (row-major, contiguous). */
static case_result run_f32_case(int s) {
    int64_t m, n, k;
    shape_of(s, &m, &n, &k);
    float *a = malloc(sizeof *a * (size_t)(m * k)), *b = malloc(sizeof *b * (size_t)(k * n));
    float *c = malloc(sizeof *c * (size_t)(m * n));
    assert_non_null(a), assert_non_null(b), assert_non_null(c);
    uint64_t state = (uint64_t)s + 1;
    for (int64_t i = 0; i < m * k; i++)
        a[i] = random_value(&state);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = random_value(&state);
    cpukit_mm_geometry g = {.m = m, .n = n, .k = k, .sam = k, .sak = 1, .sbk = n, .sbn = 1,
                            .scm = n, .scn = 1, .nbatch = 0, .items = 1};
    bool done = cpukit_dnnl_matmul(&g, BP_DTYPE_F32, a, b, c, 1, NULL);
    case_result result = done ? CASE_OK : CASE_DECLINED;
    for (int64_t i = 0; done && i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0, abs_sum = 0;
            for (int64_t p = 0; p < k; p++) {
                want += (double)a[i * k + p] * b[p * n + j];
                abs_sum += fabs((double)a[i * k + p] * b[p * n + j]);
            }
            if (!within_bound("f32", c[i * n + j], want, abs_sum, k, 0))
                result = CASE_WRONG;
        }
    free(a), free(b), free(c);
    return result;
}

static void test_more_shapes_than_the_cache(void **state) {
    (void)state;
    for (int round = 0; round < 2; round++) /* the second: every entry made again */
        for (int s = 0; s < SHAPES; s++)
            assert_int_equal(run_f32_case(s), CASE_OK);
}

static void *run_cases(void *arg) {
    int first = *(const int *)arg;
    for (int i = 0; i < SHAPES; i++)
        if (run_f32_case((first + i * 7) % SHAPES) != CASE_OK)
            return "wrong or declined";
    return NULL;
}

static void test_threads_share_the_cache(void **state) {
    (void)state;
    pthread_t threads[THREADS];
    int firsts[THREADS];
    for (int t = 0; t < THREADS; t++) {
        firsts[t] = t * 13;
        assert_int_equal(pthread_create(&threads[t], NULL, run_cases, &firsts[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        void *result;
        assert_int_equal(pthread_join(threads[t], &result), 0);
        assert_null(result);
    }
}

static uint16_t to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
    return (uint16_t)(bits >> 16);
}

static double from_bf16(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* c[2, 3, M, N] = a[2, 1, M, K] @ b[1, 3, K, N] in bf16, a stored transposed ([K, M]
 * per item, leading dim M + 3) and c's rows padded to N + 2. */
static case_result run_bf16_case(uint64_t seed) {
    enum { M = 37, N = 29, K = 300, LDA = M + 3, LDC = N + 2 };
    uint16_t *a = calloc(2 * K * LDA, sizeof *a), *b = calloc(3 * K * N, sizeof *b);
    uint16_t *c = calloc(2 * 3 * M * LDC, sizeof *c);
    assert_non_null(a), assert_non_null(b), assert_non_null(c);
    uint64_t st = seed;
    for (int i = 0; i < 2 * K * LDA; i++)
        a[i] = to_bf16(random_value(&st));
    for (int i = 0; i < 3 * K * N; i++)
        b[i] = to_bf16(random_value(&st));
    cpukit_mm_geometry g = {.m = M, .n = N, .k = K, .sam = 1, .sak = LDA, .sbk = N, .sbn = 1,
                            .scm = LDC, .scn = 1, .nbatch = 2, .items = 6,
                            .bshape = {2, 3}, .bsa = {K * LDA, 0}, .bsb = {0, K * N},
                            .bsc = {3 * M * LDC, M * LDC}};
    bool done = cpukit_dnnl_matmul(&g, BP_DTYPE_BF16, a, b, c, 2, NULL);
    case_result result = done ? CASE_OK : CASE_DECLINED;
    for (int x = 0; done && x < 2; x++)
        for (int y = 0; y < 3; y++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double want = 0, abs_sum = 0;
                    for (int p = 0; p < K; p++) {
                        double prod = from_bf16(a[x * K * LDA + p * LDA + i]) *
                                      from_bf16(b[y * K * N + p * N + j]);
                        want += prod;
                        abs_sum += fabs(prod);
                    }
                    if (!within_bound("bf16", from_bf16(c[(x * 3 + y) * M * LDC + i * LDC + j]),
                                      want, abs_sum, K, 0x1p-8))
                        result = CASE_WRONG;
                }
    free(a), free(b), free(c);
    return result;
}

static void test_bf16_broadcast_and_transposed(void **state) {
    (void)state;
    case_result result = run_bf16_case(99);
    if (result == CASE_DECLINED)
        printf("skipped: oneDNN has no bf16 matmul kernel for this CPU\n");
    else
        assert_int_equal(result, CASE_OK);
}

static void *run_bf16_cases(void *arg) {
    for (uint64_t i = 0; i < 20; i++)
        if (run_bf16_case(*(const uint64_t *)arg + i) == CASE_WRONG)
            return "wrong";
    return NULL;
}

/* The same primitives from several threads at once, each with its own scratchpad (a
 * shared one, oneDNN's library mode, gave wrong sums here). */
static void test_threads_run_bf16_at_once(void **state) {
    (void)state;
    pthread_t threads[THREADS];
    uint64_t seeds[THREADS];
    for (int t = 0; t < THREADS; t++) {
        seeds[t] = 1000 + 100 * (uint64_t)t;
        assert_int_equal(pthread_create(&threads[t], NULL, run_bf16_cases, &seeds[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        void *result;
        assert_int_equal(pthread_join(threads[t], &result), 0);
        assert_null(result);
    }
}

int main(void) {
    const char *why = cpukit_dnnl_load(NULL);
    if (why) {
        printf("skipped: oneDNN not loadable (scripts/onednn.sh, BP_ONEDNN_LIBRARY): %s\n", why);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_more_shapes_than_the_cache),
        cmocka_unit_test(test_threads_share_the_cache),
        cmocka_unit_test(test_bf16_broadcast_and_transposed),
        cmocka_unit_test(test_threads_run_bf16_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
