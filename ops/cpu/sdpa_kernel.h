/* What the cpu sdpa paths share (ops/cpu/sdpa.c, the generic kernels, and
 * ops/cpu/sdpa_avx512.c, sdpa_avx512bf16.c and sdpa_amx.c, the x86-64 ones): the job a
 * call is cut into, the block sizes, the out-of-memory path, and the choice of path
 * (BP_CPU_SDPA). */
#ifndef BP_CPU_SDPA_KERNEL_H
#define BP_CPU_SDPA_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "ops_internal.h"

/* Query rows and key rows of one block. */
enum { SDPA_BQ = 64, SDPA_BK = 64 };

typedef struct sdpa_job {
    bp_dtype dt;
    size_t esize;
    const char *q, *k, *v;
    char *o;
    const float *alibi;
    int64_t alibi_stride;
    int64_t heads, group, sq, sk, d;
    int64_t qs[4], ks[4], vs[4], os[4];
    float scale, softcap;
    int causal;
    int64_t window;
    int64_t qblocks;
} sdpa_job;

/* The paths BP_CPU_SDPA selects. */
typedef enum sdpa_path {
    SDPA_PATH_GENERIC,
    SDPA_PATH_AVX512,     /* f32 math in 16-lane AVX-512 tiles, every dtype */
    SDPA_PATH_AVX512BF16, /* bf16 inputs: both products with VDPBF16PS, P in bf16 */
    SDPA_PATH_AMX,        /* bf16 inputs: both products on AMX tiles, P in bf16 */
} sdpa_path;

/* The path for dtype dt: BP_CPU_SDPA (read once; a bad value or an ISA the CPU lacks
 * is a warning and auto) narrowed to what dt can use (amx and avx512bf16 are for bf16
 * only; f32 and f16 take avx512 instead). */
BP_INTERNAL sdpa_path bp_cpu_sdpa_path(bp_dtype dt);

/* A chunk of tasks whose scratch could not be allocated: a log line, NaN outputs. */
BP_INTERNAL void bp_cpu_sdpa_out_of_memory(const sdpa_job *j, size_t bytes, int64_t begin,
                                           int64_t end);

#if defined(__x86_64__)
/* bp_parallel_for bodies over tasks begin .. end - 1 (ctx: the sdpa_job). */
BP_INTERNAL void bp_cpu_sdpa_range_avx512(void *ctx, int64_t begin, int64_t end);
BP_INTERNAL void bp_cpu_sdpa_range_avx512bf16(void *ctx, int64_t begin, int64_t end);
BP_INTERNAL void bp_cpu_sdpa_range_amx(void *ctx, int64_t begin, int64_t end);
#endif

#endif
