/* Conformance group "ops": every (op, dtype) pair of <backplane/ops.h> that the cpu
 * backend implements (ops/cpu/<file>.list, 100 pairs), one test each named
 * "<op>_<dtype>". A test runs its op on the device under test over several cases drawn
 * from the test's seed and compares each result with the float64 reference of
 * op_reference.h, within the error bounds of tolerances.h (docs/ops.md "Numerics").
 * A pair the device registers no kernel for (bp_kernel_dtypes) is skipped with that
 * reason. The numerics tests near the end add crafted roundings, long accumulations,
 * wide integers and non-finite rows.
 *
 * The cases of every op: random shapes, then edge shapes: one element, odd sizes
 * (17 x 33), size-1 and missing dims where the op broadcasts, a non-contiguous input
 * (transposed or narrowed view), the _out form into a strided view (whose base's other
 * elements must keep their values), empty tensors where the op allows them, and large
 * magnitudes where they matter: softmax logits near +-100 (exp overflows without the
 * max subtracted), integer values beyond float's 24 bits, layernorm rows far from 0.
 * Inputs are random and never zero. Results are read back only from contiguous
 * tensors (a strided output through its base), so reading needs no kernel.
 *
 * Every operand lies between canary bytes inside a larger allocation, checked after
 * each op that wrote it (an _out form or in place): a kernel may write exactly its
 * output view. At --level full (bp_conf.level) the tests of sdpa, matmul, softmax, the
 * norms and the reductions add the large shapes that reach the backends' tuned paths
 * (<op>_full, each shape commented with the path it is for). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "op_check.h"

/* ---- the running test ---- */

/* What a test checks: an op name (as bp_op_find knows it) and a dtype. */
typedef struct op_case {
    const char *op;
    bp_dtype dtype;
} op_case;

/* The running test: its op and dtype, and its random state. */
typedef struct ctx {
    const char *op;
    bp_dtype dt;
    uint64_t rng;
} ctx;

/* Whether the device under test lists dtype dt (bp_device_props.dtypes): it holds no
 * tensors of another (f64 on an OpenCL device without cl_khr_fp64), even where a kernel
 * is registered for it. */
static bool device_lists(bp_dtype dt) {
    return (bp_conf.props.dtypes & BP_DTYPE_BIT(dt)) != 0;
}

/* Starts an op test: skips it when the device has no kernel for its (op, dtype), or
 * does not list the dtype. */
static ctx begin(void **state) {
    const op_case *c = *state;
    bp_op_id id;
    BP_CONF_OK(bp_op_find(c->op, &id));
    if (!(bp_kernel_dtypes(id, bp_conf.device) & BP_DTYPE_BIT(c->dtype)))
        BP_CONF_SKIP("no kernel registered for %s %s on %s", c->op, bp_dtype_name(c->dtype),
                     bp_device_name(bp_conf.device));
    if (!device_lists(c->dtype))
        BP_CONF_SKIP("%s does not list %s among its dtypes", bp_device_name(bp_conf.device),
                     bp_dtype_name(c->dtype));
    return (ctx){.op = c->op, .dt = c->dtype, .rng = bp_conf_test_seed()};
}

/* A random integer in [lo, hi]. */
static int64_t rand_int(ctx *x, int64_t lo, int64_t hi) {
    return lo + (int64_t)(bp_conf_rand(&x->rng) % (uint64_t)(hi - lo + 1));
}

/* A random real in [lo, hi). */
static double rand_real(ctx *x, double lo, double hi) {
    return lo + (hi - lo) * (double)(bp_conf_rand(&x->rng) >> 11) / 9007199254740992.0;
}

static bool is_float(bp_dtype dt) {
    return dt == BP_DTYPE_F32 || dt == BP_DTYPE_F16 || dt == BP_DTYPE_BF16 || dt == BP_DTYPE_F64;
}

/* ---- shapes ---- */

#define S0 ((bp_ref_shape){0, {0}})
#define S1(a) ((bp_ref_shape){1, {a}})
#define S2(a, b) ((bp_ref_shape){2, {a, b}})
#define S3(a, b, c) ((bp_ref_shape){3, {a, b, c}})
#define S4(a, b, c, d) ((bp_ref_shape){4, {a, b, c, d}})

/* A shape of min_ndim..max_ndim dims of sizes 1..max_size. */
static bp_ref_shape random_shape(ctx *x, int min_ndim, int max_ndim, int64_t max_size) {
    bp_ref_shape s = {.ndim = (int)rand_int(x, min_ndim, max_ndim)};
    for (int i = 0; i < s.ndim; i++)
        s.d[i] = rand_int(x, 1, max_size);
    return s;
}

