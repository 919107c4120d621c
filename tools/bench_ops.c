/* bp-bench ops: FLOP/s of bp_matmul and bp_sdpa, beside the same work done directly
 * with OpenBLAS in the same run when that is comparable (f32 on the cpu device).
 *
 *   bp-bench ops [--device NAME] [--dtype f32|f16|bf16] [--matmul M,N,K]...
 *                [--sdpa B,H,S,D]... [--causal] [--repeat N] [--warmup N] [--sets N]
 *                [--timer auto|events|host] [--json]
 *
 * Work by default: sdpa with q, k, v of [1, 8, 1024, 64], then matmul 1024^3 and
 * 4096^3, in f32. --matmul and --sdpa replace that list with their shapes (each
 * repeatable, or a list: 1024,1024,1024;4096,4096,4096). matmul is a [M, K] @ b [K, N]
 * (2*M*N*K flops); sdpa is q, k, v of [B, H, S, D] (4*B*H*S*S*D flops, half of that
 * with --causal, whose masked half is not work).
 *
 * The OpenBLAS column runs on the host, only for f32 on a cpu device (else "-"):
 * cblas_sgemm for matmul; for sdpa the naive way per head, S = Q K^T * scale with sgemm,
 * a row softmax, O = S V with sgemm (an S x S scratch per head). A last column gives
 * the largest difference between the two results; where OpenBLAS does not run, it
 * gives the largest error at 64 sampled output elements against a host computation
 * in double from the same (dtype-rounded) inputs, relative to max(1, |reference|).
 *
 * Inputs are random in [-1, 1). When one input set (a and b, or q, k and v) is smaller
 * than 100 MB, the runs rotate among several sets (at least 2; --sets overrides), so
 * that a run does not find its inputs in a cache the previous run warmed. Each row is
 * run --warmup times (default 1), then timed N times; the figure is the median. With
 * timing events (--timer events; the default on a device other than cpu that has
 * BP_CAP_TIMED_EVENTS) a run is the device time between two events recorded around the
 * op; with the host clock (the default on cpu, as before) it is clock_gettime around
 * the call and a stream synchronize. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/backplane.h>
#include <cJSON.h>

#ifdef BP_HAVE_CBLAS
#include <cblas.h>
#endif

#include "bench.h"

#define MB (1024.0 * 1024.0)
#define ROTATE_BELOW_BYTES (100.0 * MB) /* one input set smaller than this: rotate */
#define MAX_AUTO_SETS 8
#define MAX_SETS 64
#define MAX_SHAPES 64
#define SAMPLE_POINTS 64

typedef enum timer_kind { TIMER_AUTO, TIMER_EVENTS, TIMER_HOST } timer_kind;

typedef struct spec {
    bool sdpa;
    int64_t dim[4]; /* matmul: M, N, K; sdpa: B, H, S, D */
} spec;

typedef struct options {
    const char *device;
    uint64_t repeat, warmup, sets; /* sets 0: automatic */
    bp_dtype dtype;
    timer_kind timer;
    bool json, causal;
    int n_specs;
    spec specs[MAX_SHAPES];
} options;

typedef struct result {
    const char *name;
    char shape[64];
    spec sp;
    double flops;
    int sets;              /* input sets rotated among */
    bool ok;               /* false: the row failed (error holds why) */
    char error[512];
    double bp_ms, blas_ms; /* medians; blas_ms < 0 when not measured */
    double max_diff;       /* largest |backplane - openblas|, NAN when not compared */
    double sample_err;     /* sampled check where OpenBLAS did not run, NAN when none */
    uint64_t nonfinite;    /* NaN or infinite elements in the output (sampled check) */
} result;

void bp_bench_ops_usage(FILE *out) {
    fprintf(out,
            "Usage: bp-bench ops [--device NAME] [--dtype f32|f16|bf16] [--matmul M,N,K]...\n"
            "                    [--sdpa B,H,S,D]... [--causal] [--repeat N] [--warmup N]\n"
            "                    [--sets N] [--timer auto|events|host] [--json]\n"
            "FLOP/s of bp_matmul and bp_sdpa; for f32 on cpu beside the same work done\n"
            "directly with OpenBLAS (cblas_sgemm; sdpa as sgemm + softmax + sgemm per head).\n"
            "Default work: sdpa q/k/v [1, 8, 1024, 64], matmul 1024^3 and 4096^3, f32.\n"
            "  --device NAME    device to use (default: BP_DEVICE, else cpu)\n"
            "  --dtype T        f32 (default), f16 or bf16; OpenBLAS runs for f32 only\n"
            "  --matmul M,N,K   a [M, K] @ b [K, N]; repeatable, or a list separated by ';'\n"
            "                   (or 3k numbers); replaces the default work\n"
            "  --sdpa B,H,S,D   q, k, v of [B, H, S, D]; repeatable or a list, as --matmul\n"
            "  --causal         causal sdpa (flops counted for the unmasked half)\n"
            "  --repeat N       timed runs of each, after the warm-up; the median is\n"
            "                   reported (default 5)\n"
            "  --warmup N       untimed runs first (default 1)\n"
            "  --sets N         input sets rotated among (default: 1 when a set is >= 100 MB,\n"
            "                   else enough for 100 MB, from 2 to %d)\n"
            "  --timer T        events: device time between timing events; host: clock\n"
            "                   around call + synchronize; auto (default): events on a\n"
            "                   device other than cpu that has timed events, else host\n"
            "  --json           print one JSON object instead of a table\n",
            MAX_AUTO_SETS);
}

