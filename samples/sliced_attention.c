/* sliced_attention: the main job of the hints issue, and what `make demo` runs.
 *
 * Sliced attention, as in the seed: for each slice, scores = q_i k_i^T, scaled by
 * 1/sqrt(D), softmax, @ v_i into the slice's part of the output. A slice is, by
 * default, a group of batch x head pairs (--slice-by heads, the seed's slicing: one
 * slice per batch x head), or a group of query rows of every head (--slice-by rows:
 * every slice then reads all of k and v). Five scenarios run the same maths and are
 * checked against a float64 reference (attention_check.h):
 *
 *   naive_eager    one slice: the whole [B, H, S, S] score matrix, eagerly
 *   sliced_eager   the slices eagerly, each slice's intermediates released at once
 *   sliced_bfs     the sliced program recorded in a region with no hint (level order)
 *   sliced_strict  the same region with {"order":"strict","group_id":0} (slice by slice)
 *   sliced_auto    the same region with {"order":"auto","mem_budget_mb":X}
 *
 * It prints one table: peak scratch MB (the allocator's peak above what was allocated
 * before the scenario: inputs and outputs are allocated first, so this is scratch
 * only; for regions the report's peak_scratch_bytes), time in ms, and the max abs
 * error against the reference. The time is the device's, between two timing events recorded
 * on the stream around the scenario (so on the hpu simulator it is the modelled time,
 * host launch costs included); on a device without timed events it is the wall time
 * including the final synchronize. The wall time is printed beside it. `--json` prints the rows
 * as a JSON array instead. Exit status: 0 when every checked element is within its
 * error bound (attention_check.h: the model of docs/ops.md "Numerics", for every
 * query row at small shapes, every k-th one at large shapes so the float64 reference
 * stays quick), 1 when one is not or a call fails, 2 for bad arguments.
 *
 * Usage: sliced_attention [--device NAME] [--shape B,H,S,D] [--dtype f32|f16|bf16]
 *                         [--slices N] [--budget MB] [--json] [--help] */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <backplane/backplane.h>

#include "attention_check.h"

#define MB (1024.0 * 1024.0)

#define CHECK(call)                                                                       \
    do {                                                                                  \
        bp_status st_ = (call);                                                           \
        if (st_ != BP_OK) {                                                               \
            fprintf(stderr, "sliced_attention: %s failed: %s: %s\n", #call,               \
                    bp_status_str(st_), bp_last_error());                                 \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* The half ulp of a result stored in dtype: the bound's eps_out. */
static double eps_out(bp_dtype dtype) {
    switch (dtype) {
    case BP_DTYPE_F16: return 0x1p-11;
    case BP_DTYPE_BF16: return 0x1p-8;
    default: return 0x1p-24;
    }
}

/* Multiply-adds the float64 reference may take: every k-th query row is checked,
 * k the smallest keeping it below this (k = 2 at the default shape). */
#define REFERENCE_WORK (1LL << 28)

typedef struct options {
    const char *device;
    int64_t b, h, s, d;
    bp_dtype dtype;
    int dtype_given;
    int64_t slices; /* 0: default */
    int by_rows;    /* --slice-by rows */
    double budget_mb; /* < 0: default */
    int64_t repeat;   /* runs of each scenario */
    int json;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: sliced_attention [--device NAME] [--shape B,H,S,D] [--dtype f32|f16|bf16]\n"
            "                        [--slices N] [--slice-by heads|rows] [--budget MB]\n"
            "                        [--repeat N] [--json] [--help]\n"
            "\n"
            "Runs sliced attention five ways (naive_eager, sliced_eager, sliced_bfs,\n"
            "sliced_strict, sliced_auto), checks each against a float64 reference and prints\n"
            "peak scratch memory, time and max error.\n"
            "\n"
            "  --device NAME   device to run on (default: the process default device,\n"
            "                  BP_DEVICE or cpu)\n"
            "  --shape B,H,S,D batch, heads, sequence, head size (default 1,32,512,64;\n"
            "                  the seed's shape is 8,32,2048,128)\n"
            "  --dtype T       f32, f16 or bf16 (default: bf16 when the device has bf16\n"
            "                  kernels for the ops used, else f32)\n"
            "  --slices N      number of slices; must divide B*H (by heads) or S (by rows)\n"
            "                  (default: B*H by heads, one per batch x head as the seed's 256\n"
            "                  at its shape; S/8 by rows, or the largest divisor of S below)\n"
            "  --slice-by W    heads (default: slices of batch x head pairs) or rows\n"
            "                  (slices of query rows of every head)\n"
            "  --budget MB     mem_budget_mb of the auto scenario (default: the geometric\n"
            "                  mean of the strict and bfs regions' predicted peaks)\n"
            "  --repeat N      run each scenario N times and report the run of median time\n"
            "                  and the largest error of all (default 1); later runs reuse\n"
            "                  what a backend keeps, such as CUDA's graph of a region\n"
            "  --json          print only a JSON array of {scenario, peak_scratch_mb,\n"
            "                  time_ms, wall_ms, max_error} (plus, for regions, device_ms:\n"
            "                  the device time of bp_region_end's run, and record_ms: the\n"
            "                  host time recording the region's ops)\n"
            "  --help          this text\n"
            "\n"
            "Exit status: 0 when every checked element is within its error bound, 1 when\n"
            "not or when a call fails, 2 for bad arguments.\n");
}

static void bad_args(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bad_args(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("sliced_attention: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (--help for usage)\n", stderr);
    va_end(ap);
    exit(2);
}

static int64_t parse_positive(const char *text, const char *what) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || v <= 0 || v > (1LL << 31))
        bad_args("%s must be a positive integer, got '%s'", what, text);
    return (int64_t)v;
}

