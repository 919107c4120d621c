/* gpu kernels: the generic kernel of sdpa (any dtype, head dim and strides; portable),
 * included by sdpa.cu.
 *
 * Lanes: the kernel works in groups of LANES = 32 lanes ("warps" below), whatever the hardware's
 * warp size: a whole warp on NVIDIA, half a wavefront of 64 on CDNA. The group's
 * reductions are shuffles of width 32 (gpu_shfl_xor), and its shared memory handoff is
 * gpu_syncwarp, which orders the whole hardware warp. Host: the block is
 * GPU_SDPA_GENERIC_WARPS * 32 threads (a multiple of 64) on every device, and the grid
 * does not depend on the warp size.
 *
 * A block of WARPS warps takes ROWS query rows of one (batch, head), each warp RPW of
 * them, and one chunk of DC = 32 * VEC output dims (head dims past DC take several
 * chunks, i.e. blocks, each computing the scores again). The keys some row may see are
 * walked in blocks of 32, staged in shared memory as f32 with the values of the chunk:
 * lane l of a warp scores key j0 + l against each of the warp's rows (the dot product
 * over the head dim in pieces of DC), the warp takes each row's max and sum with
 * shuffles (online softmax in f32), and lane l then accumulates output dims
 * l, l + 32, ... of the chunk over the block's probabilities. Score order and masks as
 * ops/sdpa.c; a row that sees no key is 0. */
#ifndef GPU_KERNELS_SDPA_GENERIC_CUH
#define GPU_KERNELS_SDPA_GENERIC_CUH

#include "gpu_port.h"

#include "sdpa_args.h"

namespace sdpa_generic {

static __device__ __forceinline__ float to_f32(float x) { return x; }
static __device__ __forceinline__ float to_f32(gpu_f16 x) { return gpu_to_f32(x); }
static __device__ __forceinline__ float to_f32(gpu_bf16 x) { return gpu_to_f32(x); }

template <typename T> static __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ gpu_f16 from_f32<gpu_f16>(float x) {
    return gpu_f32_to_f16_rn(x);
}
template <> __device__ __forceinline__ gpu_bf16 from_f32<gpu_bf16>(float x) {
    return gpu_f32_to_bf16_rn(x);
}

/* A group of LANES lanes: one per key of a block of keys. */
constexpr int LANES = GPU_SDPA_GENERIC_KEYS;
static_assert(LANES == 32 && GPU_WARP % LANES == 0, "groups of 32 lanes, whole in a warp");

/* The group's max and sum. */

static __device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int m = LANES / 2; m > 0; m /= 2)
        x = fmaxf(x, gpu_shfl_xor(x, m, LANES));
    return x;
}

static __device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int m = LANES / 2; m > 0; m /= 2)
        x += gpu_shfl_xor(x, m, LANES);
    return x;
}

/* Stages a ROWS x COLS tile as f32: element (r, x) = src[r * rs + x * xs] for r < nr and
 * x < nx (nr, nx >= 1), else 0, goes to dst[r * drs + x * dxs]. Each thread issues 8
 * loads (elements outside read element (0, 0)) before it converts and stores them. */
template <int ROWS, int COLS, int THREADS, typename T>
static __device__ __forceinline__ void stage(float *dst, int drs, int dxs, const T *src,
                                             int64_t rs, int64_t xs, int nr, int nx) {
    constexpr int PER_THREAD = ROWS * COLS / THREADS, BATCH = 8;
    static_assert(PER_THREAD % BATCH == 0, "whole batches");
#pragma unroll 1
    for (int b = 0; b < PER_THREAD; b += BATCH) {
        T raw[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; u++) {
            const int e = (b + u) * THREADS + (int)threadIdx.x, r = e / COLS, x = e % COLS;
            raw[u] = src[r < nr && x < nx ? r * rs + x * xs : 0];
        }
#pragma unroll
        for (int u = 0; u < BATCH; u++) {
            const int e = (b + u) * THREADS + (int)threadIdx.x, r = e / COLS, x = e % COLS;
            dst[r * drs + x * dxs] = r < nr && x < nx ? to_f32(raw[u]) : 0.0f;
        }
    }
}