/* ---- the command line ---- */

/* Parses one list of shapes of `arity` positive numbers each: numbers separated by ','
 * or 'x', shapes by ';', '/' or spaces; a run of arity*k numbers is k shapes. */
static int parse_shapes(const char *opt, const char *text, bool sdpa, options *o) {
    int arity = sdpa ? 4 : 3;
    int64_t nums[MAX_SHAPES * 4];
    int count = 0, in_shape = 0;
    const char *p = text;
    while (*p) {
        if (*p == ';' || *p == '/' || *p == ' ') {
            if (in_shape % arity)
                goto bad;
            in_shape = 0;
            p++;
            continue;
        }
        if (*p < '0' || *p > '9')
            goto bad;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (v <= 0 || v > (1LL << 31) - 1 || count == MAX_SHAPES * 4)
            goto bad;
        nums[count++] = (int64_t)v;
        in_shape++;
        p = end;
        if (*p == ',' || *p == 'x' || *p == 'X') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
        }
    }
    if (count == 0 || count % arity)
        goto bad;
    for (int i = 0; i < count; i += arity) {
        if (o->n_specs == MAX_SHAPES) {
            fprintf(stderr, "bp-bench ops: more than %d shapes\n", MAX_SHAPES);
            return 2;
        }
        spec *s = &o->specs[o->n_specs++];
        *s = (spec){.sdpa = sdpa};
        double elems = 1, biggest = 0;
        for (int d = 0; d < arity; d++)
            s->dim[d] = nums[i + d];
        /* the largest tensor: matmul max(M*K, K*N, M*N); sdpa B*H*S*max(S, D) (scores) */
        if (sdpa) {
            elems = (double)s->dim[0] * (double)s->dim[1] * (double)s->dim[2];
            biggest = elems * (double)(s->dim[2] > s->dim[3] ? s->dim[2] : s->dim[3]);
        } else {
            double m = (double)s->dim[0], n = (double)s->dim[1], k = (double)s->dim[2];
            biggest = fmax(m * k, fmax(k * n, m * n));
        }
        if (biggest > (double)(1LL << 36)) {
            fprintf(stderr, "bp-bench ops: %s %s: a tensor of more than 2^36 elements\n", opt,
                    text);
            return 2;
        }
    }
    return 0;
