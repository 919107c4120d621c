/* gpu: op "sdpa" (fused attention, kernels/sdpa.cu) for f32, f16 and bf16.
 *
 * While fast paths are on (NVIDIA, BP_GPU_PORTABLE_KERNELS unset), f16 and bf16 with
 * head dim 64 or 128 whose q, k, v and out rows are contiguous and 16-byte aligned take
 * the flash kernel (tensor cores, NVIDIA-only); everything else the generic kernel
 * (portable), which reads any strides and head dim. Both work in groups of 32 lanes
 * whatever the device's warp size (a warp on NVIDIA, half a wavefront of 64 on CDNA:
 * kernels/sdpa_generic.cuh), so blocks and grids do not depend on it. Both walk only
 * the keys the causal and window masks leave visible; the score order and masks are
 * those of ops/sdpa.c. */
#include <math.h>
#include <stdint.h>

#include "gpu_internal.h"
#include "sdpa_args.h"

/* Sizes the kernels index with 32-bit ints (positions, offsets of a tile past them). */
#define SDPA_MAX_EXTENT (INT32_MAX / 2)

/* [f16, bf16][d 64, d 128] */
static const gpu_kernel_id flash_kernels[2][2] = {
    {GPU_K_sdpa_flash_f16_d64, GPU_K_sdpa_flash_f16_d128},
    {GPU_K_sdpa_flash_bf16_d64, GPU_K_sdpa_flash_bf16_d128},
};

/* [f32, f16, bf16][32 * 2, 32 * 4, 32 * 8 output dims per block] */
static const gpu_kernel_id generic_kernels[3][3] = {
    {GPU_K_sdpa_generic_f32_v2, GPU_K_sdpa_generic_f32_v4, GPU_K_sdpa_generic_f32_v8},
    {GPU_K_sdpa_generic_f16_v2, GPU_K_sdpa_generic_f16_v4, GPU_K_sdpa_generic_f16_v8},
    {GPU_K_sdpa_generic_bf16_v2, GPU_K_sdpa_generic_bf16_v4, GPU_K_sdpa_generic_bf16_v8},
};

/* Whether the flash kernel can copy t's rows 16 bytes at a time: elements contiguous,
 * every row 16-byte aligned (2-byte elements). The stride of a dim of size 1 is never
 * used. */
static bool rows_aligned(const bp_tensor_desc *t) {
    if ((uintptr_t)t->data % 16 != 0 || t->strides[3] != 1)
        return false;
    for (int d = 0; d < 3; d++)
        if (t->shape[d] > 1 && t->strides[d] % 8 != 0)
            return false;
    return true;
}

static void copy_strides(int64_t dst[4], const bp_tensor_desc *t) {
    for (int d = 0; d < 4; d++)
        dst[d] = t->strides[d];
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bp_status sdpa(const bp_kernel_call *call) {
    gpu_device *dev = call->device;
    const bp_tensor_desc *q = call->inputs[0], *k = call->inputs[1], *v = call->inputs[2];
    const bp_tensor_desc *o = call->outputs[0];
    const bp_sdpa_attrs none = {0}, *at = call->attrs ? call->attrs : &none;
    int64_t batch = q->shape[0], heads = q->shape[1], sq = q->shape[2], d = q->shape[3];
    int64_t sk = k->shape[2];
    if (batch == 0 || heads == 0 || sq == 0 || d == 0)
        return BP_OK;
    if (batch > SDPA_MAX_EXTENT || heads > SDPA_MAX_EXTENT || sq > SDPA_MAX_EXTENT ||
        sk > SDPA_MAX_EXTENT || d > SDPA_MAX_EXTENT)
        return gpu_error(dev, BP_ERR_UNSUPPORTED,
                         "sdpa: q [%lld, %lld, %lld, %lld] with %lld keys is too large (each "
                         "size must be below 2^30)",
                         (long long)batch, (long long)heads, (long long)sq, (long long)d,
                         (long long)sk);

    gpu_sdpa_args a = {.q = q->data, .k = k->data, .v = v->data, .o = o->data};
    copy_strides(a.q_st, q);
    copy_strides(a.k_st, k);
    copy_strides(a.v_st, v);
    copy_strides(a.o_st, o);
    a.batch = (int32_t)batch;
    a.heads = (int32_t)heads;
    a.group = (int32_t)(heads / k->shape[1]);
    a.sq = (int32_t)sq;
    a.sk = (int32_t)sk;
    a.d = (int32_t)d;
    a.scale = at->scale != 0.0f ? at->scale : (float)(1.0 / sqrt((double)d));
    a.softcap = at->softcap > 0.0f ? at->softcap : 0.0f;
    a.inv_softcap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    a.causal = at->causal != 0;
    a.window = at->window > 0 ? at->window : 0;
    if (at->has_alibi && call->n_inputs > 3) {
        a.alibi = call->inputs[3]->data;
        a.alibi_stride = call->inputs[3]->strides[0];
    }

    bp_dtype dt = call->dtype;
    bool half = dt == BP_DTYPE_F16 || dt == BP_DTYPE_BF16;
    bool flash = dev->fast_paths && half && (d == 64 || d == 128) && rows_aligned(q) &&
                 rows_aligned(k) && rows_aligned(v) && rows_aligned(o) &&
                 GPU_SDPA_FLASH_SMEM(d) <= dev->info.max_smem_optin;
    gpu_kernel_id kernel;
    int64_t blocks;
    unsigned threads, smem;
    if (flash) {
        kernel = flash_kernels[dt == BP_DTYPE_BF16][d == 128];
        blocks = batch * heads * ceil_div(sq, GPU_SDPA_FLASH_ROWS);
        threads = GPU_SDPA_FLASH_WARPS * 32;
        smem = (unsigned)GPU_SDPA_FLASH_SMEM(d);
    } else {
        int vec = d <= 64 ? 2 : d <= 128 ? 4 : 8;
        if (vec == 8 && GPU_SDPA_GENERIC_SMEM(8) > dev->info.max_smem_optin)
            vec = 4; /* AMD's 64 KiB of LDS: more chunks of 128 dims */
        kernel = generic_kernels[dt == BP_DTYPE_F32 ? 0 : dt == BP_DTYPE_F16 ? 1 : 2]
                                [vec == 2 ? 0 : vec == 4 ? 1 : 2];
        blocks = batch * heads * ceil_div(sq, GPU_SDPA_GENERIC_ROWS) * ceil_div(d, 32 * vec);
        threads = GPU_SDPA_GENERIC_WARPS * 32;
        smem = (unsigned)GPU_SDPA_GENERIC_SMEM(vec);
    }
    if (blocks > INT32_MAX)
        return gpu_error(dev, BP_ERR_UNSUPPORTED,
                         "sdpa: %lld thread blocks are more than one launch takes (2^31 - 1)",
                         (long long)blocks);
    unsigned grid[3] = {(unsigned)blocks, 1, 1}, block[3] = {threads, 1, 1};
    void *params[] = {&a};
    return gpu_launch(call->stream, kernel, grid, block, smem, params, "sdpa");
}

#define SDPA_DTYPES \
    (BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_F16) | BP_DTYPE_BIT(BP_DTYPE_BF16))

const gpu_op_entry gpu_ops_sdpa[] = {
    {"sdpa", sdpa, SDPA_DTYPES},
    {NULL, NULL, 0},
};
