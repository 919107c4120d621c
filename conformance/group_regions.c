/* Conformance group "regions": recorded work (<backplane/region.h>) gives the results
 * of the same work run eagerly under every schedule policy, the region report is
 * sane, and the region rules' errors hold on the device under test.
 *
 * The program is a small sliced attention (the hints issue's main job): per query
 * slice, scores = q_i k^T, scale by 1/sqrt(D), softmax, @ v into the slice of the
 * output (matmul's _out form into a narrow). It runs eagerly and in regions with no
 * hint (bfs), {"order":"strict","group_id":0}, {"order":"dfs"} and {"order":"auto"}
 * under a budget between the strict and bfs peaks. Backends choose how they run a
 * region's nodes (streams, order), so every run's result, the eager one included, is
 * compared with the float64 reference of the attention (op_reference.h's sdpa) within
 * the bound of tolerances.h, plus what the program's own roundings add: the scores
 * and the probabilities are stored in the dtype between the ops (the reference's
 * half-dtype P allowance covers the probabilities; the scores get theirs here). Inputs
 * are multiples of
 * 1/64 in [-1, 1], exact in f32, f16 and bf16, so they are written and read as host
 * bits: the tests need kernels for matmul, scale and softmax only (bp_kernel_dtypes),
 * and skip with that reason when the device lacks one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "op_reference.h"
#include "tolerances.h"

enum { B = 1, H = 2, S = 64, D = 16, SLICES = 8 };
#define NUMEL ((size_t)B * H * S * D)

/* ---- host encodings of the test's values ---- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Exact for the inputs (k/64, |k| <= 64): a normal f16 or zero. */
static uint16_t f16_from_exact(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7fffffffu) == 0)
        return sign;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (uint16_t)(exp << 10) | (uint16_t)((u & 0x7fffffu) >> 13));
}

static float f16_to_float(uint16_t h) {
    int exp = (h >> 10) & 0x1f;
    int mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp(1024 + mant, exp - 25);
    return (float)((h & 0x8000) ? -v : v);
}

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A [B, H, S, D] tensor of `dt` holding random multiples of 1/64 in [-1, 1]. */
static bp_tensor *random_input(bp_dtype dt, uint64_t *rng) {
    float vals[NUMEL];
    uint16_t half[NUMEL];
    for (size_t i = 0; i < NUMEL; i++)
        vals[i] = (float)((int)(bp_conf_rand(rng) % 129) - 64) / 64.0f;
    const void *host = vals;
    if (dt == BP_DTYPE_F16 || dt == BP_DTYPE_BF16) {
        for (size_t i = 0; i < NUMEL; i++)
            half[i] = dt == BP_DTYPE_F16 ? f16_from_exact(vals[i])
                                         : (uint16_t)(f32_bits(vals[i]) >> 16);
        host = half;
    }
    int64_t shape[4] = {B, H, S, D};
    bp_tensor *t = NULL;
    BP_CONF_OK(bp_tensor_from_host(bp_conf.device, dt, 4, shape, host, &t));
    return t;
}

/* The tensor's elements as floats (out: NUMEL). */
static void read_back(bp_tensor *t, float *out) {
    bp_dtype dt = bp_tensor_dtype(t);
    if (dt == BP_DTYPE_F32) {
        BP_CONF_OK(bp_tensor_to_host(t, out, NUMEL * sizeof *out));
        return;
    }
    uint16_t half[NUMEL];
    BP_CONF_OK(bp_tensor_to_host(t, half, sizeof half));
    for (size_t i = 0; i < NUMEL; i++)
        out[i] = dt == BP_DTYPE_F16 ? f16_to_float(half[i]) : bf16_to_float(half[i]);
}

/* ---- the program ---- */

typedef struct program {
    bp_dtype dt;
    bp_stream *stream; /* the device's default stream: ops run (and record) there */
    bp_tensor *q, *k, *v;
} program;

/* Closes a region a failed test left open on the default stream. */
static bp_stream *fresh_stream(void) {
    bp_stream *s = NULL;
    BP_CONF_OK(bp_stream_default(bp_conf.device, &s));
    if (bp_region_active(s))
        bp_region_end(s, NULL);
    return s;
}

