/* Representative calls of every op backends/clc registers (clc_scenarios.h). Tensors
 * live in the fake allocations: the output in allocation 0, inputs in 1, 2, 3, ...;
 * some start a few elements into theirs so that descriptors carry an offset. */
#include "clc_scenarios.h"

#include <stdio.h>
#include <string.h>

typedef struct runner {
    fake_device *dev;
    const char *op;
    bp_dtype dt;
    clc_case_fn each;
    void *ctx;
    int calls;
} runner;

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof SHAPE(__VA_ARGS__) / sizeof(int64_t)))
/* A contiguous tensor of dtype dt in allocation `alloc`, `off` elements in. */
#define TD(dt, alloc, off, ...) fake_tensor((dt), (alloc), (off), NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))
/* The same, of the op's dtype. */
#define T(alloc, off, ...) TD(r->dt, alloc, off, __VA_ARGS__)
#define INS(...) ((const bp_tensor_desc *const[]){__VA_ARGS__})
#define NINS(...) ((int)(sizeof INS(__VA_ARGS__) / sizeof(const bp_tensor_desc *)))
/* Calls the op with attrs (a pointer to a struct, or NULL), output `out`, the inputs. */
#define CALL(name, empty, attrs, out, ...) \
    run(r, name, empty, attrs, sizeof *(attrs), out, NINS(__VA_ARGS__), INS(__VA_ARGS__))

static void run(runner *r, const char *name, bool empty, const void *attrs, size_t attrs_size,
                const bp_tensor_desc *out, int n_in, const bp_tensor_desc *const *ins) {
    clc_case c = {r->op, r->dt, name, empty, BP_OK};
    c.status = fake_call(r->dev, r->op, r->dt, attrs, attrs_size, n_in, ins, out);
    r->each(&c, r->dev, r->ctx);
    r->calls++;
}

/* An op without attributes. */
static const struct no_attrs {
    char unused;
} *const none = NULL;

static void binary(runner *r) {
    bp_tensor_desc out = T(0, 0, 4, 8), a = T(1, 0, 4, 8), b = T(2, 0, 4, 8);
    CALL("contiguous", false, none, &out, &a, &b);
    bp_tensor_desc at = fake_transposed(T(1, 3, 8, 4)), row = T(2, 5, 8);
    CALL("transposed and broadcast", false, none, &out, &at, &row);
    CALL("in place", false, none, &out, &out, &b);
    bp_tensor_desc e = T(0, 0, 0, 8);
    CALL("empty", true, none, &e, &e, &e);
}

static void unary(runner *r) {
    bp_scale_attrs scale = {2.0};
    bp_gelu_attrs gelu = {1};
    const void *attrs = strcmp(r->op, "scale") == 0 ? (const void *)&scale
                        : strcmp(r->op, "gelu") == 0 ? (const void *)&gelu
                                                     : NULL;
    size_t size = strcmp(r->op, "scale") == 0 ? sizeof scale : sizeof gelu;
    bp_tensor_desc out = T(0, 0, 4, 8), in = T(1, 0, 4, 8);
    run(r, "contiguous", false, attrs, size, &out, 1, INS(&in));
    bp_tensor_desc it = fake_transposed(T(1, 2, 8, 4));
    run(r, "transposed", false, attrs, size, &out, 1, INS(&it));
    run(r, "no attributes", false, NULL, 0, &out, 1, INS(&in));
    bp_tensor_desc e = T(0, 0, 4, 0);
    run(r, "empty", true, attrs, size, &e, 1, INS(&e));
}

static void fill(runner *r) {
    bp_fill_attrs v = {1.5};
    bp_tensor_desc out = T(0, 0, 4, 8);
    run(r, "contiguous", false, &v, sizeof v, &out, 0, NULL);
    bp_tensor_desc cols = T(0, 2, 4, 8);
    cols.shape[1] = 3; /* columns 2..4 of a 4 x 8 matrix */
    run(r, "strided", false, &v, sizeof v, &cols, 0, NULL);
    bp_tensor_desc e = T(0, 0, 0);
    run(r, "empty", true, &v, sizeof v, &e, 0, NULL);
}