template <typename T, int VEC>
static __device__ __forceinline__ void attention(const gpu_sdpa_args &a, float *smem) {
    constexpr int WARPS = GPU_SDPA_GENERIC_WARPS, THREADS = WARPS * LANES;
    constexpr int ROWS = GPU_SDPA_GENERIC_ROWS, RPW = ROWS / WARPS;
    constexpr int KB = GPU_SDPA_GENERIC_KEYS, DC = LANES * VEC;
    static_assert(KB == LANES && ROWS % WARPS == 0, "a lane per key, whole rows per warp");
    static_assert(THREADS % GPU_WARP == 0, "whole hardware warps");
    /* Read along their rows as float4 broadcasts (qs, ps) or a word per lane (ks, vs). */
    float *qs = smem;                 /* [ROWS][DC]     queries, one piece of the head dim */
    float *ks = qs + ROWS * DC;       /* [DC][KB + 1]   keys of the same piece, transposed */
    float *vs = ks + DC * (KB + 1);   /* [KB][DC]       values, the block's output dims */
    float *ps = vs + KB * DC;         /* [ROWS][KB]     probabilities */

    const int tid = (int)threadIdx.x, warp = tid / LANES, lane = tid % LANES;
    const int nqb = (a.sq + ROWS - 1) / ROWS, nchunks = (a.d + DC - 1) / DC;
    const int chunk = (int)(blockIdx.x % nchunks), rest = (int)(blockIdx.x / nchunks);
    const int qb = nqb - 1 - rest % nqb; /* the most keys first under causal */
    const int bh = rest / nqb, b = bh / a.heads, h = bh % a.heads, hk = h / a.group;
    const int m0 = qb * ROWS, v0 = chunk * DC, vn = min(DC, a.d - v0);
    const T *q = (const T *)a.q + b * a.q_st[0] + h * a.q_st[1];
    const T *k = (const T *)a.k + b * a.k_st[0] + hk * a.k_st[1];
    const T *v = (const T *)a.v + b * a.v_st[0] + hk * a.v_st[1];
    T *o = (T *)a.o + b * a.o_st[0] + h * a.o_st[1];

    /* Keys [lo, hi) are the ones some row of the block may see. */
    const int last = min(a.sq, m0 + ROWS) - 1;
    int lo = 0, hi = a.sk;
    if (a.causal)
        hi = min(hi, last + 1);
    if (a.window > 0)
        lo = max(lo, m0 - a.window + 1);

    const float slope = a.alibi ? a.alibi[h * a.alibi_stride] : 0.0f;
    float acc[RPW][VEC], row_max[RPW], row_sum[RPW];
#pragma unroll
    for (int r = 0; r < RPW; r++) {
        row_max[r] = -INFINITY;
        row_sum[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < VEC; c++)
            acc[r][c] = 0.0f;
    }

    for (int j0 = lo; j0 < hi; j0 += KB) {
        const int nk = min(KB, hi - j0);
        float dot[RPW];
#pragma unroll
        for (int r = 0; r < RPW; r++)
            dot[r] = 0.0f;
        for (int x0 = 0; x0 < a.d; x0 += DC) {
            const int xn = min(DC, a.d - x0);
            __syncthreads(); /* the previous piece or block is no longer read */
            if (x0 == 0)
                stage<KB, DC, THREADS>(vs, DC, 1, v + j0 * a.v_st[2] + v0 * a.v_st[3],
                                       a.v_st[2], a.v_st[3], nk, vn);
            if (j0 == lo || a.d > DC) /* one piece: the queries stay */
                stage<ROWS, DC, THREADS>(qs, DC, 1, q + m0 * a.q_st[2] + x0 * a.q_st[3],
                                         a.q_st[2], a.q_st[3], a.sq - m0, xn);
            stage<KB, DC, THREADS>(ks, 1, KB + 1, k + j0 * a.k_st[2] + x0 * a.k_st[3], a.k_st[2],
                                   a.k_st[3], nk, xn);
            __syncthreads();
            /* Dims past xn are zeros up to DC, a multiple of 4. */
            const float *kcol = ks + lane, *qrows = qs + warp * RPW * DC;
#pragma unroll 2
            for (int x = 0; x < xn; x += 4) {
                float kx[4];
#pragma unroll
                for (int u = 0; u < 4; u++)
                    kx[u] = kcol[(x + u) * (KB + 1)];
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    const float4 qx = *reinterpret_cast<const float4 *>(qrows + r * DC + x);
                    dot[r] += qx.x * kx[0] + qx.y * kx[1] + qx.z * kx[2] + qx.w * kx[3];
                }
            }
        }

        /* Lane = key j: its score for each row, and the online softmax of the rows. */
        const int j = j0 + lane;
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            const int i = m0 + warp * RPW + r;
            float s = dot[r] * a.scale;
            if (a.softcap > 0.0f)
                s = a.softcap * tanhf(s * a.inv_softcap);
            if (a.alibi)
                s -= slope * (float)(i - j);
            const bool seen = lane < nk && (!a.causal || j <= i) &&
                              (a.window <= 0 || j > i - a.window);
            if (!seen)
                s = -INFINITY;
            const float m_new = fmaxf(row_max[r], warp_max(s));
            /* While every score so far is -inf (or NaN, which the max leaves out)
             * subtract 0: a -inf score then weighs 0 and a NaN one poisons the row. */
            const float m_use = m_new == -INFINITY ? 0.0f : m_new;
            const float p = expf(s - m_use);
            const float corr = expf(row_max[r] - m_use); /* 0 while row_max is -inf */
            row_sum[r] = row_sum[r] * corr + warp_sum(p);
            row_max[r] = m_new;
#pragma unroll
            for (int c = 0; c < VEC; c++)
                acc[r][c] *= corr;
            ps[(warp * RPW + r) * KB + lane] = p;
        }
        gpu_syncwarp(); /* the warp's own rows of ps */
        /* Keys past nk have p = 0 and zero values, up to a multiple of 4. */
        const float *prows = ps + warp * RPW * KB;
#pragma unroll 2
        for (int c = 0; c < nk; c += 4) {
            float vx[4][VEC];
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int x = 0; x < VEC; x++)
                    vx[u][x] = vs[(c + u) * DC + lane + x * LANES];
#pragma unroll
            for (int r = 0; r < RPW; r++) {
                const float4 p = *reinterpret_cast<const float4 *>(prows + r * KB + c);
#pragma unroll
                for (int x = 0; x < VEC; x++)
                    acc[r][x] += p.x * vx[0][x] + p.y * vx[1][x] + p.z * vx[2][x] + p.w * vx[3][x];
            }
        }
    }

#pragma unroll
    for (int r = 0; r < RPW; r++) {
        const int i = m0 + warp * RPW + r;
        if (i >= a.sq)
            continue;
        const float inv = row_sum[r] > 0.0f ? __fdividef(1.0f, row_sum[r]) : 0.0f;
#pragma unroll
        for (int x = 0; x < VEC; x++)
            if (lane + x * LANES < vn)
                o[i * a.o_st[2] + (v0 + lane + x * LANES) * a.o_st[3]] = from_f32<T>(acc[r][x] * inv);
    }
}

} // namespace sdpa_generic

#endif
