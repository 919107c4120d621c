/* Regions: recording, deferred tensors, the bfs / strict / auto schedules of sliced
 * attention (results and peak scratch memory), the report, and every error path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { B = 1, H = 4, S = 256, D = 32, SLICES = 8 };
#define NUMEL ((size_t)B * H * S * D)

typedef struct fixture {
    bp_device *cpu;
    bp_stream *stream;
    bp_tensor *q, *k, *v, *ref;
} fixture;

static fixture fx;

static bp_tensor *random_tensor(uint64_t seed) {
    float *host = malloc(NUMEL * sizeof *host);
    assert_non_null(host);
    uint32_t *bits = malloc(NUMEL * sizeof *bits);
    bp_test_fill_random(bits, NUMEL * sizeof *bits, seed);
    for (size_t i = 0; i < NUMEL; i++)
        host[i] = (float)(bits[i] % 2001) / 1000.0f - 1.0f;
    int64_t shape[4] = {B, H, S, D};
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(fx.cpu, BP_DTYPE_F32, 4, shape, host, &t));
    free(bits);
    free(host);
    return t;
}

static int setup(void **state) {
    (void)state;
    fx.cpu = bp_test_cpu();
    BP_ASSERT_OK(bp_stream_default(fx.cpu, &fx.stream));
    fx.q = random_tensor(1);
    fx.k = random_tensor(2);
    fx.v = random_tensor(3);
    BP_ASSERT_OK(bp_sdpa(fx.q, fx.k, fx.v, NULL, NULL, &fx.ref));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    bp_tensor_release(fx.q);
    bp_tensor_release(fx.k);
    bp_tensor_release(fx.v);
    bp_tensor_release(fx.ref);
    return 0;
}

/* A failed test must not leave a region or scopes open for the next. */
static int close_all(void **state) {
    (void)state;
    if (bp_region_active(fx.stream))
        bp_region_end(fx.stream, NULL);
    while (bp_hints_depth() > 0)
        bp_hints_pop();
    return 0;
}

static bp_tensor *new_out(void) {
    int64_t shape[4] = {B, H, S, D};
    bp_tensor *out = NULL;
    BP_ASSERT_OK(bp_tensor_empty(fx.cpu, BP_DTYPE_F32, 4, shape, &out));
    return out;
}

/* The seed's sliced attention: per query slice, scores = q_i k^T, scale, softmax,
 * @ v into the slice of `out`. Every intermediate is released at once. */
static void sliced_attention(bp_tensor *out) {
    int64_t rows = S / SLICES;
    for (int i = 0; i < SLICES; i++) {
        bp_tensor *qi = NULL, *si = NULL, *ci = NULL, *pi = NULL, *oi = NULL;
        BP_ASSERT_OK(bp_tensor_narrow(fx.q, 2, i * rows, rows, &qi));
        BP_ASSERT_OK(bp_matmul(qi, fx.k, 0, 1, &si));
        BP_ASSERT_OK(bp_scale(si, 1.0 / sqrt((double)D), &ci));
        BP_ASSERT_OK(bp_softmax(ci, 1.0f, 0, &pi));
        BP_ASSERT_OK(bp_tensor_narrow(out, 2, i * rows, rows, &oi));
        BP_ASSERT_OK(bp_matmul_out(pi, fx.v, 0, 0, oi));
        bp_tensor_release(qi);
        bp_tensor_release(si);
        bp_tensor_release(ci);
        bp_tensor_release(pi);
        bp_tensor_release(oi);
    }
}

