/* The cuda plugin (backends/cuda, docs/backends/cuda.md) on a real GPU: properties,
 * memory and copies, pinned host memory, stream priorities, timing events, the guard
 * (the primary context current on the thread), clear errors, and regions captured into
 * CUDA graphs (strict and bfs, replayed through the graph cache) computing what eager
 * ops compute. Op results against float64 references are bp-conformance's job
 * (conformance_cuda). Without a CUDA device CTest runs this through
 * skip_unless_cuda.sh, which reports it skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"

static bp_device *gpu(void) {
    bp_device *dev = NULL;
    BP_ASSERT_OK(bp_device_open("cuda:0", &dev));
    return dev;
}

static float *random_floats(size_t n, uint64_t seed) {
    uint32_t *bits = malloc(n * sizeof *bits);
    float *f = malloc(n * sizeof *f);
    assert_non_null(bits);
    assert_non_null(f);
    bp_test_fill_random(bits, n * sizeof *bits, seed);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)(bits[i] % 2001) / 1000.0f - 1.0f;
    free(bits);
    return f;
}

static void test_props(void **state) {
    (void)state;
    bp_device_props p = {.struct_size = sizeof p};
    BP_ASSERT_OK(bp_device_get_props(gpu(), &p));
    assert_string_equal(p.type, "cuda");
    uint32_t want = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_PINNED_HOST |
                    BP_CAP_REGIONS | BP_CAP_REGION_STREAMS;
    assert_int_equal(p.capabilities & want, want);
    assert_true(p.dtypes & BP_DTYPE_BIT(BP_DTYPE_BF16));
    assert_true(bp_test_contains(p.description, "sm_"));
    assert_true(p.total_memory > (1ull << 30));
    /* CUDA: lower numbers are higher priorities. */
    assert_true(p.stream_priority_greatest <= p.stream_priority_least);
}

static void test_round_trip_and_device_copy(void **state) {
    (void)state;
    enum { N = 1 << 20 };
    float *host = random_floats(N, 11), *back = calloc(N, sizeof *back);
    int64_t shape[1] = {N};
    bp_tensor *a = NULL, *b = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(gpu(), BP_DTYPE_F32, 1, shape, host, &a));
    BP_ASSERT_OK(bp_tensor_empty(gpu(), BP_DTYPE_F32, 1, shape, &b));
    BP_ASSERT_OK(bp_copy(b, a));
    BP_ASSERT_OK(bp_tensor_to_host(b, back, N * sizeof *back));
    assert_memory_equal(host, back, N * sizeof *back);
    bp_tensor_release(a);
    bp_tensor_release(b);
    free(host);
    free(back);
}

static void test_pinned_host_and_async_copy(void **state) {
    (void)state;
    enum { N = 4096 };
    bp_device *dev = gpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_default(dev, &s));
    float *pinned = NULL, *out = NULL;
    BP_ASSERT_OK(bp_host_alloc(dev, N * sizeof(float), (void **)&pinned));
    BP_ASSERT_OK(bp_host_alloc(dev, N * sizeof(float), (void **)&out));
    float *src = random_floats(N, 12);
    memcpy(pinned, src, N * sizeof(float));
    void *d = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, N * sizeof(float), s, &d));
    BP_ASSERT_OK(bp_memory_copy_async(d, dev, pinned, NULL, N * sizeof(float), s));
    BP_ASSERT_OK(bp_memory_copy_async(out, NULL, d, dev, N * sizeof(float), s));
    BP_ASSERT_OK(bp_stream_synchronize(s));
    assert_memory_equal(src, out, N * sizeof(float));
    BP_ASSERT_OK(bp_memory_free(dev, d));
    BP_ASSERT_OK(bp_host_free(dev, pinned));
    BP_ASSERT_OK(bp_host_free(dev, out));
    free(src);
}

