/* gpu kernels, NVIDIA only (GPU_KERNEL_NV): the flash-attention kernel of sdpa for f16 and
 * bf16 with head dim 64 or 128 (FlashAttention-2's forward pass on mma.sync tensor cores),
 * included by sdpa.cu. Warps of 32 lanes are the mma fragments' own layout.
 *
 * A block of WARPS warps takes BM = WARPS * MT * 16 query rows of one (batch, head);
 * each warp owns MT tiles of 16 rows. The block loads its queries once and streams
 * the keys and values it may see in tiles of BK rows, double-buffered with cp.async
 * (the next tile loads while this one is computed; rows outside the visible range
 * are zero-filled). Per tile, each warp
 *     S = Q K^T                    mma m16n8k16, f32 accumulators in registers
 *     S = score order of ops/sdpa.c, in the log2 domain (scale * log2 e folded in)
 *     m' = max(m, rowmax S); P = 2^(S - m'); l = l 2^(m - m') + rowsum P
 *     O = O 2^(m - m') + P V       P rounded to T in registers as the A operand
 * and finally writes O / l (0 for a row that saw no key) through shared memory as
 * 16-byte rows. Tiles a causal or window mask hides from all of a warp's rows are
 * skipped by that warp; only tiles crossing a mask boundary or the end of the keys
 * test each score.
 *
 * Shared memory holds rows of D elements as 16-byte chunks, chunk c of row r stored at
 * c ^ (r & 7): the eight rows an ldmatrix reads at one logical chunk land in eight
 * different bank groups. Fragments (PTX ISA, mma.m16n8k16): lane = 4 g + t holds
 * C/D elements (g, 2t..2t+1) and (g + 8, 2t..2t+1) of each 16 x 8 tile. */
#ifndef GPU_KERNELS_SDPA_FLASH_CUH
#define GPU_KERNELS_SDPA_FLASH_CUH

#include "gpu_port.h"
#if !GPU_NVIDIA
#error "sdpa_flash.cuh: mma.sync, ldmatrix and cp.async are NVIDIA's (GPU_KERNEL_NV)"
#endif

#include "sdpa_args.h"

namespace sdpa_flash {

/* The tensor-core product and the f32 -> T pair packing of one 2-byte type. */
template <typename T> struct ops;

template <> struct ops<gpu_bf16> {
    static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4],
                                               uint32_t b0, uint32_t b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<const uint32_t *>(&v);
    }
};

template <> struct ops<gpu_f16> {
    static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4],
                                               uint32_t b0, uint32_t b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __half2 v = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const uint32_t *>(&v);
    }
};

static __device__ __forceinline__ uint32_t smem_address(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, or 16 zero bytes when !valid (src is then not read). */
static __device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}

static __device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}

/* Waits until at most N of this thread's committed groups are still in flight. */
template <int N> static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

static __device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* 2^x; 0 for x = -inf. */
static __device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* threadIdx.x, read anew at each use: what a tile's copy computes from it is then
 * recomputed per tile instead of being held in registers across the key loop. */
static __device__ __forceinline__ int thread_index() {
    int tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    return tid;
}

/* Starts the copy of rows row0 .. row0 + ROWS - 1 of a [*, D] matrix (row stride
 * `stride`, elements contiguous) into the swizzled tile at `dst`; rows outside
 * [lo, hi) become zeros. */
template <typename T, int D, int ROWS, int THREADS>
static __device__ __forceinline__ void load_rows(uint32_t dst, const T *src, int64_t stride,
                                                 int row0, int lo, int hi) {
    constexpr int CHUNKS = D / 8, STEP = THREADS / CHUNKS, PASSES = ROWS / STEP;
    /* Thread: chunk `chunk` of tile rows r, r + STEP, ...; all of them have r & 7. */
    static_assert(THREADS % CHUNKS == 0 && ROWS % STEP == 0 && STEP % 8 == 0, "tile passes");
    const int tid = thread_index(), r = tid / CHUNKS, chunk = tid % CHUNKS;
    const uint32_t to = dst + r * D * 2 + ((chunk ^ (r & 7)) << 4);
    const T *from = src + (row0 + r) * stride + chunk * 8;
    const int64_t step = STEP * stride;
    if (row0 >= lo && row0 + ROWS <= hi) {
#pragma unroll
        for (int pass = 0; pass < PASSES; pass++, from += step)
            cp_async_16(to + pass * STEP * D * 2, from, true);
    } else {
#pragma unroll
        for (int pass = 0; pass < PASSES; pass++, from += step) {
            const int row = row0 + r + pass * STEP;
            const bool valid = row >= lo && row < hi;
            cp_async_16(to + pass * STEP * D * 2, valid ? from : src, valid);
        }
    }
}

