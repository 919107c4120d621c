/* sdpa on the cpu device against the float64 reference of op_reference.h computed from
 * the rounded inputs: softmax(q k^T * scale, softcapped, plus ALiBi, masked) v, with a
 * fully masked row giving 0; within the error bounds of tolerances.h.
 * Covers every float dtype and every combination of causal, sliding window, ALiBi,
 * softcap and grouped-query heads, default and custom scales, shapes that are not
 * multiples of the kernel's blocks, zero-size and size-1 dims, non-contiguous inputs
 * and outputs, that no memory grows with Sq * Sk, that the bound catches a wrong scale,
 * mask or a missed key block, and every argument error. BP_CPU_SDPA picks the path
 * tested (tests/CMakeLists.txt runs each); a path the CPU lacks is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "op_check.h"

/* q [b, h, sq, d], k and v [b, hkv, sk, d]. */
typedef bp_ref_sdpa_dims dims;

typedef struct variant {
    float scale; /* as passed: 0 means 1/sqrt(d) */
    int causal;
    int window;
    float softcap;
    bool alibi;
} variant;

/* The attributes of a variant as the op takes them (has_alibi is set by the op). */
static bp_sdpa_attrs attrs_of(variant var) {
    return (bp_sdpa_attrs){.scale = var.scale, .causal = var.causal, .window = var.window,
                           .softcap = var.softcap};
}

static void check(const char *what, const bp_tensor *out, bp_ref_result want, dims n) {
    assert_int_equal(bp_tensor_ndim(out), 4);
    assert_int_equal(bp_tensor_size(out, 0), n.b);
    assert_int_equal(bp_tensor_size(out, 1), n.h);
    assert_int_equal(bp_tensor_size(out, 2), n.sq);
    assert_int_equal(bp_tensor_size(out, 3), n.d);
    double *got = bp_test_tensor_values(out);
    bp_test_assert_close(what, got, want, n.b * n.h * n.sq * n.d, bp_tensor_dtype(out));
    free(got);
}

static void describe(char *buf, size_t size, bp_dtype dt, dims n, variant var) {
    snprintf(buf, size, "sdpa %s [%lld, %lld, %lld, %lld] kv heads %lld sk %lld scale %g "
             "causal %d window %d softcap %g alibi %d", bp_dtype_name(dt), (long long)n.b,
             (long long)n.h, (long long)n.sq, (long long)n.d, (long long)n.hkv, (long long)n.sk,
             (double)var.scale, var.causal, var.window, (double)var.softcap, var.alibi);
}

/* One call on contiguous random inputs, checked against the reference. */
/* Contiguous q [b, h, sq, d], k and v [b, hkv, sk, d] on the cpu, random in [-1, 1)
 * from seeds seed, seed + 1 and seed + 2, with their values. */
typedef struct qkv {
    bp_tensor *q, *k, *v;
    double *qv, *kv, *vv;
} qkv;

static qkv random_qkv(bp_dtype dt, dims n, uint64_t seed) {
    bp_device *cpu = bp_test_cpu();
    const int64_t qs[] = {n.b, n.h, n.sq, n.d}, kvs[] = {n.b, n.hkv, n.sk, n.d};
    qkv t;
    t.q = bp_test_random_tensor(cpu, dt, 4, qs, seed, -1, 1, &t.qv);
    t.k = bp_test_random_tensor(cpu, dt, 4, kvs, seed + 1, -1, 1, &t.kv);
    t.v = bp_test_random_tensor(cpu, dt, 4, kvs, seed + 2, -1, 1, &t.vv);
    return t;
}

static void qkv_free(qkv *t) {
    bp_tensor_release(t->q);
    bp_tensor_release(t->k);
    bp_tensor_release(t->v);
    free(t->qv), free(t->kv), free(t->vv);
}