static void parse_shape(const char *text, options *o) {
    int64_t dims[4];
    const char *p = text;
    for (int i = 0; i < 4; i++) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v <= 0 || v > (1LL << 31) || (i < 3 && *end != ',') ||
            (i == 3 && *end))
            bad_args("--shape must be four positive integers B,H,S,D, got '%s'", text);
        dims[i] = (int64_t)v;
        p = end + 1;
    }
    o->b = dims[0], o->h = dims[1], o->s = dims[2], o->d = dims[3];
}

static void parse_args(int argc, char **argv, options *o) {
    *o = (options){.b = 1, .h = 32, .s = 512, .d = 64, .dtype = BP_DTYPE_F32,
                   .budget_mb = -1, .repeat = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        int takes_value = !strcmp(a, "--device") || !strcmp(a, "--shape") ||
                          !strcmp(a, "--dtype") || !strcmp(a, "--slices") ||
                          !strcmp(a, "--slice-by") || !strcmp(a, "--budget") ||
                          !strcmp(a, "--repeat");
        if (!takes_value)
            bad_args("unknown argument '%s'", a);
        if (i + 1 >= argc)
            bad_args("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--device")) {
            o->device = v;
        } else if (!strcmp(a, "--shape")) {
            parse_shape(v, o);
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "f32"))
                o->dtype = BP_DTYPE_F32;
            else if (!strcmp(v, "f16"))
                o->dtype = BP_DTYPE_F16;
            else if (!strcmp(v, "bf16"))
                o->dtype = BP_DTYPE_BF16;
            else
                bad_args("unknown dtype '%s'; valid: f32, f16, bf16", v);
            o->dtype_given = 1;
        } else if (!strcmp(a, "--slice-by")) {
            if (strcmp(v, "heads") && strcmp(v, "rows"))
                bad_args("--slice-by must be heads or rows, got '%s'", v);
            o->by_rows = !strcmp(v, "rows");
        } else if (!strcmp(a, "--slices")) {
            o->slices = parse_positive(v, "--slices");
        } else if (!strcmp(a, "--repeat")) {
            o->repeat = parse_positive(v, "--repeat");
        } else {
            char *end = NULL;
            errno = 0;
            double mb = strtod(v, &end);
            if (end == v || *end || errno || !isfinite(mb) || mb < 0)
                bad_args("--budget must be a number of megabytes >= 0, got '%s'", v);
            o->budget_mb = mb;
        }
    }
    int64_t extent = o->by_rows ? o->s : o->b * o->h;
    if (o->slices == 0) {
        int64_t want = o->by_rows ? (o->s / 8 > 1 ? o->s / 8 : 1) : extent;
        while (extent % want)
            want--;
        o->slices = want;
    }
    if (extent % o->slices)
        bad_args("--slices %lld does not divide %s = %lld", (long long)o->slices,
                 o->by_rows ? "S" : "B*H", (long long)extent);
}

/* The ops the scenarios use; the dtype needs a kernel for each on the device. */
static const char *const needed_ops[] = {"matmul", "scale", "softmax", "copy"};