/* The byte offset of chunk pair c (chunks 2c, 2c + 1) of a lane's ldmatrix row, from the
 * lane's offsets for pairs 0-3 (the swizzle leaves bit 3 of the chunk index alone). */
static __device__ __forceinline__ uint32_t chunk_pair(const uint32_t (&off)[4], int c) {
    return off[c & 3] + (uint32_t)(c >> 2) * 128;
}

template <typename T, int D, int WARPS, int MT, int BK>
static __device__ __forceinline__ void attention(const gpu_sdpa_args &a, unsigned char *smem) {
    using op = ops<T>;
    constexpr int THREADS = WARPS * 32, BM = WARPS * MT * 16, ROW_BYTES = D * 2;
    constexpr int KSTEPS = D / 16;  /* k steps of Q K^T, and pairs of 8-wide d tiles of O */
    constexpr int KTILES = BK / 8;  /* 8-key tiles of S */
    constexpr float LOG2E = 1.4426950408889634f;
    static_assert(D == 64 || D == 128, "head dim");
    static_assert(BK % 16 == 0, "key tile");

    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const int g = lane / 4, tq = lane % 4;

    /* Block -> (batch, head, query block); the last query blocks (the most keys under a
     * causal mask) are launched first. */
    const int nqb = (a.sq + BM - 1) / BM;
    const int bh = (int)(blockIdx.x / nqb), qb = nqb - 1 - (int)(blockIdx.x % nqb);
    const int b = bh / a.heads, h = bh % a.heads, hk = h / a.group;
    const int m0 = qb * BM;
    const T *q = (const T *)a.q + b * a.q_st[0] + h * a.q_st[1];
    const T *k = (const T *)a.k + b * a.k_st[0] + hk * a.k_st[1];
    const T *v = (const T *)a.v + b * a.v_st[0] + hk * a.v_st[1];
    T *o = (T *)a.o + b * a.o_st[0] + h * a.o_st[1];

    /* Keys [lo, hi) are the ones some row of the block may see. */
    const int last = min(a.sq, m0 + BM) - 1;
    int lo = 0, hi = a.sk;
    if (a.causal)
        hi = min(hi, last + 1);
    if (a.window > 0)
        lo = max(lo, m0 - a.window + 1);
    /* Tiles start at multiples of BK from first_key and end before `end`. */
    const int first_key = lo / BK * BK, end = lo < hi ? hi : first_key;

    const uint32_t q_smem = smem_address(smem);
    const uint32_t k_smem = q_smem + BM * ROW_BYTES; /* two tiles */
    const uint32_t v_smem = k_smem + 2 * BK * ROW_BYTES;

    load_rows<T, D, BM, THREADS>(q_smem, q, a.q_st[2], m0, 0, a.sq);
    if (first_key < end) {
        load_rows<T, D, BK, THREADS>(k_smem, k, a.k_st[2], first_key, lo, hi);
        load_rows<T, D, BK, THREADS>(v_smem, v, a.v_st[2], first_key, lo, hi);
    }
    cp_async_commit();

    /* Byte offsets of the row and chunk this lane points ldmatrix at, within a 16-row
     * group and a 128-byte column group, for chunk pair c (chunks 2c, 2c + 1), c < 4:
     * the four matrices are (rows 0-7, 2c), (rows 8-15, 2c), (rows 0-7, 2c+1), (rows
     * 8-15, 2c+1). That is the A operand of 16 query rows; with .trans, the B operand of
     * 16 values for two 8-wide d tiles; and for 16 keys, the B operands of two 8-key
     * tiles: registers 0 and 2 for keys 0-7, 1 and 3 for keys 8-15. Each row's r & 7 is
     * lane & 7. */
    uint32_t off[4];
    {
        const int x7 = lane & 7, row = x7 + ((lane >> 3) & 1) * 8, half = lane >> 4;
#pragma unroll
        for (int c = 0; c < 4; c++)
            off[c] = row * ROW_BYTES + ((((2 * c) | half) ^ x7) << 4);
    }

    const int wr0 = warp * MT * 16; /* the warp's first row in the block */
    const int row_first = m0 + wr0, row_last = row_first + MT * 16 - 1;


    float acc[MT][D / 8][4];
    float row_max[MT][2], row_sum[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[mt][dt][e] = 0.0f;
#pragma unroll
        for (int r = 0; r < 2; r++)
            row_max[mt][r] = -INFINITY, row_sum[mt][r] = 0.0f;
    }

    /* Plain scores (no softcap or ALiBi, scale > 0) stay unscaled until the exponent:
     * 2^(s c - m c) with c = scale log2 e, one FFMA. Other scores are turned into the
     * log2 domain first, and c = 1. */
    const bool score_mods = a.softcap > 0.0f || a.alibi != nullptr;
    const bool raw_scores = !score_mods && a.scale > 0.0f;
    const float scale_log2 = a.scale * LOG2E, c_log2 = raw_scores ? scale_log2 : 1.0f;
    const float slope = a.alibi ? a.alibi[h * a.alibi_stride] : 0.0f;

    for (int j0 = first_key, buf = 0; j0 < end; j0 += BK, buf ^= 1) {
        cp_async_wait<0>(); /* this tile */
        __syncthreads();    /* ... for every thread, and the previous one is no longer read */
        if (j0 + BK < end) {
            load_rows<T, D, BK, THREADS>(k_smem + (buf ^ 1) * BK * ROW_BYTES, k, a.k_st[2],
                                         j0 + BK, lo, hi);
            load_rows<T, D, BK, THREADS>(v_smem + (buf ^ 1) * BK * ROW_BYTES, v, a.v_st[2],
                                         j0 + BK, lo, hi);
            cp_async_commit();
        }
        if ((a.causal && j0 > row_last) || (a.window > 0 && j0 + BK - 1 <= row_first - a.window))
            continue; /* every score of the warp's rows is masked */
        const uint32_t k_tile = k_smem + buf * BK * ROW_BYTES;
        const uint32_t v_tile = v_smem + buf * BK * ROW_BYTES;

        float s[MT][KTILES][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int nt = 0; nt < KTILES; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    s[mt][nt][e] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ks++) {
            uint32_t qa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                ldmatrix_x4(qa[mt], q_smem + (wr0 + mt * 16) * ROW_BYTES + chunk_pair(off, ks));
#pragma unroll
            for (int np = 0; np < KTILES / 2; np++) {
                uint32_t kf[4];
                ldmatrix_x4(kf, k_tile + np * 16 * ROW_BYTES + chunk_pair(off, ks));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    op::mma(s[mt][2 * np], qa[mt], kf[0], kf[2]);
                    op::mma(s[mt][2 * np + 1], qa[mt], kf[1], kf[3]);
                }
            }
        }

        /* Scores: scale, softcap and ALiBi into the log2 domain (raw scores wait for the
         * exponent), then the masks. Each test is the same for the whole warp and stays
         * outside the loops over the scores. */
        if (score_mods) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < KTILES; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int i = row_first + mt * 16 + g + (e >> 1) * 8;
                        const int j = j0 + nt * 8 + 2 * tq + (e & 1);
                        float x = s[mt][nt][e] * a.scale;
                        if (a.softcap > 0.0f)
                            x = a.softcap * tanhf(x * a.inv_softcap);
                        x -= slope * (float)(i - j); /* slope 0 without ALiBi */
                        s[mt][nt][e] = x * LOG2E;
                    }
        } else if (!raw_scores) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < KTILES; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        s[mt][nt][e] *= scale_log2;
        }
        if (j0 + BK > a.sk || (a.causal && j0 + BK - 1 > row_first) ||
            (a.window > 0 && j0 <= row_last - a.window)) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < KTILES; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int i = row_first + mt * 16 + g + (e >> 1) * 8;
                        const int j = j0 + nt * 8 + 2 * tq + (e & 1);
                        const bool seen = j < a.sk && (!a.causal || j <= i) &&
                                          (a.window <= 0 || j > i - a.window);
                        s[mt][nt][e] = seen ? s[mt][nt][e] : -INFINITY;
                    }
        }

        /* Online softmax of rows g (r = 0) and g + 8 (r = 1) of each row tile; the four
         * lanes of a quad share a row. P goes to T pairs at once (pp[mt][nt][r]: keys
         * 2 tq, 2 tq + 1 of 8-key tile nt). */
        uint32_t pp[MT][KTILES][2];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < KTILES; nt++)
                    mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float m_new = fmaxf(row_max[mt][r], mx);
                /* A row with no key seen yet subtracts 0: its P and correction are 0. */
                const float m_use = m_new == -INFINITY ? 0.0f : m_new;
                const float corr = exp2_approx((row_max[mt][r] - m_use) * c_log2);
                const float m_scaled = m_use * c_log2;
                row_max[mt][r] = m_new;
                float sum = 0.0f;
