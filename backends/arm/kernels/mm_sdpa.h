/* One sdpa call as the sdpa family's variants see it (sdpa.c: the flash driver and the
 * f32 register-tile products; sdpa_bf16.c: the BFMMLA products). */
#ifndef BP_ARM_MM_SDPA_H
#define BP_ARM_MM_SDPA_H

#include <stdbool.h>
#include <stdint.h>

#include "mm_common.h"

/* Query rows per task, keys per block, the chunk of D a score product takes, the chunk
 * of D an output pass computes. */
enum { BQ = 32, BK = 32, DQ = 64, DO = 128 };

/* A task's buffers (on its stack, 53 KiB); the products' operands as f32, or packed as
 * bf16 by the BFMMLA variant. */
typedef struct sdpa_work {
    union { float f[BQ * DQ]; uint16_t h[BQ * DQ]; } q;   /* queries, a DQ chunk of D */
    union { float f[DQ * BK]; uint16_t h[DQ * BK]; } k;   /* keys of the block, a DQ chunk */
    float s[BQ * BK];                                     /* scores, then probabilities */
    union { float f[BK * DO]; uint16_t h[BK * DO]; } v;   /* values of the block, a DO chunk */
    float o[BQ * DO];  /* output accumulator: [BQ][DO] */
    float m[BQ], l[BQ], corr[BQ]; /* running max, running sum, this block's rescale */
} sdpa_work;

typedef struct sdpa_job sdpa_job;

/* s[BQ][BK] = scale q k^T for query rows i0 .. i0 + bq - 1 of the task's head (q at
 * its first row) and keys j0 .. j0 + bk - 1 (k at its first key); rows from bq up to
 * the job's row_pad and columns from bk to BK are finite (never read). */
typedef void (*sdpa_scores_fn)(const sdpa_job *j, sdpa_work *w, const char *q, const char *k,
                               int64_t i0, int64_t bq, int64_t j0, int64_t bk);

/* o[BQ][DO] += p v for the bq rows of s (probabilities), keys j0 .. j0 + bk - 1 of v (at
 * its first key and the chunk's first column) and the chunk's xc columns. */
typedef void (*sdpa_pv_fn)(const sdpa_job *j, sdpa_work *w, const char *v, int64_t j0,
                           int64_t bk, int64_t bq, int64_t xc);

struct sdpa_job {
    bp_dtype dt;
    size_t esize;
    const char *q, *k, *v;
    char *o;
    const float *alibi;
    int64_t alibi_stride;
    int64_t heads, group, sq, sk, d;
    int64_t qs[4], ks[4], vs[4], os[4];
    float scale, softcap;
    bool causal;
    int64_t window;
    int64_t qblocks;
    int64_t row_pad;       /* the products take query rows in multiples of this */
    mm_tile tile;          /* the f32 products' register tile */
    sdpa_scores_fn scores;
    sdpa_pv_fn pv;
};

/* Runs the call with the products of `j` (row_pad, tile, scores, pv set; the rest is
 * filled from the call here). */
void sdpa_run(const bp_kernel_call *call, const arm_exec *ex, sdpa_job *j);

/* bf16 with BFMMLA (sdpa_bf16.c): run only with arm_features.bf16. */
void sdpa_bfmmla(const bp_kernel_call *call, const arm_exec *ex);

#endif