static double max_error(bp_tensor *out) {
    float *a = malloc(NUMEL * sizeof *a), *b = malloc(NUMEL * sizeof *b);
    BP_ASSERT_OK(bp_tensor_to_host(out, a, NUMEL * sizeof *a));
    BP_ASSERT_OK(bp_tensor_to_host(fx.ref, b, NUMEL * sizeof *b));
    /* A compare, not fmax: aarch64 gcc 12.2 at -O2 crashes (internal compiler error in
     * vect_transform_reduction, tree-vect-loop.cc:7457) vectorising an fmax reduction
     * over a loop of constant trip count (reproducer: for (i = 0; i < 4096; i++)
     * m = fmax(m, fabs((double)a[i] - (double)b[i]));). */
    double m = 0;
    for (size_t i = 0; i < NUMEL; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m))
            m = d; /* a NaN difference makes m NaN, so the test's bound check fails */
    }
    free(a);
    free(b);
    return m;
}

/* Runs the sliced attention in a region with `hints`; returns the report. */
static bp_region_report run_region(const char *hints, double *out_error) {
    bp_tensor *out = new_out();
    bp_region_report rep = {.struct_size = sizeof rep};
    BP_ASSERT_OK(bp_region_begin(fx.stream, hints));
    sliced_attention(out);
    BP_ASSERT_OK(bp_region_end(fx.stream, &rep));
    *out_error = max_error(out);
    bp_tensor_release(out);
    return rep;
}

static void test_eager_slices_match_sdpa(void **state) {
    (void)state;
    bp_tensor *out = new_out();
    sliced_attention(out);
    assert_true(max_error(out) < 1e-4);
    bp_tensor_release(out);
}

static void test_policies_give_equal_results_and_peaks_follow_the_schedule(void **state) {
    (void)state;
    double err;
    bp_region_report bfs = run_region(NULL, &err);
    assert_true(err < 1e-4);
    assert_int_equal(bfs.nodes, 4 * SLICES);
    assert_int_equal(bfs.policy, BP_ORDER_BFS); /* the default */
    assert_int_equal(bfs.chains, SLICES);
    assert_int_equal(bfs.width, SLICES);
    assert_int_equal(bfs.streams_used, 4);
    assert_true(bfs.device_ms >= 0); /* cpu has timed events */

    bp_region_report strict = run_region("{\"order\":\"strict\",\"group_id\":0}", &err);
    assert_true(err < 1e-4);
    assert_int_equal(strict.policy, BP_ORDER_STRICT);
    assert_int_equal(strict.streams_used, 1);
    assert_int_equal(strict.nodes, 4 * SLICES);

    bp_region_report dfs = run_region("{\"schedule_policy\":\"strict\"}", &err);
    assert_true(err < 1e-4);
    assert_int_equal(dfs.policy, BP_ORDER_STRICT);

    /* One slice's score matrix is 128 KiB: strict keeps two alive, bfs every slice's. */
    uint64_t slice_bytes = (uint64_t)B * H * (S / SLICES) * S * 4;
    print_message("peak scratch: bfs %llu, strict %llu bytes (predicted %llu, %llu)\n",
                  (unsigned long long)bfs.peak_scratch_bytes,
                  (unsigned long long)strict.peak_scratch_bytes,
                  (unsigned long long)bfs.predicted_peak_bytes,
                  (unsigned long long)strict.predicted_peak_bytes);
    assert_int_equal(strict.peak_scratch_bytes, 2 * slice_bytes);
    assert_int_equal(bfs.peak_scratch_bytes, (SLICES + 1) * slice_bytes);
    assert_int_equal(strict.peak_scratch_bytes, strict.predicted_peak_bytes);
    assert_int_equal(bfs.peak_scratch_bytes, bfs.predicted_peak_bytes);
    assert_true(bfs.peak_scratch_bytes >= (SLICES / 2) * strict.peak_scratch_bytes);

    /* auto under a budget between the two: an intermediate width, within the budget. */
    double budget_mb = (double)(5 * slice_bytes) / 1048576.0;
    char hints[128];
    snprintf(hints, sizeof hints, "{\"order\":\"auto\",\"mem_budget_mb\":%.6f}", budget_mb);
    bp_region_report au = run_region(hints, &err);
    assert_true(err < 1e-4);
    print_message("auto (budget %.3f MB): width %d, peak %llu bytes, %d streams\n", budget_mb,
                  au.width, (unsigned long long)au.peak_scratch_bytes, au.streams_used);
    assert_int_equal(au.policy, BP_ORDER_AUTO);
    assert_true(au.width > 1 && au.width < SLICES);
    assert_true(au.peak_scratch_bytes <= (uint64_t)(budget_mb * 1048576.0));
    assert_true(au.peak_scratch_bytes > strict.peak_scratch_bytes);

    /* auto with no budget takes the widest schedule. */
    bp_region_report wide = run_region("{\"order\":\"auto\"}", &err);
    assert_true(err < 1e-4);
    assert_int_equal(wide.width, SLICES);

    /* bfs limited to one stream still runs level order. */
    bp_region_report one = run_region("{\"order\":\"bfs\",\"max_parallel\":1}", &err);
    assert_true(err < 1e-4);
    assert_int_equal(one.streams_used, 1);
    assert_int_equal(one.peak_scratch_bytes, bfs.peak_scratch_bytes);
}