bad:
    fprintf(stderr, "bp-bench ops: %s wants %s (positive numbers; several separated by "
            "';'), not '%s'\n", opt, sdpa ? "B,H,S,D" : "M,N,K", text);
    return 2;
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.repeat = 5, .warmup = 1, .dtype = BP_DTYPE_F32, .timer = TIMER_AUTO};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            bp_bench_ops_usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
            continue;
        } else if (strcmp(arg, "--causal") == 0) {
            o->causal = true;
            continue;
        }
        bool known = strcmp(arg, "--device") == 0 || strcmp(arg, "--repeat") == 0 ||
                     strcmp(arg, "--warmup") == 0 || strcmp(arg, "--sets") == 0 ||
                     strcmp(arg, "--dtype") == 0 || strcmp(arg, "--matmul") == 0 ||
                     strcmp(arg, "--sdpa") == 0 || strcmp(arg, "--timer") == 0;
        if (!known) {
            fprintf(stderr, "bp-bench ops: unknown option '%s'; see bp-bench ops --help\n", arg);
            return 2;
        }
        if (!value) {
            fprintf(stderr, "bp-bench ops: %s needs a value\n", arg);
            return 2;
        }
        i++;
        if (strcmp(arg, "--device") == 0) {
            o->device = value;
        } else if (strcmp(arg, "--repeat") == 0 || strcmp(arg, "--warmup") == 0 ||
                   strcmp(arg, "--sets") == 0) {
            uint64_t *number = arg[2] == 'r' ? &o->repeat : arg[2] == 'w' ? &o->warmup : &o->sets;
            uint64_t limit = arg[2] == 's' ? MAX_SETS : 1000;
            if (bp_bench_parse_count(value, number) != 0 || *number > limit) {
                fprintf(stderr, "bp-bench ops: %s wants a whole number from 1 to %llu, "
                        "not '%s'\n", arg, (unsigned long long)limit, value);
                return 2;
            }
        } else if (strcmp(arg, "--dtype") == 0) {
            if (strcmp(value, "f32") == 0)
                o->dtype = BP_DTYPE_F32;
            else if (strcmp(value, "f16") == 0)
                o->dtype = BP_DTYPE_F16;
            else if (strcmp(value, "bf16") == 0)
                o->dtype = BP_DTYPE_BF16;
            else {
                fprintf(stderr, "bp-bench ops: --dtype wants f32, f16 or bf16, not '%s'\n",
                        value);
                return 2;
            }
        } else if (strcmp(arg, "--timer") == 0) {
            if (strcmp(value, "auto") == 0)
                o->timer = TIMER_AUTO;
            else if (strcmp(value, "events") == 0)
                o->timer = TIMER_EVENTS;
            else if (strcmp(value, "host") == 0)
                o->timer = TIMER_HOST;
            else {
                fprintf(stderr, "bp-bench ops: --timer wants auto, events or host, not '%s'\n",
                        value);
                return 2;
            }
        } else {
            int rc = parse_shapes(arg, value, arg[2] == 's', o);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* ---- helpers ---- */

static float *random_floats(size_t n, uint32_t seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
    return p;
}

/* f32 <-> f16 / bf16 bit patterns, rounding to nearest even. */
static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, NaN */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) /* rounds past the largest finite half */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
        float v;
        memcpy(&v, &ax, sizeof v);
        return (uint16_t)(sign | (uint32_t)lrintf(v * 16777216.0f));
    }
    uint32_t h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13);
    uint32_t rest = ax & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    uint32_t x = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13));
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Rounds host values to the dtype in place (so a host reference sees what the device
 * sees) and writes their bit patterns to `bits` (2 bytes each); f32 needs neither. */
static void to_dtype(float *v, size_t n, bp_dtype dtype, uint16_t *bits) {
    for (size_t i = 0; i < n; i++) {
        uint16_t b = dtype == BP_DTYPE_BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
        bits[i] = b;
        v[i] = dtype == BP_DTYPE_BF16 ? bf16_to_f32(b) : f16_to_f32(b);
    }
}

static float element_f32(const void *data, bp_dtype dtype, size_t i) {
    if (dtype == BP_DTYPE_F32)
        return ((const float *)data)[i];
    uint16_t b = ((const uint16_t *)data)[i];
    return dtype == BP_DTYPE_BF16 ? bf16_to_f32(b) : f16_to_f32(b);
}

static double gflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0; }

/* ---- the backplane side: one op call on the device ---- */

#define MAX_INPUTS 3

typedef struct bp_work {
    bp_tensor *in[MAX_SETS][MAX_INPUTS]; /* a, b (matmul); q, k, v (sdpa) */
    bp_tensor *out;
    int sets;
    bool sdpa, causal;
} bp_work;

static bp_status bp_issue(bp_work *w, int set) {
    bp_tensor **in = w->in[set];
    if (w->sdpa) {
        bp_sdpa_attrs attrs = {.causal = w->causal};
        return bp_sdpa_out(in[0], in[1], in[2], NULL, &attrs, w->out);
    }
    return bp_matmul_out(in[0], in[1], 0, 0, w->out);
}

/* Warm-up, then `repeat` timed runs rotating among the input sets; ends with a run on
 * set 0 so that w->out holds set 0's result. */