static void test_stream_priority_and_timing(void **state) {
    (void)state;
    bp_device *dev = gpu();
    bp_device_props p = {.struct_size = sizeof p};
    BP_ASSERT_OK(bp_device_get_props(dev, &p));
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, p.stream_priority_greatest, &s));
    int prio = 0;
    BP_ASSERT_OK(bp_stream_get_priority(s, &prio));
    assert_int_equal(prio, p.stream_priority_greatest);
    bp_event *t0 = NULL, *t1 = NULL;
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t0));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t1));
    int64_t shape[2] = {1024, 1024};
    bp_tensor *a = NULL, *c = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 2, shape, &a));
    bp_stream_guard g;
    BP_ASSERT_OK(bp_stream_guard_begin(&g, s));
    BP_ASSERT_OK(bp_fill(a, 0.5));
    BP_ASSERT_OK(bp_event_record(t0, s));
    BP_ASSERT_OK(bp_matmul(a, a, 0, 0, &c));
    BP_ASSERT_OK(bp_event_record(t1, s));
    bp_stream_guard_end(&g);
    BP_ASSERT_OK(bp_event_synchronize(t1));
    assert_int_equal(bp_event_query(t1), BP_OK);
    float ms = -1;
    BP_ASSERT_OK(bp_event_elapsed_ms(t0, t1, &ms));
    assert_true(ms > 0.0f && ms < 1000.0f);
    float corner = 0;
    bp_tensor *c00 = NULL, *row = NULL;
    BP_ASSERT_OK(bp_tensor_narrow(c, 0, 0, 1, &row));
    BP_ASSERT_OK(bp_tensor_narrow(row, 1, 0, 1, &c00));
    bp_tensor *c00c = NULL;
    BP_ASSERT_OK(bp_tensor_contiguous(c00, &c00c));
    BP_ASSERT_OK(bp_tensor_to_host(c00c, &corner, sizeof corner));
    assert_float_equal(corner, 256.0f, 1e-3f); /* 1024 * 0.5 * 0.5 */
    bp_tensor_release(c00c);
    bp_tensor_release(c00);
    bp_tensor_release(row);
    bp_tensor_release(a);
    bp_tensor_release(c);
    bp_event_destroy(t0);
    bp_event_destroy(t1);
    BP_ASSERT_OK(bp_stream_destroy(s));
}

/* The guard makes the device's primary context current: the backend's own notion of
 * the current device (cuCtxGetCurrent) follows it. */
static void test_guard_sets_context(void **state) {
    (void)state;
    bp_device *dev = gpu(), *cur = NULL;
    bp_device_guard g;
    BP_ASSERT_OK(bp_device_guard_begin(&g, dev));
    BP_ASSERT_OK(bp_device_backend_current(dev, &cur));
    assert_ptr_equal(cur, dev);
    bp_device_guard_end(&g);
}

static void test_errors(void **state) {
    (void)state;
    bp_device *dev = NULL;
    BP_ASSERT_ERR(bp_device_open("cuda:64", &dev), BP_ERR_NOT_FOUND, "cuda");
    int64_t huge[1] = {(int64_t)1 << 45}; /* 128 TiB of f32 */
    bp_tensor *t = NULL;
    BP_ASSERT_ERR(bp_tensor_empty(gpu(), BP_DTYPE_F32, 1, huge, &t), BP_ERR_OUT_OF_MEMORY,
                  "cuda");
}

/* Sliced attention in a region, on cuda, against the same ops run eagerly. */
enum { B = 2, H = 4, S = 256, D = 64, SLICES = 8 };
#define NUMEL ((size_t)B * H * S * D)

static bp_tensor *random_qkv(uint64_t seed) {
    float *host = random_floats(NUMEL, seed);
    int64_t shape[3] = {B * H, S, D};
    bp_tensor *f = NULL, *t = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(gpu(), BP_DTYPE_F32, 3, shape, host, &f));
    BP_ASSERT_OK(bp_cast(f, BP_DTYPE_BF16, &t));
    bp_tensor_release(f);
    free(host);
    return t;
}

static void attend(bp_tensor *q, bp_tensor *k, bp_tensor *v, bp_tensor *out) {
    int64_t n = (B * H) / SLICES;
    for (int64_t i = 0; i < SLICES; i++) {
        bp_tensor *qi = NULL, *ki = NULL, *vi = NULL, *oi = NULL, *s = NULL, *p = NULL;
        BP_ASSERT_OK(bp_tensor_narrow(q, 0, i * n, n, &qi));
        BP_ASSERT_OK(bp_tensor_narrow(k, 0, i * n, n, &ki));
        BP_ASSERT_OK(bp_tensor_narrow(v, 0, i * n, n, &vi));
        BP_ASSERT_OK(bp_tensor_narrow(out, 0, i * n, n, &oi));
        BP_ASSERT_OK(bp_matmul(qi, ki, 0, 1, &s));
        BP_ASSERT_OK(bp_softmax(s, 0.125f, 0, &p));
        BP_ASSERT_OK(bp_matmul_out(p, vi, 0, 0, oi));
        bp_tensor_release(qi);
        bp_tensor_release(ki);
        bp_tensor_release(vi);
        bp_tensor_release(oi);
        bp_tensor_release(s);
        bp_tensor_release(p);
    }
}