static void test_hint_scopes_apply_to_regions(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_hints_push("{\"order\":\"strict\"}"));
    double err;
    bp_region_report rep = run_region(NULL, &err);
    assert_int_equal(rep.policy, BP_ORDER_STRICT);
    rep = run_region("{\"order\":\"bfs\"}", &err); /* the region's own key wins */
    assert_int_equal(rep.policy, BP_ORDER_BFS);
    BP_ASSERT_OK(bp_hints_pop());
}

static const bp_region_hint *find_hint(const bp_region_report *rep, const char *key) {
    for (int i = 0; i < rep->hint_count; i++)
        if (strcmp(rep->hints[i].key, key) == 0)
            return &rep->hints[i];
    fail_msg("hint '%s' not in the report", key);
    return NULL;
}

static void test_report_lists_hints_honoured_and_ignored(void **state) {
    (void)state;
    double err;
    bp_region_report rep = run_region(
        "{\"order\":\"strict\",\"group_id\":0,\"max_parallel\":2,\"mem_budget_mb\":5,"
        "\"colour\":\"blue\"}", &err);
    assert_int_equal(rep.hint_count, 5);
    const bp_region_hint *h = find_hint(&rep, "order");
    assert_int_equal(h->disposition, BP_HINT_HONOURED);
    assert_true(bp_test_contains(h->reason, "strict"));
    h = find_hint(&rep, "group_id");
    assert_int_equal(h->disposition, BP_HINT_IGNORED);
    assert_true(bp_test_contains(h->reason, "one group"));
    h = find_hint(&rep, "max_parallel");
    assert_int_equal(h->disposition, BP_HINT_IGNORED);
    assert_true(bp_test_contains(h->reason, "region's stream"));
    h = find_hint(&rep, "mem_budget_mb");
    assert_int_equal(h->disposition, BP_HINT_IGNORED);
    assert_true(bp_test_contains(h->reason, "only order auto"));
    h = find_hint(&rep, "colour");
    assert_int_equal(h->disposition, BP_HINT_IGNORED);
    assert_true(bp_test_contains(h->reason, "unknown key"));

    rep = run_region("{\"order\":\"bfs\",\"max_parallel\":2}", &err);
    h = find_hint(&rep, "max_parallel");
    assert_int_equal(h->disposition, BP_HINT_HONOURED);
    assert_int_equal(rep.streams_used, 2);
    assert_true(err < 1e-4);

    /* A NULL report is fine. */
    bp_tensor *out = new_out();
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    sliced_attention(out);
    BP_ASSERT_OK(bp_region_end(fx.stream, NULL));
    assert_true(max_error(out) < 1e-4);
    bp_tensor_release(out);
}