static void copy(runner *r) {
    bp_tensor_desc out = T(0, 0, 4, 8), in = T(1, 0, 4, 8);
    CALL("contiguous", false, none, &out, &in);
    bp_tensor_desc it = fake_transposed(T(1, 0, 8, 4));
    CALL("transposed", false, none, &out, &it);
    bp_tensor_desc row = T(1, 1, 8);
    CALL("broadcast", false, none, &out, &row);
    bp_tensor_desc lo = T(0, 0, 16), hi = T(0, 4, 16);
    CALL("overlapping ranges of one buffer", false, none, &lo, &hi);
    bp_dtype other = r->dt == BP_DTYPE_F32 ? BP_DTYPE_I32 : BP_DTYPE_F32;
    bp_tensor_desc conv = TD(other, 1, 0, 4, 8);
    CALL("another dtype", false, none, &out, &conv);
    bp_tensor_desc convt = fake_transposed(TD(other, 1, 0, 8, 4));
    CALL("another dtype, transposed", false, none, &out, &convt);
    bp_tensor_desc e = T(0, 0, 0, 8), econv = TD(other, 1, 0, 0, 8);
    CALL("empty", true, none, &e, &e);
    CALL("empty, another dtype", true, none, &e, &econv);
}

static void cat(runner *r) {
    bp_cat_attrs d1 = {1}, d0 = {0};
    bp_tensor_desc out = T(0, 0, 4, 8), a = T(1, 0, 4, 3), none_ = T(2, 0, 4, 0),
                   b = T(3, 0, 4, 5);
    CALL("along columns, one input empty", false, &d1, &out, &a, &none_, &b);
    bp_tensor_desc top = T(1, 0, 2, 8), bottom = T(2, 0, 2, 8);
    CALL("along rows", false, &d0, &out, &top, &bottom);
    bp_tensor_desc e = T(0, 0, 0, 8), ea = T(1, 0, 0, 8);
    CALL("empty", true, &d0, &e, &ea, &ea);
}

static void where(runner *r) {
    bp_tensor_desc out = T(0, 0, 4, 8), c = TD(BP_DTYPE_BOOL, 1, 0, 4, 8), a = T(2, 0, 4, 8),
                   b = T(3, 2, 8);
    CALL("broadcast", false, none, &out, &c, &a, &b);
    bp_tensor_desc e = T(0, 0, 0, 8), ce = TD(BP_DTYPE_BOOL, 1, 0, 0, 8);
    CALL("empty", true, none, &e, &ce, &e, &e);
}

static void reduce(runner *r) {
    bp_reduce_attrs last = {1, 1}, first = {0, 0};
    bp_tensor_desc in = T(1, 0, 4, 8), kept = T(0, 0, 4, 1), cols = T(0, 0, 8);
    CALL("last dim, kept", false, &last, &kept, &in);
    CALL("first dim (strided rows)", false, &first, &cols, &in);
    bp_tensor_desc zero_len = T(1, 0, 4, 0), four = T(0, 0, 4);
    CALL("rows of no elements", false, &last, &four, &zero_len);
    bp_tensor_desc e = T(1, 0, 0, 8), eo = T(0, 0, 0, 1);
    CALL("empty", true, &last, &eo, &e);
}

static void softmax(runner *r) {
    bp_softmax_attrs a = {0.5f, 1};
    bp_tensor_desc out = T(0, 0, 2, 3, 8), in = T(1, 0, 2, 3, 8);
    CALL("causal", false, &a, &out, &in);
    bp_tensor_desc it = fake_transposed(T(1, 0, 2, 8, 3));
    CALL("transposed", false, &a, &out, &it);
    bp_tensor_desc e = T(0, 0, 0, 8);
    CALL("empty", true, &a, &e, &e);
}

static void norm(runner *r) {
    bp_norm_attrs a = {1e-5f};
    bool layer = strcmp(r->op, "layernorm") == 0;
    bp_tensor_desc out = T(0, 0, 4, 8), in = T(1, 0, 4, 8), w = T(2, 1, 8), b = T(3, 0, 8);
    CALL("no weight", false, &a, &out, &in);
    CALL("weight", false, &a, &out, &in, &w);
    if (layer) {
        CALL("weight and bias", false, &a, &out, &in, &w, &b);
        CALL("bias without weight", false, &a, &out, &in, NULL, &b);
    }
    bp_tensor_desc it = fake_transposed(T(1, 0, 8, 4));
    CALL("transposed input", false, &a, &out, &it, &w);
    bp_tensor_desc e = T(0, 0, 0, 8);
    CALL("empty", true, &a, &e, &e, &w);
}

static void rope(runner *r) {
    bp_rope_attrs halves = {10000.0f, 3, 0}, pairs = {500000.0f, 0, 1};
    bp_tensor_desc out = T(0, 0, 1, 2, 4, 8), in = T(1, 0, 1, 2, 4, 8);
    CALL("halves", false, &halves, &out, &in);
    CALL("pairs", false, &pairs, &out, &in);
    bp_tensor_desc e = T(0, 0, 1, 2, 0, 8);
    CALL("empty", true, &halves, &e, &e);
}

