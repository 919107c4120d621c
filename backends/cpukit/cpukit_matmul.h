/* The geometry of a matmul call as the CPU-class backends' kernels walk it (the cpu
 * backend's ops/cpu/matmul.c, the arm plugin's kernels): the matrix sizes and element
 * strides after trans_a/trans_b, the batch dims with broadcast operands at stride 0,
 * and how a row-major CBLAS can read a strided matrix. Public headers only. */
#ifndef BP_CPUKIT_MATMUL_H
#define BP_CPUKIT_MATMUL_H

#include <stdbool.h>
#include <stdint.h>
#include <backplane/plugin.h>

typedef struct cpukit_mm_geometry {
    int64_t m, n, k;
    int64_t sam, sak, sbk, sbn, scm, scn; /* element strides after the transposes */
    int nbatch;                           /* batch dims (those of the output) */
    int64_t bshape[BP_KERNEL_MAX_DIMS];
    int64_t bsa[BP_KERNEL_MAX_DIMS], bsb[BP_KERNEL_MAX_DIMS], bsc[BP_KERNEL_MAX_DIMS];
    int64_t items;                        /* product of bshape */
} cpukit_mm_geometry;

/* Fills *g from a matmul call (inputs a, b; output c; bp_matmul_attrs or NULL). Returns
 * false when the output has no elements (nothing to do). */
bool cpukit_mm_geometry_of(const bp_kernel_call *call, cpukit_mm_geometry *g);

/* Byte offsets of batch item t (0 .. items - 1) in a, b and c, elements of esize bytes. */
void cpukit_mm_item_offsets(const cpukit_mm_geometry *g, int64_t t, size_t esize, size_t *oa,
                            size_t *ob, size_t *oc);

/* How a row-major CBLAS reads a rows x cols matrix with element strides (rs, cs): as
 * it is (cs = 1) or transposed (rs = 1), with a leading dim at least the row; ok is
 * false when neither fits (or the leading dim exceeds an int). */
typedef struct cpukit_blas_view {
    bool ok;
    int trans; /* CPUKIT_CBLAS_NO_TRANS or CPUKIT_CBLAS_TRANS (cpukit_blas.h) */
    int ld;
} cpukit_blas_view;

cpukit_blas_view cpukit_blas_view_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs);

/* The other CBLAS transpose flag (to compute C^T = B^T A^T for a column-major C). */
int cpukit_blas_flipped(int trans);

#endif