static bp_tensor *new_output(const program *p) {
    int64_t shape[4] = {B, H, S, D};
    bp_tensor *out = NULL;
    BP_CONF_OK(bp_tensor_empty(bp_conf.device, p->dt, 4, shape, &out));
    return out;
}

/* Issues the sliced attention into `out`, releasing every intermediate at once. */
static void sliced_attention(const program *p, bp_tensor *out) {
    int64_t rows = S / SLICES;
    for (int i = 0; i < SLICES; i++) {
        bp_tensor *qi = NULL, *si = NULL, *ci = NULL, *pi = NULL, *oi = NULL;
        BP_CONF_OK(bp_tensor_narrow(p->q, 2, i * rows, rows, &qi));
        BP_CONF_OK(bp_matmul(qi, p->k, 0, 1, &si));
        BP_CONF_OK(bp_scale(si, 1.0 / sqrt((double)D), &ci));
        BP_CONF_OK(bp_softmax(ci, 1.0f, 0, &pi));
        BP_CONF_OK(bp_tensor_narrow(out, 2, i * rows, rows, &oi));
        BP_CONF_OK(bp_matmul_out(pi, p->v, 0, 0, oi));
        bp_tensor_release(qi);
        bp_tensor_release(si);
        bp_tensor_release(ci);
        bp_tensor_release(pi);
        bp_tensor_release(oi);
    }
}

/* Runs the program in a region with `hints`; fills *rep and the result. */
static void run_region(const program *p, const char *hints, bp_region_report *rep,
                       float *result) {
    bp_tensor *out = new_output(p);
    *rep = (bp_region_report){.struct_size = sizeof *rep};
    BP_CONF_OK(bp_region_begin(p->stream, hints));
    sliced_attention(p, out);
    BP_CONF_OK(bp_region_end(p->stream, rep));
    if (bp_region_active(p->stream))
        fail_msg("region %s still active after bp_region_end", hints ? hints : "(no hint)");
    BP_CONF_OK(bp_stream_synchronize(p->stream));
    read_back(out, result);
    bp_tensor_release(out);
}

/* The program's float64 result and, per element, its error bound at dt. */
typedef struct expected {
    double want[NUMEL], bound[NUMEL];
} expected;

/* The reference of the program on p's inputs. Its scores q_i . k_j are stored in dt
 * between the ops: each is off by eps_out |s| relative, which moves the probabilities
 * by 2 eps_out max |s| relative and the output by that times sum_j p_j |v_j| <= 1 (|v|
 * <= 1); the 1/sqrt(D) = 1/4 scale is exact. */
static void expect_program(const program *p, expected *e) {
    static float q[NUMEL], k[NUMEL], v[NUMEL];
    static double qd[NUMEL], kd[NUMEL], vd[NUMEL];
    read_back(p->q, q);
    read_back(p->k, k);
    read_back(p->v, v);
    for (size_t i = 0; i < NUMEL; i++) {
        qd[i] = q[i];
        kd[i] = k[i];
        vd[i] = v[i];
    }
    bp_ref_sdpa_dims n = {B, H, H, S, S, D};
    bp_sdpa_attrs attrs = {.scale = 0.25f};
    bp_ref_result r = bp_ref_sdpa(n, &attrs, bp_ref_view4_contiguous(qd, H, S, D),
                                  bp_ref_view4_contiguous(kd, H, S, D),
                                  bp_ref_view4_contiguous(vd, H, S, D), NULL, p->dt);
    for (size_t row = 0; row < NUMEL / D; row++) {
        const double *qr = qd + row * D, *kh = kd + row / S * S * D;
        double smax = 0;
        for (int j = 0; j < S; j++) {
            double dot = 0;
            for (int x = 0; x < D; x++)
                dot += qr[x] * kh[j * D + x];
            smax = fmax(smax, fabs(dot) * 0.25);
        }
        for (int x = 0; x < D; x++) {
            size_t i = row * D + x;
            e->want[i] = r.v[i];
            e->bound[i] = bp_error_bound(p->dt, r.v[i], r.mag[i]) +
                          2 * bp_eps_out(p->dt) * smax;
        }
    }
    bp_ref_free(&r);
}

static void expect_close(const char *policy, bp_dtype dt, const float *got, const expected *e) {
    for (size_t i = 0; i < NUMEL; i++) {
        double err = fabs((double)got[i] - e->want[i]);
        if (!(err <= e->bound[i]))
            fail_msg("%s %s: element %zu is %.9g, expected %.9g (error %.3g > bound %.3g)",
                     policy, bp_dtype_name(dt), i, (double)got[i], e->want[i], err,
                     e->bound[i]);
    }
}

