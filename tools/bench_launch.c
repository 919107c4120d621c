/* bp-bench launch: the host's cost of one tiny eager op, as an application issuing
 * many small kernels pays it.
 *
 *   bp-bench launch [--device NAME] [--ops N] [--repeat R] [--json]
 *
 * On the device, a, b and out are f32 tensors of one element. Two ops are timed the
 * same way: bp_add_out(a, b, out) (two inputs) and bp_scale_out(a, alpha, out) (one
 * input and an attribute). After a warm-up, each run synchronizes the stream, reads the
 * host clock (CLOCK_MONOTONIC), issues N calls with no synchronize between them, reads
 * the clock again (the host's time to issue them), then synchronizes the stream and
 * reads it a third time (the time until the device has done them all). The figures are
 * the medians over R runs of ns per op: host (issue only) and with the final
 * synchronize. On an asynchronous device the first is what the host spends per op
 * (argument checks, dispatch, the backend's launch); the second is bounded below by
 * whichever of the host and the device is slower per op. At the end the result is
 * read back and checked, so a run whose kernels did nothing does not pass. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/backplane.h>
#include <cJSON.h>

#include "bench.h"

#define SCALE_ALPHA 0.5

typedef struct options {
    const char *device;
    uint64_t ops, repeat;
    bool json;
} options;

typedef enum which { OP_ADD, OP_SCALE, OP_COUNT } which;

static const char *const op_names[OP_COUNT] = {"add", "scale"};
static const char *const op_calls[OP_COUNT] = {"bp_add_out(a, b, out)",
                                               "bp_scale_out(a, alpha, out)"};

typedef struct figures {
    double host_ns, synced_ns, sync_wait_us; /* medians over the runs */
    double host_ns_min, synced_ns_min;       /* fastest run */
} figures;

void bp_bench_launch_usage(FILE *out) {
    fprintf(out,
            "Usage: bp-bench launch [--device NAME] [--ops N] [--repeat R] [--json]\n"
            "Host time per tiny eager op: N calls of bp_add_out(a, b, out) and of\n"
            "bp_scale_out(a, alpha, out) on 1-element f32 tensors, with no synchronize\n"
            "inside the loop (the stream is synchronized before the clock starts).\n"
            "  --device NAME  device to use (default: BP_DEVICE, else cpu)\n"
            "  --ops N        calls per run, k/m suffixes allowed (default 20000)\n"
            "  --repeat R     timed runs after a warm-up; medians are reported (default 5)\n"
            "  --json         print one JSON object instead of a table\n"
            "Reports ns per op as the host issued them, and ns per op until a final\n"
            "stream synchronize returned.\n");
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.ops = 20000, .repeat = 5};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            bp_bench_launch_usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
        } else if (strcmp(arg, "--device") == 0) {
            if (!value) {
                fprintf(stderr, "bp-bench launch: --device needs a value\n");
                return 2;
            }
            o->device = value;
            i++;
        } else if (strcmp(arg, "--ops") == 0 || strcmp(arg, "--repeat") == 0) {
            bool ops = arg[2] == 'o';
            uint64_t *number = ops ? &o->ops : &o->repeat;
            uint64_t limit = ops ? (uint64_t)1 << 30 : 1000;
            if (!value || bp_bench_parse_count(value, number) != 0 || *number > limit) {
                fprintf(stderr, "bp-bench launch: %s wants a whole number from 1 to %llu, "
                        "not '%s'\n", arg, (unsigned long long)limit, value ? value : "nothing");
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "bp-bench launch: unknown option '%s'; see bp-bench launch --help\n",
                    arg);
            return 2;
        }
    }
    return 0;
}

typedef struct fixture {
    bp_stream *stream;
    bp_tensor *a, *b, *out;
} fixture;

static bp_status issue(const fixture *f, which w, uint64_t n) {
    bp_status st = BP_OK;
    if (w == OP_ADD) {
        for (uint64_t i = 0; i < n && st == BP_OK; i++)
            st = bp_add_out(f->a, f->b, f->out);
    } else {
        for (uint64_t i = 0; i < n && st == BP_OK; i++)
            st = bp_scale_out(f->a, SCALE_ALPHA, f->out);
    }
    return st;
}

/* Warm-up, then `repeat` timed runs of `ops` calls. */
static bp_status measure(const fixture *f, const options *o, which w, figures *fig) {
    int runs = (int)o->repeat;
    double *host = malloc((size_t)runs * sizeof *host);
    double *synced = malloc((size_t)runs * sizeof *synced);
    double *wait = malloc((size_t)runs * sizeof *wait);
    bp_status st = host && synced && wait ? BP_OK : BP_ERR_OUT_OF_MEMORY;
    uint64_t warm = o->ops < 1000 ? o->ops : 1000;
    if (st == BP_OK)
        st = issue(f, w, warm);
    if (st == BP_OK)
        st = bp_stream_synchronize(f->stream);
    for (int r = 0; r < runs && st == BP_OK; r++) {
        st = bp_stream_synchronize(f->stream);
        if (st != BP_OK)
            break;
        double t0 = bp_bench_now_ns();
        st = issue(f, w, o->ops);
        double t1 = bp_bench_now_ns();
        if (st == BP_OK)
            st = bp_stream_synchronize(f->stream);
        double t2 = bp_bench_now_ns();
        host[r] = (t1 - t0) / (double)o->ops;
        synced[r] = (t2 - t0) / (double)o->ops;
        wait[r] = (t2 - t1) / 1e3;
    }
    if (st == BP_OK) {
        fig->host_ns = bp_bench_median(host, runs); /* sorts: the minimum is then first */
        fig->host_ns_min = host[0];
        fig->synced_ns = bp_bench_median(synced, runs);
        fig->synced_ns_min = synced[0];
        fig->sync_wait_us = bp_bench_median(wait, runs);
    }
    free(host);
    free(synced);
    free(wait);
    return st;
}