static void run_case(bp_dtype dt, dims n, variant var, uint64_t seed) {
    double *sv = NULL;
    qkv t = random_qkv(dt, n, seed);
    bp_tensor *slopes = var.alibi ? bp_test_alibi_slopes(bp_test_cpu(), n.h, &sv) : NULL;
    bp_sdpa_attrs attrs = attrs_of(var);
    bp_ref_result want = bp_ref_sdpa(n, &attrs, bp_ref_view4_contiguous(t.qv, n.h, n.sq, n.d),
                               bp_ref_view4_contiguous(t.kv, n.hkv, n.sk, n.d),
                               bp_ref_view4_contiguous(t.vv, n.hkv, n.sk, n.d), sv, dt);
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_sdpa(t.q, t.k, t.v, slopes, &attrs, &out));
    char what[256];
    describe(what, sizeof what, dt, n, var);
    check(what, out, want, n);
    bp_tensor_release(slopes);
    bp_tensor_release(out);
    qkv_free(&t);
    free(sv);
    bp_ref_free(&want);
}

static void test_attribute_combinations(void **state) {
    (void)state;
    const float softcaps[] = {0, 0.7f};
    uint64_t seed = 100;
    for (int i = 0; i < 3; i++)
        for (int gqa = 0; gqa < 2; gqa++)
            for (int causal = 0; causal < 2; causal++)
                for (int window = 0; window < 2; window++)
                    for (int alibi = 0; alibi < 2; alibi++)
                        for (int cap = 0; cap < 2; cap++) {
                            dims n = {2, 4, gqa ? 2 : 4, 37, 71, 20};
                            variant var = {.scale = (causal + window + alibi) % 2 ? 0.35f : 0,
                                           .causal = causal, .window = window ? 9 : 0,
                                           .softcap = softcaps[cap], .alibi = alibi};
                            run_case(bp_test_float_dtypes[i], n, var, seed++);
                        }
}

static void test_shapes(void **state) {
    (void)state;
    const variant plain = {0}, causal = {.causal = 1}, everything = {
        .scale = 0.5f, .causal = 1, .window = 40, .softcap = 2.0f, .alibi = true};
    const dims cases[] = {
        {1, 2, 2, 37, 129, 16},  /* Sk past two key blocks */
        {1, 2, 1, 1, 129, 32},   /* one query (decoding) */
        {1, 1, 1, 1, 1, 8},
        {1, 3, 1, 70, 65, 24},   /* three query heads per kv head; d not a multiple of 16 */
        {2, 2, 2, 129, 37, 64},  /* Sq > Sk */
        {1, 1, 1, 5, 3, 1},      /* d = 1 */
        {1, 2, 2, 3, 70, 130},   /* d over a register tile many times */
    };
    uint64_t seed = 300;
    for (int i = 0; i < 3; i++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            run_case(bp_test_float_dtypes[i], cases[c], plain, seed++);
            run_case(bp_test_float_dtypes[i], cases[c], causal, seed++);
            run_case(bp_test_float_dtypes[i], cases[c], everything, seed++);
        }
}

/* Outputs outside the bound when got is checked against the reference of (n, attrs) on
 * q, k and v (contiguous values). */
static int64_t misses(const double *got, dims n, bp_sdpa_attrs attrs, const double *qv,
                      const double *kv, const double *vv, bp_dtype dt) {
    bp_ref_result want = bp_ref_sdpa(n, &attrs, bp_ref_view4_contiguous(qv, n.h, n.sq, n.d),
                                     bp_ref_view4_contiguous(kv, n.hkv, n.sk, n.d),
                                     bp_ref_view4_contiguous(vv, n.hkv, n.sk, n.d), NULL, dt);
    int64_t count = bp_test_count_out_of_bounds(got, want, n.b * n.h * n.sq * n.d, dt);
    bp_ref_free(&want);
    return count;
}

/* The bound is tight enough to see the mistakes a fast path could make: each dtype's
 * output (bf16's with P rounded to bf16 on the avx512bf16 and amx paths) passes against its own
 * reference and fails against the references of a scale 2% off, a window one key
 * longer, the causal mask dropped, and keys 64 .. 127 (one whole key block) missed. */