static bp_status bp_time(bp_work *w, bp_device *dev, bp_stream *stream, const options *o,
                         bool events, double *out_ms) {
    int repeat = (int)o->repeat;
    double *ms = malloc((size_t)repeat * sizeof *ms);
    bp_event *start = NULL, *end = NULL;
    bp_status st = ms ? BP_OK : BP_ERR_OUT_OF_MEMORY;
    if (st == BP_OK && events)
        st = bp_event_create(dev, BP_EVENT_TIMING, &start);
    if (st == BP_OK && events)
        st = bp_event_create(dev, BP_EVENT_TIMING, &end);
    int set = 0;
    for (uint64_t i = 0; i < o->warmup && st == BP_OK; i++, set = (set + 1) % w->sets)
        st = bp_issue(w, set);
    if (st == BP_OK)
        st = bp_stream_synchronize(stream);
    for (int r = 0; r < repeat && st == BP_OK; r++, set = (set + 1) % w->sets) {
        if (events) {
            float elapsed = 0;
            st = bp_event_record(start, stream);
            if (st == BP_OK)
                st = bp_issue(w, set);
            if (st == BP_OK)
                st = bp_event_record(end, stream);
            if (st == BP_OK)
                st = bp_event_synchronize(end);
            if (st == BP_OK)
                st = bp_event_elapsed_ms(start, end, &elapsed);
            ms[r] = elapsed;
        } else {
            double t0 = bp_bench_now_ms();
            st = bp_issue(w, set);
            if (st == BP_OK)
                st = bp_stream_synchronize(stream);
            ms[r] = bp_bench_now_ms() - t0;
        }
    }
    if (st == BP_OK && w->sets > 1)
        st = bp_issue(w, 0);
    if (st == BP_OK)
        st = bp_stream_synchronize(stream);
    if (st == BP_OK)
        *out_ms = bp_bench_median(ms, repeat);
    bp_event_destroy(start);
    bp_event_destroy(end);
    free(ms);
    return st;
}

/* ---- the host reference ---- */

/* Naive attention of one head: rows [0, s) of q, k, v [s, d] into out [s, d], with a
 * row scratch of s floats. The sampled check and OpenBLAS's softmax share the masking. */
static void softmax_row(float *row, int len, int visible) {
    float mx = -INFINITY, sum = 0;
    for (int j = 0; j < visible; j++)
        mx = row[j] > mx ? row[j] : mx;
    for (int j = 0; j < visible; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
    }
    for (int j = 0; j < visible; j++)
        row[j] /= sum;
    for (int j = visible; j < len; j++)
        row[j] = 0;
}

/* Largest |got - ref| / max(1, |ref|) at SAMPLE_POINTS output elements, the reference
 * computed in double from the host inputs; counts non-finite outputs over all of them. */
static double sampled_error(const spec *sp, bool causal, float *const *host, const void *got,
                            bp_dtype dtype, size_t n_out, uint64_t *nonfinite) {
    *nonfinite = 0;
    for (size_t i = 0; i < n_out; i++)
        *nonfinite += !isfinite(element_f32(got, dtype, i));
    double worst = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int p = 0; p < SAMPLE_POINTS; p++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double ref = 0;
        size_t at;
        if (!sp->sdpa) {
            size_t m = (size_t)sp->dim[0], n = (size_t)sp->dim[1], k = (size_t)sp->dim[2];
            size_t i = (size_t)(x % m), j = (size_t)((x >> 32) % n);
            for (size_t t = 0; t < k; t++)
                ref += (double)host[0][i * k + t] * (double)host[1][t * n + j];
            at = i * n + j;
        } else {
            size_t heads = (size_t)(sp->dim[0] * sp->dim[1]), s = (size_t)sp->dim[2],
                   d = (size_t)sp->dim[3];
            size_t h = (size_t)(x % heads), i = (size_t)((x >> 20) % s),
                   c = (size_t)((x >> 44) % d);
            const float *q = host[0] + (h * s + i) * d, *k = host[1] + h * s * d,
                        *v = host[2] + h * s * d;
            size_t visible = causal ? i + 1 : s;
            double mx = -INFINITY, sum = 0, acc = 0, scale = 1.0 / sqrt((double)d);
            double *sc = malloc(visible * sizeof *sc);
            if (!sc)
                return NAN;
            for (size_t j = 0; j < visible; j++) {
                double dot = 0;
                for (size_t t = 0; t < d; t++)
                    dot += (double)q[t] * (double)k[j * d + t];
                sc[j] = dot * scale;
                mx = sc[j] > mx ? sc[j] : mx;
            }
            for (size_t j = 0; j < visible; j++) {
                double e = exp(sc[j] - mx);
                sum += e;
                acc += e * (double)v[j * d + c];
            }
            free(sc);
            ref = acc / sum;
            at = (h * s + i) * d + c;
        }
        double e = fabs((double)element_f32(got, dtype, at) - ref) / fmax(1.0, fabs(ref));
        if (!(e <= worst))
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
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
    float *const *in[MAX_SETS]; /* per set: a, b[, c] */
    int sets;
    float *out, *scratch;
    int m, n, k;          /* matmul */
    int heads, s, d;      /* sdpa */
    bool causal;
} blas_work;