static const char *missing_kernel(bp_device *dev, bp_dtype dtype) {
    for (size_t i = 0; i < sizeof needed_ops / sizeof needed_ops[0]; i++) {
        bp_op_id id;
        if (bp_op_find(needed_ops[i], &id) != BP_OK ||
            !(bp_kernel_dtypes(id, dev) & BP_DTYPE_BIT(dtype)))
            return needed_ops[i];
    }
    /* Results are read back through a cast to f32 (a copy kernel of dtype f32). */
    bp_op_id copy;
    if (bp_op_find("copy", &copy) != BP_OK ||
        !(bp_kernel_dtypes(copy, dev) & BP_DTYPE_BIT(BP_DTYPE_F32)))
        return "copy (to f32)";
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct run_ctx {
    bp_device *dev;
    bp_stream *stream;
    options o;
    bp_tensor *q, *k, *v;
    bp_tensor *q3, *k3, *v3; /* [B*H, S, D] views, for slicing by heads */
    attention_ref ref; /* the float64 reference of the checked elements, and bounds */
    size_t numel;
} run_ctx;

typedef struct row {
    const char *scenario;
    double peak_scratch_mb, time_ms, wall_ms, max_error, device_ms;
    size_t out_of_bounds; /* checked elements off by more than their bound */
    double record_ms; /* regions: host time from bp_region_begin to bp_region_end */
    int is_region;
    bp_region_report report;
} row;

static bp_tensor *random_input(run_ctx *c, uint64_t seed) {
    float *host = malloc(c->numel * sizeof *host);
    if (!host) {
        fprintf(stderr, "sliced_attention: out of host memory\n");
        exit(1);
    }
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < c->numel; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        host[i] = (float)((x >> 11) % 2001) / 1000.0f - 1.0f;
    }
    int64_t shape[4] = {c->o.b, c->o.h, c->o.s, c->o.d};
    bp_tensor *f32 = NULL, *t = NULL;
    CHECK(bp_tensor_from_host(c->dev, BP_DTYPE_F32, 4, shape, host, &f32));
    free(host);
    if (c->o.dtype == BP_DTYPE_F32)
        return f32;
    CHECK(bp_cast(f32, c->o.dtype, &t));
    bp_tensor_release(f32);
    return t;
}

/* The tensor's elements as f32 on the host (malloc'd). */
static float *to_host_f32(run_ctx *c, bp_tensor *t) {
    bp_tensor *f32 = t;
    if (bp_tensor_dtype(t) != BP_DTYPE_F32)
        CHECK(bp_cast(t, BP_DTYPE_F32, &f32));
    float *host = malloc(c->numel * sizeof *host);
    if (!host) {
        fprintf(stderr, "sliced_attention: out of host memory\n");
        exit(1);
    }
    CHECK(bp_tensor_to_host(f32, host, c->numel * sizeof *host));
    if (f32 != t)
        bp_tensor_release(f32);
    return host;
}

/* Checks out against the reference: r->max_error and r->out_of_bounds. */
static void check_output(run_ctx *c, bp_tensor *out, row *r) {
    float *got = to_host_f32(c, out);
    r->out_of_bounds = attention_check(&c->ref, got, &r->max_error);
    free(got);
}

/* Attention of one slice into its part of `out`: query rows [first, first + n) of
 * every head (by rows), or batch x head pairs [first, first + n) (by heads). Every
 * intermediate is released at once: eagerly its memory goes back to the allocator; in
 * a region the executor frees it after its last use. */