static void test_bound_catches_mistakes(void **state) {
    (void)state;
    const dims n = {1, 2, 1, 130, 200, 64};
    uint64_t seed = 700;
    for (int i = 0; i < 3; i++, seed += 3) {
        bp_dtype dt = bp_test_float_dtypes[i];
        qkv t = random_qkv(dt, n, seed);
        const double *qv = t.qv, *kv = t.kv, *vv = t.vv;
        const bp_sdpa_attrs plain = {.scale = 0.5f}, windowed = {.scale = 0.5f, .window = 40},
                            causal = {.scale = 0.5f, .causal = 1};
        const bp_sdpa_attrs *runs[] = {&plain, &windowed, &causal};
        double *got[3];
        for (int r = 0; r < 3; r++) {
            bp_tensor *out = NULL;
            BP_ASSERT_OK(bp_sdpa(t.q, t.k, t.v, NULL, runs[r], &out));
            got[r] = bp_test_tensor_values(out);
            bp_tensor_release(out);
            assert_int_equal(misses(got[r], n, *runs[r], qv, kv, vv, dt), 0);
        }
        assert_true(misses(got[0], n, (bp_sdpa_attrs){.scale = 0.51f}, qv, kv, vv, dt) > 0);
        assert_true(misses(got[1], n, (bp_sdpa_attrs){.scale = 0.5f, .window = 41}, qv, kv, vv,
                           dt) > 0);
        assert_true(misses(got[2], n, plain, qv, kv, vv, dt) > 0);
        /* Keys 64 .. 127 left out of k and v. */
        dims fewer = n;
        fewer.sk = n.sk - 64;
        double *k2 = bp_test_alloc_values(fewer.sk * n.d);
        double *v2 = bp_test_alloc_values(fewer.sk * n.d);
        for (int64_t j = 0, to = 0; j < n.sk; j++)
            if (j < 64 || j >= 128) {
                memcpy(k2 + to * n.d, kv + j * n.d, (size_t)n.d * sizeof *k2);
                memcpy(v2 + to * n.d, vv + j * n.d, (size_t)n.d * sizeof *v2);
                to++;
            }
        assert_true(misses(got[0], fewer, plain, qv, k2, v2, dt) > 0);
        for (int r = 0; r < 3; r++)
            free(got[r]);
        qkv_free(&t);
        free(k2), free(v2);
    }
}

/* Values of keys that a causal mask hides from every query row may be anything, Inf
 * included: none reaches an output (0 times Inf would be NaN). Queries fewer than keys
 * leave the last keys unseen; the shapes end the visible keys inside a tile of 32
 * (40, 72) and on one (64). The reference gets the finite values. */
static void test_hidden_values_never_reach_outputs(void **state) {
    (void)state;
    const int64_t queries[] = {40, 64, 72};
    uint64_t seed = 900;
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        uint16_t inf16 = dt == BP_DTYPE_BF16 ? 0x7f80 : 0x7c00;
        for (size_t c = 0; c < sizeof queries / sizeof queries[0]; c++, seed += 3) {
            const dims n = {1, 2, 1, queries[c], 100, 64};
            qkv t = random_qkv(dt, n, seed);
            char *data = bp_tensor_data(t.v);
            for (int64_t x = n.sq * n.d; x < n.sk * n.d; x++) {
                if (dt == BP_DTYPE_F32)
                    ((float *)data)[x] = INFINITY;
                else
                    memcpy(data + x * 2, &inf16, 2);
            }
            const bp_sdpa_attrs causal = {.scale = 0.5f, .causal = 1};
            bp_tensor *out = NULL;
            BP_ASSERT_OK(bp_sdpa(t.q, t.k, t.v, NULL, &causal, &out));
            double *got = bp_test_tensor_values(out);
            assert_int_equal(misses(got, n, causal, t.qv, t.kv, t.vv, dt), 0);
            free(got);
            bp_tensor_release(out);
            qkv_free(&t);
        }
    }
}

static void test_masked_rows_and_zero_size(void **state) {
    (void)state;
    uint64_t seed = 500;
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        /* A window without causal: rows i >= Sk + window - 1 see no key at all. */
        run_case(dt, (dims){1, 2, 2, 37, 10, 8}, (variant){.window = 5}, seed++);
        run_case(dt, (dims){1, 2, 2, 37, 10, 8}, (variant){.window = 5, .alibi = true}, seed++);
        run_case(dt, (dims){1, 2, 1, 4, 0, 8}, (variant){0}, seed++);       /* Sk = 0: zeros */
        run_case(dt, (dims){1, 2, 1, 0, 5, 8}, (variant){.causal = 1}, seed++);
        run_case(dt, (dims){0, 2, 1, 4, 5, 8}, (variant){0}, seed++);
        run_case(dt, (dims){1, 2, 1, 4, 5, 0}, (variant){0}, seed++);       /* d = 0 */
        run_case(dt, (dims){1, 0, 0, 4, 5, 8}, (variant){0}, seed++);       /* no heads */
    }
}