static void blas_run(const blas_work *w, int set) {
    const float *a = w->in[set][0], *b = w->in[set][1];
    if (!w->scratch) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, w->m, w->n, w->k, 1.0f, a, w->k,
                    b, w->n, 0.0f, w->out, w->n);
        return;
    }
    const float *c = w->in[set][2];
    size_t head = (size_t)w->s * (size_t)w->d;
    float scale = 1.0f / sqrtf((float)w->d);
    for (int h = 0; h < w->heads; h++) {
        const float *q = a + h * head, *k = b + h * head, *v = c + h * head;
        float *sc = w->scratch;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, w->s, w->s, w->d, scale, q, w->d, k,
                    w->d, 0.0f, sc, w->s);
        for (int i = 0; i < w->s; i++)
            softmax_row(sc + (size_t)i * (size_t)w->s, w->s, w->causal ? i + 1 : w->s);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, w->s, w->d, w->s, 1.0f, sc, w->s,
                    v, w->d, 0.0f, w->out + h * head, w->d);
    }
}

/* As bp_time: warm-up, timed runs rotating among the sets, a last run on set 0. */
static double blas_time(const blas_work *w, const options *o) {
    int repeat = (int)o->repeat;
    double *ms = malloc((size_t)repeat * sizeof *ms);
    if (!ms)
        return -1;
    int set = 0;
    for (uint64_t i = 0; i < o->warmup; i++, set = (set + 1) % w->sets)
        blas_run(w, set);
    for (int r = 0; r < repeat; r++, set = (set + 1) % w->sets) {
        double t0 = bp_bench_now_ms();
        blas_run(w, set);
        ms[r] = bp_bench_now_ms() - t0;
    }
    if (w->sets > 1)
        blas_run(w, 0);
    double med = bp_bench_median(ms, repeat);
    free(ms);
    return med;
}
#endif

/* ---- one workload ---- */

typedef struct setup {
    bp_device *dev;
    bp_stream *stream;
    bool events, blas;
} setup;

static void fail(result *r, const char *what) {
    r->ok = false;
    snprintf(r->error, sizeof r->error, "%s: %s", what, bp_last_error());
    fprintf(stderr, "bp-bench ops: %s %s: %s\n", r->name, r->shape, r->error);
}