static void test_deferred_tensors(void **state) {
    (void)state;
    int64_t shape[2] = {4, 8};
    bp_tensor *a = NULL, *b = NULL, *view = NULL;
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    BP_ASSERT_OK(bp_tensor_empty(fx.cpu, BP_DTYPE_F32, 2, shape, &a));
    BP_ASSERT_OK(bp_fill(a, 2.0));
    BP_ASSERT_OK(bp_tensor_narrow(a, 0, 1, 2, &view));
    BP_ASSERT_OK(bp_scale(view, 3.0, &b));
    float host[32];
    BP_ASSERT_ERR(bp_tensor_to_host(a, host, sizeof host), BP_ERR_INVALID_STATE, "deferred");
    BP_ASSERT_ERR(bp_tensor_to_host(view, host, sizeof host), BP_ERR_INVALID_STATE,
                  "bp_region_end first");
    assert_null(bp_tensor_data(b));
    assert_true(bp_test_contains(bp_last_error(), "bp_tensor_data: the tensor is deferred"));
    bp_region_report rep = {.struct_size = sizeof rep};
    BP_ASSERT_OK(bp_region_end(fx.stream, &rep));
    assert_int_equal(rep.nodes, 2);
    assert_non_null(bp_tensor_data(b));
    BP_ASSERT_OK(bp_tensor_to_host(b, host, 16 * sizeof(float)));
    for (int i = 0; i < 16; i++)
        assert_true(host[i] == 6.0f);
    BP_ASSERT_OK(bp_tensor_to_host(view, host, 16 * sizeof(float)));
    assert_true(host[0] == 2.0f);
    /* An ordinary tensor now: eager ops use it. */
    bp_tensor *c = NULL;
    BP_ASSERT_OK(bp_add(b, view, &c));
    BP_ASSERT_OK(bp_tensor_to_host(c, host, 16 * sizeof(float)));
    assert_true(host[5] == 8.0f);
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(c);
    bp_tensor_release(view);
}

/* A deferred tensor with no elements needs no memory: after its region ended it is an
 * ordinary tensor, usable in the next region and eagerly. */
static void test_empty_deferred_tensor_outlives_its_region(void **state) {
    (void)state;
    int64_t shape[2] = {0, 8};
    bp_tensor *a = NULL, *b = NULL;
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    BP_ASSERT_OK(bp_tensor_empty(fx.cpu, BP_DTYPE_F32, 2, shape, &a));
    BP_ASSERT_OK(bp_region_end(fx.stream, NULL));
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    BP_ASSERT_OK(bp_scale(a, 2.0, &b));
    BP_ASSERT_OK(bp_region_end(fx.stream, NULL));
    assert_int_equal(bp_tensor_numel(b), 0);
    bp_tensor *c = NULL;
    BP_ASSERT_OK(bp_add(a, b, &c));
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(c);
}

static void test_begin_end_errors(void **state) {
    (void)state;
    BP_ASSERT_ERR(bp_region_end(fx.stream, NULL), BP_ERR_INVALID_STATE, "no region is open");
    BP_ASSERT_ERR(bp_region_begin(NULL, NULL), BP_ERR_INVALID_ARGUMENT, "stream is NULL");
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    assert_int_equal(bp_region_active(fx.stream), 1);
    BP_ASSERT_ERR(bp_region_begin(fx.stream, NULL), BP_ERR_INVALID_STATE, "do not nest");
    BP_ASSERT_OK(bp_region_end(fx.stream, NULL));
    assert_int_equal(bp_region_active(fx.stream), 0);
    BP_ASSERT_ERR(bp_region_end(fx.stream, NULL), BP_ERR_INVALID_STATE, "no region is open");
    /* A bad report size still closes the region. */
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    bp_region_report small = {.struct_size = 4};
    BP_ASSERT_ERR(bp_region_end(fx.stream, &small), BP_ERR_INVALID_ARGUMENT, "struct_size");
    assert_int_equal(bp_region_active(fx.stream), 0);
}