/* q, k, v in the [B, S, H, D] layout of a projection, viewed as [B, H, S, D], and out
 * written through the same kind of view. */
static void test_strided(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    dims n = {2, 4, 2, 37, 71, 24};
    variant var = {.scale = 0.3f, .causal = 1, .alibi = true, .softcap = 3.0f};
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        double *qv, *kv, *vv, *sv;
        bp_tensor *qb = bp_test_random_tensor(cpu, dt, 4, (const int64_t[]){n.b, n.sq, n.h, n.d},
                                              700 + i, -1, 1, &qv);
        bp_tensor *kb = bp_test_random_tensor(cpu, dt, 4,
                                              (const int64_t[]){n.b, n.sk, n.hkv, n.d}, 710 + i,
                                              -1, 1, &kv);
        bp_tensor *vb = bp_test_random_tensor(cpu, dt, 4,
                                              (const int64_t[]){n.b, n.sk, n.hkv, n.d}, 720 + i,
                                              -1, 1, &vv);
        bp_tensor *q = NULL, *k = NULL, *v = NULL, *ob = NULL, *out = NULL;
        BP_ASSERT_OK(bp_tensor_transpose(qb, 1, 2, &q));
        BP_ASSERT_OK(bp_tensor_transpose(kb, 1, 2, &k));
        BP_ASSERT_OK(bp_tensor_transpose(vb, 1, 2, &v));
        BP_ASSERT_OK(bp_tensor_empty(cpu, dt, 4, (const int64_t[]){n.b, n.sq, n.h, n.d}, &ob));
        BP_ASSERT_OK(bp_tensor_transpose(ob, 1, 2, &out));
        bp_tensor *slopes = bp_test_alibi_slopes(bp_test_cpu(), n.h, &sv);
        bp_ref_view4 qview = {qv, {n.sq * n.h * n.d, n.d, n.h * n.d, 1}};
        bp_ref_view4 kview = {kv, {n.sk * n.hkv * n.d, n.d, n.hkv * n.d, 1}};
        bp_ref_view4 vview = {vv, {n.sk * n.hkv * n.d, n.d, n.hkv * n.d, 1}};
        bp_sdpa_attrs attrs = attrs_of(var);
        bp_ref_result want = bp_ref_sdpa(n, &attrs, qview, kview, vview, sv, dt);
        BP_ASSERT_OK(bp_sdpa_out(q, k, v, slopes, &attrs, out));
        char what[256];
        describe(what, sizeof what, dt, n, var);
        check(what, out, want, n);
        bp_tensor *all[] = {qb, kb, vb, q, k, v, ob, out, slopes};
        for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
            bp_tensor_release(all[t]);
        free(qv);
        free(kv);
        free(vv);
        free(sv);
        bp_ref_free(&want);
    }
}

/* NULL attrs are the defaults: scale 1/sqrt(d), no masks. */
static void test_default_attrs(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    dims n = {1, 2, 2, 9, 11, 16};
    double *qv, *kv, *vv;
    bp_tensor *q = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){1, 2, 9, 16}, 800,
                                         -1, 1, &qv);
    bp_tensor *k = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){1, 2, 11, 16},
                                         801, -1, 1, &kv);
    bp_tensor *v = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){1, 2, 11, 16},
                                         802, -1, 1, &vv);
    bp_ref_result want = bp_ref_sdpa(n, NULL, bp_ref_view4_contiguous(qv, 2, 9, 16),
                               bp_ref_view4_contiguous(kv, 2, 11, 16),
                               bp_ref_view4_contiguous(vv, 2, 11, 16), NULL, BP_DTYPE_F32);
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_sdpa(q, k, v, NULL, NULL, &out));
    check("sdpa with NULL attrs", out, want, n);
    bp_tensor *all[] = {q, k, v, out};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        bp_tensor_release(all[t]);
    free(qv);
    free(kv);
    free(vv);
    bp_ref_free(&want);
}

/* Bytes the device allocator's peak rises above what is allocated before the call,
 * for bp_sdpa_out at sequence length s (out preallocated). */
