/* The amx path of the cpu sdpa (BP_CPU_SDPA, ops/cpu/sdpa.c), for bf16 inputs: both
 * products on AMX tiles (TDPBF16PS: 16 x 16 f32 tile += 16 x 32 bf16 tile times 32 x 16
 * bf16 tile, pairs of bf16 multiplied exactly and added in f32), the online softmax in
 * AVX-512 (sdpa_flash.h's, shared with every path).
 *
 * Every tile is 16 rows of 64 bytes (one configuration): f32 accumulators of 16 x 16,
 * bf16 operands of 16 rows x 32 along the reduction, and the second operand in pairs
 * (row p: words of elements 2p and 2p + 1 of 16 columns). Per task and key block:
 *   S^T = K Q^T   K's rows (the tensor's own when they are contiguous and the block
 *                 whole, else copied into kb [BK][dp], dp = d rounded up to 32, zero
 *                 past d) times Q's pairs qp [dp/2][BQ] (sdpa_bf16_pairs.h), into the
 *                 shared f32 S^T [BK][BQ];
 *   O += P V      P's rows pa [BQ][BK/2] words (the probabilities rounded to bf16,
 *                 pairs of keys, by 16 x 16 word transposes of S^T) times V's pairs
 *                 [BK/2][dp] words, into O [BQ][dp] f32. The value pairs of a whole
 *                 (batch, head) are packed once per chunk of tasks into vh where they
 *                 fit (AMX_HEAD_PAIRS_MAX); else each block's into vp.
 * Tiles run in 2 x 2 blocks of accumulators (tmm0-3) over two rows of the first
 * operand (tmm4-5) and two of the second (tmm6-7). Key rows past bk give scores that
 * are never read, and their P (and V pairs) are zero.
 *
 * Numerics as the avx512bf16 path: P is rounded to bf16 (to nearest even) before P V,
 * the accumulation is f32, the output is rounded once. TDPBF16PS treats bf16 denormals
 * as zero.
 *
 * This file alone is compiled with -mamx-tile -mamx-bf16 (ops/CMakeLists.txt); its
 * functions run only after bp_cpu_sdpa_path saw the CPU has AMX-BF16 and AVX512-BF16
 * and Linux granted the process the tile data (arch_prctl). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "simd.h"

#include "sdpa_flash16.h"
#include "sdpa_bf16_pairs.h"

/* Tile rows and the reduction's pairs per tile; blocks of 2 x 2 tiles. */
enum { TR = 16, TP = 16, TB = 2 * TR, BK2 = BK / 2 };

/* The palette-1 tile configuration: tiles 0-7 of 16 rows x 64 bytes. */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static void tiles_configure(void) {
    tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++)
        c.colsb[t] = 64, c.rows[t] = TR;
    _tile_loadconfig(&c);
}

/* A task's scratch, carved from one allocation per chunk of tasks (4-byte units). */
typedef struct amx_scratch {
    softmax_state s;
    uint32_t *qp; /* [dp/2][BQ] query pairs; rows past d/2 and columns past bq zero */
    uint16_t *kb; /* [BK][dp]   key rows, columns past d zero */
    uint32_t *vp; /* [BK2][dp]  value pairs of key rows 2c and 2c + 1 */
    uint32_t *vh; /* [sk_t/2][dp] value pairs of a whole (batch, head), or NULL (too big) */
    const char *vh_of;  /* the V (flash_task's v) whose pairs vh holds; NULL: none yet */
    const uint32_t *vb; /* this block's value pairs: in vp or in vh */
    uint32_t *pa; /* [BQ][BK2]  probability pairs of keys 2c and 2c + 1, by query row */
    float *o;     /* [BQ][dp]   output accumulator */
    const char *ka; /* this block's key rows (kb or the tensor's) */
    int64_t ka_stride; /* their stride, bytes */
} amx_scratch;

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

static size_t amx_scratch_words(int64_t dp) {
    return (size_t)(dp / 2 * BQ + BK * dp / 2 + BK2 * dp + BQ * BK2 + BQ * dp + BK * BQ + 3 * BQ);
}

static void amx_scratch_carve(amx_scratch *w, uint32_t *mem, int64_t dp) {
    w->qp = mem;
    w->kb = (uint16_t *)(w->qp + dp / 2 * BQ);
    w->vp = (uint32_t *)(w->kb + BK * dp);
    w->pa = w->vp + BK2 * dp;
    w->o = (float *)(w->pa + BQ * BK2);
    w->s.st = w->o + BQ * dp;
    w->s.m = w->s.st + BK * BQ;
    w->s.l = w->s.m + BQ;
    w->s.corr = w->s.l + BQ;
}

/* The value pairs of a (batch, head) are packed once into vh for all the chunk's
 * tasks of that head (a chunk holds consecutive query blocks of one head, mostly) when
 * they fit in this many bytes; else each key block packs its own into vp. */
