/* gpu kernels: the argument block of the sdpa kernels (kernels/sdpa.cu), passed by value
 * and filled by the host's sdpa op, and the tile sizes both sides need for grids and shared
 * memory. Plain C so that nvcc, hipcc and the C compiler agree on its layout.
 *
 * q is [batch, heads, sq, d], k and v [batch, heads / group, sk, d], o like q; every
 * stride is in elements (any order, 0 for a broadcast dim). Query head h reads key
 * head h / group. Scores are built as ops/sdpa.c says: q.k * scale, softcap, ALiBi,
 * then the causal and window masks. */
#ifndef GPU_KERNELS_SDPA_ARGS_H
#define GPU_KERNELS_SDPA_ARGS_H

#include <stdint.h>

typedef struct gpu_sdpa_args {
    const void *q, *k, *v;
    void *o;
    const float *alibi;       /* per-head slopes, or NULL */
    int64_t alibi_stride;
    int64_t q_st[4], k_st[4], v_st[4], o_st[4]; /* strides of q, k, v and o */
    int32_t batch, heads, group, sq, sk, d;
    float scale;              /* never 0 */
    float softcap;            /* 0: off */
    float inv_softcap;        /* 1 / softcap (0 when off), as the CPU kernel rounds it */
    int32_t causal;           /* 0 or 1 */
    int32_t window;           /* 0: off */
    int32_t pad;
} gpu_sdpa_args;

/* The flash kernels (f16 and bf16, d of 64 or 128, rows of stride 1 and 16-byte
 * aligned): a block of GPU_SDPA_FLASH_WARPS warps takes GPU_SDPA_FLASH_ROWS query rows
 * and walks the keys in tiles of GPU_SDPA_FLASH_KEYS(d), double-buffered. */
#define GPU_SDPA_FLASH_WARPS 4
#define GPU_SDPA_FLASH_ROWS 128
#define GPU_SDPA_FLASH_KEYS(d) ((d) == 64 ? 128 : 64)
/* Dynamic shared memory: the query rows and two tiles of keys and values (2 bytes each). */
#define GPU_SDPA_FLASH_SMEM(d) ((GPU_SDPA_FLASH_ROWS + 4 * GPU_SDPA_FLASH_KEYS(d)) * (d) * 2)

/* The generic kernels (any dtype, d and strides): a block of GPU_SDPA_GENERIC_WARPS
 * groups of 32 lanes ("warps"; GPU_SDPA_GENERIC_WARPS * 32 threads on every device, half
 * wavefronts on CDNA) takes GPU_SDPA_GENERIC_ROWS query rows and the output dims
 * [c * w, (c + 1) * w) for one chunk c, with w = 32 * vec the dims one kernel holds
 * (vec = 2, 4 or 8); keys come in blocks of 32. Host: vec 8 takes
 * GPU_SDPA_GENERIC_SMEM(8) = 85 KB of shared memory, more than AMD's 64 KiB of LDS; where
 * the device's limit is lower, take vec 4 (more chunks: any number works). */
#define GPU_SDPA_GENERIC_WARPS 4
#define GPU_SDPA_GENERIC_ROWS 16
#define GPU_SDPA_GENERIC_KEYS 32
/* Dynamic shared memory (f32): a chunk of the rows' queries, the block's keys (transposed,
 * padded) and values over 32 * vec dims, and the rows' probabilities. */
#define GPU_SDPA_GENERIC_SMEM(vec)                                                             \
    ((GPU_SDPA_GENERIC_ROWS * 32 * (vec) + 32 * (vec) * (GPU_SDPA_GENERIC_KEYS + 1) +           \
      GPU_SDPA_GENERIC_KEYS * 32 * (vec) + GPU_SDPA_GENERIC_ROWS * GPU_SDPA_GENERIC_KEYS) * 4)

#endif