static uint64_t sdpa_overhead(int64_t s, bool causal) {
    bp_device *cpu = bp_test_cpu();
    const int64_t shape[4] = {1, 2, s, 16};
    bp_tensor *q = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, shape, 900, -1, 1, NULL);
    bp_tensor *k = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, shape, 901, -1, 1, NULL);
    bp_tensor *v = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, shape, 902, -1, 1, NULL);
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_F32, 4, shape, &out));
    bp_stream *stream = NULL;
    BP_ASSERT_OK(bp_stream_default(cpu, &stream));
    BP_ASSERT_OK(bp_stream_synchronize(stream));
    BP_ASSERT_OK(bp_memory_reset_peak(cpu));
    bp_memory_stats before = {.struct_size = sizeof before};
    BP_ASSERT_OK(bp_memory_get_stats(cpu, &before));
    bp_sdpa_attrs attrs = {.causal = causal};
    BP_ASSERT_OK(bp_sdpa_out(q, k, v, NULL, &attrs, out));
    BP_ASSERT_OK(bp_stream_synchronize(stream));
    bp_memory_stats after = {.struct_size = sizeof after};
    BP_ASSERT_OK(bp_memory_get_stats(cpu, &after));
    /* The result is sane: attention weights average values in [-1, 1). */
    bp_tensor *last = NULL;
    BP_ASSERT_OK(bp_tensor_narrow(out, 2, s - 1, 1, &last));
    float row[2 * 16];
    BP_ASSERT_OK(bp_tensor_to_host(last, row, sizeof row));
    for (int x = 0; x < 2 * 16; x++)
        assert_true(fabsf(row[x]) <= 1.0f);
    bp_tensor *all[] = {q, k, v, out, last};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        bp_tensor_release(all[t]);
    return after.peak_allocated_bytes - before.allocated_bytes;
}

static void test_memory_does_not_grow(void **state) {
    (void)state;
    uint64_t small = sdpa_overhead(256, false);
    uint64_t large = sdpa_overhead(2048, true);
    /* The score matrix at S = 2048 would be 2 heads * 2048^2 floats = 32 MiB. */
    assert_true(large < 64 * 1024);
    assert_int_equal(large, small);
}

