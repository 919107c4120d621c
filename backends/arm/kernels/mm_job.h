/* One matmul call as the matmul family's engines see it (matmul.c, matmul_blas.c). */
#ifndef BP_ARM_MM_JOB_H
#define BP_ARM_MM_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <backplane/op_attrs.h>

#include "cpukit_matmul.h"
#include "mm_common.h"

/* Output tiles: MC x NC elements of out per task. */
enum { MC = 32, NC = 64 };

typedef struct mm_job mm_job;

/* Computes output tile (mt, nt) of batch item t. */
typedef void (*mm_block_fn)(const mm_job *j, int64_t t, int64_t mt, int64_t nt);

struct mm_job {
    bp_dtype dt;
    size_t esize;
    const char *a, *b;
    char *c;
    cpukit_mm_geometry g;                 /* sizes, strides after the transposes, batch dims */
    mm_tile tile;                         /* the blocked kernel's register tile */
    mm_block_fn block;                    /* what computes a tile */
};

/* Fills j from the call (tile and block left empty); false when out is empty (nothing
 * to do). */
bool mm_job_of(const bp_kernel_call *call, mm_job *j);

/* Runs j->block over every output tile of the call, spread over the cluster. */
void mm_run_tiles(const mm_job *j, const arm_exec *ex);

/* The blocked f32 kernel with register tile `tile` over the whole call (K = 0 writes
 * zeros). */
void mm_run_blocked(mm_job *j, mm_tile tile, const arm_exec *ex);

/* bf16 with BFMMLA (matmul_bf16.c): run only with arm_features.bf16. */
void mm_matmul_bfmmla(const bp_kernel_call *call, const arm_exec *ex);

/* Makes *k, the f32 registration, the "openblas" one unless BP_BLAS turns BLAS off
 * (matmul_blas.c). */
void mm_blas_variant(const arm_features *f, arm_kernel *k);

#endif