/* Formats a case's description into buf, truncating one that does not fit. */
__attribute__((format(printf, 3, 4))) static void describe(char *buf, size_t size,
                                                           const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* "[3, 5]", as a value whose text lives until the end of the full expression. */
typedef struct shape_text {
    char s[112];
} shape_text;

static shape_text str(bp_ref_shape s) {
    shape_text t = {"["};
    size_t len = 1;
    for (int i = 0; i < s.ndim && len < sizeof t.s; i++)
        len += (size_t)snprintf(t.s + len, sizeof t.s - len, "%s%lld", i ? ", " : "",
                                (long long)s.d[i]);
    if (len < sizeof t.s)
        snprintf(t.s + len, sizeof t.s - len, "]");
    return t;
}

/* ---- operands ---- */

/* How an operand is laid out in memory. */
typedef enum layout {
    CONTIGUOUS,
    TRANSPOSED, /* the transpose of the last two dims of a contiguous tensor */
    NARROWED,   /* the middle of a contiguous tensor whose last dim is 3 longer */
} layout;

static const char *const layout_names[] = {"", " transposed", " narrowed"};

/* A tensor given to an op, with its values. */
typedef struct operand {
    bp_tensor *t;       /* what the op is given */
    bp_tensor *base;    /* the contiguous tensor t is a view of; NULL when t is contiguous */
    double *v;          /* t's values, row-major */
    double *base_v;     /* base's values, row-major (NULL without base) */
    bp_ref_shape shape; /* t's shape */
    bp_tensor *alloc;   /* the flat allocation base (or t) lies in, between canaries */
    uint8_t *canary;    /* the canaries' bytes: CANARY_BYTES before, CANARY_BYTES after */
} operand;

/* ---- canaries ---- */

/* Every operand lies in a larger allocation, between this many bytes of random canary
 * before and after it, so that an op writing outside its output (past its last
 * element, say, into what would otherwise be the allocator's rounding slack) changes
 * a canary. 256 bytes: the alignment a fresh allocation has, which an operand keeps,
 * so that the backends' aligned fast paths still take it. */
#define CANARY_BYTES 256

/* A contiguous random tensor of dtype dt and shape s, values in [lo, hi) (*values gets
 * them, as bp_test_random_tensor gives them): a view into o->alloc, a flat tensor that
 * holds random canary bytes (o->canary) before and after it. */
static bp_tensor *canaried_tensor(ctx *x, operand *o, bp_dtype dt, bp_ref_shape s, uint64_t seed,
                                  double lo, double hi, double **values) {
    int64_t n = bp_ref_numel(s), pad = CANARY_BYTES / (int64_t)bp_dtype_size(dt);
    size_t bytes = (size_t)n * bp_dtype_size(dt);
    o->canary = malloc(2 * CANARY_BYTES);
    uint8_t *host = malloc(bytes + 2 * CANARY_BYTES);
    uint64_t state = bp_conf_rand(&x->rng);
    for (size_t i = 0; i < 2 * CANARY_BYTES; i += sizeof state) {
        uint64_t r = bp_conf_rand(&state);
        memcpy(o->canary + i, &r, sizeof r);
    }
    memcpy(host, o->canary, CANARY_BYTES);
    *values = bp_test_random_values(host + CANARY_BYTES, dt, n, seed, lo, hi);
    memcpy(host + CANARY_BYTES + bytes, o->canary + CANARY_BYTES, CANARY_BYTES);
    int64_t flat = n + 2 * pad;
    bp_tensor *middle = NULL, *t = NULL;
    BP_CONF_OK(bp_tensor_from_host(bp_conf.device, dt, 1, &flat, host, &o->alloc));
    BP_CONF_OK(bp_tensor_narrow(o->alloc, 0, pad, n, &middle));
    BP_CONF_OK(bp_tensor_reshape(middle, s.ndim, s.d, &t));
    if (!bp_tensor_shares_storage(t, o->alloc))
        fail_msg("bp_tensor_reshape of a contiguous slice to %s made a copy, not a view",
                 str(s).s);
    bp_tensor_release(middle);
    free(host);
    return t;
}

/* An element's n bytes as the hex digits of its value (a little-endian host: the last
 * byte first). */
typedef struct bytes_text {
    char s[2 * 8 + 1];
} bytes_text;

static bytes_text hex(const uint8_t *p, size_t n) {
    bytes_text t = {""};
    for (size_t i = 0; i < n && i < 8; i++) /* little-endian: the value's hex digits */
        snprintf(t.s + 2 * i, sizeof t.s - 2 * i, "%02x", p[n - 1 - i]);
    return t;
}

/* Fails unless every canary around the operand `o` an op wrote kept its bytes. The
 * message names the case (`what`), the side, how many canary elements changed and the
 * one nearest the output, by its distance from the output's first or last element. */
static void check_canaries(const char *what, const operand *o) {
    size_t esize = bp_dtype_size(bp_tensor_dtype(o->alloc));
    size_t bytes = (size_t)bp_tensor_numel(o->alloc) * esize;
    int64_t pad = CANARY_BYTES / (int64_t)esize;
    uint8_t *got = malloc(bytes);
    BP_CONF_OK(bp_tensor_to_host(o->alloc, got, bytes));
    const uint8_t *sides[2] = {got, got + bytes - CANARY_BYTES};
    static const char *const side_names[2] = {"before the output's first element",
                                              "after the output's last element"};
    for (int side = 0; side < 2; side++) {
        int64_t changed = 0, nearest = -1; /* elements away from the output, 1: adjacent */
        for (int64_t e = 0; e < pad; e++) {
            size_t at = (size_t)e * esize;
            if (memcmp(sides[side] + at, o->canary + side * CANARY_BYTES + at, esize) == 0)
                continue;
            int64_t distance = side == 0 ? pad - e : e + 1;
            changed++;
            if (nearest < 0 || distance < nearest)
                nearest = distance;
        }
        if (changed == 0)
            continue;
        size_t at = (size_t)(side == 0 ? pad - nearest : nearest - 1) * esize;
        bytes_text was = hex(o->canary + side * CANARY_BYTES + at, esize);
        bytes_text now = hex(sides[side] + at, esize);
        free(got);
        fail_msg("%s: wrote outside its output: %lld of the %lld canary elements %s changed, "
                 "the nearest %lld element%s from it (now 0x%s, was 0x%s)",
                 what, (long long)changed, (long long)pad, side_names[side], (long long)nearest,
                 nearest == 1 ? "" : "s", now.s, was.s);
    }
    free(got);
}

/* A random operand of dtype dt and shape s, values in [lo, hi), laid out as `lay`;
 * TRANSPOSED needs 2 dims and NARROWED 1 (fewer: the next simpler layout). */
static operand make_operand(ctx *x, bp_dtype dt, bp_ref_shape s, layout lay, double lo,
                            double hi) {
    operand o = {.shape = s};
    if (lay == TRANSPOSED && s.ndim < 2)
        lay = NARROWED;
    if (lay == NARROWED && s.ndim < 1)
        lay = CONTIGUOUS;
    uint64_t seed = bp_conf_rand(&x->rng);
    if (lay == CONTIGUOUS) {
        o.t = canaried_tensor(x, &o, dt, s, seed, lo, hi, &o.v);
        return o;
    }
    int last = s.ndim - 1;
    bp_ref_shape bs = s;
    if (lay == TRANSPOSED) {
        bs.d[last - 1] = s.d[last];
        bs.d[last] = s.d[last - 1];
    } else {
        bs.d[last] += 3;
    }
    o.base = canaried_tensor(x, &o, dt, bs, seed, lo, hi, &o.base_v);
    if (lay == TRANSPOSED)
        BP_CONF_OK(bp_tensor_transpose(o.base, last - 1, last, &o.t));
    else
        BP_CONF_OK(bp_tensor_narrow(o.base, last, 1, s.d[last], &o.t));
    o.v = bp_test_view_values(o.t, o.base, o.base_v);
    return o;
}

static void operand_free(operand *o) {
    bp_tensor_release(o->t);
    bp_tensor_release(o->base);
    bp_tensor_release(o->alloc);
    free(o->v);
    free(o->base_v);
    free(o->canary);
    *o = (operand){0};
}

/* Values a tensor of dtype dt starts with before an op overwrites it. */
static void stale_range(bp_dtype dt, double *lo, double *hi) {
    *lo = dt == BP_DTYPE_U8 || dt == BP_DTYPE_BOOL ? 0 : -100;
    *hi = 100;
}

/* Where an op writes its result. */
typedef enum out_mode {
    OUT_NEW,        /* the allocating form: a new tensor */
    OUT_INTO,       /* the _out form into a contiguous tensor of stale values */
    OUT_TRANSPOSED, /* the _out form into a transposed view (narrowed under 2 dims) */
    OUT_NARROWED,   /* the _out form into a narrowed view */
    OUT_IN_PLACE,   /* the _out form into the op's first input */
} out_mode;

static const char *const out_names[] = {"", ", _out", ", _out into a transposed view",
                                        ", _out into a narrowed view", ", in place"};

/* The output operand of an _out form (OUT_INTO, OUT_TRANSPOSED, OUT_NARROWED): random
 * stale values for the op to overwrite, laid out as `mode` says. */
static operand stale_output(ctx *x, bp_ref_shape s, out_mode mode) {
    double lo, hi;
    stale_range(x->dt, &lo, &hi);
    layout lay = mode == OUT_INTO ? CONTIGUOUS : mode == OUT_TRANSPOSED ? TRANSPOSED : NARROWED;
    return make_operand(x, x->dt, s, lay, lo, hi);
}

/* ---- checks ---- */

/* Fails unless the new tensor `out` has dtype dt, shape `shape` and values within
 * the bound of want (tolerances.h). */
static void check_new(const char *what, const bp_tensor *out, bp_dtype dt, bp_ref_shape shape,
                      bp_ref_result want) {
    if (bp_tensor_dtype(out) != dt)
        fail_msg("%s: the result has dtype %s, expected %s", what,
                 bp_dtype_name(bp_tensor_dtype(out)), bp_dtype_name(dt));
    bp_ref_shape got_shape = bp_test_shape_of(out);
    bool same = got_shape.ndim == shape.ndim;
    for (int i = 0; same && i < shape.ndim; i++)
        same = got_shape.d[i] == shape.d[i];
    if (!same)
        fail_msg("%s: the result has shape %s, expected %s", what, str(got_shape).s,
                 str(shape).s);
    double *got = bp_test_tensor_values(out);
    bp_test_assert_close_shaped(what, got, want, shape, dt);
    free(got);
}

/* Fails unless the operand `out` an op wrote holds values within the bound of want
 * and, when it is a view, every element of its base outside the view kept its value;
 * first, that the op wrote nothing outside it in its allocation (its canaries). */
static void check_written(const char *what, const operand *out, bp_dtype dt,
                          bp_ref_result want) {
    check_canaries(what, out);
    if (!out->base) {
        check_new(what, out->t, dt, out->shape, want);
        return;
    }
    double *got_base = bp_test_tensor_values(out->base);
    double *got = bp_test_view_values(out->t, out->base, got_base);
    bp_test_assert_close_shaped(what, got, want, out->shape, dt);
    /* The view's offsets in its base: gather the base's own indices through it. */
    bp_ref_shape base_shape = bp_test_shape_of(out->base);
    int64_t n_base = bp_ref_numel(base_shape), n = bp_ref_numel(out->shape);
    double *iota = bp_test_alloc_values(n_base), *kept = bp_test_alloc_values(n_base);
    for (int64_t i = 0; i < n_base; i++) {
        iota[i] = (double)i;
        kept[i] = out->base_v[i];
    }
    double *offsets = bp_test_view_values(out->t, out->base, iota);
    for (int64_t i = 0; i < n; i++)
        kept[(int64_t)offsets[i]] = got[i];
    char around[320];
    describe(around, sizeof around, "%s: the output's base %s outside the view", what,
             str(base_shape).s);
    bp_test_assert_close_shaped(around, got_base, bp_ref_exact(kept), base_shape, dt);
    free(got_base);
    free(got);
    free(iota);
    free(kept);
    free(offsets);
}

/* ---- running a case ---- */

/* One op call of a case, its arguments in `args`: the _out form into `out` when it is
 * non-NULL, else the allocating form into *made; the status is checked in it. */
typedef void (*op_call)(const void *args, bp_tensor *out, bp_tensor **made);

/* Runs a case's op as `mode` says and checks its result, of shape `so`, against the
 * reference want (values and magnitudes). `first` is the op's first input, written by
 * OUT_IN_PLACE. */
static void run_case(ctx *x, const char *what, out_mode mode, const operand *first,
                     bp_ref_shape so, op_call call, const void *args, bp_ref_result want) {
    if (mode == OUT_NEW) {
        bp_tensor *made = NULL;
        call(args, NULL, &made);
        check_new(what, made, x->dt, so, want);
        bp_tensor_release(made);
    } else if (mode == OUT_IN_PLACE) {
        call(args, first->t, NULL);
        check_written(what, first, x->dt, want);
    } else {
        operand out = stale_output(x, so, mode);
        call(args, out.t, NULL);
        check_written(what, &out, x->dt, want);
        operand_free(&out);
    }
}

/* ---- fill ---- */

static void call_fill(const void *args, bp_tensor *out, bp_tensor **made) {
    (void)made; /* fill has no allocating form */
    BP_CONF_OK(bp_fill(out, *(const double *)args));
}

/* fill into an out of shape s (mode: OUT_INTO or a view). */
static void fill_case(ctx *x, bp_ref_shape s, out_mode mode) {
    /* never 0, with a fraction for the conversion to drop */
    double value = rand_real(x, x->dt == BP_DTYPE_U8 ? 1 : -100, 100);
    value = value == 0 ? 1.5 : value;
    bp_ref_result want = bp_ref_fill(bp_ref_numel(s), value, x->dt);
    char what[256];
    describe(what, sizeof what, "fill %s: out %s with %.9g%s", bp_dtype_name(x->dt), str(s).s,
             value, out_names[mode]);
    run_case(x, what, mode, NULL, s, call_fill, &value, want);
    bp_ref_free(&want);
}

static void test_fill(void **state) {
    ctx x = begin(state);
    fill_case(&x, random_shape(&x, 1, 3, 40), OUT_INTO);
    fill_case(&x, S1(1), OUT_INTO);
    fill_case(&x, S0, OUT_INTO);
    fill_case(&x, S2(17, 33), OUT_INTO);
    fill_case(&x, S2(0, 5), OUT_INTO);
    fill_case(&x, S2(9, 13), OUT_TRANSPOSED);
    fill_case(&x, S3(4, 5, 6), OUT_NARROWED);
}

/* ---- copy ---- */

typedef struct copy_args {
    bp_tensor *src;
    bp_dtype dtype;
} copy_args;

static void call_copy(const void *args, bp_tensor *out, bp_tensor **made) {
    const copy_args *g = args;
    if (out)
        BP_CONF_OK(bp_copy(out, g->src));
    else
        BP_CONF_OK(bp_cast(g->src, g->dtype, made));
}

/* A `from` source of shape ss (laid out as src_lay) copied to the test's dtype in shape
 * ds (the source broadcasts); OUT_NEW is bp_cast (ds must be ss). */
static void copy_case(ctx *x, bp_dtype from, bp_ref_shape ss, layout src_lay, bp_ref_shape ds,
                      out_mode mode) {
    /* values that convert without wrapping between the two dtypes */
    bool unsigned_side = from == BP_DTYPE_U8 || x->dt == BP_DTYPE_U8;
    operand src = make_operand(x, from, ss, src_lay, unsigned_side ? 0 : -100, 100);
    bp_ref_result want = bp_ref_copy(src.v, ss, ds, x->dt);
    char what[256];
    describe(what, sizeof what, "%s %s: src %s %s%s into %s%s", mode ? "copy" : "cast",
             bp_dtype_name(x->dt), bp_dtype_name(from), str(ss).s, layout_names[src_lay],
             str(ds).s, out_names[mode]);
    copy_args args = {src.t, x->dt};
    run_case(x, what, mode, NULL, ds, call_copy, &args, want);
    bp_ref_free(&want);
    operand_free(&src);
}

static void test_copy(void **state) {
    ctx x = begin(state);
    /* from every dtype the device lists: the kernel is the destination's and converts
     * any source */
    for (int k = 0; k < BP_DTYPE_COUNT; k++) {
        bp_ref_shape s = random_shape(&x, 1, 3, 24);
        if (device_lists(bp_test_all_dtypes[k]))
            copy_case(&x, bp_test_all_dtypes[k], s, CONTIGUOUS, s, OUT_INTO);
    }
    bp_dtype other = bp_test_all_dtypes[rand_int(&x, 0, BP_DTYPE_COUNT - 1)];
    if (!device_lists(other))
        other = x.dt;
    copy_case(&x, x.dt, S2(17, 33), CONTIGUOUS, S2(17, 33), OUT_INTO);
    copy_case(&x, other, S1(1), CONTIGUOUS, S1(1), OUT_NEW);
    copy_case(&x, other, S2(9, 14), TRANSPOSED, S2(9, 14), OUT_INTO);
    copy_case(&x, x.dt, S3(3, 4, 5), NARROWED, S3(3, 4, 5), OUT_NEW);
    copy_case(&x, other, S2(3, 1), CONTIGUOUS, S3(4, 3, 5), OUT_INTO); /* broadcast */
    copy_case(&x, x.dt, S0, CONTIGUOUS, S2(2, 3), OUT_INTO);
    copy_case(&x, other, S2(6, 7), CONTIGUOUS, S2(6, 7), OUT_TRANSPOSED);
    copy_case(&x, x.dt, S2(5, 1), CONTIGUOUS, S2(5, 6), OUT_NARROWED);
    copy_case(&x, other, S2(0, 4), CONTIGUOUS, S2(0, 4), OUT_INTO);
}

/* ---- cat ---- */

typedef struct cat_args {
    bp_tensor *const *parts;
    int n, dim;
} cat_args;

static void call_cat(const void *args, bp_tensor *out, bp_tensor **made) {
    const cat_args *g = args;
    if (out)
        BP_CONF_OK(bp_cat_out(g->parts, g->n, g->dim, out));
    else
        BP_CONF_OK(bp_cat(g->parts, g->n, g->dim, made));
}

/* cat of n parts (shapes[i], laid out as lays[i]) along dim. */
static void cat_case(ctx *x, int n, const bp_ref_shape *shapes, const layout *lays, int dim,
                     out_mode mode) {
    double lo, hi;
    stale_range(x->dt, &lo, &hi);
    lo = x->dt == BP_DTYPE_U8 ? 1 : lo;
    operand parts[4];
    bp_tensor *ts[4];
    const double *vals[4];
    char list[240] = "", what[320];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        parts[i] = make_operand(x, x->dt, shapes[i], lays[i], lo, hi);
        ts[i] = parts[i].t;
        vals[i] = parts[i].v;
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, " %s%s", str(shapes[i]).s,
                                    layout_names[lays[i]]);
    }
    describe(what, sizeof what, "cat %s: dim %d of%s%s", bp_dtype_name(x->dt), dim, list,
             out_names[mode]);
    bp_ref_result want = bp_ref_cat(vals, shapes, n, dim);
    cat_args args = {ts, n, dim};
    run_case(x, what, mode, NULL, bp_ref_cat_shape(shapes, n, dim), call_cat, &args, want);
    bp_ref_free(&want);
    for (int i = 0; i < n; i++)
        operand_free(&parts[i]);
}