static void attend_slice(run_ctx *c, bp_tensor *out, int64_t first, int64_t n) {
    bp_tensor *qi = NULL, *ki = NULL, *vi = NULL, *si = NULL, *ci = NULL, *pi = NULL,
              *oi = NULL, *out3 = NULL;
    if (c->o.by_rows) {
        CHECK(bp_tensor_narrow(c->q, 2, first, n, &qi));
        ki = bp_tensor_retain(c->k);
        vi = bp_tensor_retain(c->v);
        CHECK(bp_tensor_narrow(out, 2, first, n, &oi));
    } else {
        int64_t shape3[3] = {c->o.b * c->o.h, c->o.s, c->o.d};
        CHECK(bp_tensor_narrow(c->q3, 0, first, n, &qi));
        CHECK(bp_tensor_narrow(c->k3, 0, first, n, &ki));
        CHECK(bp_tensor_narrow(c->v3, 0, first, n, &vi));
        CHECK(bp_tensor_reshape(out, 3, shape3, &out3));
        CHECK(bp_tensor_narrow(out3, 0, first, n, &oi));
        bp_tensor_release(out3);
    }
    CHECK(bp_matmul(qi, ki, 0, 1, &si));
    CHECK(bp_scale(si, 1.0 / sqrt((double)c->o.d), &ci));
    bp_tensor_release(si);
    CHECK(bp_softmax(ci, 1.0f, 0, &pi));
    bp_tensor_release(ci);
    CHECK(bp_matmul_out(pi, vi, 0, 0, oi));
    bp_tensor_release(pi);
    bp_tensor_release(qi);
    bp_tensor_release(ki);
    bp_tensor_release(vi);
    bp_tensor_release(oi);
}

static void attend_sliced(run_ctx *c, bp_tensor *out, int64_t slices) {
    int64_t extent = c->o.by_rows ? c->o.s : c->o.b * c->o.h;
    int64_t n = extent / slices;
    for (int64_t i = 0; i < slices; i++)
        attend_slice(c, out, i * n, n);
}

/* Times a scenario: device time from timing events where the device has them, and
 * wall time; timer_stop synchronizes the stream. */
typedef struct timer {
    bp_event *start, *end;
    double wall0;
} timer;

static timer timer_start(run_ctx *c) {
    timer t = {0};
    bp_device_props props = {.struct_size = sizeof props};
    CHECK(bp_device_get_props(c->dev, &props));
    if (props.capabilities & BP_CAP_TIMED_EVENTS) {
        CHECK(bp_event_create(c->dev, BP_EVENT_TIMING, &t.start));
        CHECK(bp_event_create(c->dev, BP_EVENT_TIMING, &t.end));
        CHECK(bp_event_record(t.start, c->stream));
    }
    t.wall0 = now_ms();
    return t;
}

static void timer_stop(run_ctx *c, timer *t, row *r) {
    if (t->end)
        CHECK(bp_event_record(t->end, c->stream));
    CHECK(bp_stream_synchronize(c->stream));
    r->wall_ms = now_ms() - t->wall0;
    r->time_ms = r->wall_ms;
    if (t->end) {
        float ms = 0;
        CHECK(bp_event_elapsed_ms(t->start, t->end, &ms));
        r->time_ms = ms;
        bp_event_destroy(t->start);
        bp_event_destroy(t->end);
    }
}

static bp_tensor *new_output(run_ctx *c) {
    int64_t shape[4] = {c->o.b, c->o.h, c->o.s, c->o.d};
    bp_tensor *out = NULL;
    CHECK(bp_tensor_empty(c->dev, c->o.dtype, 4, shape, &out));
    return out;
}

static row run_eager(run_ctx *c, const char *name, int64_t slices) {
    row r = {.scenario = name, .device_ms = -1};
    bp_tensor *out = new_output(c);
    CHECK(bp_stream_synchronize(c->stream));
    bp_memory_stats before = {.struct_size = sizeof before};
    CHECK(bp_memory_get_stats(c->dev, &before));
    CHECK(bp_memory_reset_peak(c->dev));
    timer t = timer_start(c);
    attend_sliced(c, out, slices);
    timer_stop(c, &t, &r);
    bp_memory_stats after = {.struct_size = sizeof after};
    CHECK(bp_memory_get_stats(c->dev, &after));
    r.peak_scratch_mb = (double)(after.peak_allocated_bytes - before.allocated_bytes) / MB;
    check_output(c, out, &r);
    bp_tensor_release(out);
    return r;
}

static row run_region(run_ctx *c, const char *name, const char *hints) {
    row r = {.scenario = name, .is_region = 1};
    bp_tensor *out = new_output(c);
    CHECK(bp_stream_synchronize(c->stream));
    r.report.struct_size = sizeof r.report;
    timer t = timer_start(c);
    CHECK(bp_region_begin(c->stream, hints));
    double record0 = now_ms();
    attend_sliced(c, out, c->o.slices);
    r.record_ms = now_ms() - record0;
    CHECK(bp_region_end(c->stream, &r.report));
    timer_stop(c, &t, &r);
    r.peak_scratch_mb = (double)r.report.peak_scratch_bytes / MB;
    r.device_ms = r.report.device_ms;
    check_output(c, out, &r);
    bp_tensor_release(out);
    return r;
}