static int measure(const setup *su, const options *o, result *r) {
    const spec *sp = &r->sp;
    bool sdpa = sp->sdpa;
    int n_in = sdpa ? 3 : 2, ndim = sdpa ? 4 : 2;
    int64_t shape_in[MAX_INPUTS][4], shape_out[4];
    if (sdpa) {
        for (int t = 0; t < 3; t++)
            memcpy(shape_in[t], sp->dim, sizeof sp->dim);
        memcpy(shape_out, sp->dim, sizeof sp->dim);
    } else {
        int64_t m = sp->dim[0], n = sp->dim[1], k = sp->dim[2];
        shape_in[0][0] = m, shape_in[0][1] = k;
        shape_in[1][0] = k, shape_in[1][1] = n;
        shape_out[0] = m, shape_out[1] = n;
    }
    size_t numel[MAX_INPUTS] = {1, 1, 1}, n_out = 1, esize = bp_dtype_size(o->dtype);
    double set_bytes = 0;
    for (int t = 0; t < n_in; t++) {
        for (int d = 0; d < ndim; d++)
            numel[t] *= (size_t)shape_in[t][d];
        set_bytes += (double)numel[t] * (double)esize;
    }
    for (int d = 0; d < ndim; d++)
        n_out *= (size_t)shape_out[d];
    int sets = (int)o->sets;
    if (sets == 0) {
        sets = 1;
        if (set_bytes < ROTATE_BELOW_BYTES) {
            sets = (int)ceil(ROTATE_BELOW_BYTES / fmax(set_bytes, 1.0));
            sets = sets < 2 ? 2 : sets > MAX_AUTO_SETS ? MAX_AUTO_SETS : sets;
        }
    }
    r->sets = sets;
    r->blas_ms = -1;
    r->max_diff = NAN;
    r->sample_err = NAN;

    /* Host inputs: every set's for OpenBLAS, else set 0's for the sampled check. */
    float *(*host)[MAX_INPUTS] = calloc((size_t)sets, sizeof *host);
    uint16_t *bits = NULL;
    void *got = malloc(n_out * esize);
    bp_work w = {.sets = sets, .sdpa = sdpa, .causal = o->causal};
    int rc = 1;
    if (!host || !got) {
        snprintf(r->error, sizeof r->error, "out of host memory");
        fprintf(stderr, "bp-bench ops: %s %s: out of host memory\n", r->name, r->shape);
        goto out;
    }
    bp_status st = BP_OK;
    for (int s = 0; s < sets && st == BP_OK; s++) {
        for (int t = 0; t < n_in && st == BP_OK; t++) {
            /* set 0 has the seeds 1, 2, 3 of the original benchmark */
            float *h = random_floats(numel[t], (uint32_t)(1 + s * MAX_INPUTS + t));
            if (!h) {
                snprintf(r->error, sizeof r->error, "out of host memory");
                fprintf(stderr, "bp-bench ops: %s %s: out of host memory\n", r->name, r->shape);
                goto out;
            }
            const void *data = h;
            if (o->dtype != BP_DTYPE_F32) {
                free(bits);
                bits = malloc(numel[t] * sizeof *bits);
                if (!bits) {
                    free(h);
                    snprintf(r->error, sizeof r->error, "out of host memory");
                    fprintf(stderr, "bp-bench ops: %s %s: out of host memory\n", r->name,
                            r->shape);
                    goto out;
                }
                to_dtype(h, numel[t], o->dtype, bits);
                data = bits;
            }
            st = bp_tensor_from_host(su->dev, o->dtype, ndim, shape_in[t], data, &w.in[s][t]);
            if (su->blas || s == 0)
                host[s][t] = h;
            else
                free(h);
        }
    }
    free(bits);
    bits = NULL;
    if (st != BP_OK) {
        fail(r, "creating the inputs");
        goto out;
    }
    st = bp_tensor_empty(su->dev, o->dtype, ndim, shape_out, &w.out);
    if (st == BP_OK)
        st = bp_time(&w, su->dev, su->stream, o, su->events, &r->bp_ms);
    if (st != BP_OK) {
        fail(r, sdpa ? "bp_sdpa_out" : "bp_matmul_out");
        goto out;
    }
    st = bp_tensor_to_host(w.out, got, n_out * esize);
    if (st != BP_OK) {
        fail(r, "reading the result");
        goto out;
    }
    r->ok = true;
    rc = 0;
#ifdef BP_HAVE_CBLAS
    if (su->blas) {
        blas_work bw = {.sets = sets, .out = malloc(n_out * sizeof(float)), .causal = o->causal};
        for (int s = 0; s < sets; s++)
            bw.in[s] = host[s];
        if (sdpa) {
            bw.heads = (int)(sp->dim[0] * sp->dim[1]);
            bw.s = (int)sp->dim[2];
            bw.d = (int)sp->dim[3];
            bw.scratch = malloc((size_t)bw.s * (size_t)bw.s * sizeof(float));
        } else {
            bw.m = (int)sp->dim[0];
            bw.n = (int)sp->dim[1];
            bw.k = (int)sp->dim[2];
        }
        if (bw.out && (!sdpa || bw.scratch)) {
            r->blas_ms = blas_time(&bw, o);
            r->max_diff = max_abs_diff(got, bw.out, n_out);
        }
        free(bw.out);
        free(bw.scratch);
    }
#endif
    if (r->blas_ms < 0)
        r->sample_err = sampled_error(sp, o->causal, host[0], got, o->dtype, n_out,
                                      &r->nonfinite);
out:
    bp_tensor_release(w.out);
    for (int s = 0; s < sets; s++)
        for (int t = 0; t < n_in; t++) {
            bp_tensor_release(w.in[s][t]);
            if (host)
                free(host[s][t]);
        }
    free(host);
    free(bits);
    free(got);
    return rc;
}

/* ---- output ---- */

