/* bp-bench ops: GFLOP/s of bp_matmul and bp_sdpa (f32) beside the same work done
 * directly with OpenBLAS in the same run.
 *
 *   bp-bench ops [--device NAME] [--repeat N] [--json]
 *
 * Work: matmul 1024^3 and 4096^3 (2*M*N*K flops), and sdpa with q, k, v of
 * [1, 8, 1024, 64] (4*B*H*Sq*Sk*D flops). The OpenBLAS column runs on the host:
 * cblas_sgemm for matmul; for sdpa the naive way per head, S = Q K^T * scale with
 * sgemm, a row softmax, O = S V with sgemm (an Sq x Sk scratch per head). Each is
 * run once to warm up, then timed N times with clock_gettime around the call and a
 * stream synchronize; the figure is the median of the N runs. A last column gives
 * the largest difference between the two results. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <backplane/backplane.h>
#include <cJSON.h>

#ifdef BP_HAVE_CBLAS
#include <cblas.h>
#endif

#include "bench.h"

typedef struct options {
    const char *device;
    uint64_t repeat;
    bool json;
} options;

typedef struct result {
    const char *name;
    const char *shape;
    double flops;
    double bp_ms, blas_ms; /* medians; blas_ms < 0 when not measured */
    double max_diff;       /* largest |backplane - openblas|, NAN when not compared */
} result;

void bp_bench_ops_usage(FILE *out) {
    fprintf(out,
            "Usage: bp-bench ops [--device NAME] [--repeat N] [--json]\n"
            "GFLOP/s of bp_matmul (f32, 1024^3 and 4096^3) and bp_sdpa (f32, q/k/v "
            "[1, 8, 1024, 64]) beside\nthe same work done directly with OpenBLAS "
            "(cblas_sgemm; sdpa as sgemm + softmax + sgemm per head).\n"
            "  --device NAME  device to use (default: BP_DEVICE, else cpu)\n"
            "  --repeat N     timed runs of each, after one warm-up; the median is "
            "reported (default 5)\n"
            "  --json         print one JSON object instead of a table\n");
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.repeat = 5};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            bp_bench_ops_usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
        } else if (strcmp(arg, "--device") == 0 || strcmp(arg, "--repeat") == 0) {
            if (!value) {
                fprintf(stderr, "bp-bench ops: %s needs a value\n", arg);
                return 2;
            }
            if (arg[2] == 'd') {
                o->device = value;
            } else if (bp_bench_parse_count(value, &o->repeat) != 0 || o->repeat > 1000) {
                fprintf(stderr, "bp-bench ops: --repeat wants a whole number from 1 to 1000, "
                        "not '%s'\n", value);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "bp-bench ops: unknown option '%s'; see bp-bench ops --help\n", arg);
            return 2;
        }
    }
    return 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static float *random_floats(size_t n, uint32_t seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
    return p;
}

/* ---- the backplane side: one op call on the device, timed to completion ---- */

typedef struct bp_work {
    bp_tensor *a, *b, *c, *out;
    bool sdpa;
} bp_work;

static bp_status bp_run(bp_work *w, bp_stream *stream) {
    bp_status st;
    if (w->sdpa) {
        bp_sdpa_attrs attrs = {0};
        st = bp_sdpa_out(w->a, w->b, w->c, NULL, &attrs, w->out);
    } else {
        st = bp_matmul_out(w->a, w->b, 0, 0, w->out);
    }
    return st == BP_OK ? bp_stream_synchronize(stream) : st;
}

static bp_status bp_time(bp_work *w, bp_stream *stream, int repeat, double *out_ms) {
    double *ms = malloc((size_t)repeat * sizeof *ms);
    if (!ms)
        return BP_ERR_OUT_OF_MEMORY;
    bp_status st = bp_run(w, stream);
    for (int r = 0; r < repeat && st == BP_OK; r++) {
        double t0 = now_ms();
        st = bp_run(w, stream);
        ms[r] = now_ms() - t0;
    }
    if (st == BP_OK)
        *out_ms = median(ms, repeat);
    free(ms);
    return st;
}

/* ---- the OpenBLAS side, on host buffers ---- */

#ifdef BP_HAVE_CBLAS
static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m))
            m = d;
    }
    return m;
}

typedef struct blas_work {
    const float *a, *b, *c;
    float *out, *scratch;
    int m, n, k;          /* matmul */
    int heads, s, d;      /* sdpa */
} blas_work;

