/* dnnl_matmul_v2: f32 and bf16 matmul GF/s of oneDNN 2.x (Debian 12's libdnnl-dev 2.6.3)
 * through its v2 C API, for the record beside backplane's oneDNN 3 engine (issue 20).
 * Not part of the build: scripts/cpu-compare.sh --dnnl26 compiles it with
 *
 *   cc -O2 -std=c11 -fopenmp bench/dnnl_matmul_v2.c -ldnnl -o dnnl_matmul_v2
 *
 *   dnnl_matmul_v2 [--matmul M,N,K] [--dtype f32|bf16|both] [--threads N]
 *                  [--repeat N] [--warmup N]
 *
 * The work is bp-bench ops's: a [M, K] @ b [K, N] -> c [M, N], all row-major (plain
 * layouts: the primitive packs b itself, as on any call from a framework), c in the
 * inputs' dtype, 2*M*N*K flops; inputs random in [-1, 1), rotated among several sets
 * when one set is below 100 MB; warm-up runs, then the median of timed runs. Debian's
 * libdnnl2 threads with GNU OpenMP (readelf -d: libgomp.so.1), so --threads is
 * omp_set_num_threads. A sampled check gives the largest error at 64 outputs against
 * a double computation from the same (dtype-rounded) inputs, relative to max(1, |ref|).
 * Prints one JSON object. Exit status 0, 1 when oneDNN failed, 2 for bad arguments. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>

#if DNNL_VERSION_MAJOR != 2
#error "dnnl_matmul_v2 needs oneDNN 2.x (the v2 C API: dnnl_matmul_desc_init)"
#endif

#define ROTATE_BELOW_BYTES (100.0 * 1024 * 1024)
#define MAX_SETS 8
#define SAMPLE_POINTS 64

typedef struct options {
    int64_t m, n, k;
    int threads, repeat, warmup;
    int dtypes; /* bit 0: f32, bit 1: bf16 */
} options;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint16_t f32_to_bf16(float f) { /* round to nearest even; inputs are finite */
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* n values in [-1, 1) into `out` (f32 or bf16), and as floats into `exact` (the values
 * the primitive sees, for the sampled check) when not NULL. */
static void fill_random(void *out, float *exact, size_t n, int bf16, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        float v = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
        if (bf16) {
            uint16_t h = f32_to_bf16(v);
            ((uint16_t *)out)[i] = h;
            v = bf16_to_f32(h);
        } else {
            ((float *)out)[i] = v;
        }
        if (exact)
            exact[i] = v;
    }
}

static int parse_int(const char *text, long lo, long hi, long *out) {
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.m = 2048, .n = 2048, .k = 2048, .threads = omp_get_max_threads(),
                   .repeat = 10, .warmup = 2, .dtypes = 3};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        long v = 0;
        if (!value) {
            fprintf(stderr, "dnnl_matmul_v2: %s needs a value (options: --matmul M,N,K "
                    "--dtype f32|bf16|both --threads N --repeat N --warmup N)\n", arg);
            return 2;
        }
        i++;
        if (strcmp(arg, "--matmul") == 0) {
            long long m, n, k;
            char tail;
            if (sscanf(value, "%lld,%lld,%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 ||
                k <= 0 || m > 65536 || n > 65536 || k > 65536) {
                fprintf(stderr, "dnnl_matmul_v2: --matmul wants M,N,K from 1 to 65536, not '%s'\n",
                        value);
                return 2;
            }
            o->m = m, o->n = n, o->k = k;
        } else if (strcmp(arg, "--dtype") == 0) {
            o->dtypes = strcmp(value, "f32") == 0 ? 1 : strcmp(value, "bf16") == 0 ? 2
                        : strcmp(value, "both") == 0 ? 3 : 0;
            if (!o->dtypes) {
                fprintf(stderr, "dnnl_matmul_v2: --dtype wants f32, bf16 or both, not '%s'\n",
                        value);
                return 2;
            }
        } else if (strcmp(arg, "--threads") == 0 || strcmp(arg, "--repeat") == 0 ||
                   strcmp(arg, "--warmup") == 0) {
            if (parse_int(value, 1, 1000, &v) != 0) {
                fprintf(stderr, "dnnl_matmul_v2: %s wants a whole number from 1 to 1000, not "
                        "'%s'\n", arg, value);
                return 2;
            }
            *(arg[2] == 't' ? &o->threads : arg[2] == 'r' ? &o->repeat : &o->warmup) = (int)v;
        } else {
            fprintf(stderr, "dnnl_matmul_v2: unknown option '%s'\n", arg);
            return 2;
        }
    }
    return 0;
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        dnnl_status_t s_ = (call);                                                         \
        if (s_ != dnnl_success) {                                                          \
            snprintf(error, sizeof error, "%s: status %d", #call, (int)s_);                 \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

/* One dtype: prints its JSON object (after `sep`); returns 0, or 1 when oneDNN failed. */
static int measure(const options *o, int bf16, dnnl_engine_t engine, dnnl_stream_t stream,
                   const char *sep) {
    char error[256] = "";
    const char *impl = "?";
    size_t esize = bf16 ? 2 : 4, na = (size_t)(o->m * o->k), nb = (size_t)(o->k * o->n),
           nc = (size_t)(o->m * o->n);
    double set_bytes = (double)(na + nb) * (double)esize;
    int sets = set_bytes >= ROTATE_BELOW_BYTES ? 1 : (int)ceil(ROTATE_BELOW_BYTES / set_bytes);
    sets = sets > MAX_SETS ? MAX_SETS : sets < 1 ? 1 : sets;
    if (set_bytes < ROTATE_BELOW_BYTES && sets < 2)
        sets = 2;
    dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t a_mem[MAX_SETS] = {0}, b_mem[MAX_SETS] = {0}, c_mem = NULL;
    void *host[MAX_SETS][2] = {{0}};
    void *c = malloc(nc * esize);
    float *a0 = malloc(na * sizeof *a0), *b0 = malloc(nb * sizeof *b0);
    double *ms = malloc((size_t)o->repeat * sizeof *ms), worst = 0;
    if (!c || !a0 || !b0 || !ms) {
        snprintf(error, sizeof error, "out of host memory");
        goto out;
    }
    dnnl_dims_t a_dims = {o->m, o->k}, b_dims = {o->k, o->n}, c_dims = {o->m, o->n};
    CHECK(dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, dt, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, dt, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dt, dnnl_ab));
    CHECK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md));
    CHECK(dnnl_primitive_desc_create(&pd, &desc, NULL, engine, NULL));
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    CHECK(dnnl_primitive_create(&prim, pd));
    for (int s = 0; s < sets; s++) {
        host[s][0] = malloc(na * esize);
        host[s][1] = malloc(nb * esize);
        if (!host[s][0] || !host[s][1]) {
            snprintf(error, sizeof error, "out of host memory");
            goto out;
        }
        fill_random(host[s][0], s == 0 ? a0 : NULL, na, bf16, (uint32_t)(1 + 3 * s));
        fill_random(host[s][1], s == 0 ? b0 : NULL, nb, bf16, (uint32_t)(2 + 3 * s));
        CHECK(dnnl_memory_create(&a_mem[s], &a_md, engine, host[s][0]));
        CHECK(dnnl_memory_create(&b_mem[s], &b_md, engine, host[s][1]));
    }
    CHECK(dnnl_memory_create(&c_mem, &c_md, engine, c));
    int set = 0;
    for (int r = -o->warmup; r <= o->repeat; r++, set = (set + 1) % sets) {
        if (r == o->repeat)
            set = 0; /* a last run on set 0 for the check */
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, a_mem[set]}, {DNNL_ARG_WEIGHTS, b_mem[set]},
                                   {DNNL_ARG_DST, c_mem}};
        double t0 = now_ms();
        CHECK(dnnl_primitive_execute(prim, stream, 3, args));
        CHECK(dnnl_stream_wait(stream));
        if (r >= 0 && r < o->repeat)
            ms[r] = now_ms() - t0;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int p = 0; p < SAMPLE_POINTS; p++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t i = (size_t)(x % (uint64_t)o->m), j = (size_t)((x >> 32) % (uint64_t)o->n);
        double ref = 0;
        for (size_t t = 0; t < (size_t)o->k; t++)
            ref += (double)a0[i * (size_t)o->k + t] * (double)b0[t * (size_t)o->n + j];
        size_t at = i * (size_t)o->n + j;
        double got = bf16 ? bf16_to_f32(((uint16_t *)c)[at]) : ((float *)c)[at];
        double e = fabs(got - ref) / fmax(1.0, fabs(ref));
        worst = e > worst || isnan(e) ? e : worst;
    }