static void print_results(const options *o, const setup *su, const char *device,
                          const char *no_blas_reason, const result *r, int n) {
#ifdef BP_HAVE_CBLAS
    int blas_threads = su->blas ? openblas_get_num_threads() : 0;
#else
    int blas_threads = 0;
#endif
    const char *timer = su->events ? "events" : "host";
    const char *emulated = bp_bench_emulation();
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "mode", "ops");
        cJSON_AddStringToObject(j, "device", device);
        if (emulated)
            cJSON_AddStringToObject(j, "emulated", emulated);
        else
            cJSON_AddNullToObject(j, "emulated");
        cJSON_AddStringToObject(j, "dtype", bp_dtype_name(o->dtype));
        cJSON_AddNumberToObject(j, "repeat", (double)o->repeat);
        cJSON_AddNumberToObject(j, "warmup", (double)o->warmup);
        cJSON_AddStringToObject(j, "statistic", "median");
        cJSON_AddStringToObject(j, "timer", timer);
        cJSON_AddBoolToObject(j, "causal", o->causal);
        cJSON_AddBoolToObject(j, "openblas", blas_threads > 0);
        cJSON_AddNumberToObject(j, "openblas_threads", blas_threads);
        cJSON *list = cJSON_AddArrayToObject(j, "results");
        for (int i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", r[i].name);
            cJSON_AddStringToObject(e, "shape", r[i].shape);
            cJSON *dims = cJSON_AddArrayToObject(e, "dims");
            for (int d = 0; d < (r[i].sp.sdpa ? 4 : 3); d++)
                cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)r[i].sp.dim[d]));
            if (r[i].sp.sdpa)
                cJSON_AddBoolToObject(e, "causal", o->causal);
            cJSON_AddNumberToObject(e, "flops", r[i].flops);
            cJSON_AddNumberToObject(e, "input_sets", r[i].sets);
            cJSON_AddBoolToObject(e, "ok", r[i].ok);
            if (!r[i].ok) {
                cJSON_AddStringToObject(e, "error", r[i].error);
                cJSON_AddNullToObject(e, "backplane_ms");
                cJSON_AddNullToObject(e, "backplane_gflops");
                cJSON_AddNullToObject(e, "backplane_tflops");
            } else {
                cJSON_AddNumberToObject(e, "backplane_ms", r[i].bp_ms);
                cJSON_AddNumberToObject(e, "backplane_gflops", gflops(r[i].flops, r[i].bp_ms));
                cJSON_AddNumberToObject(e, "backplane_tflops",
                                        gflops(r[i].flops, r[i].bp_ms) / 1e3);
            }
            if (r[i].blas_ms >= 0) {
                cJSON_AddNumberToObject(e, "openblas_ms", r[i].blas_ms);
                cJSON_AddNumberToObject(e, "openblas_gflops", gflops(r[i].flops, r[i].blas_ms));
                cJSON_AddNumberToObject(e, "max_abs_diff", r[i].max_diff);
            } else {
                cJSON_AddNullToObject(e, "openblas_ms");
                cJSON_AddNullToObject(e, "openblas_gflops");
                cJSON_AddNullToObject(e, "max_abs_diff");
            }
            if (r[i].ok && !isnan(r[i].sample_err)) {
                /* JSON has no infinity: a NaN or infinite error is written as 1e308 */
                cJSON_AddNumberToObject(e, "sampled_max_rel_err",
                                        isfinite(r[i].sample_err) ? r[i].sample_err : 1e308);
                cJSON_AddNumberToObject(e, "sampled_points", SAMPLE_POINTS);
                cJSON_AddNumberToObject(e, "nonfinite_outputs", (double)r[i].nonfinite);
            }
            cJSON_AddItemToArray(list, e);
        }
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(j);
        return;
    }
    bool tera = false; /* TF/s columns when a figure reaches 1000 GF/s */
    for (int i = 0; i < n; i++)
        tera |= r[i].ok && gflops(r[i].flops, r[i].bp_ms) >= 1000;
    double unit = tera ? 1e3 : 1;
    char warm[32] = "a warm-up";
    if (o->warmup != 1)
        snprintf(warm, sizeof warm, "%llu warm-ups", (unsigned long long)o->warmup);
    if (emulated)
        printf("NOTICE: emulated: %s. The times below mean nothing for real hardware.\n",
               emulated);
    printf("bp-bench ops on %s: median of %llu runs after %s; OpenBLAS on the host", device,
           (unsigned long long)o->repeat, warm);
    if (blas_threads > 0)
        printf(" (%d threads)\n", blas_threads);
    else if (no_blas_reason)
        printf(" (not measured: %s)\n", no_blas_reason);
    else
        printf(" (not built in)\n");
    printf("  %s, timed with %s, inputs random in [-1, 1)%s\n", bp_dtype_name(o->dtype),
           su->events ? "timing events (device time)" : "the host clock (call + synchronize)",
           o->causal ? ", sdpa causal" : "");
    printf("  %-8s %-22s %10s %10s %10s %10s %9s\n", "op", "shape", "bp ms",
           tera ? "bp TF/s" : "bp GF/s", "blas ms", tera ? "blas TF/s" : "blas GF/s",
           "max diff");
    bool sampled = false;
    for (int i = 0; i < n; i++) {
        if (!r[i].ok) {
            printf("  %-8s %-22s %10s %10s %10s %10s %9s\n", r[i].name, r[i].shape, "failed",
                   "-", "-", "-", "-");
            continue;
        }
        printf("  %-8s %-22s %10.2f %10.1f", r[i].name, r[i].shape, r[i].bp_ms,
               gflops(r[i].flops, r[i].bp_ms) / unit);
        if (r[i].blas_ms >= 0) {
            printf(" %10.2f %10.1f %9.2g\n", r[i].blas_ms,
                   gflops(r[i].flops, r[i].blas_ms) / unit, r[i].max_diff);
        } else {
            printf(" %10s %10s %8.2g*\n", "-", "-", r[i].sample_err);
            sampled = true;
        }
    }
    for (int i = 0; i < n; i++)
        if (r[i].sets > 1) {
            printf("  inputs rotated among several sets where one is below 100 MB "
                   "(--json: input_sets)\n");
            break;
        }
    if (sampled)
        printf("  * largest error at %d sampled outputs against a host computation in double, "
               "relative to max(1, |ref|)\n", SAMPLE_POINTS);
    for (int i = 0; i < n; i++)
        if (r[i].ok && r[i].nonfinite)
            printf("  WARNING: %s %s wrote %llu NaN or infinite elements\n", r[i].name,
                   r[i].shape, (unsigned long long)r[i].nonfinite);
}