static int by_time(const void *a, const void *b) {
    double x = ((const row *)a)->time_ms, y = ((const row *)b)->time_ms;
    return (x > y) - (x < y);
}

/* Runs a scenario (eager with `slices`, or a region with `hints` when is_region) as many
 * times as --repeat asks: the run of median time (the lower middle one of an even
 * count), with the largest error of all. */
static row run_repeated(run_ctx *c, const char *name, int is_region, int64_t slices,
                        const char *hints) {
    int64_t n = c->o.repeat;
    row *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) {
        fprintf(stderr, "sliced_attention: out of host memory\n");
        exit(1);
    }
    double worst = 0;
    size_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        runs[i] = is_region ? run_region(c, name, hints) : run_eager(c, name, slices);
        if (!(runs[i].max_error <= worst))
            worst = isnan(runs[i].max_error) ? INFINITY : runs[i].max_error;
        bad = runs[i].out_of_bounds > bad ? runs[i].out_of_bounds : bad;
    }
    qsort(runs, (size_t)n, sizeof *runs, by_time);
    row r = runs[(n - 1) / 2]; /* of an even count, the lower of the middle two */
    r.max_error = worst;
    r.out_of_bounds = bad;
    free(runs);
    return r;
}

static void print_json(const row *rows, int n) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "scenario", rows[i].scenario);
        cJSON_AddNumberToObject(o, "peak_scratch_mb", rows[i].peak_scratch_mb);
        cJSON_AddNumberToObject(o, "time_ms", rows[i].time_ms);
        cJSON_AddNumberToObject(o, "wall_ms", rows[i].wall_ms);
        /* JSON has no infinity: a NaN or infinite error is written as a large number. */
        cJSON_AddNumberToObject(o, "max_error",
                                isfinite(rows[i].max_error) ? rows[i].max_error : 1e308);
        if (rows[i].is_region && rows[i].device_ms >= 0)
            cJSON_AddNumberToObject(o, "device_ms", rows[i].device_ms);
        if (rows[i].is_region)
            cJSON_AddNumberToObject(o, "record_ms", rows[i].record_ms);
        if (rows[i].is_region)
            cJSON_AddBoolToObject(o, "backend_compiled", rows[i].report.backend_compiled);
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(arr);
    if (!text) {
        fprintf(stderr, "sliced_attention: out of memory writing JSON\n");
        exit(1);
    }
    printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(arr);
}