#pragma unroll
                for (int nt = 0; nt < KTILES; nt++) {
                    const float p0 = exp2_approx(fmaf(s[mt][nt][2 * r], c_log2, -m_scaled));
                    const float p1 = exp2_approx(fmaf(s[mt][nt][2 * r + 1], c_log2, -m_scaled));
                    pp[mt][nt][r] = op::pack(p0, p1);
                    sum += p0 + p1;
                }
                row_sum[mt][r] = row_sum[mt][r] * corr + sum;
#pragma unroll
                for (int dt = 0; dt < D / 8; dt++) {
                    acc[mt][dt][2 * r] *= corr;
                    acc[mt][dt][2 * r + 1] *= corr;
                }
            }

        /* O += P V: P of 8-key tiles 2 pk and 2 pk + 1 is the A operand of key step pk. */
#pragma unroll
        for (int pk = 0; pk < BK / 16; pk++) {
            uint32_t pa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                pa[mt][0] = pp[mt][2 * pk][0];
                pa[mt][1] = pp[mt][2 * pk][1];
                pa[mt][2] = pp[mt][2 * pk + 1][0];
                pa[mt][3] = pp[mt][2 * pk + 1][1];
            }
#pragma unroll
            for (int dp = 0; dp < KSTEPS; dp++) {
                uint32_t vf[4];
                ldmatrix_x4_trans(vf, v_tile + pk * 16 * ROW_BYTES + chunk_pair(off, dp));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    op::mma(acc[mt][2 * dp], pa[mt], vf[0], vf[1]);
                    op::mma(acc[mt][2 * dp + 1], pa[mt], vf[2], vf[3]);
                }
            }
        }
    }

    /* O / l into the warp's own query rows of shared memory (no other warp reads them),
     * then out as 16-byte chunks of whole rows. The barrier: every thread's copies have
     * landed (the query rows are copied by all warps; without key tiles nothing else
     * waited for them). */
    cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float l = row_sum[mt][r];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = l > 0.0f ? __fdividef(1.0f, l) : 0.0f;
            const int row = wr0 + mt * 16 + g + r * 8; /* row & 7 == g */
#pragma unroll
            for (int dt = 0; dt < D / 8; dt++)
                *reinterpret_cast<uint32_t *>(smem + row * ROW_BYTES + ((dt ^ g) << 4) + tq * 4) =
                    op::pack(acc[mt][dt][2 * r] * inv, acc[mt][dt][2 * r + 1] * inv);
        }
    __syncwarp();
    constexpr int CHUNKS = D / 8;
#pragma unroll
    for (int pass = 0; pass < MT * 16 * CHUNKS / 32; pass++) {
        const int c = pass * 32 + lane, row = c / CHUNKS, chunk = c % CHUNKS;
        const int i = row_first + row;
        if (i < a.sq)
            *reinterpret_cast<uint4 *>(o + i * a.o_st[2] + chunk * 8) =
                *reinterpret_cast<const uint4 *>(smem + (wr0 + row) * ROW_BYTES +
                                                 ((chunk ^ (row & 7)) << 4));
    }
}

} // namespace sdpa_flash

#endif