static void expect_report(const char *policy, const bp_region_report *r,
                          bp_schedule_order order) {
    if (r->nodes <= 0 || r->chains <= 0 || r->width <= 0 || r->streams_used <= 0)
        fail_msg("%s: report has nodes %d, chains %d, width %d, streams_used %d (each must "
                 "be > 0)", policy, r->nodes, r->chains, r->width, r->streams_used);
    if (r->nodes > 4 * SLICES)
        fail_msg("%s: report has %d nodes for %d recorded ops", policy, r->nodes, 4 * SLICES);
    if (r->policy != order)
        fail_msg("%s: report policy is %s, expected %s", policy,
                 bp_schedule_order_name(r->policy), bp_schedule_order_name(order));
    if (r->predicted_peak_bytes == 0 || r->peak_scratch_bytes == 0)
        fail_msg("%s: predicted peak %llu, measured peak scratch %llu bytes: the program "
                 "has intermediates, so neither can be 0", policy,
                 (unsigned long long)r->predicted_peak_bytes,
                 (unsigned long long)r->peak_scratch_bytes);
    if (r->hint_count < 0 || r->hint_count > BP_REGION_MAX_HINTS)
        fail_msg("%s: hint_count %d out of range", policy, r->hint_count);
    int capable = (bp_conf.props.capabilities & BP_CAP_REGIONS) != 0;
    if (r->backend_compiled != capable)
        fail_msg("%s: report says backend_compiled %d, but the device %s BP_CAP_REGIONS",
                 policy, r->backend_compiled, capable ? "reports" : "does not report");
}

static void test_policies_agree(void **state) {
    bp_dtype dt = (bp_dtype)(intptr_t)*state;
    static const char *const ops[] = {"matmul", "scale", "softmax"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        bp_op_id id;
        BP_CONF_OK(bp_op_find(ops[i], &id));
        if (!(bp_kernel_dtypes(id, bp_conf.device) & BP_DTYPE_BIT(dt)))
            BP_CONF_SKIP("no kernel registered for %s %s on %s (sliced attention needs "
                         "matmul, scale and softmax)", ops[i], bp_dtype_name(dt),
                         bp_device_name(bp_conf.device));
    }
    uint64_t rng = bp_conf_test_seed();
    program p = {.dt = dt, .stream = fresh_stream()};
    p.q = random_input(dt, &rng);
    p.k = random_input(dt, &rng);
    p.v = random_input(dt, &rng);

    static float eager[NUMEL], got[NUMEL];
    static expected e;
    expect_program(&p, &e);
    bp_tensor *out = new_output(&p);
    sliced_attention(&p, out);
    BP_CONF_OK(bp_stream_synchronize(p.stream));
    read_back(out, eager);
    bp_tensor_release(out);
    expect_close("eager", dt, eager, &e);

    bp_region_report bfs, strict, dfs, au;
    run_region(&p, NULL, &bfs, got);
    expect_close("bfs (no hint)", dt, got, &e);
    expect_report("bfs (no hint)", &bfs, BP_ORDER_BFS);

    run_region(&p, "{\"order\":\"strict\",\"group_id\":0}", &strict, got);
    expect_close("strict", dt, got, &e);
    expect_report("strict", &strict, BP_ORDER_STRICT);

    run_region(&p, "{\"order\":\"dfs\"}", &dfs, got);
    expect_close("dfs", dt, got, &e);
    expect_report("dfs", &dfs, BP_ORDER_DFS);

    if (strict.peak_scratch_bytes > bfs.peak_scratch_bytes)
        fail_msg("strict's peak scratch %llu bytes is above bfs's %llu: running slice by "
                 "slice must not need more memory than running them side by side",
                 (unsigned long long)strict.peak_scratch_bytes,
                 (unsigned long long)bfs.peak_scratch_bytes);
    if (strict.predicted_peak_bytes > bfs.predicted_peak_bytes)
        fail_msg("strict's predicted peak %llu bytes is above bfs's %llu",
                 (unsigned long long)strict.predicted_peak_bytes,
                 (unsigned long long)bfs.predicted_peak_bytes);

    /* auto under a budget between the two predicted peaks: it must fit the budget. */
    double budget_mb = sqrt((double)strict.predicted_peak_bytes *
                            (double)bfs.predicted_peak_bytes) / 1048576.0;
    char hints[96];
    snprintf(hints, sizeof hints, "{\"order\":\"auto\",\"mem_budget_mb\":%.6f}", budget_mb);
    run_region(&p, hints, &au, got);
    expect_close("auto", dt, got, &e);
    expect_report("auto", &au, BP_ORDER_AUTO);
    if ((double)au.predicted_peak_bytes > budget_mb * 1048576.0 + 0.5)
        fail_msg("auto (budget %.6f MB): predicted peak %llu bytes is above the budget",
                 budget_mb, (unsigned long long)au.predicted_peak_bytes);

    bp_tensor_release(p.q);
    bp_tensor_release(p.k);
    bp_tensor_release(p.v);
}