static const char *missing_kernel(bp_device *dev, bp_dtype dtype, const options *o) {
    bool need[2] = {false, false}; /* sdpa, matmul */
    for (int i = 0; i < o->n_specs; i++)
        need[o->specs[i].sdpa ? 0 : 1] = true;
    const char *names[2] = {"sdpa", "matmul"};
    for (int i = 0; i < 2; i++) {
        bp_op_id id;
        if (need[i] && (bp_op_find(names[i], &id) != BP_OK ||
                        !(bp_kernel_dtypes(id, dev) & BP_DTYPE_BIT(dtype))))
            return names[i];
    }
    return NULL;
}

int bp_bench_ops_run(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    if (o.n_specs == 0) { /* the original work */
        o.specs[o.n_specs++] = (spec){.sdpa = true, .dim = {1, 8, 1024, 64}};
        o.specs[o.n_specs++] = (spec){.dim = {1024, 1024, 1024}};
        o.specs[o.n_specs++] = (spec){.dim = {4096, 4096, 4096}};
    }
    setup su = {0};
    bp_status st = o.device ? bp_device_open(o.device, &su.dev) : bp_device_default(&su.dev);
    su.stream = st == BP_OK ? bp_current_stream(su.dev) : NULL;
    if (!su.stream) {
        fprintf(stderr, "bp-bench ops: %s\n", bp_last_error());
        return 1;
    }
    bp_device_props props = {.struct_size = sizeof props};
    if (bp_device_get_props(su.dev, &props) != BP_OK) {
        fprintf(stderr, "bp-bench ops: %s\n", bp_last_error());
        return 1;
    }
    const char *device = bp_device_name(su.dev);
    bool timed = (props.capabilities & BP_CAP_TIMED_EVENTS) != 0;
    bool is_cpu = strcmp(props.type, "cpu") == 0;
    if (o.timer == TIMER_EVENTS && !timed) {
        fprintf(stderr, "bp-bench ops: %s has no timing events (BP_CAP_TIMED_EVENTS); use "
                "--timer host\n", device);
        return 1;
    }
    su.events = o.timer == TIMER_EVENTS || (o.timer == TIMER_AUTO && timed && !is_cpu);
    const char *missing = missing_kernel(su.dev, o.dtype, &o);
    if (missing) {
        fprintf(stderr, "bp-bench ops: %s has no %s kernel for %s\n", device, missing,
                bp_dtype_name(o.dtype));
        return 1;
    }
    char reason[96];
    const char *no_blas_reason = NULL;
    if (o.dtype != BP_DTYPE_F32) {
        snprintf(reason, sizeof reason, "%s", bp_dtype_name(o.dtype));
        no_blas_reason = reason;
    } else if (!is_cpu) {
        snprintf(reason, sizeof reason, "%s is not cpu", device);
        no_blas_reason = reason;
    }
#ifdef BP_HAVE_CBLAS
    su.blas = !no_blas_reason;
#endif

    result r[MAX_SHAPES];
    int n = 0;
    /* sdpa first: OpenBLAS's idle threads spin for a while after each call, which
     * would slow down whatever runs next on a machine with few cores. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < o.n_specs; i++) {
            const spec *sp = &o.specs[i];
            if (sp->sdpa != (pass == 0))
                continue;
            result *x = &r[n++];
            *x = (result){.sp = *sp};
            const int64_t *d = sp->dim;
            if (sp->sdpa) {
                x->name = "sdpa";
                snprintf(x->shape, sizeof x->shape, "[%lld, %lld, %lld, %lld]", (long long)d[0],
                         (long long)d[1], (long long)d[2], (long long)d[3]);
                x->flops = 4.0 * (double)d[0] * (double)d[1] * (double)d[2] * (double)d[2] *
                           (double)d[3] * (o.causal ? 0.5 : 1.0);
            } else {
                x->name = "matmul";
                snprintf(x->shape, sizeof x->shape, "%lldx%lldx%lld", (long long)d[0],
                         (long long)d[1], (long long)d[2]);
                x->flops = 2.0 * (double)d[0] * (double)d[1] * (double)d[2];
            }
            if (measure(&su, &o, x) != 0)
                rc = 1;
        }
    print_results(&o, &su, device, no_blas_reason, r, n);
    return rc;
}