static void blas_run(const blas_work *w) {
    if (!w->scratch) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, w->m, w->n, w->k, 1.0f, w->a, w->k,
                    w->b, w->n, 0.0f, w->out, w->n);
        return;
    }
    size_t head = (size_t)w->s * (size_t)w->d;
    float scale = 1.0f / sqrtf((float)w->d);
    for (int h = 0; h < w->heads; h++) {
        const float *q = w->a + h * head, *k = w->b + h * head, *v = w->c + h * head;
        float *sc = w->scratch;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, w->s, w->s, w->d, scale, q, w->d, k,
                    w->d, 0.0f, sc, w->s);
        for (int i = 0; i < w->s; i++) {
            float *row = sc + (size_t)i * (size_t)w->s, mx = -INFINITY, sum = 0;
            for (int j = 0; j < w->s; j++)
                mx = row[j] > mx ? row[j] : mx;
            for (int j = 0; j < w->s; j++) {
                row[j] = expf(row[j] - mx);
                sum += row[j];
            }
            for (int j = 0; j < w->s; j++)
                row[j] /= sum;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, w->s, w->d, w->s, 1.0f, sc, w->s,
                    v, w->d, 0.0f, w->out + h * head, w->d);
    }
}

static double blas_time(const blas_work *w, int repeat) {
    double *ms = malloc((size_t)repeat * sizeof *ms);
    if (!ms)
        return -1;
    blas_run(w);
    for (int r = 0; r < repeat; r++) {
        double t0 = now_ms();
        blas_run(w);
        ms[r] = now_ms() - t0;
    }
    double med = median(ms, repeat);
    free(ms);
    return med;
}
#endif

/* ---- one workload: inputs a [sa], b [sb], c [sc] (sdpa only), out [so] ---- */

static int measure(bp_device *dev, bp_stream *stream, const options *o, bool sdpa,
                   int ndim, const int64_t *shape_a, const int64_t *shape_b,
                   const int64_t *shape_out, result *r) {
    size_t na = 1, nb = 1, no = 1;
    for (int d = 0; d < ndim; d++) {
        na *= (size_t)shape_a[d];
        nb *= (size_t)shape_b[d];
        no *= (size_t)shape_out[d];
    }
    float *ha = random_floats(na, 1), *hb = random_floats(nb, 2);
    float *hc = sdpa ? random_floats(nb, 3) : NULL;
    float *got = malloc(no * sizeof *got);
    bp_work w = {.sdpa = sdpa};
    int rc = 1;
    if (!ha || !hb || (sdpa && !hc) || !got) {
        fprintf(stderr, "bp-bench ops: out of host memory for %s\n", r->name);
        goto out;
    }
    bp_status st = bp_tensor_from_host(dev, BP_DTYPE_F32, ndim, shape_a, ha, &w.a);
    if (st == BP_OK)
        st = bp_tensor_from_host(dev, BP_DTYPE_F32, ndim, shape_b, hb, &w.b);
    if (st == BP_OK && sdpa)
        st = bp_tensor_from_host(dev, BP_DTYPE_F32, ndim, shape_b, hc, &w.c);
    if (st == BP_OK)
        st = bp_tensor_empty(dev, BP_DTYPE_F32, ndim, shape_out, &w.out);
    if (st == BP_OK)
        st = bp_time(&w, stream, (int)o->repeat, &r->bp_ms);
    if (st == BP_OK)
        st = bp_tensor_to_host(w.out, got, no * sizeof *got);
    if (st != BP_OK) {
        fprintf(stderr, "bp-bench ops: %s: %s\n", r->name, bp_last_error());
        goto out;
    }
    r->blas_ms = -1;
    r->max_diff = NAN;
#ifdef BP_HAVE_CBLAS
    blas_work bw = {.a = ha, .b = hb, .c = hc, .out = malloc(no * sizeof(float))};
    if (sdpa) {
        bw.heads = (int)(shape_a[0] * shape_a[1]);
        bw.s = (int)shape_a[2];
        bw.d = (int)shape_a[3];
        bw.scratch = malloc((size_t)bw.s * (size_t)bw.s * sizeof(float));
    } else {
        bw.m = (int)shape_a[0];
        bw.k = (int)shape_a[1];
        bw.n = (int)shape_b[1];
    }
    if (bw.out && (!sdpa || bw.scratch)) {
        r->blas_ms = blas_time(&bw, (int)o->repeat);
        r->max_diff = max_abs_diff(got, bw.out, no);
    }
    free(bw.out);
    free(bw.scratch);
#endif
    rc = 0;
out:
    bp_tensor_release(w.a);
    bp_tensor_release(w.b);
    bp_tensor_release(w.c);
    bp_tensor_release(w.out);
    free(ha);
    free(hb);
    free(hc);
    free(got);
    return rc;
}