int main(int argc, char **argv) {
    run_ctx c = {0};
    parse_args(argc, argv, &c.o);

    bp_status st = c.o.device ? bp_device_open(c.o.device, &c.dev) : bp_device_default(&c.dev);
    if (st != BP_OK) {
        fprintf(stderr, "sliced_attention: cannot open device %s: %s: %s\n",
                c.o.device ? c.o.device : "(default)", bp_status_str(st), bp_last_error());
        return 2;
    }
    const char *missing;
    if (!c.o.dtype_given) {
        c.o.dtype = missing_kernel(c.dev, BP_DTYPE_BF16) ? BP_DTYPE_F32 : BP_DTYPE_BF16;
    }
    if ((missing = missing_kernel(c.dev, c.o.dtype))) {
        fprintf(stderr, "sliced_attention: device %s has no %s kernel for %s\n",
                bp_device_name(c.dev), missing, bp_dtype_name(c.o.dtype));
        return 2;
    }
    CHECK(bp_stream_default(c.dev, &c.stream));
    c.numel = (size_t)(c.o.b * c.o.h * c.o.s * c.o.d);

    /* Inputs and the reference first: they are not scratch. */
    c.q = random_input(&c, 1);
    c.k = random_input(&c, 2);
    c.v = random_input(&c, 3);
    int64_t shape3[3] = {c.o.b * c.o.h, c.o.s, c.o.d};
    CHECK(bp_tensor_reshape(c.q, 3, shape3, &c.q3));
    CHECK(bp_tensor_reshape(c.k, 3, shape3, &c.k3));
    CHECK(bp_tensor_reshape(c.v, 3, shape3, &c.v3));
    int64_t bh = c.o.b * c.o.h, work = bh * c.o.s * c.o.s * c.o.d;
    int64_t stride = (work + REFERENCE_WORK - 1) / REFERENCE_WORK;
    float *qh = to_host_f32(&c, c.q), *kh = to_host_f32(&c, c.k), *vh = to_host_f32(&c, c.v);
    if (attention_reference(qh, kh, vh, bh, c.o.s, c.o.d, stride, eps_out(c.o.dtype),
                            &c.ref) != 0) {
        fprintf(stderr, "sliced_attention: out of host memory\n");
        return 1;
    }
    free(qh);
    free(kh);
    free(vh);
    double max_bound = 0, mean_out = 0;
    for (size_t i = 0; i < c.ref.n; i++) {
        max_bound = fmax(max_bound, c.ref.bound[i]);
        mean_out += fabs(c.ref.want[i]) / (double)c.ref.n;
    }

    row rows[5];
    rows[0] = run_repeated(&c, "naive_eager", 0, 1, NULL);
    rows[1] = run_repeated(&c, "sliced_eager", 0, c.o.slices, NULL);
    rows[2] = run_repeated(&c, "sliced_bfs", 1, 0, NULL);
    rows[3] = run_repeated(&c, "sliced_strict", 1, 0, "{\"order\":\"strict\",\"group_id\":0}");
    double budget = c.o.budget_mb;
    if (budget < 0) /* between the two schedules: the geometric mean of their peaks */
        budget = sqrt((double)rows[2].report.predicted_peak_bytes *
                      (double)rows[3].report.predicted_peak_bytes) / MB;
    char hints[96];
    snprintf(hints, sizeof hints, "{\"order\":\"auto\",\"mem_budget_mb\":%.6f}", budget);
    rows[4] = run_repeated(&c, "sliced_auto", 1, 0, hints);

    int bad = 0;
    for (int i = 0; i < 5; i++)
        bad += rows[i].out_of_bounds > 0;

    if (c.o.json) {
        print_json(rows, 5);
    } else {
        int64_t extent = c.o.by_rows ? c.o.s : c.o.b * c.o.h;
        printf("sliced attention on %s: shape B,H,S,D = %lld,%lld,%lld,%lld, %s, %lld slices "
               "of %lld %s%s\n", bp_device_name(c.dev), (long long)c.o.b,
               (long long)c.o.h, (long long)c.o.s, (long long)c.o.d,
               bp_dtype_name(c.o.dtype), (long long)c.o.slices,
               (long long)(extent / c.o.slices),
               c.o.by_rows ? "query row" : "batch x head pair",
               extent / c.o.slices == 1 ? "" : "s");
        printf("%-14s %17s %10s %10s %10s   %s\n", "scenario", "peak scratch MB", "time ms",
               "wall ms", "max error", "schedule");
        for (int i = 0; i < 5; i++) {
            const row *r = &rows[i];
            printf("%-14s %17.3f %10.2f %10.1f %10.2e", r->scenario, r->peak_scratch_mb,
                   r->time_ms, r->wall_ms, r->max_error);
            if (r->is_region)
                printf("   %s, width %d, %d stream%s%s",
                       bp_schedule_order_name(r->report.policy), r->report.width,
                       r->report.streams_used, r->report.streams_used == 1 ? "" : "s",
                       r->report.backend_compiled ? ", compiled by the backend" : "");
            else
                printf("   eager");
            printf("\n");
        }
        double ratio = rows[3].peak_scratch_mb > 0
                           ? rows[2].peak_scratch_mb / rows[3].peak_scratch_mb : 0;
        printf("strict peak is %.1fx below bfs; auto budget %.3f MB; error bounds up to %.2e "
               "on outputs of mean magnitude %.2e, 1 in %lld query rows checked (%s)\n",
               ratio, budget, max_bound, mean_out, (long long)stride,
               bad ? "EXCEEDED" : "all within");
    }
    for (int i = 0; i < 5; i++)
        if (rows[i].out_of_bounds)
            fprintf(stderr, "sliced_attention: %s: %zu of %zu checked elements exceed their "
                    "%s error bound\n", rows[i].scenario, rows[i].out_of_bounds, c.ref.n,
                    bp_dtype_name(c.o.dtype));

    attention_reference_free(&c.ref);
    bp_tensor_release(c.q3);
    bp_tensor_release(c.k3);
    bp_tensor_release(c.v3);
    bp_tensor_release(c.q);
    bp_tensor_release(c.k);
    bp_tensor_release(c.v);
    return bad ? 1 : 0;
}
