/* The bf16 operands of the cpu sdpa's bf16 paths (ops/cpu/sdpa_avx512bf16.c and
 * ops/cpu/sdpa_amx.c), packed as 32-bit words that each hold two bf16 adjacent along the
 * reduction (the pair layout of VDPBF16PS and TDPBF16PS): query pairs by column, and
 * value pairs of two key rows. Include after sdpa_flash.h. */
#ifndef BP_CPU_SDPA_BF16_PAIRS_H
#define BP_CPU_SDPA_BF16_PAIRS_H

#include <stdint.h>
#include <string.h>

typedef uint32_t vu16 __attribute__((vector_size(64), aligned(4)));
typedef uint16_t vh16 __attribute__((vector_size(32), aligned(2)));

/* Element x of a bf16 row at row with element stride stride, 0 past n. */
static inline uint32_t bf16_at(const char *row, int64_t x, int64_t n, int64_t stride) {
    uint16_t h = 0;
    if (x < n)
        memcpy(&h, row + (size_t)(x * stride) * 2, 2);
    return h;
}

/* The task's queries as [d2][BQ] words: qp[p * BQ + r] holds elements 2p and 2p + 1 of
 * query row r (0 past d); columns bq .. cols - 1 are zero (their lanes are computed and
 * never stored). */
static inline void pack_q_pairs(const sdpa_job *j, const flash_task *t, uint32_t *qp,
                                int64_t cols) {
    int64_t d = j->d, d2 = (d + 1) / 2;
    for (int64_t r = 0; r < cols; r++) {
        const char *qrow = t->q + (size_t)((t->i0 + r) * j->qs[2]) * 2;
        for (int64_t p = 0; p < d2; p++)
            qp[p * BQ + r] = r < t->bq ? bf16_at(qrow, 2 * p, d, j->qs[3]) |
                                             bf16_at(qrow, 2 * p + 1, d, j->qs[3]) << 16
                                       : 0u;
    }
}

/* Value rows j0 + c and j0 + c + 1 (c even) interleaved into the words vw[0 .. d - 1];
 * a row at or past bk is zero (its probability is 0, and 0 times a stale Inf is NaN). */
static inline void pack_v_pair(const sdpa_job *j, const flash_task *t, uint32_t *vw, int64_t j0,
                               int64_t c, int64_t bk) {
    int64_t d = j->d;
    const char *even = t->v + (size_t)((j0 + c) * j->vs[2]) * 2;
    const char *odd = c + 1 < bk ? t->v + (size_t)((j0 + c + 1) * j->vs[2]) * 2 : NULL;
    int64_t x = 0;
    if (j->vs[3] == 1 && odd)
        for (; x + 16 <= d; x += 16) {
            vh16 lo, hi;
            memcpy(&lo, even + x * 2, sizeof lo);
            memcpy(&hi, odd + x * 2, sizeof hi);
            vu16 word = __builtin_convertvector(lo, vu16) | __builtin_convertvector(hi, vu16)
                                                                << 16;
            memcpy(vw + x, &word, sizeof word);
        }
    for (; x < d; x++)
        vw[x] = bf16_at(even, x, d, j->vs[3]) | (odd ? bf16_at(odd, x, d, j->vs[3]) << 16 : 0u);
}

#endif