enum { AMX_HEAD_PAIRS_MAX = 1 << 20 };

static void amx_queries(void *ws, const sdpa_job *j, const flash_task *t) {
    amx_scratch *w = ws;
    pack_q_pairs(j, t, w->qp, round_up(t->bq, TB));
}

/* The rows of K the scores read: the tensor's own when each is contiguous, a tile's
 * row of 64 bytes never passes d, and the block fills whole tiles; else copies in kb. */
static void amx_keys(amx_scratch *w, const sdpa_job *j, const flash_task *t, int64_t j0,
                     int64_t bk, int64_t dp) {
    int64_t d = j->d;
    if (j->ks[3] == 1 && d == dp && bk % TB == 0) {
        w->ka = t->k + (size_t)(j0 * j->ks[2]) * 2;
        w->ka_stride = j->ks[2] * 2;
        return;
    }
    for (int64_t c = 0; c < bk; c++) {
        const char *row = t->k + (size_t)((j0 + c) * j->ks[2]) * 2;
        uint16_t *to = w->kb + c * dp;
        if (j->ks[3] == 1)
            memcpy(to, row, (size_t)d * 2);
        else
            for (int64_t x = 0; x < d; x++)
                to[x] = (uint16_t)bf16_at(row, x, d, j->ks[3]);
    }
    w->ka = (const char *)w->kb;
    w->ka_stride = dp * 2;
}

/* Value rows j0 .. j0 + n - 1 paired into vp's rows (pairs past n zero up to n rounded
 * to the tile's 32 keys). */
static void pack_v_rows(const sdpa_job *j, const flash_task *t, uint32_t *vp, int64_t j0,
                        int64_t n, int64_t dp) {
    for (int64_t c = 0; c < n; c += 2)
        pack_v_pair(j, t, vp + c / 2 * dp, j0, c, n);
    memset(vp + (n + 1) / 2 * dp, 0, (size_t)((round_up(n, TB) / 2 - (n + 1) / 2) * dp) * 4);
}

/* The value pairs of keys j0 .. j0 + bk - 1 (and zero pairs up to the tile's 32 keys)
 * into w->vb: the head's, packed on first use, where the block starts on a pair and the
 * pairs the tiles read past bk are zero there (bk a whole number of tiles, or the block
 * ends the keys); else the block's own in vp. (Past bk the head holds real keys, whose
 * values times a probability of 0 could still be NaN.) */
static void amx_value_pairs(amx_scratch *w, const sdpa_job *j, const flash_task *t, int64_t j0,
                            int64_t bk, int64_t dp) {
    if (w->vh && j0 % 2 == 0 && (bk % TB == 0 || j0 + bk == j->sk)) {
        if (w->vh_of != t->v) {
            pack_v_rows(j, t, w->vh, 0, j->sk, dp);
            w->vh_of = t->v;
        }
        w->vb = w->vh + j0 / 2 * dp;
        return;
    }
    pack_v_rows(j, t, w->vp, j0, bk, dp);
    w->vb = w->vp;
}

/* Keys j0 .. j0 + bk - 1: their value pairs (amx_value_pairs), then S^T = K Q^T for key
 * rows 0 .. bk rounded to 32 and query columns 0 .. bq rounded to 32. */
static void amx_scores(void *ws, const sdpa_job *j, const flash_task *t, int64_t j0,
                       int64_t bk) {
    amx_scratch *w = ws;
    int64_t dp = round_up(j->d, TB);
    int64_t bk_t = round_up(bk, TB), bq_t = round_up(t->bq, TB);
    amx_value_pairs(w, j, t, j0, bk, dp);
    amx_keys(w, j, t, j0, bk, dp);
    const long ka_stride = (long)w->ka_stride, qp_stride = BQ * 4, st_stride = BQ * 4;
    for (int64_t c = 0; c < bk_t; c += TB)
        for (int64_t r = 0; r < bq_t; r += TB) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t p = 0; p < dp / 2; p += TP) {
                const char *ka = w->ka + c * w->ka_stride + p * 4;
                const uint32_t *qb = w->qp + p * BQ + r;
                _tile_loadd(4, ka, ka_stride);
                _tile_loadd(5, ka + TR * w->ka_stride, ka_stride);
                _tile_loadd(6, qb, qp_stride);
                _tile_loadd(7, qb + TR, qp_stride);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            float *st = w->s.st + c * BQ + r;
            _tile_stored(0, st, st_stride);
            _tile_stored(1, st + TR, st_stride);
            _tile_stored(2, st + TR * BQ, st_stride);
            _tile_stored(3, st + TR * BQ + TR, st_stride);
        }
}