static float *host_f32(bp_tensor *t) {
    bp_tensor *f = NULL;
    BP_ASSERT_OK(bp_cast(t, BP_DTYPE_F32, &f));
    float *h = malloc(NUMEL * sizeof *h);
    BP_ASSERT_OK(bp_tensor_to_host(f, h, NUMEL * sizeof *h));
    bp_tensor_release(f);
    return h;
}

static void test_regions_are_graphs(void **state) {
    (void)state;
    bp_device *dev = gpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_default(dev, &s));
    bp_tensor *q = random_qkv(21), *k = random_qkv(22), *v = random_qkv(23);
    int64_t shape[3] = {B * H, S, D};
    bp_tensor *eager = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_BF16, 3, shape, &eager));
    attend(q, k, v, eager);
    float *want = host_f32(eager);
    const char *hints[] = {"{\"order\": \"strict\"}", "{\"order\": \"bfs\", \"max_parallel\": 4}"};
    for (int h = 0; h < 2; h++) {
        /* The second run of each replays the cached graph with new buffers. */
        for (int rep = 0; rep < 2; rep++) {
            bp_tensor *out = NULL;
            BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_BF16, 3, shape, &out));
            BP_ASSERT_OK(bp_fill(out, -7.0)); /* poison: every element must be written */
            bp_region_report rep_ = {.struct_size = sizeof rep_};
            BP_ASSERT_OK(bp_region_begin(s, hints[h]));
            attend(q, k, v, out);
            BP_ASSERT_OK(bp_region_end(s, &rep_));
            assert_int_equal(rep_.backend_compiled, 1);
            assert_true(rep_.device_ms > 0);
            /* The graph keeps the schedule's streams: max_parallel bounds its branches. */
            for (int i = 0; i < rep_.hint_count; i++)
                if (!strcmp(rep_.hints[i].key, "max_parallel")) {
                    assert_int_equal(rep_.hints[i].disposition, BP_HINT_HONOURED);
                    assert_true(bp_test_contains(rep_.hints[i].reason, "parallel branches"));
                    assert_int_equal(rep_.streams_used, 4);
                }
            float *got = host_f32(out);
            /* The same kernels on the same inputs: equal up to a bf16 rounding step. */
            for (size_t i = 0; i < NUMEL; i++)
                if (!(fabsf(got[i] - want[i]) <= 1.6e-2f * (1.0f + fabsf(want[i]))))
                    fail_msg("%s run %d: element %zu is %g, eager gave %g", hints[h], rep, i,
                             (double)got[i], (double)want[i]);
            free(got);
            bp_tensor_release(out);
        }
    }
    free(want);
    bp_tensor_release(eager);
    bp_tensor_release(q);
    bp_tensor_release(k);
    bp_tensor_release(v);
}

/* A strict region of more launches than one chunk (cu_region.c launches a one-stream
 * region in chunks while it captures): 300 dependent in-place ops, twice (the second
 * run updates every chunk's cached graph). */
static void test_long_strict_region_in_chunks(void **state) {
    (void)state;
    enum { N = 4096, OPS = 300 };
    bp_device *dev = gpu();
    bp_stream *s = NULL;
    BP_ASSERT_OK(bp_stream_default(dev, &s));
    float *host = random_floats(N, 31), *back = malloc(N * sizeof *back);
    int64_t shape[1] = {N};
    double factor = 1.0;
    for (int i = 0; i < OPS; i++)
        factor *= 1.001f;
    for (int rep = 0; rep < 2; rep++) {
        bp_tensor *t = NULL;
        BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, host, &t));
        bp_region_report report = {.struct_size = sizeof report};
        BP_ASSERT_OK(bp_region_begin(s, "{\"order\": \"strict\"}"));
        for (int i = 0; i < OPS; i++)
            BP_ASSERT_OK(bp_scale_out(t, 1.001, t));
        BP_ASSERT_OK(bp_region_end(s, &report));
        assert_int_equal(report.backend_compiled, 1);
        BP_ASSERT_OK(bp_tensor_to_host(t, back, N * sizeof *back));
        for (int i = 0; i < N; i++) {
            double want = host[i] * factor;
            if (!(fabs(back[i] - want) <= 1e-4 * (1.0 + fabs(want))))
                fail_msg("run %d: element %d is %g, want %g", rep, i, (double)back[i], want);
        }
        bp_tensor_release(t);
    }
    free(host);
    free(back);
}

