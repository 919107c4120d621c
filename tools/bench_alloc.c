/* bp-bench alloc: the cost of one cached alloc+free pair of the caching allocator.
 *
 *   bp-bench alloc [--device NAME] [--size BYTES] [--iters N] [--threads N] [--json]
 *
 * Each thread warms up (the first allocation reserves a segment), then times N pairs of
 * bp_memory_alloc + bp_memory_free of one size. One thread uses the device's default
 * stream; with --threads each thread uses a stream of its own, all timed at once, which
 * shows what the allocator's lock costs under contention. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/backplane.h>
#include <cJSON.h>

#include "bench.h"

#define WARMUP_PAIRS 1000
#define MAX_THREADS 256

typedef struct options {
    const char *device;
    uint64_t size, iters, threads;
    bool json;
} options;

typedef struct runner {
    bp_device *dev;
    bp_stream *stream;
    size_t size;
    uint64_t iters;
    pthread_barrier_t *warm, *go; /* the main thread reads the stats between them */
    double ns;
    bp_status status;
    char error[512];
} runner;

void bp_bench_alloc_usage(FILE *out) {
    fprintf(out,
            "Usage: bp-bench alloc [--device NAME] [--size BYTES] [--iters N] [--threads N] "
            "[--json]\n"
            "Times cached bp_memory_alloc + bp_memory_free pairs after a warm-up.\n"
            "  --device NAME  device to use (default: BP_DEVICE, else cpu)\n"
            "  --size BYTES   bytes per allocation, k/m/g suffixes allowed (default 4096)\n"
            "  --iters N      timed pairs per thread (default 1000000)\n"
            "  --threads N    threads, each on its own stream (default 1: the default stream)\n"
            "  --json         print one JSON object instead of a table\n");
}

static bp_status run_pairs(runner *r, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        void *p = NULL;
        bp_status st = bp_memory_alloc(r->dev, r->size, r->stream, &p);
        if (st == BP_OK)
            st = bp_memory_free(r->dev, p);
        if (st != BP_OK)
            return st;
    }
    return BP_OK;
}

static void *runner_main(void *arg) {
    runner *r = arg;
    r->status = run_pairs(r, WARMUP_PAIRS);
    pthread_barrier_wait(r->warm);
    pthread_barrier_wait(r->go);
    if (r->status == BP_OK) {
        double t0 = bp_bench_now_ns();
        r->status = run_pairs(r, r->iters);
        r->ns = bp_bench_now_ns() - t0;
    }
    if (r->status != BP_OK)
        snprintf(r->error, sizeof r->error, "%s", bp_last_error());
    return NULL;
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.size = 4096, .iters = 1000000, .threads = 1};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t *number = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            bp_bench_alloc_usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
            continue;
        } else if (strcmp(arg, "--device") == 0) {
            if (!value)
                goto missing;
            o->device = value;
            i++;
            continue;
        } else if (strcmp(arg, "--size") == 0) {
            number = &o->size;
        } else if (strcmp(arg, "--iters") == 0) {
            number = &o->iters;
        } else if (strcmp(arg, "--threads") == 0) {
            number = &o->threads;
        } else {
            fprintf(stderr, "bp-bench alloc: unknown option '%s'; see bp-bench alloc --help\n",
                    arg);
            return 2;
        }
        if (!value)
            goto missing;
        if (bp_bench_parse_count(value, number) != 0) {
            fprintf(stderr, "bp-bench alloc: %s wants a positive whole number, not '%s'\n", arg,
                    value);
            return 2;
        }
        i++;
        continue;
    missing:
        fprintf(stderr, "bp-bench alloc: %s needs a value\n", arg);
        return 2;
    }
    if (o->threads > MAX_THREADS) {
        fprintf(stderr, "bp-bench alloc: --threads %llu is more than %d\n",
                (unsigned long long)o->threads, MAX_THREADS);
        return 2;
    }
    if (o->size > SIZE_MAX) {
        fprintf(stderr, "bp-bench alloc: --size is too large\n");
        return 2;
    }
    return 0;
}

static bp_memory_stats read_stats(bp_device *dev) {
    bp_memory_stats s = {.struct_size = sizeof s};
    bp_memory_get_stats(dev, &s);
    return s;
}

