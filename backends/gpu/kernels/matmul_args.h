/* gpu kernels: the argument block of the matmul kernels (kernels/matmul.cu), passed by
 * value and filled by the host's matmul op. Plain C so that nvcc, hipcc and the C
 * compiler agree on its layout.
 *
 * The kernels compute c[t] = a[t] @ b[t] for batch items t in [item_begin, items):
 * a is m x k, b is k x n, c is m x n, each with any element strides (a transpose is
 * just swapped strides). Item t is split over the batch dims, innermost last, and
 * each operand moves by its own stride per batch dim (0 for a broadcast one). */
#ifndef GPU_KERNELS_MATMUL_ARGS_H
#define GPU_KERNELS_MATMUL_ARGS_H

#include <stdint.h>

/* Batch dims a kernel takes: all but the last two of the largest tensor. */
#define GPU_MATMUL_MAX_BATCH_DIMS 6

/* How the mma kernels read an operand's tiles from global memory (the simt kernels tell
 * only ROW_FAST from the rest). Each operand is seen as `rows` x k: a is m x k, b is n x k. */
enum gpu_matmul_load {
    GPU_MATMUL_LOAD_VEC16 = 0,    /* k stride 1, 16-byte aligned rows: 16-byte loads */
    GPU_MATMUL_LOAD_K_FAST = 1,   /* element loads, neighbouring threads along k */
    GPU_MATMUL_LOAD_ROW_FAST = 2, /* element loads, neighbouring threads along rows */
};

typedef struct gpu_matmul_args {
    const void *a;
    const void *b;
    void *c;
    int64_t m, n, k;
    int64_t sam, sak; /* a's strides along m and k */
    int64_t sbk, sbn; /* b's strides along k and n */
    int64_t scm, scn; /* c's strides along m and n */
    int64_t item_begin, items;
    int32_t load_a, load_b; /* gpu_matmul_load */
    int32_t nbatch;
    int32_t unused;
    int64_t bshape[GPU_MATMUL_MAX_BATCH_DIMS];
    int64_t bsa[GPU_MATMUL_MAX_BATCH_DIMS], bsb[GPU_MATMUL_MAX_BATCH_DIMS],
        bsc[GPU_MATMUL_MAX_BATCH_DIMS];
} gpu_matmul_args;

/* Output tile of one thread block, and the threads per block, of each kernel: SIMT for
 * matmul_<t>_simt (f32, f16, bf16; portable), MMA for matmul_<t>_mma (NVIDIA only). */
#define GPU_MATMUL_SIMT_TILE 64
#define GPU_MATMUL_SIMT_THREADS 256
#define GPU_MATMUL_MMA_TILE 64
#define GPU_MATMUL_MMA_THREADS 128

#endif