static void test_cat(void **state) {
    ctx x = begin(state);
    const layout flat[3] = {CONTIGUOUS, CONTIGUOUS, CONTIGUOUS};
    const layout mixed[3] = {TRANSPOSED, CONTIGUOUS, NARROWED};
    int64_t r = rand_int(&x, 1, 12), c = rand_int(&x, 1, 12);
    bp_ref_shape rows[3] = {S2(rand_int(&x, 1, 9), c), S2(rand_int(&x, 1, 9), c), S2(1, c)};
    cat_case(&x, 3, rows, flat, 0, OUT_NEW);
    bp_ref_shape cols[3] = {S3(2, r, 17), S3(2, r, 0), S3(2, r, 33)}; /* an empty part */
    cat_case(&x, 3, cols, flat, -1, OUT_NEW);
    bp_ref_shape mids[3] = {S3(3, 5, 4), S3(3, 2, 4), S3(3, 7, 4)};
    cat_case(&x, 3, mids, mixed, 1, OUT_NEW);
    cat_case(&x, 3, mids, flat, 1, OUT_TRANSPOSED);
    bp_ref_shape ones[3] = {S1(1), S1(17), S1(33)};
    cat_case(&x, 3, ones, flat, 0, OUT_NARROWED);
    cat_case(&x, 1, rows, mixed, 0, OUT_NEW);
    bp_ref_shape empties[2] = {S2(0, 3), S2(0, 5)};
    cat_case(&x, 2, empties, flat, 1, OUT_NEW);
    cat_case(&x, 3, cols, flat, -1, OUT_INTO);
}

/* ---- add, sub, mul, div ---- */

typedef struct binary_args {
    bp_ref_binary_op op;
    bp_tensor *a, *b;
} binary_args;

static void call_binary(const void *args, bp_tensor *out, bp_tensor **made) {
    const binary_args *g = args;
    BP_CONF_OK(bp_test_binary(g->op, g->a, g->b, out, made));
}

/* Operand values: floats small, divisors away from 0; integers large enough that the
 * results need more than float's 24 bits (a kernel computing in float fails), yet
 * never overflow. */
static void binary_range(bp_ref_binary_op op, bp_dtype dt, bool divisor, double *lo,
                         double *hi) {
    double big = dt == BP_DTYPE_I32 ? (op == BP_REF_MUL ? 3e4 : 1e9)
                                    : (op == BP_REF_MUL ? 3e7 : 1e15);
    *lo = divisor ? 0.5 : is_float(dt) ? -3 : -big;
    *hi = divisor ? 3 : is_float(dt) ? 3 : big;
}

static void binary_case(ctx *x, bp_ref_binary_op op, bp_ref_shape sa, layout la,
                        bp_ref_shape sb, layout lb, out_mode mode) {
    double alo, ahi, blo, bhi;
    binary_range(op, x->dt, false, &alo, &ahi);
    binary_range(op, x->dt, op == BP_REF_DIV, &blo, &bhi);
    operand a = make_operand(x, x->dt, sa, la, alo, ahi);
    operand b = make_operand(x, x->dt, sb, lb, blo, bhi);
    bp_ref_result want = bp_ref_binary(op, x->dt, sa, a.v, sb, b.v);
    char what[256];
    describe(what, sizeof what, "%s %s: a %s%s, b %s%s%s", x->op, bp_dtype_name(x->dt),
             str(sa).s, layout_names[la], str(sb).s, layout_names[lb], out_names[mode]);
    binary_args args = {op, a.t, b.t};
    run_case(x, what, mode, &a, bp_ref_broadcast_shape((const bp_ref_shape[]){sa, sb}, 2),
             call_binary, &args, want);
    bp_ref_free(&want);
    operand_free(&a);
    operand_free(&b);
}

static void test_binary(void **state) {
    ctx x = begin(state);
    bp_ref_binary_op op = BP_REF_ADD;
    while (strcmp(bp_ref_binary_name(op), x.op) != 0)
        op++;
    bp_ref_shape s = random_shape(&x, 1, 4, 12);
    binary_case(&x, op, s, CONTIGUOUS, s, CONTIGUOUS, OUT_NEW);
    binary_case(&x, op, S1(1), CONTIGUOUS, S1(1), CONTIGUOUS, OUT_NEW);
    binary_case(&x, op, S2(17, 33), CONTIGUOUS, S2(17, 33), CONTIGUOUS, OUT_INTO);
    binary_case(&x, op, S3(4, 1, 5), CONTIGUOUS, S2(3, 1), CONTIGUOUS, OUT_NEW);
    binary_case(&x, op, S0, CONTIGUOUS, S2(2, 3), CONTIGUOUS, OUT_NEW);
    binary_case(&x, op, S2(9, 14), TRANSPOSED, S2(9, 14), NARROWED, OUT_NEW);
    binary_case(&x, op, S2(0, 4), CONTIGUOUS, S2(1, 4), CONTIGUOUS, OUT_NEW);
    binary_case(&x, op, S2(6, 7), CONTIGUOUS, S1(7), CONTIGUOUS, OUT_TRANSPOSED);
    binary_case(&x, op, S2(5, 8), CONTIGUOUS, S2(5, 1), CONTIGUOUS, OUT_IN_PLACE);
}

/* ---- scale, exp, tanh, silu, gelu ---- */

typedef struct unary_args {
    bp_ref_unary_op op;
    bp_tensor *a;
    double alpha;
} unary_args;

static void call_unary(const void *args, bp_tensor *out, bp_tensor **made) {
    const unary_args *g = args;
    BP_CONF_OK(bp_test_unary(g->op, g->a, g->alpha, out, made));
}

/* The range of the large-magnitude case: far into the saturated tails, and for exp
 * up to results near the top of the dtype's range. */
static double unary_large(bp_ref_unary_op op, bp_dtype dt) {
    if (op == BP_REF_EXP)
        return dt == BP_DTYPE_F16 ? 10 : 80;
    return op == BP_REF_SCALE ? 1000 : 60;
}

static void unary_case(ctx *x, bp_ref_unary_op op, bp_ref_shape s, layout lay, out_mode mode,
                       double range) {
    double alpha = rand_real(x, 0.25, 3) * (rand_int(x, 0, 1) ? -1 : 1);
    operand a = make_operand(x, x->dt, s, lay, -range, range);
    bp_ref_result want = bp_ref_unary(op, a.v, bp_ref_numel(s), alpha);
    char what[256], param[48] = "";
    if (op == BP_REF_SCALE)
        snprintf(param, sizeof param, ", alpha %.9g", alpha);
    else if (op == BP_REF_GELU_TANH)
        snprintf(param, sizeof param, ", approximate_tanh");
    describe(what, sizeof what, "%s %s: x %s%s in [%g, %g)%s%s", x->op, bp_dtype_name(x->dt),
             str(s).s, layout_names[lay], -range, range, param, out_names[mode]);
    unary_args args = {op, a.t, alpha};
    run_case(x, what, mode, &a, s, call_unary, &args, want);
    bp_ref_free(&want);
    operand_free(&a);
}

static void test_unary(void **state) {
    ctx x = begin(state);
    bp_ref_unary_op first = BP_REF_EXP;
    while (strcmp(bp_ref_unary_name(first), x.op) != 0)
        first++;
    /* gelu has two forms (erf, then tanh): each case runs both */
    bp_ref_unary_op last = first == BP_REF_GELU ? BP_REF_GELU_TANH : first;
    for (bp_ref_unary_op op = first; op <= last; op++) {
        unary_case(&x, op, random_shape(&x, 1, 4, 12), CONTIGUOUS, OUT_NEW, 4);
        unary_case(&x, op, S1(1), CONTIGUOUS, OUT_NEW, 4);
        unary_case(&x, op, S0, CONTIGUOUS, OUT_INTO, 4);
        unary_case(&x, op, S2(17, 33), CONTIGUOUS, OUT_NEW, 4);
        unary_case(&x, op, S2(9, 14), TRANSPOSED, OUT_NEW, 4);
        unary_case(&x, op, S3(2, 3, 5), NARROWED, OUT_NARROWED, 4);
        unary_case(&x, op, S2(0, 4), CONTIGUOUS, OUT_NEW, 4);
        unary_case(&x, op, S2(6, 7), CONTIGUOUS, OUT_TRANSPOSED, 4);
        unary_case(&x, op, S2(5, 8), CONTIGUOUS, OUT_IN_PLACE, 4);
        unary_case(&x, op, S2(4, 33), CONTIGUOUS, OUT_NEW, unary_large(op, x.dt));
    }
}

/* ---- where ---- */

typedef struct where_args {
    bp_tensor *c, *a, *b;
} where_args;

static void call_where(const void *args, bp_tensor *out, bp_tensor **made) {
    const where_args *g = args;
    if (out)
        BP_CONF_OK(bp_where_out(g->c, g->a, g->b, out));
    else
        BP_CONF_OK(bp_where(g->c, g->a, g->b, made));
}

/* cond of shape sc (laid out as lc), a of sa (as la) and b of sb. */
static void where_case(ctx *x, bp_ref_shape sc, layout lc, bp_ref_shape sa, layout la,
                       bp_ref_shape sb, out_mode mode) {
    double lo, hi;
    stale_range(x->dt, &lo, &hi);
    lo = x->dt == BP_DTYPE_U8 ? 1 : lo;
    operand c = make_operand(x, BP_DTYPE_BOOL, sc, lc, 0, 1);
    operand a = make_operand(x, x->dt, sa, la, lo, hi);
    operand b = make_operand(x, x->dt, sb, CONTIGUOUS, lo, hi);
    bp_ref_result want = bp_ref_where(sc, c.v, sa, a.v, sb, b.v);
    char what[256];
    describe(what, sizeof what, "where %s: cond %s%s, a %s%s, b %s%s", bp_dtype_name(x->dt),
             str(sc).s, layout_names[lc], str(sa).s, layout_names[la], str(sb).s,
             out_names[mode]);
    where_args args = {c.t, a.t, b.t};
    run_case(x, what, mode, &a, bp_ref_broadcast_shape((const bp_ref_shape[]){sc, sa, sb}, 3),
             call_where, &args, want);
    bp_ref_free(&want);
    operand_free(&c);
    operand_free(&a);
    operand_free(&b);
}

