/* bp-bench dispatch: what bp_dispatch adds to a kernel call.
 *
 *   bp-bench dispatch [--iters N] [--repeat R] [--only direct|dispatch] [--json]
 *
 * Defines an op, registers a kernel for cpu that only counts its calls, and times N
 * calls of it two ways with one input and one output tensor: (a) directly through a
 * function pointer with a prepared bp_kernel_call, (b) through bp_dispatch with a
 * prepared bp_op_call naming the stream (as the ops do: they fill the kernel's record
 * while checking the arguments, and the dispatcher completes it). Each variant runs R times
 * and the fastest run counts. The difference is the dispatcher's cost per call: table
 * lookup, stream, tensor descriptors, the call record, the hooks branch.
 * scripts/bench-dispatch-callgrind.sh counts it in instructions with --only. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <backplane/backplane.h>
#include <cJSON.h>

#include "bench.h"

#define WARMUP_CALLS 1000
#define OP_NAME "bench_noop"

typedef struct options {
    uint64_t iters, repeat;
    bool json, direct, dispatch, op;
} options;

/* What each variant calls: the kernel directly, bp_dispatch with a prepared record, or
 * a whole op (bp_scale_out, its cpu f32 kernel replaced by the no-op for this process):
 * argument checks, the record, and the ops' entry into the dispatcher. */
typedef struct fixture {
    const bp_kernel_call *kc;
    bp_op_call *call;
    bp_tensor *in, *out;
} fixture;

typedef enum variant { DIRECT, DISPATCH, OP, VARIANTS } variant;

void bp_bench_dispatch_usage(FILE *out) {
    fprintf(out,
            "Usage: bp-bench dispatch [--iters N] [--repeat R] [--only direct|dispatch|op] "
            "[--json]\n"
            "Times a no-op cpu kernel called directly, through bp_dispatch, and as the kernel\n"
            "of a whole op (bp_scale_out: argument checks plus dispatch).\n"
            "  --iters N     calls per run (default 1000000)\n"
            "  --repeat R    runs of each variant; the fastest counts (default 5)\n"
            "  --only V      time only variant V (direct, dispatch or op), for callgrind\n"
            "  --json        print one JSON object instead of a table\n");
}

static bp_status noop_kernel(const bp_kernel_call *call) {
    (*(uint64_t *)call->kernel_data)++;
    return BP_OK;
}

/* volatile: the compiler must call through the pointer, as a dispatcher would. */
static bp_kernel_fn volatile direct_fn = noop_kernel;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.iters = 1000000, .repeat = 5, .direct = true, .dispatch = true, .op = true};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            bp_bench_dispatch_usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
        } else if (strcmp(arg, "--iters") == 0 || strcmp(arg, "--repeat") == 0) {
            uint64_t *number = arg[2] == 'i' ? &o->iters : &o->repeat;
            if (!value || bp_bench_parse_count(value, number) != 0) {
                fprintf(stderr, "bp-bench dispatch: %s wants a positive whole number, not '%s'\n",
                        arg, value ? value : "nothing");
                return 2;
            }
            i++;
        } else if (strcmp(arg, "--only") == 0) {
            if (!value || (strcmp(value, "direct") != 0 && strcmp(value, "dispatch") != 0 &&
                           strcmp(value, "op") != 0)) {
                fprintf(stderr, "bp-bench dispatch: --only wants direct, dispatch or op, not "
                                "'%s'\n", value ? value : "nothing");
                return 2;
            }
            o->direct = strcmp(value, "direct") == 0;
            o->dispatch = strcmp(value, "dispatch") == 0;
            o->op = strcmp(value, "op") == 0;
            i++;
        } else {
            fprintf(stderr, "bp-bench dispatch: unknown option '%s'; see bp-bench dispatch "
                            "--help\n", arg);
            return 2;
        }
    }
    return 0;
}

static bp_status run(variant v, const fixture *f, uint64_t n) {
    bp_status st = BP_OK;
    for (uint64_t i = 0; i < n && st == BP_OK; i++)
        st = v == DIRECT     ? direct_fn(f->kc)
             : v == DISPATCH ? bp_dispatch(f->call)
                             : bp_scale_out(f->in, 1.0, f->out);
    return st;
}

/* Fastest of `repeat` timed runs of n calls, in ns per call; negative on failure. */
static double best_ns(const options *o, variant v, const fixture *f) {
    bp_status st = run(v, f, WARMUP_CALLS);
    double best = -1;
    for (uint64_t r = 0; r < o->repeat && st == BP_OK; r++) {
        double t0 = now_ns();
        st = run(v, f, o->iters);
        double ns = (now_ns() - t0) / (double)o->iters;
        if (best < 0 || ns < best)
            best = ns;
    }
    return st == BP_OK ? best : -1;
}