out:;
    int rc = error[0] ? 1 : 0;
    printf("%s    {\"dtype\": \"%s\", \"dims\": [%lld, %lld, %lld], \"input_sets\": %d, ", sep,
           bf16 ? "bf16" : "f32", (long long)o->m, (long long)o->n, (long long)o->k, sets);
    if (rc) {
        printf("\"ok\": false, \"error\": \"%s\"}", error);
    } else {
        qsort(ms, (size_t)o->repeat, sizeof *ms, cmp_double);
        double med = o->repeat % 2 ? ms[o->repeat / 2]
                                   : 0.5 * (ms[o->repeat / 2 - 1] + ms[o->repeat / 2]);
        double flops = 2.0 * (double)o->m * (double)o->n * (double)o->k;
        printf("\"ok\": true, \"impl\": \"%s\", \"ms\": %.4f, \"min_ms\": %.4f, \"gflops\": %.2f, "
               "\"sampled_max_rel_err\": %.3g}", impl, med, ms[0], flops / (med * 1e6),
               isfinite(worst) ? worst : 1e308); /* JSON has no NaN or infinity */
    }
    for (int s = 0; s < sets; s++) {
        dnnl_memory_destroy(a_mem[s]);
        dnnl_memory_destroy(b_mem[s]);
        free(host[s][0]);
        free(host[s][1]);
    }
    dnnl_memory_destroy(c_mem);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    free(c);
    free(a0);
    free(b0);
    free(ms);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    omp_set_num_threads(o.threads);
    dnnl_engine_t engine = NULL;
    dnnl_stream_t stream = NULL;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "dnnl_matmul_v2: cannot create a oneDNN cpu engine and stream\n");
        return 1;
    }
    const dnnl_version_t *v = dnnl_version();
    printf("{\n  \"mode\": \"dnnl_matmul_v2\",\n  \"onednn\": \"%d.%d.%d\",\n  \"onednn_hash\": "
           "\"%s\",\n  \"cpu_runtime\": \"%s\",\n  \"threads\": %d,\n  \"repeat\": %d,\n"
           "  \"warmup\": %d,\n  \"statistic\": \"median\",\n  \"results\": [\n", v->major,
           v->minor, v->patch, v->hash ? v->hash : "", v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP"
           : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential" : "other", omp_get_max_threads(),
           o.repeat, o.warmup);
    const char *sep = "";
    for (int bf16 = 0; bf16 < 2; bf16++)
        if (o.dtypes & (1 << bf16)) {
            rc |= measure(&o, bf16, engine, stream, sep);
            sep = ",\n";
        }
    printf("\n  ]\n}\n");
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return rc;
}