static void test_where(void **state) {
    ctx x = begin(state);
    const layout C = CONTIGUOUS;
    bp_ref_shape s = random_shape(&x, 1, 4, 12);
    where_case(&x, s, C, s, C, s, OUT_NEW);
    where_case(&x, S3(3, 1, 5), C, S2(4, 1), C, S1(5), OUT_NEW);
    where_case(&x, S1(1), C, S0, C, S1(1), OUT_NEW);
    where_case(&x, S2(17, 33), C, S2(17, 1), C, S2(1, 33), OUT_INTO);
    where_case(&x, S2(9, 14), TRANSPOSED, S2(9, 14), NARROWED, S2(9, 14), OUT_NEW);
    where_case(&x, S2(0, 4), C, S1(4), C, S2(1, 4), OUT_NEW);
    where_case(&x, S2(6, 7), C, S2(6, 7), C, S1(7), OUT_TRANSPOSED);
    where_case(&x, S2(5, 8), C, S2(5, 8), C, S2(5, 1), OUT_IN_PLACE);
}

/* ---- sum, max, mean ---- */

typedef struct reduce_args {
    bp_ref_reduce_op op;
    bp_tensor *a;
    int dim, keepdim;
} reduce_args;

static void call_reduce(const void *args, bp_tensor *out, bp_tensor **made) {
    const reduce_args *g = args;
    BP_CONF_OK(bp_test_reduce(g->op, g->a, g->dim, g->keepdim, out, made));
}

/* Values to reduce: floats in [-1, 1] (sums cancel, so larger values would only test
 * the tolerance), max over a wide range; integers whose sums need more than float's 24
 * bits (i32: 40 terms at most stay below 2^31; i64: exact in the float64 reference). */
static double reduce_range(bp_ref_reduce_op op, bp_dtype dt) {
    if (dt == BP_DTYPE_I32)
        return 5e7;
    if (dt == BP_DTYPE_I64)
        return 1e12;
    return op == BP_REF_MAX ? 1e4 : 1;
}

static void reduce_case(ctx *x, bp_ref_reduce_op op, bp_ref_shape s, layout lay, int dim,
                        int keepdim, out_mode mode) {
    double range = reduce_range(op, x->dt);
    operand a = make_operand(x, x->dt, s, lay, -range, range);
    bp_ref_result want = bp_ref_reduce(op, a.v, s, dim, x->dt);
    char what[256];
    describe(what, sizeof what, "%s %s: x %s%s, dim %d, keepdim %d%s", x->op,
             bp_dtype_name(x->dt), str(s).s, layout_names[lay], dim, keepdim, out_names[mode]);
    reduce_args args = {op, a.t, dim, keepdim};
    run_case(x, what, mode, &a, bp_ref_reduced_shape(s, dim, keepdim), call_reduce, &args, want);
    bp_ref_free(&want);
    operand_free(&a);
}

/* --level full: long rows, which reach the row-parallel paths (cuda: a block per
 * contiguous row of 32 or more, else per row when rows are few; cpu and opencl: the
 * vectorized / work-group row loops). Integer sums stay short: at the ranges that
 * need more than float's 24 bits, 16384 terms would overflow i32. */
static void reduce_full(ctx *x, bp_ref_reduce_op op) {
    if (op == BP_REF_SUM && !is_float(x->dt))
        return;
    reduce_case(x, op, S2(4, 16384), CONTIGUOUS, -1, 0, OUT_INTO); /* contiguous rows */
    reduce_case(x, op, S2(4096, 8), CONTIGUOUS, 0, 1, OUT_NEW);    /* 8 rows, stride 8 */
}

static void test_reduce(void **state) {
    ctx x = begin(state);
    bp_ref_reduce_op op = BP_REF_SUM;
    while (strcmp(bp_ref_reduce_name(op), x.op) != 0)
        op++;
    for (int i = 0; i < 3; i++) {
        bp_ref_shape s = random_shape(&x, 1, 3, 40);
        int dim = (int)rand_int(&x, -s.ndim, s.ndim - 1);
        reduce_case(&x, op, s, CONTIGUOUS, dim, (int)rand_int(&x, 0, 1), OUT_NEW);
    }
    reduce_case(&x, op, S1(1), CONTIGUOUS, 0, 0, OUT_NEW);
    reduce_case(&x, op, S0, CONTIGUOUS, -1, 1, OUT_NEW);
    reduce_case(&x, op, S2(17, 33), CONTIGUOUS, 0, 1, OUT_INTO);
    reduce_case(&x, op, S2(17, 33), CONTIGUOUS, -1, 0, OUT_NEW);
    reduce_case(&x, op, S3(7, 5, 3), TRANSPOSED, 1, 0, OUT_NEW);
    reduce_case(&x, op, S3(4, 6, 9), NARROWED, 2, 1, OUT_TRANSPOSED);
    reduce_case(&x, op, S2(0, 4), CONTIGUOUS, 1, 0, OUT_NEW); /* nothing to reduce */
    if (op != BP_REF_MAX)                                     /* max refuses an empty dim */
        reduce_case(&x, op, S2(0, 4), CONTIGUOUS, 0, 1, OUT_NEW);
    if (bp_conf.level == BP_CONF_LEVEL_FULL)
        reduce_full(&x, op);
}

/* ---- softmax ---- */

typedef struct softmax_args {
    bp_tensor *a;
    float scale;
    int causal;
} softmax_args;

static void call_softmax(const void *args, bp_tensor *out, bp_tensor **made) {
    const softmax_args *g = args;
    if (out)
        BP_CONF_OK(bp_softmax_out(g->a, g->scale, g->causal, out));
    else
        BP_CONF_OK(bp_softmax(g->a, g->scale, g->causal, made));
}

static void softmax_case(ctx *x, bp_ref_shape s, layout lay, float scale, int causal,
                         out_mode mode, double lo, double hi) {
    operand a = make_operand(x, x->dt, s, lay, lo, hi);
    bp_ref_result want = bp_ref_softmax(a.v, s, scale, causal);
    char what[256];
    describe(what, sizeof what, "softmax %s: x %s%s in [%g, %g), scale %.9g, causal %d%s",
             bp_dtype_name(x->dt), str(s).s, layout_names[lay], lo, hi, (double)scale, causal,
             out_names[mode]);
    softmax_args args = {a.t, scale, causal};
    run_case(x, what, mode, &a, s, call_softmax, &args, want);
    bp_ref_free(&want);
    operand_free(&a);
}

/* --level full: rows past every size switch of the backends' softmax. cuda: a warp a
 * row, the row in registers, in kernels for rows up to 256, 512, 1024 and 2048; a block
 * a row, cached in shared memory, up to 11264; uncached beyond. cpu: the vectorized
 * row loop over many vectors; opencl: k_softmax, a work-group a row. */
static void softmax_full(ctx *x) {
    float scale = (float)rand_real(x, 0.2, 2);
    softmax_case(x, S2(8, 1000), CONTIGUOUS, scale, 0, OUT_NEW, -5, 5);      /* warp, <= 1024 */
    softmax_case(x, S2(4, 2048), CONTIGUOUS, scale, 0, OUT_INTO, -5, 5);     /* warp, 2048 */
    softmax_case(x, S3(1, 2304, 2304), CONTIGUOUS, scale, 1, OUT_NEW, -5, 5); /* block, causal */
    softmax_case(x, S2(3, 11264), CONTIGUOUS, 1, 0, OUT_INTO, -5, 5);        /* block, cached */
    softmax_case(x, S2(2, 16384), CONTIGUOUS, 1, 0, OUT_TRANSPOSED, -5, 5);  /* uncached */
    softmax_case(x, S2(2, 16384), CONTIGUOUS, 1, 0, OUT_NEW, 95, 105);       /* overflows */
}

static void test_softmax(void **state) {
    ctx x = begin(state);
    float scale = (float)rand_real(&x, 0.2, 2);
    softmax_case(&x, random_shape(&x, 1, 3, 40), CONTIGUOUS, scale, 0, OUT_NEW, -5, 5);
    int64_t sq = rand_int(&x, 1, 20);
    softmax_case(&x, S3(2, sq, sq + rand_int(&x, 1, 20)), CONTIGUOUS, scale, 1, OUT_NEW, -5, 5);
    softmax_case(&x, S2(sq + 7, 7), CONTIGUOUS, scale, 1, OUT_NEW, -5, 5); /* Sq > Sk */
    softmax_case(&x, S2(1, 1), CONTIGUOUS, 1, 0, OUT_NEW, -5, 5);
    softmax_case(&x, S0, CONTIGUOUS, 1, 0, OUT_NEW, -5, 5);
    softmax_case(&x, S2(17, 33), CONTIGUOUS, scale, 0, OUT_INTO, -5, 5);
    softmax_case(&x, S2(0, 4), CONTIGUOUS, 1, 0, OUT_NEW, -5, 5);
    softmax_case(&x, S2(4, 0), CONTIGUOUS, 1, 0, OUT_NEW, -5, 5);
    softmax_case(&x, S3(2, 6, 11), TRANSPOSED, 0.5f, 1, OUT_NEW, -4, 4);
    softmax_case(&x, S2(5, 9), NARROWED, scale, 0, OUT_TRANSPOSED, -4, 4);
    /* Logits near +-100: exp overflows f32 (which f16 and bf16 compute in) unless the
     * row's max is subtracted first, and underflows on the negative side. */
    softmax_case(&x, S2(3, 37), CONTIGUOUS, 1, 0, OUT_NEW, 95, 105);
    softmax_case(&x, S2(3, 37), CONTIGUOUS, 1, 0, OUT_NEW, -105, -95);
    softmax_case(&x, S3(2, 9, 9), CONTIGUOUS, 1, 1, OUT_NEW, 95, 105);
    if (bp_conf.level == BP_CONF_LEVEL_FULL)
        softmax_full(&x);
}

/* ---- rmsnorm, layernorm ---- */

typedef struct norm_args {
    bool layer; /* layernorm, else rmsnorm */
    bp_tensor *x, *w, *b;
    float eps;
} norm_args;

static void call_norm(const void *args, bp_tensor *out, bp_tensor **made) {
    const norm_args *g = args;
    if (g->layer && out)
        BP_CONF_OK(bp_layernorm_out(g->x, g->w, g->b, g->eps, out));
    else if (g->layer)
        BP_CONF_OK(bp_layernorm(g->x, g->w, g->b, g->eps, made));
    else if (out)
        BP_CONF_OK(bp_rmsnorm_out(g->x, g->w, g->eps, out));
    else
        BP_CONF_OK(bp_rmsnorm(g->x, g->w, g->eps, made));
}

/* x of shape s (laid out as lay) with values in [lo, hi), an optional weight (narrowed
 * when x is strided) and bias. */
static void norm_case(ctx *x, bool layer, bp_ref_shape s, layout lay, bool weight, bool bias,
                      out_mode mode, double lo, double hi) {
    int64_t d = s.d[s.ndim - 1];
    float eps = weight ? 1e-5f : 1e-6f;
    operand xo = make_operand(x, x->dt, s, lay, lo, hi), w = {0}, b = {0};
    if (weight)
        w = make_operand(x, x->dt, S1(d), lay == CONTIGUOUS ? CONTIGUOUS : NARROWED, 0.5, 1.5);
    if (bias)
        b = make_operand(x, x->dt, S1(d), CONTIGUOUS, -1, 1);
    bp_ref_result want = layer ? bp_ref_layernorm(xo.v, bp_ref_numel(s), d, w.v, b.v, eps)
                         : bp_ref_rmsnorm(xo.v, bp_ref_numel(s), d, w.v, eps);
    char what[256];
    describe(what, sizeof what, "%s %s: x %s%s in [%g, %g), weight %d, bias %d%s", x->op,
             bp_dtype_name(x->dt), str(s).s, layout_names[lay], lo, hi, weight, bias,
             out_names[mode]);
    norm_args args = {layer, xo.t, w.t, b.t, eps};
    run_case(x, what, mode, &xo, s, call_norm, &args, want);
    bp_ref_free(&want);
    operand_free(&xo);
    operand_free(&w);
    operand_free(&b);
}

