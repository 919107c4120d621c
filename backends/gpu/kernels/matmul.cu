/* gpu kernels: the plugin's own matmul kernels, for small problems and where the vendor's
 * BLAS (cuBLASLt, hipBLASLt) is absent or declines (the host's matmul op). All take any
 * element strides and broadcast batch dims (matmul_args.h) and accumulate in f32:
 *
 *   matmul_<t>_simt             f32, f16, bf16 (portable): 64 x 64 output tile per block
 *                               of 256 threads, 4 x 4 outputs per thread, k in steps of 16
 *                               through shared memory as f32; f16 and bf16 outputs are
 *                               rounded once, from the f32 sum. No lane is named: any warp
 *                               size works.
 *   matmul_f16_mma, _bf16_mma   NVIDIA only (GPU_KERNEL_NV): tensor cores (mma.sync
 *                               m16n8k16, f32 accumulators): 64 x 64
 *                               output tile per block of 4 warps, 32 x 32 per warp, k in
 *                               steps of 32. Tiles are staged in shared memory k-contiguous
 *                               and read with ldmatrix; operands whose k stride is 1 with
 *                               16-byte aligned rows are loaded 16 bytes at a time.
 *
 * Grid: x = the output tiles of one item (m tile * n tiles + n tile), y and z = batch
 * items (item = item_begin + z * gridDim.y + y). The kernels prefetch the next k step
 * into registers while computing the current one, with two shared buffers. */
#include "gpu_port.h"

#include "matmul_args.h"