static void print_result(const options *o, const char *device, const double *ns) {
    double direct = ns[DIRECT], dispatch = ns[DISPATCH];
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "mode", "dispatch");
        cJSON_AddStringToObject(j, "device", device);
        cJSON_AddNumberToObject(j, "iters", (double)o->iters);
        cJSON_AddNumberToObject(j, "repeat", (double)o->repeat);
        if (o->direct)
            cJSON_AddNumberToObject(j, "ns_per_direct_call", direct);
        if (o->dispatch)
            cJSON_AddNumberToObject(j, "ns_per_dispatch", dispatch);
        if (o->direct && o->dispatch)
            cJSON_AddNumberToObject(j, "ns_dispatch_overhead", dispatch - direct);
        if (o->op)
            cJSON_AddNumberToObject(j, "ns_per_op_call", ns[OP]);
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(j);
        return;
    }
    printf("bp-bench dispatch\n");
    printf("  %-22s %s (a no-op kernel, 1 input and 1 output tensor)\n", "device", device);
    printf("  %-22s %llu per run, fastest of %llu\n", "iters", (unsigned long long)o->iters,
           (unsigned long long)o->repeat);
    if (o->direct)
        printf("  %-22s %.2f\n", "ns per direct call", direct);
    if (o->dispatch)
        printf("  %-22s %.2f\n", "ns per bp_dispatch", dispatch);
    if (o->direct && o->dispatch)
        printf("  %-22s %.2f ns\n", "dispatch overhead", dispatch - direct);
    if (o->op)
        printf("  %-22s %.2f (bp_scale_out with the no-op kernel: checks + dispatch)\n",
               "ns per op call", ns[OP]);
}

int bp_bench_dispatch_run(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    bp_device *dev = NULL;
    bp_op_id op = -1;
    uint64_t calls = 0;
    bp_tensor *in = NULL, *out = NULL;
    const int64_t shape[1] = {4};
    bp_status st = bp_device_open("cpu", &dev);
    if (st == BP_OK)
        st = bp_op_define(OP_NAME, 0, &op);
    if (st == BP_OK)
        st = bp_kernel_register("cpu", OP_NAME, BP_DTYPE_F32, noop_kernel, &calls, 0);
    if (st == BP_OK) /* outranks the real kernel (priority 0) in this process only */
        st = bp_kernel_register("cpu", "scale", BP_DTYPE_F32, noop_kernel, &calls, 100);
    if (st == BP_OK)
        st = bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &in);
    if (st == BP_OK)
        st = bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &out);
    bp_stream *stream = dev ? bp_current_stream(dev) : NULL;
    if (st != BP_OK || !stream) {
        fprintf(stderr, "bp-bench dispatch: setting up failed: %s\n", bp_last_error());
        rc = 1;
        goto done;
    }

    const bp_tensor_desc *in_desc = bp_tensor_kernel_desc(in);
    const bp_tensor_desc *out_desc = bp_tensor_kernel_desc(out);
    const bp_kernel_call kc = {
        .struct_size = sizeof kc, .op = op, .op_name = OP_NAME, .dtype = BP_DTYPE_F32,
        .n_inputs = 1, .n_outputs = 1, .inputs = &in_desc, .outputs = &out_desc,
        .kernel_data = &calls,
    };
    bp_op_call call = {
        .kernel = {.op = op, .dtype = BP_DTYPE_F32, .n_inputs = 1, .n_outputs = 1,
                   .inputs = &in_desc, .outputs = &out_desc},
        .device = dev,
        .stream = stream,
    };
    const fixture f = {.kc = &kc, .call = &call, .in = in, .out = out};
    const bool wanted[VARIANTS] = {o.direct, o.dispatch, o.op};
    double ns[VARIANTS] = {0};
    bool failed = false;
    uint64_t expected = 0;
    for (int v = 0; v < VARIANTS; v++) {
        if (!wanted[v])
            continue;
        ns[v] = best_ns(&o, (variant)v, &f);
        failed |= ns[v] < 0;
        expected += WARMUP_CALLS + o.iters * o.repeat;
    }
    if (failed) {
        fprintf(stderr, "bp-bench dispatch: a call failed: %s\n", bp_last_error());
        rc = 1;
    } else if (calls != expected) {
        fprintf(stderr, "bp-bench dispatch: the kernel ran %llu times, not %llu\n",
                (unsigned long long)calls, (unsigned long long)expected);
        rc = 1;
    } else {
        print_result(&o, bp_device_name(dev), ns);
    }
done:
    bp_tensor_release(in);
    bp_tensor_release(out);
    return rc;
}