static void test_errors(void **state) {
    (void)state;
    bp_device *cpu = bp_test_cpu();
    const int64_t qs[4] = {2, 4, 5, 8}, kvs[4] = {2, 2, 6, 8};
    bp_tensor *q = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, qs, 1, -1, 1, NULL);
    bp_tensor *k = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, kvs, 2, -1, 1, NULL);
    bp_tensor *v = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, kvs, 3, -1, 1, NULL);
    bp_tensor *kh = bp_test_random_tensor(cpu, BP_DTYPE_F16, 4, kvs, 4, -1, 1, NULL);
    bp_tensor *qi = bp_test_random_tensor(cpu, BP_DTYPE_I32, 4, qs, 5, -1, 1, NULL);
    bp_tensor *k3 = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){2, 3, 6, 8}, 6,
                                          -1, 1, NULL);
    bp_tensor *kb = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){3, 2, 6, 8}, 7,
                                          -1, 1, NULL);
    bp_tensor *kd = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){2, 2, 6, 4}, 8,
                                          -1, 1, NULL);
    bp_tensor *vs = bp_test_random_tensor(cpu, BP_DTYPE_F32, 4, (const int64_t[]){2, 2, 7, 8}, 9,
                                          -1, 1, NULL);
    bp_tensor *q3 = bp_test_random_tensor(cpu, BP_DTYPE_F32, 3, (const int64_t[]){4, 5, 8}, 10,
                                          -1, 1, NULL);
    bp_tensor *slopes5 = bp_test_random_tensor(cpu, BP_DTYPE_F32, 1, (const int64_t[]){5}, 11, 0,
                                               1, NULL);
    bp_tensor *slopes_h = bp_test_random_tensor(cpu, BP_DTYPE_F16, 1, (const int64_t[]){4}, 12, 0,
                                                1, NULL);
    bp_tensor *slopes_2d = bp_test_random_tensor(cpu, BP_DTYPE_F32, 2, (const int64_t[]){1, 4},
                                                 13, 0, 1, NULL);
    bp_tensor *out = NULL, *wrong = NULL, *wrong_dt = NULL, *good = NULL;
    bp_sdpa_attrs attrs = {0};

    BP_ASSERT_ERR(bp_sdpa(NULL, k, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: tensor argument 0 is NULL");
    assert_null(out);
    BP_ASSERT_ERR(bp_sdpa(q, NULL, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: tensor argument 1 is NULL");
    BP_ASSERT_ERR(bp_sdpa(q, k, NULL, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: tensor argument 2 is NULL");
    BP_ASSERT_ERR(bp_sdpa(q, k, v, NULL, &attrs, NULL), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: the out pointer is NULL");
    BP_ASSERT_ERR(bp_sdpa_out(q, k, v, NULL, &attrs, NULL), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: out is NULL");
    BP_ASSERT_ERR(bp_sdpa(q, kh, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: dtype mismatch: f32 and f16");
    BP_ASSERT_ERR(bp_sdpa(qi, k, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: dtype i32 is not supported (supported: f32, f16, bf16)");
    BP_ASSERT_ERR(bp_sdpa(q3, k, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: q, k and v must be 4-D");
    BP_ASSERT_ERR(bp_sdpa(q, k3, k3, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: q has 4 heads but k and v have 3; the query heads must be a multiple "
                  "of the key/value heads");
    BP_ASSERT_ERR(bp_sdpa(q, kb, kb, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: q is [2, 4, 5, 8] but k and v are [3, 2, 6, 8] (batch sizes differ)");
    BP_ASSERT_ERR(bp_sdpa(q, kd, kd, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: q is [2, 4, 5, 8] but k and v are [2, 2, 6, 4] (head dims differ)");
    BP_ASSERT_ERR(bp_sdpa(q, k, vs, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: k is [2, 2, 6, 8] but v is [2, 2, 7, 8]");
    BP_ASSERT_ERR(bp_sdpa(q, k, v, slopes5, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: alibi_slopes is [5] but q has 4 heads (expected f32 [4]");
    BP_ASSERT_ERR(bp_sdpa(q, k, v, slopes_2d, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: alibi_slopes is [1, 4] but q has 4 heads");
    BP_ASSERT_ERR(bp_sdpa(q, k, v, slopes_h, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: alibi_slopes has dtype f16; it must be f32");
    attrs.scale = NAN;
    BP_ASSERT_ERR(bp_sdpa(q, k, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: scale must be a finite number");
    attrs.scale = 0;
    attrs.softcap = NAN;
    BP_ASSERT_ERR(bp_sdpa(q, k, v, NULL, &attrs, &out), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: softcap must be a finite number");
    attrs.softcap = 0;

    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_F32, 4, (const int64_t[]){2, 4, 5, 4}, &wrong));
    BP_ASSERT_ERR(bp_sdpa_out(q, k, v, NULL, &attrs, wrong), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: out has shape [2, 4, 5, 4], expected [2, 4, 5, 8]");
    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_F16, 4, qs, &wrong_dt));
    BP_ASSERT_ERR(bp_sdpa_out(q, k, v, NULL, &attrs, wrong_dt), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: out has dtype f16, expected f32");
    BP_ASSERT_ERR(bp_sdpa_out(q, k, v, NULL, &attrs, q), BP_ERR_INVALID_ARGUMENT,
                  "sdpa: out overlaps input 0");
    BP_ASSERT_OK(bp_tensor_empty(cpu, BP_DTYPE_F32, 4, qs, &good));
    BP_ASSERT_OK(bp_sdpa_out(q, k, v, NULL, &attrs, good));

    bp_tensor *all[] = {q, k, v, kh, qi, k3, kb, kd, vs, q3, slopes5, slopes_h, slopes_2d,
                        wrong, wrong_dt, good};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        bp_tensor_release(all[t]);
}

int main(void) {
    /* The path BP_CPU_SDPA names, if this CPU cannot run it (the library would warn and
     * use auto instead: test_env and the conformance entries test that). */
    const char *path = getenv("BP_CPU_SDPA");
    const char *unavailable = path ? bp_test_sdpa_path_unavailable(path) : NULL;
    if (unavailable) {
        printf("skipped: BP_CPU_SDPA=%s: %s\n", path, unavailable);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attribute_combinations),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_masked_rows_and_zero_size),
        cmocka_unit_test(test_bound_catches_mistakes),
        cmocka_unit_test(test_hidden_values_never_reach_outputs),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_default_attrs),
        cmocka_unit_test(test_memory_does_not_grow),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