/* ---- errors ---- */

static void test_errors(void **state) {
    (void)state;
    bp_stream *s = fresh_stream();

    /* end without begin */
    BP_CONF_ERR(bp_region_end(s, NULL), BP_ERR_INVALID_STATE);
    /* malformed hints: nothing opens */
    BP_CONF_ERR(bp_region_begin(s, "{\"order\":"), BP_ERR_INVALID_ARGUMENT);
    if (bp_region_active(s))
        fail_msg("a region opened although its hints were malformed");

    BP_CONF_OK(bp_region_begin(s, NULL));
    if (!bp_region_active(s))
        fail_msg("bp_region_active is 0 after bp_region_begin");
    /* nested begin on the same stream */
    BP_CONF_ERR(bp_region_begin(s, NULL), BP_ERR_INVALID_STATE);
    /* synchronizing the recording stream or its device */
    BP_CONF_ERR(bp_stream_synchronize(s), BP_ERR_INVALID_STATE);
    BP_CONF_ERR(bp_device_synchronize(bp_conf.device), BP_ERR_INVALID_STATE);
    /* reading a deferred tensor before the region ended */
    int64_t shape[1] = {16};
    bp_tensor *t = NULL;
    BP_CONF_OK(bp_tensor_empty(bp_conf.device, BP_DTYPE_F32, 1, shape, &t));
    float host[16];
    BP_CONF_ERR(bp_tensor_to_host(t, host, sizeof host), BP_ERR_INVALID_STATE);
    /* the region is still usable after these errors */
    if (!bp_region_active(s))
        fail_msg("the errors closed the region");
    bp_region_report rep = {.struct_size = sizeof rep};
    BP_CONF_OK(bp_region_end(s, &rep));
    if (bp_region_active(s))
        fail_msg("bp_region_active is 1 after bp_region_end");
    BP_CONF_ERR(bp_region_end(s, NULL), BP_ERR_INVALID_STATE);
    bp_tensor_release(t);

    /* the stream works again */
    BP_CONF_OK(bp_stream_synchronize(s));
    BP_CONF_OK(bp_device_synchronize(bp_conf.device));
}

static const bp_conf_test regions_tests[] = {
    {"policies_agree_f32", test_policies_agree,
     "sliced attention in regions (bfs, strict, dfs, auto under a budget) equals eager within "
     "tolerance; reports are sane (a BP_CAP_REGIONS device compiled them), strict's peak "
     "<= bfs's, auto fits its budget",
     (void *)(intptr_t)BP_DTYPE_F32},
    {"policies_agree_f16", test_policies_agree, "the same in f16",
     (void *)(intptr_t)BP_DTYPE_F16},
    {"policies_agree_bf16", test_policies_agree, "the same in bf16",
     (void *)(intptr_t)BP_DTYPE_BF16},
    {"errors", test_errors,
     "end without begin, nested begin, synchronize inside a region and reading a deferred "
     "tensor are BP_ERR_INVALID_STATE; malformed hints BP_ERR_INVALID_ARGUMENT; each with a "
     "message", NULL},
};

const bp_conf_group bp_conf_group_regions = {
    .name = "regions",
    .summary = "recorded regions equal eager under every schedule policy; region errors",
    .tests = regions_tests,
    .n_tests = sizeof regions_tests / sizeof regions_tests[0],
    .timeout_s = 60,
};