/* Copies between two GPUs (BP_CAP_PEER_COPY): raw memory both ways on either device's
 * stream, and a tensor moved with bp_tensor_to. Needs cuda:1: on a machine with one
 * GPU it says "skipped: ..." and ctest reports its entry (test_cuda_peer_copy) skipped. */
static void test_peer_copy(void **state) {
    (void)state;
    bp_device *a = gpu(), *b = NULL;
    if (bp_device_open("cuda:1", &b) != BP_OK) {
        print_message("skipped: no second CUDA device (%s)\n", bp_last_error());
        skip();
    }
    bp_device_props p = {.struct_size = sizeof p};
    BP_ASSERT_OK(bp_device_get_props(a, &p));
    assert_true(p.capabilities & BP_CAP_PEER_COPY);
    enum { N = 1 << 18 };
    float *src = random_floats(N, 41), *back = calloc(N, sizeof *back);
    bp_stream *sa = NULL, *sb = NULL;
    BP_ASSERT_OK(bp_stream_default(a, &sa));
    BP_ASSERT_OK(bp_stream_default(b, &sb));
    void *da = NULL, *db = NULL;
    BP_ASSERT_OK(bp_memory_alloc(a, N * sizeof(float), sa, &da));
    BP_ASSERT_OK(bp_memory_alloc(b, N * sizeof(float), sb, &db));
    BP_ASSERT_OK(bp_memory_copy_async(da, a, src, NULL, N * sizeof(float), sa));
    BP_ASSERT_OK(bp_stream_synchronize(sa));
    /* a -> b on a's stream, then back b -> a on b's stream into a poisoned buffer. */
    BP_ASSERT_OK(bp_memory_copy_async(db, b, da, a, N * sizeof(float), sa));
    BP_ASSERT_OK(bp_stream_synchronize(sa));
    BP_ASSERT_OK(bp_memory_set_async(a, da, 0xff, N * sizeof(float), sa));
    BP_ASSERT_OK(bp_stream_synchronize(sa));
    BP_ASSERT_OK(bp_memory_copy_async(da, a, db, b, N * sizeof(float), sb));
    BP_ASSERT_OK(bp_stream_synchronize(sb));
    BP_ASSERT_OK(bp_memory_copy_async(back, NULL, da, a, N * sizeof(float), sa));
    BP_ASSERT_OK(bp_stream_synchronize(sa));
    assert_memory_equal(src, back, N * sizeof(float));
    int64_t shape[1] = {N};
    bp_tensor *ta = NULL, *tb = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(a, BP_DTYPE_F32, 1, shape, src, &ta));
    BP_ASSERT_OK(bp_tensor_to(ta, b, BP_DTYPE_F32, &tb));
    memset(back, 0, N * sizeof *back);
    BP_ASSERT_OK(bp_tensor_to_host(tb, back, N * sizeof *back));
    assert_memory_equal(src, back, N * sizeof(float));
    bp_tensor_release(ta);
    bp_tensor_release(tb);
    BP_ASSERT_OK(bp_memory_free(a, da));
    BP_ASSERT_OK(bp_memory_free(b, db));
    free(src);
    free(back);
}

/* `test_cuda` runs every test but the one that needs two GPUs; `test_cuda <filter>`
 * runs the tests the cmocka filter names (ctest's test_cuda_peer_copy), so that a
 * machine with one GPU reports that entry skipped and the others as run. */
int main(int argc, char **argv) {
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    else
        cmocka_set_skip_filter("test_peer_copy");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_props),
        cmocka_unit_test(test_round_trip_and_device_copy),
        cmocka_unit_test(test_pinned_host_and_async_copy),
        cmocka_unit_test(test_stream_priority_and_timing),
        cmocka_unit_test(test_guard_sets_context),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_regions_are_graphs),
        cmocka_unit_test(test_long_strict_region_in_chunks),
        cmocka_unit_test(test_peer_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