/* --level full: long rows (cuda: a block a row, the row cached in shared memory up to
 * 11264 elements, uncached beyond; cpu: the vectorized row loop; opencl: a work-group
 * a row), rows far from 0 included, where a one-pass variance cancels. */
static void norm_full(ctx *x, bool ln) {
    norm_case(x, ln, S2(6, 4096), CONTIGUOUS, true, ln, OUT_INTO, -1, 3);     /* cached */
    norm_case(x, ln, S3(2, 2, 11264), NARROWED, true, false, OUT_NEW, -2, 2); /* cached, strided */
    norm_case(x, ln, S2(2, 16384), CONTIGUOUS, true, ln, OUT_INTO, -1, 3);    /* uncached */
    norm_case(x, ln, S2(2, 16384), CONTIGUOUS, false, false, OUT_NEW, 990, 1010);
}

static void test_norm(void **state) {
    ctx x = begin(state);
    bool ln = strcmp(x.op, "layernorm") == 0;
    bool w = rand_int(&x, 0, 1), b = ln && rand_int(&x, 0, 1);
    norm_case(&x, ln, random_shape(&x, 1, 3, 40), CONTIGUOUS, w, b, OUT_NEW, -1, 3);
    norm_case(&x, ln, random_shape(&x, 2, 2, 64), CONTIGUOUS, !w, ln && !b, OUT_NEW, -1, 3);
    norm_case(&x, ln, S2(1, 1), CONTIGUOUS, true, ln, OUT_NEW, -1, 3);
    norm_case(&x, ln, S2(17, 33), CONTIGUOUS, true, ln, OUT_INTO, -1, 3);
    norm_case(&x, ln, S2(0, 8), CONTIGUOUS, true, ln, OUT_NEW, -1, 3);
    norm_case(&x, ln, S2(3, 0), CONTIGUOUS, false, false, OUT_NEW, -1, 3);
    norm_case(&x, ln, S2(5, 12), TRANSPOSED, true, ln, OUT_NEW, -2, 2);
    norm_case(&x, ln, S3(2, 3, 10), NARROWED, true, false, OUT_TRANSPOSED, -2, 2);
    /* Rows far from 0: a variance taken as E[x^2] - E[x]^2 in f32 cancels away. */
    norm_case(&x, ln, S2(4, 64), CONTIGUOUS, false, false, OUT_NEW, 990, 1010);
    if (bp_conf.level == BP_CONF_LEVEL_FULL)
        norm_full(&x, ln);
}

/* ---- rope ---- */

typedef struct rope_args {
    bp_tensor *a;
    const bp_rope_attrs *attrs;
} rope_args;

static void call_rope(const void *args, bp_tensor *out, bp_tensor **made) {
    const rope_args *g = args;
    if (out)
        BP_CONF_OK(bp_rope_out(g->a, g->attrs, out));
    else
        BP_CONF_OK(bp_rope(g->a, g->attrs, made));
}

/* Random attributes; positions stay below 100, where f32 angles are still exact enough
 * for the f32 tolerance. */
static void rope_case(ctx *x, bp_ref_shape s, layout lay, out_mode mode) {
    bp_rope_attrs attrs = {.theta = rand_int(x, 0, 1) ? 10000.0f : 500000.0f,
                           .position_offset = (int32_t)rand_int(x, 0, 64),
                           .interleaved = (int32_t)rand_int(x, 0, 1)};
    operand a = make_operand(x, x->dt, s, lay, -2, 2);
    bp_ref_result want = bp_ref_rope(a.v, s, &attrs);
    char what[256];
    describe(what, sizeof what, "rope %s: x %s%s, theta %g, position_offset %d, interleaved %d%s",
             bp_dtype_name(x->dt), str(s).s, layout_names[lay], (double)attrs.theta,
             attrs.position_offset, attrs.interleaved, out_names[mode]);
    rope_args args = {a.t, &attrs};
    run_case(x, what, mode, &a, s, call_rope, &args, want);
    bp_ref_free(&want);
    operand_free(&a);
}

static void test_rope(void **state) {
    ctx x = begin(state);
    for (int i = 0; i < 2; i++)
        rope_case(&x, S3(rand_int(&x, 1, 3), rand_int(&x, 1, 20), 2 * rand_int(&x, 1, 32)),
                  CONTIGUOUS, OUT_NEW);
    rope_case(&x, S3(1, 1, 2), CONTIGUOUS, OUT_NEW);
    rope_case(&x, S3(2, 17, 34), CONTIGUOUS, OUT_INTO);
    rope_case(&x, S3(3, 0, 4), CONTIGUOUS, OUT_NEW);
    rope_case(&x, S4(2, 3, 9, 16), TRANSPOSED, OUT_NEW); /* D not unit-stride */
    rope_case(&x, S3(2, 5, 12), NARROWED, OUT_TRANSPOSED);
}

/* ---- matmul ---- */

typedef struct matmul_args {
    bp_tensor *a, *b;
    int ta, tb;
} matmul_args;

static void call_matmul(const void *args, bp_tensor *out, bp_tensor **made) {
    const matmul_args *g = args;
    if (out)
        BP_CONF_OK(bp_matmul_out(g->a, g->b, g->ta, g->tb, out));
    else
        BP_CONF_OK(bp_matmul(g->a, g->b, g->ta, g->tb, made));
}

static void matmul_case(ctx *x, bp_ref_shape sa, layout la, bp_ref_shape sb, layout lb, int ta,
                        int tb, out_mode mode) {
    operand a = make_operand(x, x->dt, sa, la, -1, 1);
    operand b = make_operand(x, x->dt, sb, lb, -1, 1);
    bp_ref_result want = bp_ref_matmul(a.v, sa, b.v, sb, ta, tb);
    char what[256];
    describe(what, sizeof what, "matmul %s: a %s%s, b %s%s, trans_a %d, trans_b %d%s",
             bp_dtype_name(x->dt), str(sa).s, layout_names[la], str(sb).s, layout_names[lb], ta,
             tb, out_names[mode]);
    matmul_args args = {a.t, b.t, ta, tb};
    run_case(x, what, mode, NULL, bp_ref_matmul_shape(sa, sb, ta, tb), call_matmul, &args, want);
    bp_ref_free(&want);
    operand_free(&a);
    operand_free(&b);
}

/* --level full: products large enough for the backends' tuned engines. cpu: f32 above
 * OpenBLAS's single-thread threshold is one threaded cblas_sgemm, f16/bf16 are
 * converted in K panels of 256 into f32 scratch; cuda: cuBLASLt (above the plugin's
 * own kernels' SMALL_WORK), strided-batched or with the batch folded into m when b is
 * broadcast, a column-major out as out^T = b^T a^T; opencl: the tiled k_matmul over
 * many work-groups. The float64 reference costs m n k multiply-adds per item. */
static void matmul_full(ctx *x) {
    const layout C = CONTIGUOUS;
    matmul_case(x, S2(1024, 1024), C, S2(1024, 1024), C, 0, 0, OUT_INTO);   /* square */
    matmul_case(x, S2(4096, 256), C, S2(256, 48), C, 0, 0, OUT_NEW);        /* tall, skinny */
    matmul_case(x, S2(32, 2048), C, S2(1024, 2048), C, 0, 1, OUT_NEW);      /* short, deep K */
    matmul_case(x, S3(4, 256, 512), C, S3(4, 512, 256), C, 0, 0, OUT_NEW);  /* strided batch */
    matmul_case(x, S3(3, 512, 384), C, S2(384, 640), C, 0, 0, OUT_INTO);    /* batch into m */
    matmul_case(x, S2(256, 512), C, S2(768, 256), C, 1, 1, OUT_TRANSPOSED); /* column-major out */
}

static void test_matmul(void **state) {
    ctx x = begin(state);
    const layout C = CONTIGUOUS;
    for (int i = 0; i < 2; i++) {
        int64_t m = rand_int(&x, 1, 64), k = rand_int(&x, 1, 64), n = rand_int(&x, 1, 64);
        int ta = (int)rand_int(&x, 0, 1), tb = (int)rand_int(&x, 0, 1);
        matmul_case(&x, ta ? S2(k, m) : S2(m, k), C, tb ? S2(n, k) : S2(k, n), C, ta, tb,
                    OUT_NEW);
    }
    matmul_case(&x, S2(1, 1), C, S2(1, 1), C, 0, 0, OUT_NEW);
    matmul_case(&x, S2(17, 33), C, S2(33, 19), C, 0, 0, OUT_INTO);
    matmul_case(&x, S4(2, 1, 5, 6), C, S3(3, 6, 4), C, 0, 0, OUT_NEW); /* batch broadcast */
    matmul_case(&x, S2(5, 6), C, S3(4, 6, 7), C, 0, 0, OUT_NEW);
    matmul_case(&x, S3(3, 9, 20), C, S3(3, 11, 20), C, 0, 1, OUT_NEW);
    matmul_case(&x, S2(33, 17), TRANSPOSED, S2(17, 12), NARROWED, 0, 0, OUT_NEW);
    matmul_case(&x, S2(4, 0), C, S2(0, 3), C, 0, 0, OUT_NEW); /* K = 0: zeros */
    matmul_case(&x, S2(0, 5), C, S2(5, 3), C, 0, 0, OUT_NEW);
    matmul_case(&x, S2(10, 13), C, S2(9, 10), C, 1, 1, OUT_TRANSPOSED);
    if (bp_conf.level == BP_CONF_LEVEL_FULL)
        matmul_full(&x);
}

/* ---- sdpa ---- */

typedef struct sdpa_spec {
    bp_ref_sdpa_dims n;
    bp_sdpa_attrs attrs;
    bool alibi;
    bool null_attrs; /* call with attrs NULL (all defaults) */
    layout lay;      /* of q, k and v */
    out_mode mode;
} sdpa_spec;

typedef struct sdpa_args {
    bp_tensor *q, *k, *v, *slopes;
    const bp_sdpa_attrs *attrs;
} sdpa_args;

static void call_sdpa(const void *args, bp_tensor *out, bp_tensor **made) {
    const sdpa_args *g = args;
    if (out)
        BP_CONF_OK(bp_sdpa_out(g->q, g->k, g->v, g->slopes, g->attrs, out));
    else
        BP_CONF_OK(bp_sdpa(g->q, g->k, g->v, g->slopes, g->attrs, made));
}

static void sdpa_case(ctx *x, sdpa_spec c) {
    bp_ref_sdpa_dims n = c.n;
    operand q = make_operand(x, x->dt, S4(n.b, n.h, n.sq, n.d), c.lay, -1, 1);
    operand k = make_operand(x, x->dt, S4(n.b, n.hkv, n.sk, n.d), c.lay, -1, 1);
    operand v = make_operand(x, x->dt, S4(n.b, n.hkv, n.sk, n.d), c.lay, -1, 1);
    double *sv = NULL;
    bp_tensor *slopes = c.alibi ? bp_test_alibi_slopes(bp_conf.device, n.h, &sv) : NULL;
    const bp_sdpa_attrs *attrs = c.null_attrs ? NULL : &c.attrs;
    bp_ref_result want = bp_ref_sdpa(n, attrs, bp_ref_view4_contiguous(q.v, n.h, n.sq, n.d),
                               bp_ref_view4_contiguous(k.v, n.hkv, n.sk, n.d),
                               bp_ref_view4_contiguous(v.v, n.hkv, n.sk, n.d), sv, x->dt);
    char what[320];
    describe(what, sizeof what, "sdpa %s: q %s, k and v %s%s, scale %g, causal %d, window %d, "
             "softcap %g, alibi %d%s%s", bp_dtype_name(x->dt), str(q.shape).s, str(k.shape).s,
             layout_names[c.lay], (double)c.attrs.scale, c.attrs.causal, c.attrs.window,
             (double)c.attrs.softcap, c.alibi, c.null_attrs ? ", attrs NULL" : "",
             out_names[c.mode]);
    sdpa_args args = {q.t, k.t, v.t, slopes, attrs};
    run_case(x, what, c.mode, NULL, q.shape, call_sdpa, &args, want);
    bp_ref_free(&want);
    free(sv);
    bp_tensor_release(slopes);
    operand_free(&q);
    operand_free(&k);
    operand_free(&v);
}

