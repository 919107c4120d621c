/* matmul bf16 with BFMMLA (FEAT_BF16; compiled with the *_bf16.c flags, run only when
 * arm_features.bf16): variant "neon-bfmmla".
 *
 * BFMMLA multiplies a 2 x 4 block of a by a 4 x 2 block of b (both bf16, b given as
 * its 2 columns of 4) into a 2 x 2 block of f32 accumulators. The products of bf16
 * values are exact in f32; the instruction's sums round to odd (and flush subnormals)
 * where IEEE rounds to even, an error of at most one f32 ulp per addition, which the
 * suite's bound for an f32 accumulation holds with room (docs/ops.md "Numerics"). K
 * panels add into an f32 tile, rounded once to bf16 at the end.
 *
 * Operands are packed, as they are (no conversion), into pairs of rows of a and pairs
 * of columns of b, four K values each: [pair][K / 4][2][4], zero padded. */
#include <arm_neon.h>
#include <string.h>

#include "mm_job.h"

enum { KC = 128 }; /* a multiple of 4; buffers: MC KC + KC NC bf16, MC NC f32 (32 KiB) */

/* The pair (p / 2) and position of element (row or column x, depth p) in a packing. */
MM_INLINE int64_t packed_at(int64_t x, int64_t p) {
    return ((x / 2) * (KC / 4) + p / 4) * 8 + (x % 2) * 4 + p % 4;
}

/* n rows (or columns) of kc values each, element (x, p) at src[x * xs + p * ps], into a
 * packing with rows up to n_pad and depth up to kc_pad zero. */
static void pack(uint16_t *dst, const uint16_t *src, int64_t n, int64_t n_pad, int64_t kc,
                 int64_t kc_pad, int64_t xs, int64_t ps) {
    for (int64_t x = 0; x < n_pad; x++)
        for (int64_t p = 0; p < kc_pad; p++)
            dst[packed_at(x, p)] = x < n && p < kc ? src[x * xs + p * ps] : 0;
}

#define ACC_DECL(i)                                                                         \
    float32x4_t c##i##0 = vdupq_n_f32(0), c##i##1 = c##i##0, c##i##2 = c##i##0,            \
                c##i##3 = c##i##0
#define ACC_MMLA(i)                                                                         \
    do {                                                                                    \
        bfloat16x8_t a_i = vreinterpretq_bf16_u16(vld1q_u16(ap + (i) * (KC / 4) * 8 + g * 8)); \
        c##i##0 = vbfmmlaq_f32(c##i##0, a_i, b0);                                           \
        c##i##1 = vbfmmlaq_f32(c##i##1, a_i, b1);                                           \
        c##i##2 = vbfmmlaq_f32(c##i##2, a_i, b2);                                           \
        c##i##3 = vbfmmlaq_f32(c##i##3, a_i, b3);                                           \
    } while (0)
/* Accumulator (i, j) holds rows 2i, 2i+1 by columns 2j, 2j+1: its low half is row 2i. */
#define ACC_STORE(i)                                                                        \
    do {                                                                                    \
        float *r0 = c + 2 * (i) * ldc, *r1 = r0 + ldc;                                      \
        add4(r0, vcombine_f32(vget_low_f32(c##i##0), vget_low_f32(c##i##1)));               \
        add4(r0 + 4, vcombine_f32(vget_low_f32(c##i##2), vget_low_f32(c##i##3)));           \
        add4(r1, vcombine_f32(vget_high_f32(c##i##0), vget_high_f32(c##i##1)));             \
        add4(r1 + 4, vcombine_f32(vget_high_f32(c##i##2), vget_high_f32(c##i##3)));         \
    } while (0)

MM_INLINE void add4(float *c, float32x4_t v) { vst1q_f32(c, vaddq_f32(vld1q_f32(c), v)); }

/* c[8][8] (row stride ldc) += the 8 packed rows at ap times the 8 packed columns at bp,
 * groups = the packed depth / 4. */
static void tile_8x8(int64_t groups, const uint16_t *ap, const uint16_t *bp, float *c,
                     int64_t ldc) {
    ACC_DECL(0); ACC_DECL(1); ACC_DECL(2); ACC_DECL(3);
    for (int64_t g = 0; g < groups; g++) {
        const uint16_t *bg = bp + g * 8;
        bfloat16x8_t b0 = vreinterpretq_bf16_u16(vld1q_u16(bg));
        bfloat16x8_t b1 = vreinterpretq_bf16_u16(vld1q_u16(bg + (KC / 4) * 8));
        bfloat16x8_t b2 = vreinterpretq_bf16_u16(vld1q_u16(bg + 2 * (KC / 4) * 8));
        bfloat16x8_t b3 = vreinterpretq_bf16_u16(vld1q_u16(bg + 3 * (KC / 4) * 8));
        ACC_MMLA(0); ACC_MMLA(1); ACC_MMLA(2); ACC_MMLA(3);
    }
    ACC_STORE(0); ACC_STORE(1); ACC_STORE(2); ACC_STORE(3);
}

/* Output tile (mt, nt) of batch item t. */
static void bfmmla_tile(const mm_job *j, int64_t t, int64_t mt, int64_t nt) {
    uint16_t ap[MC * KC], bp[KC * NC];
    float cp[MC * NC];
    size_t oa, ob, oc;
    mm_item_offsets(j, t, &oa, &ob, &oc);
    int64_t i0 = mt * MC, j0 = nt * NC;
    int64_t mc = j->m - i0 < MC ? j->m - i0 : MC, nc = j->n - j0 < NC ? j->n - j0 : NC;
    int64_t mc_pad = mm_round_up(mc, 8), nc_pad = mm_round_up(nc, 8);
    const uint16_t *a = (const uint16_t *)(j->a + oa) + i0 * j->sam;
    const uint16_t *b = (const uint16_t *)(j->b + ob) + j0 * j->sbn;
    memset(cp, 0, sizeof cp);
    for (int64_t k0 = 0; k0 < j->k; k0 += KC) {
        int64_t kc = j->k - k0 < KC ? j->k - k0 : KC, kc_pad = mm_round_up(kc, 4);
        pack(ap, a + k0 * j->sak, mc, mc_pad, kc, kc_pad, j->sam, j->sak);
        pack(bp, b + k0 * j->sbk, nc, nc_pad, kc, kc_pad, j->sbn, j->sbk);
        for (int64_t r = 0; r < mc_pad; r += 8)
            for (int64_t x = 0; x < nc_pad; x += 8)
                tile_8x8(kc_pad / 4, ap + packed_at(r, 0), bp + packed_at(x, 0), cp + r * NC + x,
                         NC);
    }
    char *c = j->c + oc + (size_t)(i0 * j->scm + j0 * j->scn) * j->esize;
    for (int64_t r = 0; r < mc; r++)
        mm_store_f32(c + (size_t)(r * j->scm) * j->esize, j->dt, j->scn, cp + r * NC, nc);
}

void mm_matmul_bfmmla(const bp_kernel_call *call, const arm_exec *ex) {
    mm_job j;
    if (!mm_job_of(call, &j))
        return;
    j.block = bfmmla_tile;
    mm_run_tiles(&j, ex);
}
