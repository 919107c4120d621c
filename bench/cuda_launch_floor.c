/* bp-cuda-launch-floor: what one kernel launch costs the host in the CUDA driver alone,
 * the floor under backplane's host time per eager op on cuda (bp-bench launch).
 *
 *   bp-cuda-launch-floor [--launches N] [--repeat R] [--json]
 *
 * It loads the driver as the cuda plugin does (backends/cuda/cu_api.c), JIT-compiles an
 * empty kernel from PTX, and times N back-to-back cuLaunchKernel calls on a
 * non-blocking stream with a host clock and no synchronize inside the loop, for a
 * kernel with one 8-byte parameter and one with a 512-byte parameter block (the size
 * of backplane's elementwise argument structs). Reports the median over R runs of the
 * host ns per launch. Exit status: 0 done, 1 no driver/device or a CUDA error, 2 bad
 * arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cu_api.h"

static const char ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry floor_small(.param .u64 p) { ret; }\n"
    ".visible .entry floor_large(.param .align 8 .b8 p[512]) { ret; }\n";

#define CHECK(call)                                                                          \
    do {                                                                                     \
        CUresult r_ = (call);                                                                \
        if (r_ != CUDA_SUCCESS) {                                                            \
            char text_[160];                                                                 \
            fprintf(stderr, "bp-cuda-launch-floor: %s: %s\n", #call,                         \
                    cu_result_text(&api, r_, text_, sizeof text_));                          \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

int main(int argc, char **argv) {
    long launches = 20000, repeat = 5;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (i + 1 < argc && !strcmp(argv[i], "--launches")) {
            launches = strtol(argv[++i], NULL, 10);
        } else if (i + 1 < argc && !strcmp(argv[i], "--repeat")) {
            repeat = strtol(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: bp-cuda-launch-floor [--launches N] [--repeat R] [--json]\n");
            return 2;
        }
    }
    if (launches < 1 || repeat < 1 || repeat > 1000) {
        fprintf(stderr, "bp-cuda-launch-floor: --launches and --repeat must be positive\n");
        return 2;
    }
    cu_api api;
    char reason[512];
    if (cu_api_load(&api, reason, sizeof reason) != 0) {
        fprintf(stderr, "bp-cuda-launch-floor: %s\n", reason);
        return 1;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn[2];
    CUstream stream;
    CHECK(api.cuDeviceGet(&dev, 0));
    CHECK(api.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(api.cuCtxSetCurrent(ctx));
    CHECK(api.cuModuleLoadData(&mod, ptx));
    CHECK(api.cuModuleGetFunction(&fn[0], mod, "floor_small"));
    CHECK(api.cuModuleGetFunction(&fn[1], mod, "floor_large"));
    CHECK(api.cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0));
    static unsigned char block[512];
    unsigned long long word = 0;
    void *small_params[] = {&word}, *large_params[] = {block};
    void **params[2] = {small_params, large_params};
    const char *names[2] = {"8-byte parameter", "512-byte parameter"};
    double median[2];
    double *runs = malloc((size_t)repeat * sizeof *runs);
    if (!runs)
        return 1;
    for (int k = 0; k < 2; k++) {
        for (long w = 0; w < 1000; w++) /* warm up */
            CHECK(api.cuLaunchKernel(fn[k], 1, 1, 1, 32, 1, 1, 0, stream, params[k], NULL));
        CHECK(api.cuStreamSynchronize(stream));
        for (long r = 0; r < repeat; r++) {
            double t0 = bp_bench_now_ns();
            for (long i = 0; i < launches; i++)
                CHECK(api.cuLaunchKernel(fn[k], 1, 1, 1, 32, 1, 1, 0, stream, params[k], NULL));
            runs[r] = (bp_bench_now_ns() - t0) / (double)launches;
            CHECK(api.cuStreamSynchronize(stream));
        }
        /* The upper middle run of an even --repeat, not bp_bench_median's mean of the
         * middle two. */
        bp_bench_sort(runs, (int)repeat);
        median[k] = runs[repeat / 2];
    }
    free(runs);
    if (json)
        printf("{\"launches\": %ld, \"repeat\": %ld, \"small_ns_per_launch\": %.1f, "
               "\"large_ns_per_launch\": %.1f}\n",
               launches, repeat, median[0], median[1]);
    else
        for (int k = 0; k < 2; k++)
            printf("  cuLaunchKernel, empty kernel, %-20s %8.1f ns per launch (host, median of "
                   "%ld runs of %ld)\n",
                   names[k], median[k], repeat, launches);
    api.cuStreamDestroy(stream);
    api.cuModuleUnload(mod);
    api.cuDevicePrimaryCtxRelease(dev);
    return 0;
}