/* Random sizes (grouped-query heads included) and a random mix of the attributes. */
static sdpa_spec random_sdpa(ctx *x) {
    int64_t hkv = rand_int(x, 1, 2);
    sdpa_spec c = {.n = {.b = rand_int(x, 1, 2), .h = hkv * rand_int(x, 1, 3), .hkv = hkv,
                         .sq = rand_int(x, 1, 48), .sk = rand_int(x, 1, 48),
                         .d = rand_int(x, 1, 64)}};
    c.attrs.scale = rand_int(x, 0, 1) ? (float)rand_real(x, 0.1, 0.5) : 0;
    c.attrs.causal = (int32_t)rand_int(x, 0, 1);
    c.attrs.window = rand_int(x, 0, 1) ? (int32_t)rand_int(x, 1, 16) : 0;
    c.attrs.softcap = rand_int(x, 0, 1) ? (float)rand_real(x, 0.5, 5) : 0;
    c.alibi = rand_int(x, 0, 1);
    return c;
}

/* --level full: head dims and sequence lengths of real models. cuda: f16/bf16 at head
 * dim 64 and 128 with contiguous, 16-byte aligned rows take the flash kernel (the
 * operands here are contiguous and keep a fresh allocation's alignment), the rest the
 * generic kernel in its 2-, 4- and 8-vector forms (d <= 64, <= 128, beyond: 256);
 * cpu: many 64 x 64 query/key blocks, blocks a causal or window mask hides skipped;
 * opencl: k_sdpa_rows for many query rows, k_sdpa for one. The float64 reference costs
 * 2 Sq Sk d multiply-adds per head whatever the masks, so the largest stay near 1e9. */
static void sdpa_full(ctx *x) {
    const bp_sdpa_attrs causal = {.causal = 1};
    sdpa_case(x, (sdpa_spec){.n = {1, 4, 2, 1024, 1024, 64}, .attrs = causal,
                             .mode = OUT_INTO}); /* flash d64, grouped-query */
    sdpa_case(x, (sdpa_spec){.n = {1, 2, 1, 256, 4096, 128}}); /* flash d128, long keys */
    sdpa_case(x, (sdpa_spec){.n = {1, 1, 1, 2048, 2048, 128}, .attrs = causal,
                             .mode = OUT_INTO}); /* flash d128, causal */
    sdpa_case(x, (sdpa_spec){.n = {1, 2, 1, 1024, 1024, 256}, .attrs = causal}); /* d256 */
    sdpa_case(x, (sdpa_spec){.n = {1, 8, 2, 1, 4096, 128}}); /* decoding one query */
    sdpa_case(x, (sdpa_spec){.n = {1, 2, 1, 1536, 1536, 64},
                             .attrs = {.causal = 1, .window = 256, .softcap = 30.0f},
                             .alibi = true}); /* sliding window: most key blocks skipped */
}

static void test_sdpa(void **state) {
    ctx x = begin(state);
    for (int i = 0; i < 3; i++)
        sdpa_case(&x, random_sdpa(&x));
    const bp_sdpa_attrs all = {.scale = 0.5f, .causal = 1, .window = 9, .softcap = 2.0f};
    sdpa_case(&x, (sdpa_spec){.n = {1, 1, 1, 1, 1, 1}});
    sdpa_case(&x, (sdpa_spec){.n = {1, 4, 2, 17, 33, 24}, .attrs = all, .alibi = true,
                              .mode = OUT_INTO});
    /* a window without causal: rows past Sk + window - 1 see no key and are 0 */
    sdpa_case(&x, (sdpa_spec){.n = {1, 2, 2, 37, 10, 8}, .attrs = {.window = 5}});
    sdpa_case(&x, (sdpa_spec){.n = {1, 2, 1, 4, 0, 8}});                        /* Sk = 0 */
    sdpa_case(&x, (sdpa_spec){.n = {1, 2, 1, 0, 5, 8}, .attrs = {.causal = 1}}); /* empty */
    sdpa_case(&x, (sdpa_spec){.n = {2, 4, 2, 13, 21, 16}, .attrs = all, .alibi = true,
                              .lay = TRANSPOSED});
    sdpa_case(&x, (sdpa_spec){.n = {1, 2, 2, 9, 11, 16}, .null_attrs = true, .lay = NARROWED});
    sdpa_case(&x, (sdpa_spec){.n = {1, 3, 1, 7, 12, 10}, .attrs = {.causal = 1},
                              .mode = OUT_TRANSPOSED});
    if (bp_conf.level == BP_CONF_LEVEL_FULL)
        sdpa_full(&x);
}

/* ---- numerics: crafted roundings, long accumulations, wide integers, non-finite rows ----
 *
 * Each is a fact docs/ops.md "Numerics" states: float results round to nearest even
 * (checked bit for bit on values crafted at and around ties, in the subnormals and at
 * overflow), accumulations run in f32 whatever the dtype (sums of K = 4096 half values
 * that a half accumulator would stall on), integer results are exact at full range
 * (i64 beyond 2^53), and -inf and NaN behave as the ops say (a row whose kept logits
 * are all -inf is 0, NaN propagates, a masked NaN does not). */

/* A float format: significand bits (the implicit one included), the exponent of its
 * smallest normal, its largest finite value. */
typedef struct float_format {
    int p, emin;
    double max;
} float_format;

static float_format format_of(bp_dtype dt) {
    switch (dt) {
    case BP_DTYPE_F16: return (float_format){11, -14, 65504.0};
    case BP_DTYPE_BF16: return (float_format){8, -126, 3.3895313892515355e38};
    default: return (float_format){24, -126, 3.4028234663852886e38};
    }
}

/* The spacing of the format's values at |v|. */
static double quantum(float_format f, double v) {
    int e;
    frexp(v, &e);
    return ldexp(1, (e - 1 < f.emin ? f.emin : e - 1) - f.p + 1);
}

/* Values of the format at and around its rounding boundaries, both signs, appended to
 * v (room for 64 more): ties (even and odd neighbours), a relative nudge either side of
 * each (the nudge a source dtype can express: 2^-52, 2^-40 or 2^-20), ties between
 * subnormals and to 0, the overflow tie (which rounds to inf) and just below it, inf
 * and NaN. */
static int crafted_ties(ctx *x, float_format f, double *v) {
    int k = 0;
    double qsub = ldexp(1, f.emin - f.p + 1), qmax = quantum(f, f.max);
    int emax;
    frexp(f.max, &emax);
    for (int i = 0; i < 4; i++) {
        int e = i == 0 ? f.emin : i == 1 ? 0 : (int)rand_int(x, f.emin + 1, emax - 1);
        double m = (double)rand_int(x, (int64_t)1 << (f.p - 1), ((int64_t)1 << f.p) - 2);
        double q = ldexp(1, e - f.p + 1), tie_even = (2 * floor(m / 2) + 0.5) * q,
               tie_odd = (2 * floor(m / 2) + 1.5) * q;
        double base[2] = {tie_even, tie_odd};
        for (int b = 0; b < 2; b++) {
            double nudge = ldexp(1, -(int)rand_int(x, 20, 52));
            v[k++] = base[b];
            v[k++] = base[b] * (1 + nudge);
            v[k++] = base[b] * (1 - nudge);
        }
    }
    v[k++] = qsub / 2;        /* tie to 0 */
    v[k++] = qsub * 1.5;      /* tie to 2 qsub */
    v[k++] = qsub * 2.5;      /* tie to 2 qsub */
    v[k++] = qsub * 0.75;     /* to qsub */
    v[k++] = qsub * (double)rand_int(x, 3, 200) + qsub / 2;
    v[k++] = f.max;
    v[k++] = f.max + qmax / 2; /* the overflow tie: to inf */
    v[k++] = f.max + qmax / 2 - qmax / 64;
    v[k++] = INFINITY;
    int half = k;
    for (int i = 0; i < half; i++)
        v[k++] = -v[i];
    v[k++] = NAN;
    return k;
}

/* Integers at and around the format's ties: above 2^p, where its spacing is 2 or 4,
 * and for f16 at its overflow (65520 is the tie to inf), both signs. */
static int crafted_integer_ties(float_format f, double *v) {
    double b = ldexp(1, f.p);
    const double offsets[] = {1, 2, 3, 5, 2 * b + 1, 2 * b + 2, 2 * b + 3, 2 * b + 6};
    int k = 0;
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++)
        v[k++] = b + offsets[i];
    if (f.p == 11) {
        const double top[] = {65519, 65520, 65535, 70000};
        for (size_t i = 0; i < 4; i++)
            v[k++] = top[i];
    }
    v[k++] = 2147483647; /* i32's largest */
    int half = k;
    for (int i = 0; i < half; i++)
        v[k++] = -v[i];
    return k;
}

/* copy into the test's float dtype from each source dtype, on values crafted at its
 * roundings: the result must be the source value rounded once, to nearest even. */
static void test_round_copy(void **state) {
    ctx x = begin(state);
    float_format f = format_of(x.dt);
    const bp_dtype sources[] = {BP_DTYPE_F64, BP_DTYPE_F32, BP_DTYPE_F16, BP_DTYPE_BF16,
                                BP_DTYPE_I32, BP_DTYPE_I64};
    for (size_t s = 0; s < sizeof sources / sizeof sources[0]; s++) {
        bp_dtype from = sources[s];
        if (!device_lists(from))
            continue;
        double v[160];
        int64_t n = from == BP_DTYPE_I32 || from == BP_DTYPE_I64 ? crafted_integer_ties(f, v)
                                                                : crafted_ties(&x, f, v);
        for (int64_t i = 0; i < n; i++) /* what the source can hold */
            v[i] = bp_ref_round(v[i], from);
        bp_tensor *src = bp_test_tensor_from_values(bp_conf.device, from, 1, &n, v), *dst = NULL;
        BP_CONF_OK(bp_tensor_empty(bp_conf.device, x.dt, 1, &n, &dst));
        BP_CONF_OK(bp_copy(dst, src));
        bp_ref_result want = bp_ref_copy(v, S1(n), S1(n), x.dt);
        char what[160];
        describe(what, sizeof what, "copy %s from %s, values at its rounding ties",
                 bp_dtype_name(x.dt), bp_dtype_name(from));
        check_new(what, dst, x.dt, S1(n), want);
        bp_ref_free(&want);
        bp_tensor_release(src);
        bp_tensor_release(dst);
    }
}

/* Pairs (a, b) of the test's dtype whose exact op(a, b) is a tie of the dtype, just
 * below or just above one, found among values with few significant bits (so exact
 * ties occur) and full ones; plus ties among the subnormals (a * 1/2, a / 2), the
 * overflow tie, inf and NaN. Returns how many (at most 96). */