static void print_result(const options *o, const char *device, double ns_per_pair,
                         double pairs_per_s, uint64_t allocs, uint64_t hits) {
    double rate = allocs ? (double)hits / (double)allocs : 0.0;
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "mode", "alloc");
        cJSON_AddStringToObject(j, "device", device);
        cJSON_AddNumberToObject(j, "size", (double)o->size);
        cJSON_AddNumberToObject(j, "iters", (double)o->iters);
        cJSON_AddNumberToObject(j, "threads", (double)o->threads);
        cJSON_AddNumberToObject(j, "ns_per_pair", ns_per_pair);
        cJSON_AddNumberToObject(j, "pairs_per_second", pairs_per_s);
        cJSON_AddNumberToObject(j, "allocs", (double)allocs);
        cJSON_AddNumberToObject(j, "cache_hits", (double)hits);
        cJSON_AddNumberToObject(j, "cache_hit_rate", rate);
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(j);
        return;
    }
    printf("bp-bench alloc\n");
    printf("  %-22s %s\n", "device", device);
    printf("  %-22s %llu bytes\n", "size", (unsigned long long)o->size);
    printf("  %-22s %llu per thread\n", "iters", (unsigned long long)o->iters);
    printf("  %-22s %llu%s\n", "threads", (unsigned long long)o->threads,
           o->threads == 1 ? " (default stream)" : " (a stream each)");
    printf("  %-22s %.1f\n", "ns per alloc+free", ns_per_pair);
    printf("  %-22s %.3g\n", "pairs per second", pairs_per_s);
    printf("  %-22s %llu of %llu (%.2f%%)\n", "cache hits", (unsigned long long)hits,
           (unsigned long long)allocs, rate * 100.0);
}

int bp_bench_alloc_run(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    bp_device *dev = NULL;
    bp_status st = o.device ? bp_device_open(o.device, &dev) : bp_device_default(&dev);
    if (st != BP_OK) {
        fprintf(stderr, "bp-bench alloc: %s\n", bp_last_error());
        return 1;
    }

    int n = (int)o.threads;
    runner *r = calloc((size_t)n, sizeof *r);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!r || !t) {
        fprintf(stderr, "bp-bench alloc: out of memory\n");
        free(r);
        free(t);
        return 1;
    }
    pthread_barrier_t warm, go;
    pthread_barrier_init(&warm, NULL, (unsigned)n + 1);
    pthread_barrier_init(&go, NULL, (unsigned)n + 1);
    for (int i = 0; i < n && st == BP_OK; i++) {
        r[i] = (runner){.dev = dev, .size = (size_t)o.size, .iters = o.iters, .warm = &warm,
                        .go = &go};
        st = n == 1 ? bp_stream_default(dev, &r[i].stream)
                    : bp_stream_create(dev, 0, &r[i].stream);
    }
    if (st != BP_OK) {
        fprintf(stderr, "bp-bench alloc: cannot get %d streams: %s\n", n, bp_last_error());
        for (int i = 0; i < n && n > 1; i++)
            bp_stream_destroy(r[i].stream);
        rc = 1;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (pthread_create(&t[i], NULL, runner_main, &r[i]) != 0) {
            /* The threads started wait at a barrier for all n: leave them there. */
            fprintf(stderr, "bp-bench alloc: cannot start thread %d of %d\n", i + 1, n);
            exit(1);
        }
    }
    pthread_barrier_wait(&warm);
    bp_memory_stats before = read_stats(dev);
    pthread_barrier_wait(&go);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    bp_memory_stats after = read_stats(dev);

    double ns_sum = 0, ns_max = 0;
    rc = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].status != BP_OK) {
            fprintf(stderr, "bp-bench alloc: thread %d: %s: %s\n", i,
                    bp_status_str(r[i].status), r[i].error);
            rc = 1;
        }
        ns_sum += r[i].ns;
        if (r[i].ns > ns_max)
            ns_max = r[i].ns;
        if (n > 1)
            bp_stream_destroy(r[i].stream);
    }
    if (rc == 0) {
        double ns_per_pair = ns_sum / (double)n / (double)o.iters;
        double pairs_per_s = ns_max > 0 ? (double)o.iters * n / (ns_max / 1e9) : 0;
        print_result(&o, bp_device_name(dev), ns_per_pair, pairs_per_s,
                     after.num_allocs - before.num_allocs, after.cache_hits - before.cache_hits);
    }
out:
    pthread_barrier_destroy(&warm);
    pthread_barrier_destroy(&go);
    free(r);
    free(t);
    return rc;
}
