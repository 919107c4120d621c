/* The integer and byte run functions with SVE (arm_int_sve of arm_common.h).
 * Vector-length agnostic like vec_sve.c: every loop steps by the lanes of one vector
 * (svcntb/h/w/d) under a svwhilelt predicate, so one binary is right at every vector
 * length and needs no tail code. */
#include <arm_sve.h>

#include "arm_common.h"

/* Lanes of B bits in a vector. */
#define LANES8 svcntb()
#define LANES16 svcnth()
#define LANES32 svcntw()
#define LANES64 svcntd()
#define FOR_LANES(i, n, B) for (int64_t i = 0; i < (n); i += (int64_t)LANES##B)
#define PRED(i, n, B) svwhilelt_b##B##_s64((i), (n))

/* ---- add, sub, mul (SVE has a 64-bit MUL) ---- */

#define ARITH_ROW(name, B, OP)                                                             \
    static void name(uint##B##_t *o, const uint##B##_t *a, const uint##B##_t *b,            \
                     int64_t n) {                                                          \
        FOR_LANES(i, n, B) {                                                               \
            svbool_t pg = PRED(i, n, B);                                                   \
            svuint##B##_t x = svld1_u##B(pg, a + i), y = svld1_u##B(pg, b + i);            \
            svst1_u##B(pg, o + i, sv##OP##_u##B##_x(pg, x, y));                            \
        }                                                                                  \
    }
ARITH_ROW(add32, 32, add)
ARITH_ROW(sub32, 32, sub)
ARITH_ROW(mul32, 32, mul)
ARITH_ROW(add64, 64, add)
ARITH_ROW(sub64, 64, sub)
ARITH_ROW(mul64, 64, mul)

/* ---- sum (wrapping: the across-lanes add is taken modulo the lane width), max
 * (merging operations leave inactive lanes as they were) ---- */

#define REDUCE_ROWS(B)                                                                     \
    static uint##B##_t sum##B(const uint##B##_t *x, int64_t n) {                           \
        svuint##B##_t s = svdup_u##B(0);                                                   \
        FOR_LANES(i, n, B) {                                                               \
            svbool_t pg = PRED(i, n, B);                                                   \
            s = svadd_u##B##_m(pg, s, svld1_u##B(pg, x + i));                              \
        }                                                                                  \
        return (uint##B##_t)svaddv_u##B(svptrue_b##B(), s);                                \
    }                                                                                      \
    static int##B##_t max##B(const int##B##_t *x, int64_t n) {                            \
        svint##B##_t m = svdup_s##B(INT##B##_MIN);                                         \
        FOR_LANES(i, n, B) {                                                               \
            svbool_t pg = PRED(i, n, B);                                                   \
            m = svmax_s##B##_m(pg, m, svld1_s##B(pg, x + i));                              \
        }                                                                                  \
        return svmaxv_s##B(svptrue_b##B(), m);                                             \
    }
REDUCE_ROWS(32)
REDUCE_ROWS(64)

/* ---- where: the condition bytes loaded zero-extended into lanes of the element's
 * width, compared with 0, pick a or b ---- */

#define WHERE_ROW(name, B, LOAD_COND)                                                      \
    static void name(uint8_t *o, const uint8_t *c, const uint8_t *a, const uint8_t *b,      \
                     int64_t n) {                                                          \
        uint##B##_t *z = (uint##B##_t *)o;                                                 \
        const uint##B##_t *x = (const uint##B##_t *)a, *y = (const uint##B##_t *)b;        \
        FOR_LANES(i, n, B) {                                                               \
            svbool_t pg = PRED(i, n, B);                                                   \
            svbool_t pick = svcmpne_n_u##B(pg, LOAD_COND(pg, c + i), 0);                   \
            svst1_u##B(pg, z + i, svsel_u##B(pick, svld1_u##B(pg, x + i),                  \
                                             svld1_u##B(pg, y + i)));                      \
        }                                                                                  \
    }
WHERE_ROW(where8, 8, svld1_u8)
WHERE_ROW(where16, 16, svld1ub_u16)
WHERE_ROW(where32, 32, svld1ub_u32)
WHERE_ROW(where64, 64, svld1ub_u64)

static void where_row(uint8_t *o, const uint8_t *c, const uint8_t *a, const uint8_t *b,
                      int64_t n, size_t size) {
    switch (size) {
    case 1: where8(o, c, a, b, n); break;
    case 2: where16(o, c, a, b, n); break;
    case 4: where32(o, c, a, b, n); break;
    default: where64(o, c, a, b, n); break;
    }
}

/* ---- moves: byte lanes (an element of 8 bytes or fewer repeats every 8 bytes) ---- */

static void move_bytes(uint8_t *dst, const uint8_t *src, size_t bytes) {
    const int64_t n = (int64_t)bytes;
    FOR_LANES(i, n, 8) {
        svbool_t pg = PRED(i, n, 8);
        svst1_u8(pg, dst + i, svld1_u8(pg, src + i));
    }
}

static void fill_bytes(uint8_t *dst, const uint8_t *pattern, size_t bytes) {
    uint64_t word;
    memcpy(&word, pattern, sizeof word);
    const svuint8_t v = svreinterpret_u8_u64(svdup_u64(word));
    const int64_t n = (int64_t)bytes;
    FOR_LANES(i, n, 8)
        svst1_u8(PRED(i, n, 8), dst + i, v);
}

const arm_int_ops arm_int_sve = {
    .variant = "sve", .arith32 = {add32, sub32, mul32}, .arith64 = {add64, sub64, mul64},
    .sum32 = sum32, .sum64 = sum64, .max32 = max32, .max64 = max64, .where = where_row,
    .move = move_bytes, .fill = fill_bytes,
};