/* r[0 .. 15] transposed as a 16 x 16 matrix of 32-bit words. */
INLINE void transpose_16x16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* s[4g + c] holds, in 128-bit lane L, column 4L + c of rows 4g .. 4g + 3. */
    __m512i s[16];
    for (int i = 0; i < 16; i += 4) {
        s[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        s[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        s[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        s[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i u0 = _mm512_shuffle_i32x4(s[c], s[4 + c], 0x44);
        __m512i u1 = _mm512_shuffle_i32x4(s[c], s[4 + c], 0xee);
        __m512i u2 = _mm512_shuffle_i32x4(s[8 + c], s[12 + c], 0x44);
        __m512i u3 = _mm512_shuffle_i32x4(s[8 + c], s[12 + c], 0xee);
        r[c] = _mm512_shuffle_i32x4(u0, u2, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(u0, u2, 0xdd);
        r[8 + c] = _mm512_shuffle_i32x4(u1, u3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(u1, u3, 0xdd);
    }
}

/* The probabilities of keys 0 .. bk - 1 (S^T, f32) into pa's rows as bf16 pairs (to
 * nearest even), query rows 0 .. rows - 1; keys bk .. up to 32 are zero. */
static void pack_p_rows(amx_scratch *w, int64_t bk, int64_t rows) {
    /* Word i of the result: bf16 i of lo, then bf16 i of hi (cvtne2ps puts lo's 16 in
     * the low half). */
    const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25,
                                           9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
                                           17, 1, 16, 0);
    int64_t bk_t = round_up(bk, TB);
    for (int64_t g = 0; g < rows; g += 16)
        for (int64_t c2 = 0; c2 < bk_t / 2; c2 += TP) {
            __m512i x[16];
            for (int i = 0; i < 16; i++) {
                int64_t c = 2 * (c2 + i);
                __m512 lo = c < bk ? _mm512_loadu_ps(w->s.st + c * BQ + g) : _mm512_setzero_ps();
                __m512 hi = c + 1 < bk ? _mm512_loadu_ps(w->s.st + (c + 1) * BQ + g)
                                       : _mm512_setzero_ps();
                x[i] = _mm512_permutexvar_epi16(pairs, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            }
            transpose_16x16(x);
            for (int i = 0; i < 16; i++)
                _mm512_storeu_si512(w->pa + (g + i) * BK2 + c2, x[i]);
        }
}

/* O += P V, P rounded to bf16: query rows 0 .. bq rounded to 32, all dp columns. */
static void amx_values(void *ws, const sdpa_job *j, const flash_task *t, int64_t j0,
                       int64_t bk) {
    (void)j0;
    amx_scratch *w = ws;
    int64_t dp = round_up(j->d, TB), bk_t = round_up(bk, TB), bq_t = round_up(t->bq, TB);
    pack_p_rows(w, bk, bq_t);
    const long o_stride = (long)dp * 4, pa_stride = BK2 * 4, vp_stride = (long)dp * 4;
    for (int64_t r = 0; r < bq_t; r += TB)
        for (int64_t x = 0; x < dp; x += TB) {
            float *o = w->o + r * dp + x;
            _tile_loadd(0, o, o_stride);
            _tile_loadd(1, o + TR, o_stride);
            _tile_loadd(2, o + TR * dp, o_stride);
            _tile_loadd(3, o + TR * dp + TR, o_stride);
            for (int64_t c2 = 0; c2 < bk_t / 2; c2 += TP) {
                const uint32_t *pa = w->pa + r * BK2 + c2, *vp = w->vb + c2 * dp + x;
                _tile_loadd(4, pa, pa_stride);
                _tile_loadd(5, pa + TR * BK2, pa_stride);
                _tile_loadd(6, vp, vp_stride);
                _tile_loadd(7, vp + TR, vp_stride);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, o, o_stride);
            _tile_stored(1, o + TR, o_stride);
            _tile_stored(2, o + TR * dp, o_stride);
            _tile_stored(3, o + TR * dp + TR, o_stride);
        }
}

void bp_cpu_sdpa_range_amx(void *ctx, int64_t begin, int64_t end) {
    const sdpa_job *j = ctx;
    int64_t dp = round_up(j->d, TB);
    size_t words = amx_scratch_words(dp);
    uint32_t *mem = calloc(words, sizeof *mem);
    if (!mem) {
        bp_cpu_sdpa_out_of_memory(j, words * sizeof *mem, begin, end);
        return;
    }
    amx_scratch w;
    amx_scratch_carve(&w, mem, dp);
    /* The head's pairs: none (each block packs its own) when too big or not allocated. */
    size_t head_words = (size_t)(round_up(j->sk, TB) / 2 * dp);
    w.vh = head_words * 4 <= AMX_HEAD_PAIRS_MAX ? calloc(head_words, 4) : NULL;
    w.vh_of = NULL;
    tiles_configure();
    for (int64_t t = begin; t < end; t++)
        flash_run(j, t, &w, &w.s, w.o, dp, j->scale, amx_queries, amx_scores, amx_values);
    _tile_release();
    free(w.vh);
    free(mem);
}
#endif