static void matmul(runner *r) {
    bp_matmul_attrs plain = {0, 0}, ta = {1, 0}, tb = {0, 1};
    bp_tensor_desc out = T(0, 0, 4, 6), a = T(1, 0, 4, 8), b = T(2, 0, 8, 6);
    CALL("plain", false, &plain, &out, &a, &b);
    bp_tensor_desc at = T(1, 0, 8, 4), bt = T(2, 0, 6, 8);
    CALL("transposed a", false, &ta, &out, &at, &b);
    CALL("transposed b", false, &tb, &out, &a, &bt);
    bp_tensor_desc av = fake_transposed(at);
    CALL("transposed view of a", false, &plain, &out, &av, &b);
    bp_tensor_desc bout = T(0, 0, 3, 2, 4, 6), ba = T(1, 0, 2, 4, 8), bb = T(2, 0, 3, 1, 8, 6);
    CALL("batched, broadcast", false, &plain, &bout, &ba, &bb);
    bp_tensor_desc k0a = T(1, 0, 4, 0), k0b = T(2, 0, 0, 6);
    CALL("k = 0", false, &plain, &out, &k0a, &k0b);
    bp_tensor_desc e = T(0, 0, 0, 6), ea = T(1, 0, 0, 8);
    CALL("empty", true, &plain, &e, &ea, &b);
}

static void sdpa(runner *r) {
    bp_sdpa_attrs plain = {0}, masked = {0.25f, 1, 8, 30.0f, 0}, alibi = {0, 0, 0, 0, 1};
    /* q: 2 heads, kv: 1 head (grouped); 32 query rows take the rows kernel */
    bp_tensor_desc q = T(1, 0, 1, 2, 32, 16), k = T(2, 0, 1, 1, 24, 16),
                   v = T(3, 0, 1, 1, 24, 16), out = T(0, 0, 1, 2, 32, 16);
    CALL("many rows", false, &plain, &out, &q, &k, &v);
    CALL("many rows, causal window softcap", false, &masked, &out, &q, &k, &v);
    bp_tensor_desc slopes = TD(BP_DTYPE_F32, 4, 0, 2);
    CALL("many rows, alibi", false, &alibi, &out, &q, &k, &v, &slopes);
    bp_tensor_desc q2 = T(1, 0, 1, 2, 2, 16), out2 = T(0, 0, 1, 2, 2, 16);
    CALL("few rows", false, &plain, &out2, &q2, &k, &v);
    CALL("few rows, alibi", false, &alibi, &out2, &q2, &k, &v, &slopes);
    /* head dim 256: the rows kernel's staging does not fit 64 KiB */
    bp_tensor_desc qd = T(1, 0, 1, 2, 32, 256), kd = T(2, 0, 1, 1, 24, 256),
                   vd = T(3, 0, 1, 1, 24, 256), outd = T(0, 0, 1, 2, 32, 256);
    CALL("head dim too large for the rows kernel", false, &plain, &outd, &qd, &kd, &vd);
    bp_tensor_desc qe = T(1, 0, 1, 2, 0, 16), oute = T(0, 0, 1, 2, 0, 16);
    CALL("empty", true, &plain, &oute, &qe, &k, &v);
}

typedef struct op_cases {
    const char *op;
    void (*run)(runner *r);
} op_cases;

static const op_cases cases[] = {
    {"fill", fill},       {"copy", copy},         {"cat", cat},           {"where", where},
    {"add", binary},      {"sub", binary},        {"mul", binary},        {"div", binary},
    {"scale", unary},     {"exp", unary},         {"tanh", unary},        {"silu", unary},
    {"gelu", unary},      {"sum", reduce},        {"max", reduce},        {"mean", reduce},
    {"softmax", softmax}, {"rmsnorm", norm},      {"layernorm", norm},    {"rope", rope},
    {"matmul", matmul},   {"sdpa", sdpa},
};

int clc_run_all_cases(fake_device *dev, clc_case_fn each, void *ctx, char *why,
                      size_t why_size) {
    bp_status st = fake_register();
    if (st != BP_OK) {
        snprintf(why, why_size, "clc_register_kernels failed (%d)", (int)st);
        return -1;
    }
    const fake_host *host = fake_host_get();
    runner r = {.dev = dev, .each = each, .ctx = ctx};
    for (int i = 0; i < host->nregistered; i++) {
        const fake_registration *reg = &host->registered[i];
        if (reg->dtype == BP_DTYPE_F64 && !dev->fp64)
            continue;
        const op_cases *c = NULL;
        for (size_t k = 0; k < sizeof cases / sizeof cases[0] && !c; k++)
            if (strcmp(cases[k].op, reg->op) == 0)
                c = &cases[k];
        if (!c) {
            snprintf(why, why_size, "clc registers op \"%s\", which has no cases in %s", reg->op,
                     __FILE__);
            return -1;
        }
        r.op = reg->op;
        r.dt = reg->dtype;
        c->run(&r);
    }
    return r.calls;
}