static double gflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0; }

static void print_results(const options *o, const char *device, const result *r, int n) {
#ifdef BP_HAVE_CBLAS
    int blas_threads = openblas_get_num_threads();
#else
    int blas_threads = 0;
#endif
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "mode", "ops");
        cJSON_AddStringToObject(j, "device", device);
        cJSON_AddNumberToObject(j, "repeat", (double)o->repeat);
        cJSON_AddStringToObject(j, "statistic", "median");
        cJSON_AddBoolToObject(j, "openblas", blas_threads > 0);
        cJSON_AddNumberToObject(j, "openblas_threads", blas_threads);
        cJSON *list = cJSON_AddArrayToObject(j, "results");
        for (int i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", r[i].name);
            cJSON_AddStringToObject(e, "shape", r[i].shape);
            cJSON_AddNumberToObject(e, "flops", r[i].flops);
            cJSON_AddNumberToObject(e, "backplane_ms", r[i].bp_ms);
            cJSON_AddNumberToObject(e, "backplane_gflops", gflops(r[i].flops, r[i].bp_ms));
            if (r[i].blas_ms >= 0) {
                cJSON_AddNumberToObject(e, "openblas_ms", r[i].blas_ms);
                cJSON_AddNumberToObject(e, "openblas_gflops", gflops(r[i].flops, r[i].blas_ms));
                cJSON_AddNumberToObject(e, "max_abs_diff", r[i].max_diff);
            } else {
                cJSON_AddNullToObject(e, "openblas_ms");
                cJSON_AddNullToObject(e, "openblas_gflops");
                cJSON_AddNullToObject(e, "max_abs_diff");
            }
            cJSON_AddItemToArray(list, e);
        }
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(j);
        return;
    }
    printf("bp-bench ops on %s: median of %llu runs after a warm-up; OpenBLAS on the host",
           device, (unsigned long long)o->repeat);
    if (blas_threads > 0)
        printf(" (%d threads)\n", blas_threads);
    else
        printf(" (not built in)\n");
    printf("  %-8s %-22s %10s %10s %10s %10s %9s\n", "op", "shape", "bp ms", "bp GF/s",
           "blas ms", "blas GF/s", "max diff");
    for (int i = 0; i < n; i++) {
        printf("  %-8s %-22s %10.2f %10.1f", r[i].name, r[i].shape, r[i].bp_ms,
               gflops(r[i].flops, r[i].bp_ms));
        if (r[i].blas_ms >= 0)
            printf(" %10.2f %10.1f %9.2g\n", r[i].blas_ms, gflops(r[i].flops, r[i].blas_ms),
                   r[i].max_diff);
        else
            printf(" %10s %10s %9s\n", "-", "-", "-");
    }
}

int bp_bench_ops_run(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    bp_device *dev = NULL;
    bp_status st = o.device ? bp_device_open(o.device, &dev) : bp_device_default(&dev);
    bp_stream *stream = st == BP_OK ? bp_current_stream(dev) : NULL;
    if (!stream) {
        fprintf(stderr, "bp-bench ops: %s\n", bp_last_error());
        return 1;
    }
    /* sdpa first: OpenBLAS's idle threads spin for a while after each call, which
     * would slow down whatever runs next on a machine with few cores. */
    result r[3] = {
        {.name = "sdpa", .shape = "[1, 8, 1024, 64]", .flops = 4.0 * 8 * 1024 * 1024 * 64},
        {.name = "matmul", .shape = "1024x1024x1024", .flops = 2.0 * 1024 * 1024 * 1024},
        {.name = "matmul", .shape = "4096x4096x4096", .flops = 2.0 * 4096 * 4096 * 4096},
    };
    const int64_t m1[2] = {1024, 1024}, m4[2] = {4096, 4096}, att[4] = {1, 8, 1024, 64};
    rc = measure(dev, stream, &o, true, 4, att, att, att, &r[0]);
    if (rc == 0)
        rc = measure(dev, stream, &o, false, 2, m1, m1, m1, &r[1]);
    if (rc == 0)
        rc = measure(dev, stream, &o, false, 2, m4, m4, m4, &r[2]);
    if (rc == 0)
        print_results(&o, bp_device_name(dev), r, 3);
    return rc;
}