namespace {

/* Element offsets of this block's batch item in a, b and c; false past the last item. */
__device__ __forceinline__ bool batch_item(const gpu_matmul_args &p, int64_t &oa, int64_t &ob,
                                           int64_t &oc) {
    int64_t t = p.item_begin + (int64_t)blockIdx.z * gridDim.y + blockIdx.y;
    if (t >= p.items)
        return false;
    oa = ob = oc = 0;
#pragma unroll
    for (int d = GPU_MATMUL_MAX_BATCH_DIMS - 1; d >= 0; d--) {
        if (d < p.nbatch) {
            int64_t i = t % p.bshape[d];
            t /= p.bshape[d];
            oa += i * p.bsa[d];
            ob += i * p.bsb[d];
            oc += i * p.bsc[d];
        }
    }
    return true;
}

/* ---- simt: shared-memory tiled FMA in f32 ---- */

constexpr int ST = GPU_MATMUL_SIMT_TILE;     /* 64 rows of a and of b (n) per block */
constexpr int SK = 16;                      /* k per step */
constexpr int SPITCH = ST + 2;              /* shared row pitch: conflict-free stores */
constexpr int SWORK = ST * SK / GPU_MATMUL_SIMT_THREADS; /* elements per thread per operand */
static_assert(GPU_MATMUL_SIMT_THREADS == 256 && ST == 64 && SWORK == 4, "simt tiling");

/* This thread's elements of an operand's tiles: element i of every k step is
 * (row[i], k0 + kk[i]); `at[i]` points at (row[i], kk[i]) of the first step, NULL for a
 * row past the end. Neighbouring threads take neighbouring k when the operand is
 * contiguous along k, else neighbouring rows. */
template <typename T> struct simt_operand {
    const T *at[SWORK];
    int row[SWORK], kk[SWORK];
    int64_t ks;
};

/* x: the operand's first row of this tile; `rows` of them are valid. */
template <typename T>
__device__ __forceinline__ simt_operand<T> simt_operand_at(const T *x, int64_t rows, int64_t rs,
                                                           int64_t ks, bool k_fast) {
    simt_operand<T> o;
    o.ks = ks;
#pragma unroll
    for (int i = 0; i < SWORK; i++) {
        int e = threadIdx.x + i * GPU_MATMUL_SIMT_THREADS;
        o.row[i] = k_fast ? e / SK : e % ST;
        o.kk[i] = k_fast ? e % SK : e / ST;
        o.at[i] = o.row[i] < rows ? x + o.row[i] * rs + o.kk[i] * ks : nullptr;
    }
    return o;
}

__device__ __forceinline__ float simt_f32(float x) { return x; }
__device__ __forceinline__ float simt_f32(gpu_f16 x) { return gpu_to_f32(x); }
__device__ __forceinline__ float simt_f32(gpu_bf16 x) { return gpu_to_f32(x); }

__device__ __forceinline__ void simt_out(float *p, float v) { *p = v; }
__device__ __forceinline__ void simt_out(gpu_f16 *p, float v) { *p = gpu_f32_to_f16_rn(v); }
__device__ __forceinline__ void simt_out(gpu_bf16 *p, float v) { *p = gpu_f32_to_bf16_rn(v); }

/* Loads this thread's elements of the step at k0 as f32 (zeros outside the operand). */
template <typename T>
__device__ __forceinline__ void simt_load(float v[SWORK], const simt_operand<T> &o, int64_t k0,
                                          int64_t k) {
#pragma unroll
    for (int i = 0; i < SWORK; i++)
        v[i] = o.at[i] && k0 + o.kk[i] < k ? simt_f32(o.at[i][k0 * o.ks]) : 0.0f;
}

template <typename T>
__device__ __forceinline__ void simt_store(float (*s)[SPITCH], const float v[SWORK],
                                           const simt_operand<T> &o) {
#pragma unroll
    for (int i = 0; i < SWORK; i++)
        s[o.kk[i]][o.row[i]] = v[i];
}

template <typename T> __device__ __forceinline__ void matmul_simt(const gpu_matmul_args &p) {
    int64_t oa, ob, oc;
    if (!batch_item(p, oa, ob, oc))
        return;
    int64_t ntiles = (p.n + ST - 1) / ST;
    int64_t m0 = blockIdx.x / ntiles * ST, n0 = blockIdx.x % ntiles * ST;
    const T *a = (const T *)p.a + oa + m0 * p.sam;
    const T *b = (const T *)p.b + ob + n0 * p.sbn;
    simt_operand<T> opa = simt_operand_at(a, p.m - m0, p.sam, p.sak,
                                          p.load_a != GPU_MATMUL_LOAD_ROW_FAST);
    simt_operand<T> opb = simt_operand_at(b, p.n - n0, p.sbn, p.sbk,
                                          p.load_b != GPU_MATMUL_LOAD_ROW_FAST);

    __shared__ float sa[2][SK][SPITCH], sb[2][SK][SPITCH];
    float acc[4][4] = {};
    float va[SWORK], vb[SWORK];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16; /* outputs (ty + 16 i, tx + 16 j) */
    int64_t ksteps = (p.k + SK - 1) / SK;
    if (ksteps > 0) {
        simt_load(va, opa, 0, p.k);
        simt_load(vb, opb, 0, p.k);
        simt_store(sa[0], va, opa);
        simt_store(sb[0], vb, opb);
    }
    __syncthreads();
    for (int64_t s = 0; s < ksteps; s++) {
        int cur = (int)(s & 1);
        bool next = s + 1 < ksteps;
        if (next) {
            simt_load(va, opa, (s + 1) * SK, p.k);
            simt_load(vb, opb, (s + 1) * SK, p.k);
        }
#pragma unroll
        for (int kk = 0; kk < SK; kk++) {
            float ar[4], br[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                ar[i] = sa[cur][kk][ty + 16 * i];
                br[i] = sb[cur][kk][tx + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
        if (next) { /* the other buffer: everyone left it at the previous barrier */
            simt_store(sa[cur ^ 1], va, opa);
            simt_store(sb[cur ^ 1], vb, opb);
        }
        __syncthreads();
    }

    T *c = (T *)p.c + oc;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int64_t row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;
            if (row < p.m && col < p.n)
                simt_out(c + row * p.scm + col * p.scn, acc[i][j]);
        }
}


#if GPU_NVIDIA

/* ---- f16 / bf16: tensor cores ---- */

constexpr int MT = GPU_MATMUL_MMA_TILE;      /* 64 rows of a and of b (n) per block */
constexpr int MK = 32;                      /* k per step */
constexpr int MPITCH = MK + 8;              /* 80-byte rows: conflict-free ldmatrix */
constexpr int MCHUNKS = MT * MK / 8 / GPU_MATMUL_MMA_THREADS; /* 8-element chunks per thread */
static_assert(GPU_MATMUL_MMA_THREADS == 128 && MT == 64 && MCHUNKS == 2, "mma tiling");

typedef uint16_t mma_tile[MT][MPITCH]; /* raw f16/bf16 bits, row = m (or n), column = k */

/* Chunk c (0 .. MT*MK/8-1) of a tile as (row, first k): 8 consecutive k of one row. */
__device__ __forceinline__ void mma_slot(int c, int mode, int &row, int &kc) {
    if (mode == GPU_MATMUL_LOAD_ROW_FAST) {
        row = c % MT;
        kc = c / MT * 8;
    } else {
        row = c / (MK / 8);
        kc = c % (MK / 8) * 8;
    }
}

/* Loads this thread's chunks of the tile at k0 of an operand (as simt_load). */
__device__ __forceinline__ void mma_load(uint4 v[MCHUNKS], const uint16_t *x, int64_t rows,
                                         int64_t rs, int64_t ks, int64_t k0, int64_t k,
                                         int mode) {
#pragma unroll
    for (int i = 0; i < MCHUNKS; i++) {
        int row, kc;
        mma_slot(threadIdx.x + i * GPU_MATMUL_MMA_THREADS, mode, row, kc);
        int64_t kb = k0 + kc;
        v[i] = make_uint4(0, 0, 0, 0);
        if (row >= rows)
            continue;
        const uint16_t *r = x + row * rs;
        if (mode == GPU_MATMUL_LOAD_VEC16 && kb + 8 <= k) {
            v[i] = *reinterpret_cast<const uint4 *>(r + kb);
            continue;
        }
        uint32_t e[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            e[j] = kb + j < k ? r[(kb + j) * ks] : 0u;
        v[i] = make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16,
                          e[6] | e[7] << 16);
    }
}

__device__ __forceinline__ void mma_store(mma_tile &s, const uint4 v[MCHUNKS], int mode) {
#pragma unroll
    for (int i = 0; i < MCHUNKS; i++) {
        int row, kc;
        mma_slot(threadIdx.x + i * GPU_MATMUL_MMA_THREADS, mode, row, kc);
        *reinterpret_cast<uint4 *>(&s[row][kc]) = v[i];
    }
}

/* Four 8 x 8 b16 matrices from shared memory: lane l gives the address of row l % 8 of
 * matrix l / 8, and gets in r[i] its two elements of matrix i. */
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const uint16_t *row) {
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

/* d += a (16 x 16, row) * b (16 x 8, col), f32 accumulators. */
template <typename T> __device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4],
                                                               const uint32_t b[2]);
template <>
__device__ __forceinline__ void mma_16816<gpu_f16>(float d[4], const uint32_t a[4],
                                                  const uint32_t b[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_16816<gpu_bf16>(float d[4], const uint32_t a[4],
                                                         const uint32_t b[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void store_elem(gpu_f16 *p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_elem(gpu_bf16 *p, float v) {
    *p = __float2bfloat16_rn(v);
}

/* One k step of a warp's 32 x 32 outputs: acc[i][j] is the m16 x n8 tile (i, j). */
template <typename T>
__device__ __forceinline__ void mma_step(float acc[2][4][4], const mma_tile &sa,
                                         const mma_tile &sb, int wm, int wn, int lane) {
#pragma unroll
    for (int ks = 0; ks < MK; ks += 16) {
        uint32_t af[2][4], bf[4][2];
#pragma unroll
        for (int i = 0; i < 2; i++) /* matrices: rows +0/+8 x k +0/+8, in a0..a3 order */
            ldmatrix_x4(af[i], &sa[wm * 32 + i * 16 + (lane & 15)][ks + (lane >> 4) * 8]);
#pragma unroll
        for (int jj = 0; jj < 2; jj++) { /* matrices: n tile 2jj (k +0, +8), then 2jj+1 */
            uint32_t r[4];
            ldmatrix_x4(r, &sb[wn * 32 + jj * 16 + (lane & 7) + (lane >> 4) * 8]
                              [ks + ((lane >> 3) & 1) * 8]);
            bf[2 * jj][0] = r[0];
            bf[2 * jj][1] = r[1];
            bf[2 * jj + 1][0] = r[2];
            bf[2 * jj + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                mma_16816<T>(acc[i][j], af[i], bf[j]);
    }
}

template <typename T> __device__ __forceinline__ void matmul_mma(const gpu_matmul_args &p) {
    int64_t oa, ob, oc;
    if (!batch_item(p, oa, ob, oc))
        return;
    int64_t ntiles = (p.n + MT - 1) / MT;
    int64_t m0 = blockIdx.x / ntiles * MT, n0 = blockIdx.x % ntiles * MT;
    const uint16_t *a = (const uint16_t *)p.a + oa + m0 * p.sam;
    const uint16_t *b = (const uint16_t *)p.b + ob + n0 * p.sbn;
    int64_t rows_a = p.m - m0, rows_b = p.n - n0;

    __shared__ __align__(16) mma_tile sa[2], sb[2];
    float acc[2][4][4] = {};
    uint4 va[MCHUNKS], vb[MCHUNKS];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int wm = warp / 2, wn = warp % 2;
    int64_t ksteps = (p.k + MK - 1) / MK;
    if (ksteps > 0) {
        mma_load(va, a, rows_a, p.sam, p.sak, 0, p.k, p.load_a);
        mma_load(vb, b, rows_b, p.sbn, p.sbk, 0, p.k, p.load_b);
        mma_store(sa[0], va, p.load_a);
        mma_store(sb[0], vb, p.load_b);
    }
    __syncthreads();
    for (int64_t s = 0; s < ksteps; s++) {
        int cur = (int)(s & 1);
        bool next = s + 1 < ksteps;
        if (next) {
            mma_load(va, a, rows_a, p.sam, p.sak, (s + 1) * MK, p.k, p.load_a);
            mma_load(vb, b, rows_b, p.sbn, p.sbk, (s + 1) * MK, p.k, p.load_b);
        }
        mma_step<T>(acc, sa[cur], sb[cur], wm, wn, lane);
        if (next) { /* the other buffer: everyone left it at the previous barrier */
            mma_store(sa[cur ^ 1], va, p.load_a);
            mma_store(sb[cur ^ 1], vb, p.load_b);
        }
        __syncthreads();
    }

    /* Accumulator (i, j) holds rows g and g + 8, columns 2 t4 and 2 t4 + 1 of its tile. */
    T *c = (T *)p.c + oc;
    int g = lane / 4, t4 = lane % 4;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int64_t row = m0 + wm * 32 + i * 16 + g + (e / 2) * 8;
                int64_t col = n0 + wn * 32 + j * 8 + t4 * 2 + e % 2;
                if (row < p.m && col < p.n)
                    store_elem(c + row * p.scm + col * p.scn, acc[i][j][e]);
            }
}

#endif /* GPU_NVIDIA */

} /* namespace */

#define SIMT_KERNEL(name, T)                                                                  \
    extern "C" __global__ void __launch_bounds__(GPU_MATMUL_SIMT_THREADS)                      \
        name(const gpu_matmul_args p) {                                                        \
        matmul_simt<T>(p);                                                                    \
    }

SIMT_KERNEL(matmul_f32_simt, float)
SIMT_KERNEL(matmul_f16_simt, gpu_f16)
SIMT_KERNEL(matmul_bf16_simt, gpu_bf16)

#if GPU_NVIDIA
extern "C" __global__ void __launch_bounds__(GPU_MATMUL_MMA_THREADS)
    matmul_f16_mma(const gpu_matmul_args p) {
    matmul_mma<gpu_f16>(p);
}

extern "C" __global__ void __launch_bounds__(GPU_MATMUL_MMA_THREADS)
    matmul_bf16_mma(const gpu_matmul_args p) {
    matmul_mma<gpu_bf16>(p);
}
#endif
