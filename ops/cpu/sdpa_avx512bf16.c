/* The avx512bf16 path of the cpu sdpa (BP_CPU_SDPA, ops/cpu/sdpa.c), for bf16 inputs:
 * Q, K and V stay in bf16 and both products run on VDPBF16PS (_mm512_dpbf16_ps: pairs of
 * bf16 multiplied exactly and added into f32 lanes), in 8 x 32 register tiles.
 *
 * The instruction takes its operands as 32-bit words, each a pair of bf16 along the
 * reduction, so a task packs (once, in its scratch):
 *   Q^T as [d/2][BQ] words  (query pairs x, x+1 of row r; the tile's vector operand),
 * and each key block
 *   K as [BK/8][d/2][8] words (panels of 8 keys: pair p of keys c .. c + 7 side by
 *                            side; the broadcast operand of an 8-key tile),
 *   V as [BK/2][dp] words   (value rows 2c and 2c+1 interleaved; the vector operand),
 *   P^T as [BK/2][BQ] words (probabilities of keys 2c and 2c+1, rounded to bf16;
 *                            the broadcast operand).
 * Both broadcast operands are thus read with constant strides (8 and BQ words), so the
 * tile's addresses stay in registers.
 * The online softmax (sdpa_flash.h) runs in f32 on the unscaled scores times scale.
 * P is rounded to bf16 before P V, as FlashAttention does on GPUs: each term p_j v_j
 * gains a relative error of at most 2^-8 (bf16 keeps 8 significant bits: its unit
 * roundoff), so the output's error bound grows by 2^-8 sum_j |p_j v_j|
 * (conformance/op_reference.c's p_round, which the tests use); the accumulation stays
 * f32 and the output is rounded to bf16 once at the end.
 * VDPBF16PS treats bf16 denormals (below 2^-126) as zero.
 *
 * This file alone is compiled with -mavx512bf16 (ops/CMakeLists.txt); its functions run
 * only after bp_cpu_sdpa_path saw the CPU has AVX512-BF16. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd.h"

#include "sdpa_flash16.h"
#include "sdpa_bf16_pairs.h"

enum { BF_MR = 8, BF_NR = 32, BK2 = BK / 2 };

#define ROW_STEP(r) \
    do { \
        __m512bh ar = (__m512bh)_mm512_set1_epi32((int)ap[r]); \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, ar, b0); \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, ar, b1); \
    } while (0)
#define ROW_STORE(r) \
    do { \
        vf16 *cr = (vf16 *)(c + (r) * ldc); \
        cr[0] = accumulate ? cr[0] + (vf16)c##r##0 : (vf16)c##r##0; \
        cr[1] = accumulate ? cr[1] + (vf16)c##r##1 : (vf16)c##r##1; \
    } while (0)

/* c[8][32] (row stride ldc) = (accumulate ? c : 0) + a @ b over kd2 word steps: a's word
 * (r, p) at a[p * lda + r] is broadcast, b's row p of 32 words starts at b + p * ldb;
 * each word holds two bf16 of the reduction. Called with a constant lda. */
INLINE void tile_bf16_8x32(int64_t kd2, const uint32_t *a, int64_t lda, const uint32_t *b,
                           int64_t ldb, float *c, int64_t ldc, int accumulate) {
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00;
    __m512 c61 = c00, c70 = c00, c71 = c00;
    for (int64_t p = 0; p < kd2; p++) {
        const uint32_t *bp = b + p * ldb, *ap = a + p * lda;
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
        ROW_STEP(0);
        ROW_STEP(1);
        ROW_STEP(2);
        ROW_STEP(3);
        ROW_STEP(4);
        ROW_STEP(5);
        ROW_STEP(6);
        ROW_STEP(7);
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
    ROW_STORE(6);
    ROW_STORE(7);
}

/* f32 lanes rounded to bf16 bits, to nearest even, in the low halves; NaN stays NaN
 * (a NaN score poisons its row, as on the other paths). */
INLINE vu16 bf16_bits(vf16 x) {
    vu16 u = (vu16)x;
    vu16 nan = (vu16)(x != x);
    return ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16 & ~nan) | (0x7fc0u & nan);
}

/* A task's scratch, carved from one allocation per chunk of tasks (4-byte units). */
typedef struct bf16_scratch {
    softmax_state s;
    uint32_t *qp; /* [d2][BQ]  query pairs, transposed; columns past bq zero */
    uint32_t *kp; /* [BK/8][d2][8] key pairs in panels of 8 keys */
    uint32_t *vp; /* [BK2][dp] value pairs of key rows 2c and 2c + 1; columns past d zero */
    uint32_t *pp; /* [BK2][BQ] probability pairs of keys 2c and 2c + 1 */
    float *o;     /* [BQ][dp]  output accumulator */
} bf16_scratch;

static size_t bf16_scratch_words(int64_t d2, int64_t dp) {
    return (size_t)(d2 * BQ + d2 * BK + BK2 * dp + BK2 * BQ + BQ * dp + BK * BQ + 3 * BQ);
}

static void bf16_scratch_carve(bf16_scratch *w, uint32_t *mem, int64_t d2, int64_t dp) {
    w->qp = mem;
    w->kp = w->qp + d2 * BQ;
    w->vp = w->kp + d2 * BK;
    w->pp = w->vp + BK2 * dp;
    w->o = (float *)(w->pp + BK2 * BQ);
    w->s.st = w->o + BQ * dp;
    w->s.m = w->s.st + BK * BQ;
    w->s.l = w->s.m + BQ;
    w->s.corr = w->s.l + BQ;
}

