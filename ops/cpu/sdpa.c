/* cpu kernels of op "sdpa": fused attention for f32, f16 and bf16.
 *
 * FlashAttention's forward pass with online softmax (ops/cpu/sdpa_flash.h), one task
 * per (batch, head, block of 64 query rows), spread over bp_parallel_for. The paths
 * (BP_CPU_SDPA, sdpa_kernel.h):
 *   generic     8-lane GNU C vectors, 4 x 16 f32 register tiles, with an AVX2+FMA
 *               clone on x86-64 (this file; the only path elsewhere);
 *   avx512      16-lane AVX-512 vectors, 8 x 32 f32 tiles (ops/cpu/sdpa_avx512.c);
 *   avx512bf16  bf16 inputs kept in bf16, both products with VDPBF16PS, P rounded to
 *               bf16 for P V, f32 accumulation (ops/cpu/sdpa_avx512bf16.c);
 *   amx         as avx512bf16, the products on AMX tiles (ops/cpu/sdpa_amx.c); Linux
 *               must grant the process the tile data first (arch_prctl, once).
 * auto takes the first the CPU has from amx down. f16 and bf16 without avx512bf16 (or
 * amx) are converted to f32 block by block. See ops/sdpa.c for the score order. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ops_internal.h"
#include "simd.h"

#define VL 8
#define VF vf8
#define VI vi8
#define VSPLAT SPLAT
#define VLANES ((vi8){0, 1, 2, 3, 4, 5, 6, 7})
#define MR TILE_MR
#define NR TILE_NR
#define TILE tile_4x16
#define TASK_ATTR SIMD_CLONES
#include "sdpa_flash.h"

static sdpa_path chosen_path = SDPA_PATH_GENERIC;
static pthread_once_t path_once = PTHREAD_ONCE_INIT;

/* cpu_lacks's answer for a CPU without the path's instructions. */
static const char LACKS[] = "this CPU lacks the instructions";