static void test_malformed_hints(void **state) {
    (void)state;
    BP_ASSERT_ERR(bp_region_begin(fx.stream, "{\"order\":"), BP_ERR_INVALID_ARGUMENT, "byte 9");
    BP_ASSERT_ERR(bp_region_begin(fx.stream, "{\"order\":\"zigzag\"}"), BP_ERR_INVALID_ARGUMENT,
                  "zigzag");
    BP_ASSERT_ERR(bp_region_begin(fx.stream, "{\"order\":3}"), BP_ERR_INVALID_ARGUMENT, "order");
    BP_ASSERT_ERR(bp_region_begin(fx.stream, "{\"order\":\"auto\",\"mem_budget_mb\":-1}"),
                  BP_ERR_INVALID_ARGUMENT, "mem_budget_mb");
    assert_int_equal(bp_region_active(fx.stream), 0);
    assert_true(bp_test_contains(bp_last_error(), "bp_region_begin"));
}

static void test_budget_no_schedule_meets(void **state) {
    (void)state;
    bp_tensor *out = new_out();
    BP_ASSERT_OK(bp_region_begin(fx.stream, "{\"order\":\"auto\",\"mem_budget_mb\":0.01}"));
    sliced_attention(out);
    BP_ASSERT_ERR(bp_region_end(fx.stream, NULL), BP_ERR_INVALID_ARGUMENT,
                  "smallest feasible peak is 0.250 MB");
    assert_int_equal(bp_region_active(fx.stream), 0);
    bp_tensor_release(out);
    /* A tensor of the failed region stays unreadable. */
    int64_t shape[1] = {4};
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_region_begin(fx.stream, "{\"order\":\"auto\",\"mem_budget_mb\":0}"));
    BP_ASSERT_OK(bp_tensor_empty(fx.cpu, BP_DTYPE_F32, 1, shape, &t));
    BP_ASSERT_OK(bp_fill(t, 1.0));
    BP_ASSERT_ERR(bp_region_end(fx.stream, NULL), BP_ERR_INVALID_ARGUMENT, "no schedule fits");
    float host[4];
    BP_ASSERT_ERR(bp_tensor_to_host(t, host, sizeof host), BP_ERR_INVALID_STATE, "failed");
    bp_tensor_release(t);
}