static int crafted_pairs(ctx *x, bp_ref_binary_op op, float_format f, double *a, double *b) {
    double cand[48];
    for (int i = 0; i < 48; i++) {
        int bits = i % 2 ? f.p : 4;
        double m = (double)rand_int(x, (int64_t)1 << (bits - 1), ((int64_t)1 << bits) - 1);
        cand[i] = ldexp(m, (int)rand_int(x, -3, 3) - bits + 1) * (rand_int(x, 0, 3) ? 1 : -1);
    }
    int k = 0, found[3] = {0};
    for (int i = 0; i < 48 && k < 72; i++)
        for (int j = 0; j < 48 && k < 72; j++) {
            double r = op == BP_REF_ADD ? cand[i] + cand[j]
                       : op == BP_REF_SUB ? cand[i] - cand[j]
                       : op == BP_REF_MUL ? cand[i] * cand[j] : cand[i] / cand[j];
            if (r == 0)
                continue;
            double units = fabs(r) / quantum(f, r), frac = units - floor(units);
            int kind = frac == 0.5 ? 0 : fabs(frac - 0.5) < 1.0 / 16 ? 1 + (frac > 0.5) : -1;
            if (kind >= 0 && found[kind] < 24) {
                found[kind]++;
                a[k] = cand[i];
                b[k++] = cand[j];
            }
        }
    double qsub = ldexp(1, f.emin - f.p + 1), qmax = quantum(f, f.max);
    double odd = (double)(2 * rand_int(x, 0, 100) + 1) * qsub; /* halved: a subnormal tie */
    switch (op) {
    case BP_REF_ADD:
        a[k] = f.max, b[k++] = qmax / 2; /* the overflow tie */
        a[k] = f.max, b[k++] = qmax / 4;
        a[k] = INFINITY, b[k++] = -INFINITY;
        break;
    case BP_REF_SUB:
        a[k] = f.max, b[k++] = -qmax / 2;
        a[k] = INFINITY, b[k++] = INFINITY;
        break;
    case BP_REF_MUL:
        a[k] = odd, b[k++] = 0.5;
        a[k] = qsub, b[k++] = 0.5; /* tie to 0 */
        a[k] = f.max, b[k++] = 1.5;
        break;
    default:
        a[k] = odd, b[k++] = 2;
        a[k] = qsub, b[k++] = -2;
        a[k] = f.max, b[k++] = 0.5 * (1 - ldexp(1, 1 - f.p)); /* beyond the largest */
        a[k] = 1, b[k++] = 0; /* inf */
        break;
    }
    a[k] = NAN, b[k++] = 1;
    return k;
}

/* add, sub, mul, div of the test's half dtype on crafted pairs: each result the exact
 * one rounded once to nearest even, bit for bit (kernels computing in f32 get that:
 * f32 has at least 2p + 2 bits, so its rounding never moves a half result). */
static void test_round_binary(void **state) {
    ctx x = begin(state);
    bp_ref_binary_op op = BP_REF_ADD;
    while (strcmp(bp_ref_binary_name(op), x.op) != 0)
        op++;
    double a[96], b[96];
    int64_t n = crafted_pairs(&x, op, format_of(x.dt), a, b);
    bp_tensor *ta = bp_test_tensor_from_values(bp_conf.device, x.dt, 1, &n, a);
    bp_tensor *tb = bp_test_tensor_from_values(bp_conf.device, x.dt, 1, &n, b), *out = NULL;
    BP_CONF_OK(bp_test_binary(op, ta, tb, NULL, &out));
    double exact[96];
    for (int64_t i = 0; i < n; i++)
        exact[i] = bp_ref_round(op == BP_REF_ADD   ? a[i] + b[i]
                                : op == BP_REF_SUB ? a[i] - b[i]
                                : op == BP_REF_MUL ? a[i] * b[i] : a[i] / b[i], x.dt);
    char what[160];
    describe(what, sizeof what, "%s %s on pairs whose exact result is at or next to a "
             "rounding tie", x.op, bp_dtype_name(x.dt));
    check_new(what, out, x.dt, S1(n), bp_ref_exact(exact));
    bp_tensor_release(ta);
    bp_tensor_release(tb);
    bp_tensor_release(out);
}

/* scale of the test's half dtype by factors exact in f32 (1.5, 0.75, 5, -1.25, 0.5),
 * on crafted values: each product rounded once to nearest even, bit for bit. */
static void test_round_scale(void **state) {
    ctx x = begin(state);
    float_format f = format_of(x.dt);
    const double alphas[] = {1.5, 0.75, 5, -1.25, 0.5};
    for (size_t s = 0; s < sizeof alphas / sizeof alphas[0]; s++) {
        double a[96], b[96];
        int64_t n = crafted_pairs(&x, BP_REF_MUL, f, a, b); /* a: the values */
        bp_tensor *ta = bp_test_tensor_from_values(bp_conf.device, x.dt, 1, &n, a), *out = NULL;
        BP_CONF_OK(bp_scale(ta, alphas[s], &out));
        double exact[96];
        for (int64_t i = 0; i < n; i++)
            exact[i] = bp_ref_round(a[i] * alphas[s], x.dt);
        char what[160];
        describe(what, sizeof what, "scale %s by %g on values at rounding boundaries",
                 bp_dtype_name(x.dt), alphas[s]);
        check_new(what, out, x.dt, S1(n), bp_ref_exact(exact));
        bp_tensor_release(ta);
        bp_tensor_release(out);
    }
}

/* sum and mean over K = 4096 values in [0.5, 1), along the last dim and along the
 * first (strided), and matmul with K = 4096: an accumulator of the half dtype stalls
 * (f16 at 2048, bf16 at 256, where the spacing passes 1) far outside the bound. */
static void test_long_reduce(void **state) {
    ctx x = begin(state);
    enum { K = 4096 };
    if (strcmp(x.op, "matmul") == 0) {
        operand a = make_operand(&x, x.dt, S2(3, K), CONTIGUOUS, 0.5, 1);
        operand b = make_operand(&x, x.dt, S2(K, 2), CONTIGUOUS, 0.5, 1);
        bp_ref_result want = bp_ref_matmul(a.v, a.shape, b.v, b.shape, 0, 0);
        matmul_args args = {a.t, b.t, 0, 0};
        run_case(&x, "matmul with K = 4096 (an accumulator of the dtype stalls)", OUT_NEW,
                 NULL, S2(3, 2), call_matmul, &args, want);
        bp_ref_free(&want);
        operand_free(&a);
        operand_free(&b);
        return;
    }
    bp_ref_reduce_op op = strcmp(x.op, "sum") == 0 ? BP_REF_SUM : BP_REF_MEAN;
    const bp_ref_shape shapes[2] = {S2(2, K), S2(K, 3)};
    for (int i = 0; i < 2; i++) {
        int dim = i == 0 ? 1 : 0;
        operand a = make_operand(&x, x.dt, shapes[i], CONTIGUOUS, 0.5, 1);
        bp_ref_result want = bp_ref_reduce(op, a.v, shapes[i], dim, x.dt);
        char what[160];
        describe(what, sizeof what, "%s %s over 4096 values in [0.5, 1), x %s, dim %d",
                 x.op, bp_dtype_name(x.dt), str(shapes[i]).s, dim);
        reduce_args args = {op, a.t, dim, 0};
        run_case(&x, what, OUT_NEW, &a, bp_ref_reduced_shape(shapes[i], dim, 0), call_reduce,
                 &args, want);
        bp_ref_free(&want);
        operand_free(&a);
    }
}

/* A random i64 of magnitude in [2^60, 2^61) with random low bits (not a double). */
static int64_t wide_int(ctx *x) {
    int64_t v = ((int64_t)1 << 60) | (int64_t)(bp_conf_rand(&x->rng) >> 4);
    v |= 1; /* odd: no double holds it */
    return rand_int(x, 0, 1) ? v : -v;
}

/* Fails unless the i64 tensor t holds want[0..n) exactly. */
static void check_i64(const char *what, const bp_tensor *t, const int64_t *want, int64_t n) {
    int64_t got[64];
    BP_CONF_OK(bp_tensor_to_host(t, got, (size_t)n * sizeof got[0]));
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: element %lld is %lld, expected %lld (exact)", what, (long long)i,
                     (long long)got[i], (long long)want[i]);
}

/* add, sub, mul, sum and copy of i64 on values near 2^61 with odd low bits, where a
 * kernel going through double (53 bits) loses the last ones: results exact. */
static void test_i64_wide(void **state) {
    ctx x = begin(state);
    enum { N = 24 };
    int64_t a[N], b[N], want[N];
    for (int i = 0; i < N; i++) {
        a[i] = wide_int(&x);
        b[i] = wide_int(&x);
        if (strcmp(x.op, "mul") == 0) { /* |a b| < 2^62 */
            a[i] = (a[i] >> 30) | 1;
            b[i] = (b[i] >> 32) | 1;
        }
    }
    int64_t n = N;
    bp_tensor *ta = NULL, *tb = NULL, *out = NULL;
    BP_CONF_OK(bp_tensor_from_host(bp_conf.device, BP_DTYPE_I64, 1, &n, a, &ta));
    BP_CONF_OK(bp_tensor_from_host(bp_conf.device, BP_DTYPE_I64, 1, &n, b, &tb));
    if (strcmp(x.op, "sum") == 0) { /* rows of 3: |sum| < 2^63 */
        bp_tensor *rows = NULL;
        BP_CONF_OK(bp_tensor_reshape(ta, 2, (const int64_t[]){N / 3, 3}, &rows));
        BP_CONF_OK(bp_sum(rows, 1, 0, &out));
        for (int r = 0; r < N / 3; r++)
            want[r] = a[3 * r] + a[3 * r + 1] + a[3 * r + 2];
        n = N / 3;
        bp_tensor_release(rows);
    } else if (strcmp(x.op, "copy") == 0) { /* through a transposed view: the kernel */
        bp_tensor *m = NULL, *t = NULL;
        BP_CONF_OK(bp_tensor_reshape(ta, 2, (const int64_t[]){4, N / 4}, &m));
        BP_CONF_OK(bp_tensor_transpose(m, 0, 1, &t));
        BP_CONF_OK(bp_tensor_empty(bp_conf.device, BP_DTYPE_I64, 2,
                                   (const int64_t[]){N / 4, 4}, &out));
        BP_CONF_OK(bp_copy(out, t));
        for (int i = 0; i < N / 4; i++)
            for (int j = 0; j < 4; j++)
                want[i * 4 + j] = a[j * (N / 4) + i];
        bp_tensor_release(m);
        bp_tensor_release(t);
    } else {
        bp_ref_binary_op op = BP_REF_ADD;
        while (strcmp(bp_ref_binary_name(op), x.op) != 0)
            op++;
        BP_CONF_OK(bp_test_binary(op, ta, tb, NULL, &out));
        for (int i = 0; i < N; i++)
            want[i] = op == BP_REF_ADD ? a[i] + b[i] : op == BP_REF_SUB ? a[i] - b[i]
                                                                          : a[i] * b[i];
    }
    char what[96];
    describe(what, sizeof what, "%s i64 on values near 2^61 with odd low bits", x.op);
    check_i64(what, out, want, n);
    bp_tensor_release(ta);
    bp_tensor_release(tb);
    bp_tensor_release(out);
}

/* softmax of rows holding -inf and NaN: a row of -inf is 0, -inf entries are 0, a NaN
 * makes its row NaN; with causal, a row whose kept logits are all -inf is 0 and a NaN
 * among the masked ones changes nothing. */