#if defined(__x86_64__)
/* Linux's arch_prctl request for an extended state component, and AMX's tile data. */
enum { REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

/* Asks Linux, once per process, to give every thread's saved state room for the AMX
 * tile data (without it the first tile instruction kills the process). NULL when
 * granted, else why not. Called under path_once. */
static const char *amx_refused(void) {
    static bool asked;
    static char why[96];
    if (!asked) {
        asked = true;
        if (syscall(SYS_arch_prctl, REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
            snprintf(why, sizeof why, "Linux refused the AMX tile data (arch_prctl: %s)",
                     strerror(errno));
    }
    return why[0] ? why : NULL;
}

/* Why this CPU cannot run path, or NULL. */
static const char *cpu_lacks(sdpa_path path) {
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("fma");
    bool avx512bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    switch (path) {
    case SDPA_PATH_AMX:
        if (!avx512bf16 || !__builtin_cpu_supports("amx-tile") ||
            !__builtin_cpu_supports("amx-bf16"))
            return LACKS;
        return amx_refused();
    case SDPA_PATH_AVX512BF16:
        return avx512bf16 ? NULL : LACKS;
    case SDPA_PATH_AVX512:
        return avx512 ? NULL : LACKS;
    default:
        return NULL;
    }
}
#else
static const char *cpu_lacks(sdpa_path path) {
    return path == SDPA_PATH_GENERIC ? NULL : LACKS;
}
#endif

/* BP_CPU_SDPA, read once; secure_getenv, as it chooses code. */
static void read_path(void) {
    static const char *const names[] = {"generic", "avx512", "avx512bf16", "amx"};
    const int n_paths = sizeof names / sizeof names[0];
    const char *value = secure_getenv("BP_CPU_SDPA");
    int asked = -1; /* -1: auto */
    bool warned = false;
    if (value && *value && strcmp(value, "auto") != 0) {
        for (int p = 0; p < n_paths; p++)
            if (strcmp(value, names[p]) == 0)
                asked = p;
        const char *why = asked >= 0 ? cpu_lacks((sdpa_path)asked) : NULL;
        if (asked < 0)
            bp_log(BP_LOG_WARN, "sdpa", "BP_CPU_SDPA='%s' is not one of auto, amx, avx512bf16, "
                   "avx512, generic; using auto", value);
        else if (why) {
            bp_log(BP_LOG_WARN, "sdpa", "BP_CPU_SDPA=%s: %s; using auto", value, why);
            asked = -1;
            warned = true;
        }
    }
    if (asked >= 0) {
        chosen_path = (sdpa_path)asked;
    } else {
        /* auto: the first the CPU has, from the last name down. */
        chosen_path = SDPA_PATH_GENERIC;
        for (int p = n_paths - 1; p > 0 && chosen_path == SDPA_PATH_GENERIC; p--)
            if (!cpu_lacks((sdpa_path)p))
                chosen_path = (sdpa_path)p;
        /* A CPU with AMX whose kernel refused the tile data (Linux before 5.16): the
         * environment, not a mistake of the user's, so auto says why at info level, as
         * it says which path it took (unless the warning above said it already). */
        const char *amx_why = cpu_lacks(SDPA_PATH_AMX);
        if (!warned && amx_why && amx_why != LACKS) {
            bp_log(BP_LOG_INFO, "sdpa", "cpu sdpa path: %s (%s)", names[chosen_path], amx_why);
            return;
        }
    }
    bp_log(BP_LOG_INFO, "sdpa", "cpu sdpa path: %s", names[chosen_path]);
}

sdpa_path bp_cpu_sdpa_path(bp_dtype dt) {
    pthread_once(&path_once, read_path);
    if ((chosen_path == SDPA_PATH_AMX || chosen_path == SDPA_PATH_AVX512BF16) &&
        dt != BP_DTYPE_BF16)
        return SDPA_PATH_AVX512;
    return chosen_path;
}

void bp_cpu_sdpa_out_of_memory(const sdpa_job *j, size_t bytes, int64_t begin, int64_t end) {
    /* Nothing here can report an error; NaN outputs and a log line say it failed. */
    bp_log(BP_LOG_ERROR, "sdpa", "cpu kernel: no memory for %zu bytes of scratch; the output "
           "of %lld tasks is NaN", bytes, (long long)(end - begin));
    float nan_row[16];
    for (int c = 0; c < 16; c++)
        nan_row[c] = NAN;
    for (int64_t t = begin; t < end; t++) {
        int64_t qb = t % j->qblocks, bh = t / j->qblocks;
        int64_t b = bh / j->heads, h = bh % j->heads;
        char *o = j->o + (size_t)(b * j->os[0] + h * j->os[1]) * j->esize;
        for (int64_t r = qb * BQ; r < j->sq && r < (qb + 1) * BQ; r++)
            for (int64_t c = 0; c < j->d; c += 16)
                bp_store_f32(o + (size_t)(r * j->os[2] + c * j->os[3]) * j->esize, j->dt,
                             j->os[3], nan_row, j->d - c < 16 ? j->d - c : 16);
    }
}

static void range_generic(void *ctx, int64_t begin, int64_t end) {
    sdpa_range_f32(ctx, begin, end);
}

static void sdpa(const bp_kernel_call *call) {
    const bp_tensor_desc *q = call->inputs[0], *k = call->inputs[1], *v = call->inputs[2];
    const bp_tensor_desc *o = call->outputs[0];
    const bp_sdpa_attrs *a = call->attrs;
    sdpa_job j = {.dt = o->dtype, .esize = bp_dtype_size(o->dtype), .q = q->data, .k = k->data,
                  .v = v->data, .o = o->data};
    j.heads = q->shape[1];
    j.sq = q->shape[2];
    j.sk = k->shape[2];
    j.d = q->shape[3];
    if (q->shape[0] == 0 || j.heads == 0 || j.sq == 0 || j.d == 0)
        return;
    j.group = j.heads / k->shape[1];
    for (int x = 0; x < 4; x++) {
        j.qs[x] = q->strides[x];
        j.ks[x] = k->strides[x];
        j.vs[x] = v->strides[x];
        j.os[x] = o->strides[x];
    }
    j.scale = a->scale;
    j.softcap = a->softcap;
    j.causal = a->causal;
    j.window = a->window;
    if (a->has_alibi && call->n_inputs > 3) {
        j.alibi = call->inputs[3]->data;
        j.alibi_stride = call->inputs[3]->strides[0];
    }
    j.qblocks = (j.sq + BQ - 1) / BQ;
    void (*range)(void *, int64_t, int64_t) = range_generic;
    /* Read on every CPU: BP_CPU_SDPA=avx512 where there is none is a warning too. */
    sdpa_path path = bp_cpu_sdpa_path(j.dt);
#if defined(__x86_64__)
    switch (path) {
    case SDPA_PATH_AMX:
        range = bp_cpu_sdpa_range_amx;
        break;
    case SDPA_PATH_AVX512BF16:
        range = bp_cpu_sdpa_range_avx512bf16;
        break;
    case SDPA_PATH_AVX512:
        range = bp_cpu_sdpa_range_avx512;
        break;
    default:
        break;
    }
#else
    (void)path;
#endif
    bp_parallel_for(q->shape[0] * j.heads * j.qblocks, 1, range, &j);
}

void bp_cpu_sdpa_f32(const bp_kernel_call *call) { sdpa(call); }
void bp_cpu_sdpa_f16(const bp_kernel_call *call) { sdpa(call); }
void bp_cpu_sdpa_bf16(const bp_kernel_call *call) { sdpa(call); }