/* Words p .. p + 7 of 8 rows, transposed: out[x * 8 + r] = word p + x of rows[r]. */
INLINE void transpose_8x8(const char *const rows[8], int64_t p, uint32_t *out) {
    __m256i r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_si256((const __m256i *)(rows[i] + p * 4));
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_si256((__m256i *)(out + i * 8),
                            _mm256_permute2x128_si256(u[i], u[i + 4], 0x20));
        _mm256_storeu_si256((__m256i *)(out + (i + 4) * 8),
                            _mm256_permute2x128_si256(u[i], u[i + 4], 0x31));
    }
}

/* Key rows j0 .. j0 + bk - 1 into kp's panels (keys past bk zero), and their values,
 * paired, into vp (sdpa_bf16_pairs.h), then S^T = K Q^T in 8 x 32 tiles. Key rows bk ..
 * bk_mr hold stale values: their scores are never read. */
static void bf16_scores(void *ws, const sdpa_job *j, const flash_task *t, int64_t j0,
                        int64_t bk) {
    bf16_scratch *w = ws;
    int64_t d = j->d, d2 = (d + 1) / 2, dp = (d + BF_NR - 1) / BF_NR * BF_NR;
    int64_t bk_mr = (bk + BF_MR - 1) / BF_MR * BF_MR, bq_nr = (t->bq + BF_NR - 1) / BF_NR * BF_NR;
    /* Rows whose pairs lie in memory as words go 8 x 8 words at a time. */
    bool words = j->ks[3] == 1 && d % 2 == 0;
    for (int64_t c0 = 0; c0 < bk; c0 += BF_MR) {
        uint32_t *panel = w->kp + c0 * d2;
        const char *rows[BF_MR];
        for (int r = 0; r < BF_MR; r++)
            rows[r] = c0 + r < bk ? t->k + (size_t)((j0 + c0 + r) * j->ks[2]) * 2 : NULL;
        int64_t p = 0;
        if (words && c0 + BF_MR <= bk)
            for (; p + 8 <= d2; p += 8)
                transpose_8x8(rows, p, panel + p * BF_MR);
        for (; p < d2; p++)
            for (int r = 0; r < BF_MR; r++)
                panel[p * BF_MR + r] = rows[r] ? bf16_at(rows[r], 2 * p, d, j->ks[3]) |
                                                     bf16_at(rows[r], 2 * p + 1, d, j->ks[3]) << 16
                                               : 0u;
    }
    for (int64_t c = 0; c < bk; c += 2)
        pack_v_pair(j, t, w->vp + c / 2 * dp, j0, c, bk);
    for (int64_t c = 0; c < bk_mr; c += BF_MR)
        for (int64_t r = 0; r < bq_nr; r += BF_NR)
            tile_bf16_8x32(d2, w->kp + c * d2, BF_MR, w->qp + r, BQ, w->s.st + c * BQ + r, BQ, 0);
}

/* Probabilities of keys 0 .. bk - 1 (st, f32) into pp as bf16 pairs, query lanes below
 * lanes (the rows P V reads); an odd bk's last key pairs with a zero. */
INLINE void pack_p(bf16_scratch *w, int64_t bk, int64_t lanes) {
    for (int64_t c = 0; c < bk; c += 2)
        for (int64_t g = 0; g < lanes; g += 16) {
            vu16 lo = bf16_bits(*(const vf16 *)(w->s.st + c * BQ + g));
            vu16 hi = c + 1 < bk ? bf16_bits(*(const vf16 *)(w->s.st + (c + 1) * BQ + g))
                                 : (vu16){0};
            *(vu16 *)(w->pp + c / 2 * BQ + g) = lo | hi << 16;
        }
}

static void bf16_queries(void *ws, const sdpa_job *j, const flash_task *t) {
    bf16_scratch *w = ws;
    pack_q_pairs(j, t, w->qp, (t->bq + BF_NR - 1) / BF_NR * BF_NR);
}

/* O += P V, P rounded to bf16. */
static void bf16_values(void *ws, const sdpa_job *j, const flash_task *t, int64_t j0,
                        int64_t bk) {
    (void)j0;
    bf16_scratch *w = ws;
    int64_t dp = (j->d + BF_NR - 1) / BF_NR * BF_NR, bq_mr = (t->bq + BF_MR - 1) / BF_MR * BF_MR;
    pack_p(w, bk, (bq_mr + 15) / 16 * 16);
    for (int64_t r = 0; r < bq_mr; r += BF_MR)
        for (int64_t x = 0; x < dp; x += BF_NR)
            tile_bf16_8x32((bk + 1) / 2, w->pp + r, BQ, w->vp + x, dp, w->o + r * dp + x, dp, 1);
}

void bp_cpu_sdpa_range_avx512bf16(void *ctx, int64_t begin, int64_t end) {
    const sdpa_job *j = ctx;
    int64_t d2 = (j->d + 1) / 2, dp = (j->d + BF_NR - 1) / BF_NR * BF_NR;
    size_t words = bf16_scratch_words(d2, dp);
    uint32_t *mem = calloc(words, sizeof *mem);
    if (!mem) {
        bp_cpu_sdpa_out_of_memory(j, words * sizeof *mem, begin, end);
        return;
    }
    bf16_scratch w;
    bf16_scratch_carve(&w, mem, d2, dp);
    for (int64_t t = begin; t < end; t++)
        flash_run(j, t, &w, &w.s, w.o, dp, j->scale, bf16_queries, bf16_scores, bf16_values);
    free(mem);
}
#endif