static void test_softmax_nonfinite(void **state) {
    ctx x = begin(state);
    for (int causal = 0; causal <= 1; causal++) {
        bp_ref_shape s = S2(6, 9);
        double v[54];
        for (int i = 0; i < 54; i++)
            v[i] = bp_ref_round(rand_real(&x, -4, 4), x.dt);
        for (int j = 0; j < 9; j++)
            v[j] = -INFINITY; /* row 0: all -inf */
        v[9 + 2] = v[9 + 5] = -INFINITY;
        v[18 + (causal ? 1 : 4)] = NAN; /* row 2: a NaN (kept) */
        v[27] = -INFINITY, v[27 + 6] = NAN; /* row 3: causal keeps j <= 3 */
        v[36] = v[37] = -INFINITY;
        int64_t shape[2] = {6, 9};
        bp_tensor *a = bp_test_tensor_from_values(bp_conf.device, x.dt, 2, shape, v);
        bp_tensor *out = NULL;
        BP_CONF_OK(bp_softmax(a, 1.0f, causal, &out));
        bp_ref_result want = bp_ref_softmax(v, s, 1.0f, causal);
        char what[160];
        describe(what, sizeof what, "softmax %s of rows with -inf and NaN, causal %d",
                 bp_dtype_name(x.dt), causal);
        check_new(what, out, x.dt, s, want);
        bp_ref_free(&want);
        bp_tensor_release(a);
        bp_tensor_release(out);
    }
}

/* sdpa (causal) where keys give -inf scores (a -inf in k against a positive q) and NaN
 * ones: query rows that see only -inf keys are 0, -inf keys get no weight, a NaN key
 * poisons the rows that see it and no other, a NaN query its own row. Head dims 16 and
 * 64 (the flash kernels' size). */
static void test_sdpa_nonfinite(void **state) {
    ctx x = begin(state);
    const int64_t dims[2] = {16, 64};
    for (int c = 0; c < 2; c++) {
        bp_ref_sdpa_dims n = {1, 2, 1, 20, 20, dims[c]};
        int64_t qn = n.h * n.sq * n.d, kn = n.hkv * n.sk * n.d;
        double *q = bp_test_alloc_values(qn), *k = bp_test_alloc_values(kn),
               *v = bp_test_alloc_values(kn);
        for (int64_t i = 0; i < qn; i++)
            q[i] = bp_ref_round(i % n.d == 0 ? rand_real(&x, 0.5, 1) : rand_real(&x, -1, 1),
                                x.dt);
        for (int64_t i = 0; i < kn; i++) {
            k[i] = bp_ref_round(rand_real(&x, -1, 1), x.dt);
            v[i] = bp_ref_round(rand_real(&x, -1, 1), x.dt);
        }
        k[0 * n.d] = k[1 * n.d] = -INFINITY;  /* rows 0, 1 see only these: 0 */
        k[5 * n.d] = -INFINITY;               /* no weight */
        k[12 * n.d + 3] = NAN;                /* rows 12.. are NaN, rows before are not */
        q[(n.sq + 7) * n.d + 2] = NAN;        /* head 1, row 7 */
        int64_t qs[4] = {1, n.h, n.sq, n.d}, ks[4] = {1, n.hkv, n.sk, n.d};
        bp_tensor *tq = bp_test_tensor_from_values(bp_conf.device, x.dt, 4, qs, q);
        bp_tensor *tk = bp_test_tensor_from_values(bp_conf.device, x.dt, 4, ks, k);
        bp_tensor *tv = bp_test_tensor_from_values(bp_conf.device, x.dt, 4, ks, v), *out = NULL;
        bp_sdpa_attrs attrs = {.causal = 1};
        BP_CONF_OK(bp_sdpa(tq, tk, tv, NULL, &attrs, &out));
        bp_ref_result want = bp_ref_sdpa(n, &attrs, bp_ref_view4_contiguous(q, n.h, n.sq, n.d),
                                         bp_ref_view4_contiguous(k, n.hkv, n.sk, n.d),
                                         bp_ref_view4_contiguous(v, n.hkv, n.sk, n.d), NULL,
                                         x.dt);
        char what[160];
        describe(what, sizeof what, "sdpa %s causal, d %lld, keys giving -inf and NaN scores",
                 bp_dtype_name(x.dt), (long long)n.d);
        check_new(what, out, x.dt, S4(1, n.h, n.sq, n.d), want);
        bp_ref_free(&want);
        bp_tensor *all[] = {tq, tk, tv, out};
        for (int i = 0; i < 4; i++)
            bp_tensor_release(all[i]);
        free(q);
        free(k);
        free(v);
    }
}

/* ---- the group ---- */

static const char checks_fill[] =
    "fill writes the value converted to the dtype into contiguous, strided and empty tensors";
static const char checks_copy[] =
    "copy converts from every dtype, reads strided and broadcast sources, writes views";
static const char checks_cat[] =
    "cat along every dim matches the reference, with empty, strided parts and an _out view";
static const char checks_binary[] =
    "the op matches the reference with broadcasting, strided inputs and outputs, in place";
static const char checks_unary[] =
    "the op matches the reference on strided, empty and large-magnitude inputs, in place";
static const char checks_where[] =
    "where selects like the reference with broadcasting and strided cond and inputs";
static const char checks_reduce[] =
    "the reduction over each dim, keepdim or not, matches the reference, empty dims included";
static const char checks_softmax[] =
    "softmax with scale and causal masks matches the reference, logits near +-100 included";
static const char checks_norm[] =
    "the norm matches the reference with and without weight/bias, rows far from 0 included";
static const char checks_rope[] =
    "rope matches the reference for both pair layouts, offsets and strided inputs";
static const char checks_matmul[] =
    "matmul matches the reference with transposes, batch broadcasting, K = 0, strided views";
static const char checks_sdpa[] =
    "sdpa matches the reference for causal, window, softcap, ALiBi and grouped-query heads";
static const char checks_round_copy[] =
    "copy from every float and integer dtype rounds once to nearest even, bit for bit";
static const char checks_round_binary[] =
    "results at and next to rounding ties, subnormal, overflowing: nearest even, bit for bit";
static const char checks_long[] =
    "a reduction over K = 4096 half values is within the f32 accumulation's bound";
static const char checks_i64_wide[] =
    "i64 results on values near 2^61 with odd low bits are exact (no trip through double)";
static const char checks_nonfinite[] =
    "-inf rows give 0, -inf entries no weight, NaN poisons its row, a masked NaN nothing";

/* One test "<op>_<dtype>" running fn on that pair. */
#define OP_TEST(op, dt, DT, fn, checks) \
    {#op "_" #dt, fn, checks, &(op_case){#op, BP_DTYPE_##DT}},

#define FLOAT_DTYPES(X, op, fn, checks) \
    X(op, f32, F32, fn, checks) X(op, f16, F16, fn, checks) X(op, bf16, BF16, fn, checks)
#define ARITH_DTYPES(X, op, fn, checks) \
    FLOAT_DTYPES(X, op, fn, checks) X(op, i32, I32, fn, checks) X(op, i64, I64, fn, checks)
#define ALL_DTYPES(X, op, fn, checks)                                                       \
    FLOAT_DTYPES(X, op, fn, checks) X(op, f64, F64, fn, checks) X(op, i8, I8, fn, checks)   \
    X(op, u8, U8, fn, checks) X(op, i32, I32, fn, checks) X(op, i64, I64, fn, checks)       \
    X(op, bool, BOOL, fn, checks)

/* A numerics test "<op>_<dtype>_<what>" running fn on that pair. */
#define NUMERICS_TEST(op, dt, DT, what, fn, checks) \
    {#op "_" #dt "_" #what, fn, checks, &(op_case){#op, BP_DTYPE_##DT}},
#define HALF_DTYPES(op, what, fn, checks) \
    NUMERICS_TEST(op, f16, F16, what, fn, checks) NUMERICS_TEST(op, bf16, BF16, what, fn, checks)

/* The numerics tests, after the pairs' own. */
#define NUMERICS_TESTS                                                              \
    NUMERICS_TEST(copy, f32, F32, ties, test_round_copy, checks_round_copy)        \
    HALF_DTYPES(copy, ties, test_round_copy, checks_round_copy)                     \
    HALF_DTYPES(add, ties, test_round_binary, checks_round_binary)                  \
    HALF_DTYPES(sub, ties, test_round_binary, checks_round_binary)                  \
    HALF_DTYPES(mul, ties, test_round_binary, checks_round_binary)                  \
    HALF_DTYPES(div, ties, test_round_binary, checks_round_binary)                  \
    HALF_DTYPES(scale, ties, test_round_scale, checks_round_binary)                 \
    HALF_DTYPES(sum, long, test_long_reduce, checks_long)                           \
    HALF_DTYPES(mean, long, test_long_reduce, checks_long)                          \
    HALF_DTYPES(matmul, long, test_long_reduce, checks_long)                        \
    NUMERICS_TEST(add, i64, I64, wide, test_i64_wide, checks_i64_wide)             \
    NUMERICS_TEST(sub, i64, I64, wide, test_i64_wide, checks_i64_wide)             \
    NUMERICS_TEST(mul, i64, I64, wide, test_i64_wide, checks_i64_wide)             \
    NUMERICS_TEST(sum, i64, I64, wide, test_i64_wide, checks_i64_wide)             \
    NUMERICS_TEST(copy, i64, I64, wide, test_i64_wide, checks_i64_wide)            \
    FLOAT_DTYPES(NONFINITE, softmax, test_softmax_nonfinite, checks_nonfinite)     \
    FLOAT_DTYPES(NONFINITE, sdpa, test_sdpa_nonfinite, checks_nonfinite)
#define NONFINITE(op, dt, DT, fn, checks) NUMERICS_TEST(op, dt, DT, nonfinite, fn, checks)

/* The pairs of ops/cpu/<file>.list, in the order of docs/ops.md's dtype table. */
static const bp_conf_test ops_tests[] = {
    ALL_DTYPES(OP_TEST, fill, test_fill, checks_fill)
    ALL_DTYPES(OP_TEST, copy, test_copy, checks_copy)
    ALL_DTYPES(OP_TEST, cat, test_cat, checks_cat)
    ARITH_DTYPES(OP_TEST, add, test_binary, checks_binary)
    ARITH_DTYPES(OP_TEST, sub, test_binary, checks_binary)
    ARITH_DTYPES(OP_TEST, mul, test_binary, checks_binary)
    FLOAT_DTYPES(OP_TEST, div, test_binary, checks_binary)
    FLOAT_DTYPES(OP_TEST, scale, test_unary, checks_unary)
    FLOAT_DTYPES(OP_TEST, exp, test_unary, checks_unary)
    FLOAT_DTYPES(OP_TEST, tanh, test_unary, checks_unary)
    FLOAT_DTYPES(OP_TEST, silu, test_unary, checks_unary)
    FLOAT_DTYPES(OP_TEST, gelu, test_unary, checks_unary)
    ALL_DTYPES(OP_TEST, where, test_where, checks_where)
    ARITH_DTYPES(OP_TEST, sum, test_reduce, checks_reduce)
    ARITH_DTYPES(OP_TEST, max, test_reduce, checks_reduce)
    FLOAT_DTYPES(OP_TEST, mean, test_reduce, checks_reduce)
    FLOAT_DTYPES(OP_TEST, softmax, test_softmax, checks_softmax)
    FLOAT_DTYPES(OP_TEST, rmsnorm, test_norm, checks_norm)
    FLOAT_DTYPES(OP_TEST, layernorm, test_norm, checks_norm)
    FLOAT_DTYPES(OP_TEST, rope, test_rope, checks_rope)
    FLOAT_DTYPES(OP_TEST, matmul, test_matmul, checks_matmul)
    FLOAT_DTYPES(OP_TEST, sdpa, test_sdpa, checks_sdpa)
    NUMERICS_TESTS
};

const bp_conf_group bp_conf_group_ops = {
    .name = "ops",
    .summary = "every (op, dtype) the device registers against the float64 reference",
    .tests = ops_tests,
    .n_tests = sizeof ops_tests / sizeof ops_tests[0],
    .timeout_s = 300,
};