static void test_synchronize_and_copies_inside_a_region(void **state) {
    (void)state;
    bp_event *ev = NULL;
    BP_ASSERT_OK(bp_event_create(fx.cpu, 0, &ev));
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    BP_ASSERT_ERR(bp_stream_synchronize(fx.stream), BP_ERR_INVALID_STATE, "recording a region");
    BP_ASSERT_ERR(bp_device_synchronize(fx.cpu), BP_ERR_INVALID_STATE, "recording a region");
    BP_ASSERT_OK(bp_event_record(ev, fx.stream));
    BP_ASSERT_ERR(bp_event_synchronize(ev), BP_ERR_INVALID_STATE, "recording a region");
    BP_ASSERT_ERR(bp_stream_destroy(fx.stream), BP_ERR_INVALID_ARGUMENT, "default stream");
    float host[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    bp_tensor *t = NULL;
    BP_ASSERT_ERR(bp_tensor_from_host(fx.cpu, BP_DTYPE_F32, 1, shape, host, &t),
                  BP_ERR_INVALID_STATE, "copies and memsets cannot be recorded");
    float *qhost = malloc(NUMEL * sizeof *qhost);
    BP_ASSERT_ERR(bp_tensor_to_host(fx.q, qhost, NUMEL * sizeof *qhost), BP_ERR_INVALID_STATE,
                  "recording a region");
    free(qhost);
    BP_ASSERT_OK(bp_region_end(fx.stream, NULL));
    BP_ASSERT_OK(bp_event_synchronize(ev));
    BP_ASSERT_OK(bp_stream_synchronize(fx.stream));
    BP_ASSERT_OK(bp_device_synchronize(fx.cpu));
    BP_ASSERT_OK(bp_event_destroy(ev));

    /* A created stream that records cannot be destroyed. */
    bp_stream *s2 = NULL;
    BP_ASSERT_OK(bp_stream_create(fx.cpu, 0, &s2));
    BP_ASSERT_OK(bp_region_begin(s2, NULL));
    BP_ASSERT_ERR(bp_stream_destroy(s2), BP_ERR_INVALID_STATE, "recording a region");
    BP_ASSERT_OK(bp_region_end(s2, NULL));
    BP_ASSERT_OK(bp_stream_destroy(s2));
}

static void test_deferred_tensor_of_another_region(void **state) {
    (void)state;
    bp_stream *s2 = NULL;
    BP_ASSERT_OK(bp_stream_create(fx.cpu, 0, &s2));
    int64_t shape[1] = {8};
    bp_tensor *a = NULL, *b = NULL;
    BP_ASSERT_OK(bp_region_begin(fx.stream, NULL));
    BP_ASSERT_OK(bp_tensor_empty(fx.cpu, BP_DTYPE_F32, 1, shape, &a));
    BP_ASSERT_OK(bp_fill(a, 1.0));
    BP_ASSERT_OK(bp_region_begin(s2, NULL));
    bp_stream_guard g;
    BP_ASSERT_OK(bp_stream_guard_begin(&g, s2));
    BP_ASSERT_ERR(bp_scale(a, 2.0, &b), BP_ERR_INVALID_STATE, "deferred in another region");
    bp_stream_guard_end(&g);
    BP_ASSERT_OK(bp_region_end(s2, NULL));
    /* An eager op on another stream cannot read it either. */
    BP_ASSERT_OK(bp_stream_guard_begin(&g, s2));
    BP_ASSERT_ERR(bp_scale(a, 2.0, &b), BP_ERR_INVALID_STATE, "the tensor is deferred");
    bp_stream_guard_end(&g);
    BP_ASSERT_OK(bp_region_end(fx.stream, NULL));
    /* After its region ended it is ordinary (streams order as usual: wait for the
     * region's stream before using it on another, and for that one before reading). */
    BP_ASSERT_OK(bp_stream_synchronize(fx.stream));
    BP_ASSERT_OK(bp_stream_guard_begin(&g, s2));
    BP_ASSERT_OK(bp_scale(a, 2.0, &b));
    bp_stream_guard_end(&g);
    BP_ASSERT_OK(bp_stream_synchronize(s2));
    float host[8];
    BP_ASSERT_OK(bp_tensor_to_host(b, host, sizeof host));
    assert_true(host[7] == 2.0f);
    bp_tensor_release(a);
    bp_tensor_release(b);
    BP_ASSERT_OK(bp_stream_destroy(s2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_eager_slices_match_sdpa, close_all),
        cmocka_unit_test_teardown(test_policies_give_equal_results_and_peaks_follow_the_schedule,
                                  close_all),
        cmocka_unit_test_teardown(test_hint_scopes_apply_to_regions, close_all),
        cmocka_unit_test_teardown(test_report_lists_hints_honoured_and_ignored, close_all),
        cmocka_unit_test_teardown(test_deferred_tensors, close_all),
        cmocka_unit_test_teardown(test_empty_deferred_tensor_outlives_its_region, close_all),
        cmocka_unit_test_teardown(test_begin_end_errors, close_all),
        cmocka_unit_test_teardown(test_malformed_hints, close_all),
        cmocka_unit_test_teardown(test_budget_no_schedule_meets, close_all),
        cmocka_unit_test_teardown(test_synchronize_and_copies_inside_a_region, close_all),
        cmocka_unit_test_teardown(test_deferred_tensor_of_another_region, close_all),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
