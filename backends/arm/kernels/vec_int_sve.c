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

/* ---- conversions between dtypes, as data.c's element-by-element code does them:
 * each element widened into a 64-bit lane, an int64 (integers, bool) or a double
 * (floats, exactly), then narrowed once (FCVTZS truncates and saturates, NaN to 0, as
 * data.c's trunc_i64; SCVTF and FCVT round to nearest even). A float lane travels in
 * an svint64_t's bits. ---- */

static bool is_integer(bp_dtype dt) {
    return dt == BP_DTYPE_I8 || dt == BP_DTYPE_U8 || dt == BP_DTYPE_I32 ||
           dt == BP_DTYPE_I64 || dt == BP_DTYPE_BOOL;
}

/* f32 (in the low half of each 64-bit lane) as f64. */
static inline svint64_t f32_lanes_to_f64(svbool_t pg, svuint64_t bits) {
    svfloat64_t d = svcvt_f64_f32_x(pg, svreinterpret_f32_u64(bits));
    return svreinterpret_s64_f64(d);
}

static inline svint64_t load_wide(svbool_t pg, bp_dtype dt, const uint8_t *p, int64_t i) {
    switch (dt) {
    case BP_DTYPE_F64: return svld1_s64(pg, (const int64_t *)p + i);
    case BP_DTYPE_F32: return f32_lanes_to_f64(pg, svld1uw_u64(pg, (const uint32_t *)p + i));
    case BP_DTYPE_F16: {
        svuint64_t h = svld1uh_u64(pg, (const uint16_t *)p + i);
        return svreinterpret_s64_f64(svcvt_f64_f16_x(pg, svreinterpret_f16_u64(h)));
    }
    case BP_DTYPE_BF16:
        return f32_lanes_to_f64(pg, svlsl_n_u64_x(pg, svld1uh_u64(pg, (const uint16_t *)p + i), 16));
    case BP_DTYPE_I8: return svld1sb_s64(pg, (const int8_t *)p + i);
    case BP_DTYPE_U8: return svreinterpret_s64_u64(svld1ub_u64(pg, p + i));
    case BP_DTYPE_I32: return svld1sw_s64(pg, (const int32_t *)p + i);
    case BP_DTYPE_I64: return svld1_s64(pg, (const int64_t *)p + i);
    default: { /* bool: != 0 */
        svuint64_t b = svld1ub_u64(pg, p + i);
        return svsel_s64(svcmpne_n_u64(pg, b, 0), svdup_s64(1), svdup_s64(0));
    }
    }
}

static inline void store_wide(svbool_t pg, bp_dtype dt, uint8_t *p, int64_t i, svint64_t v,
                              bool from_int) {
    const svfloat64_t d = svreinterpret_f64_s64(v);
    switch (dt) {
    case BP_DTYPE_F64:
        svst1_f64(pg, (double *)p + i, from_int ? svcvt_f64_s64_x(pg, v) : d);
        break;
    case BP_DTYPE_F32: {
        svfloat32_t f = from_int ? svcvt_f32_s64_x(pg, v) : svcvt_f32_f64_x(pg, d);
        svst1w_u64(pg, (uint32_t *)p + i, svreinterpret_u64_f32(f));
        break;
    }
    case BP_DTYPE_F16: { /* an integer through a double, as data.c does */
        svfloat16_t h = svcvt_f16_f64_x(pg, from_int ? svcvt_f64_s64_x(pg, v) : d);
        svst1h_u64(pg, (uint16_t *)p + i, svreinterpret_u64_f16(h));
        break;
    }
    case BP_DTYPE_BOOL: {
        svbool_t nz = from_int ? svcmpne_n_s64(pg, v, 0)
                               : svnot_b_z(pg, svcmpeq_n_f64(pg, d, 0.0)); /* NaN: true */
        svst1b_s64(pg, (int8_t *)p + i, svsel_s64(nz, svdup_s64(1), svdup_s64(0)));
        break;
    }
    default: { /* integers: wrapped to the narrower type */
        svint64_t x = from_int ? v : svcvt_s64_f64_x(pg, d);
        if (dt == BP_DTYPE_I64)
            svst1_s64(pg, (int64_t *)p + i, x);
        else if (dt == BP_DTYPE_I32)
            svst1w_s64(pg, (int32_t *)p + i, x);
        else
            svst1b_s64(pg, (int8_t *)p + i, x);
        break;
    }
    }
}

/* bf16 outputs are left to data.c: from f64 or a wide integer they round twice, to odd
 * first (FCVTXN is SVE2). */
static bool convert_row(uint8_t *dst, bp_dtype to, const uint8_t *src, bp_dtype from,
                        int64_t n) {
    if (to == BP_DTYPE_BF16)
        return false;
    const bool from_int = is_integer(from);
    FOR_LANES(i, n, 64) {
        svbool_t pg = PRED(i, n, 64);
        store_wide(pg, to, dst, i, load_wide(pg, from, src, i), from_int);
    }
    return true;
}

const arm_int_ops arm_int_sve = {
    .variant = "sve", .arith32 = {add32, sub32, mul32}, .arith64 = {add64, sub64, mul64},
    .sum32 = sum32, .sum64 = sum64, .max32 = max32, .max64 = max64, .where = where_row,
    .move = move_bytes, .fill = fill_bytes, .convert = convert_row,
};