/* out must hold what the last op wrote: a + b, or a * alpha. */
static int check_result(const fixture *f, which w, float a, float b) {
    float got = NAN;
    if (bp_tensor_to_host(f->out, &got, sizeof got) != BP_OK) {
        fprintf(stderr, "bp-bench launch: reading the result back failed: %s\n", bp_last_error());
        return 1;
    }
    float want = w == OP_ADD ? a + b : (float)(a * SCALE_ALPHA);
    if (!(fabsf(got - want) <= 1e-6f)) {
        fprintf(stderr, "bp-bench launch: %s gave %g, not %g\n", op_names[w], (double)got,
                (double)want);
        return 1;
    }
    return 0;
}

static void print_result(const options *o, const char *device, bool async_streams,
                         const figures *fig) {
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "mode", "launch");
        cJSON_AddStringToObject(j, "device", device);
        cJSON_AddStringToObject(j, "dtype", "f32");
        cJSON_AddNumberToObject(j, "numel", 1);
        cJSON_AddNumberToObject(j, "ops", (double)o->ops);
        cJSON_AddNumberToObject(j, "repeat", (double)o->repeat);
        cJSON_AddStringToObject(j, "statistic", "median");
        cJSON_AddBoolToObject(j, "async_streams", async_streams);
        cJSON *list = cJSON_AddArrayToObject(j, "results");
        for (int w = 0; w < OP_COUNT; w++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", op_names[w]);
            cJSON_AddStringToObject(e, "call", op_calls[w]);
            cJSON_AddNumberToObject(e, "host_ns_per_op", fig[w].host_ns);
            cJSON_AddNumberToObject(e, "host_us_per_op", fig[w].host_ns / 1e3);
            cJSON_AddNumberToObject(e, "host_ns_per_op_min", fig[w].host_ns_min);
            cJSON_AddNumberToObject(e, "synced_ns_per_op", fig[w].synced_ns);
            cJSON_AddNumberToObject(e, "synced_ns_per_op_min", fig[w].synced_ns_min);
            cJSON_AddNumberToObject(e, "final_sync_us", fig[w].sync_wait_us);
            cJSON_AddItemToArray(list, e);
        }
        /* The headline figures, flat, for scripts. */
        cJSON_AddNumberToObject(j, "add_host_ns_per_op", fig[OP_ADD].host_ns);
        cJSON_AddNumberToObject(j, "add_synced_ns_per_op", fig[OP_ADD].synced_ns);
        cJSON_AddNumberToObject(j, "scale_host_ns_per_op", fig[OP_SCALE].host_ns);
        cJSON_AddNumberToObject(j, "scale_synced_ns_per_op", fig[OP_SCALE].synced_ns);
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(j);
        return;
    }
    printf("bp-bench launch on %s: 1-element f32 tensors, %llu ops per run, median of %llu "
           "runs%s\n", device, (unsigned long long)o->ops, (unsigned long long)o->repeat,
           async_streams ? "" : " (the device's streams are synchronous)");
    printf("  %-30s %12s %12s %14s %14s\n", "op", "host ns/op", "(fastest)", "synced ns/op",
           "final sync us");
    for (int w = 0; w < OP_COUNT; w++)
        printf("  %-30s %12.1f %12.1f %14.1f %14.1f\n", op_calls[w], fig[w].host_ns,
               fig[w].host_ns_min, fig[w].synced_ns, fig[w].sync_wait_us);
    printf("  host: the loop of N calls with no synchronize; synced: until the stream "
           "synchronize after it returned\n");
}

int bp_bench_launch_run(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    bp_device *dev = NULL;
    bp_status st = o.device ? bp_device_open(o.device, &dev) : bp_device_default(&dev);
    fixture f = {0};
    /* The ops enqueue on the thread's current stream of the device. */
    f.stream = st == BP_OK ? bp_current_stream(dev) : NULL;
    if (!f.stream) {
        fprintf(stderr, "bp-bench launch: %s\n", bp_last_error());
        return 1;
    }
    bp_device_props props = {.struct_size = sizeof props};
    st = bp_device_get_props(dev, &props);
    const float ha = 1.25f, hb = 2.5f;
    const int64_t shape[1] = {1};
    if (st == BP_OK)
        st = bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, &ha, &f.a);
    if (st == BP_OK)
        st = bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, &hb, &f.b);
    if (st == BP_OK)
        st = bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &f.out);
    if (st != BP_OK) {
        fprintf(stderr, "bp-bench launch: setting up on %s failed: %s\n", bp_device_name(dev),
                bp_last_error());
        rc = 1;
        goto done;
    }
    figures fig[OP_COUNT] = {{0}};
    for (int w = 0; w < OP_COUNT && rc == 0; w++) {
        st = measure(&f, &o, (which)w, &fig[w]);
        if (st != BP_OK) {
            fprintf(stderr, "bp-bench launch: %s: %s: %s\n", op_calls[w], bp_status_str(st),
                    bp_last_error());
            rc = 1;
        } else {
            rc = check_result(&f, (which)w, ha, hb);
        }
    }
    if (rc == 0)
        print_result(&o, bp_device_name(dev), (props.capabilities & BP_CAP_ASYNC_STREAMS) != 0,
                     fig);
done:
    bp_tensor_release(f.a);
    bp_tensor_release(f.b);
    bp_tensor_release(f.out);
    return rc;
}
