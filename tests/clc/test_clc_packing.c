/* backends/clc's argument packing, shared by the opencl and xpu plugins, against the
 * kernels it launches: every registered (op, dtype) runs its representative calls
 * (clc_scenarios.h) on a recording fake device, and every launch is checked against
 * the kernel's signature read from the embedded SPIR-V module of its variant (the
 * module the xpu plugin loads, built from the sources the opencl plugin builds):
 * the argument count, each argument's kind and size, and the work sizes. Then the
 * error paths of clc_ops.c that a device can trigger. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "clc_scenarios.h"
#include "clc_signatures.h"

/* What a run of every case found. */
typedef struct findings {
    int failures;
    int launches, moves;
    bool launched[CLC_PROG_COUNT][CLC_MAX_KERNELS]; /* every kernel seen launched */
} findings;

static void problem(findings *f, const clc_case *c, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s %s (%s): %s\n", c->op, fake_dtype_name(c->dtype), c->name, msg);
    f->failures++;
}

/* Argument i against parameter p. */
static void check_arg(findings *f, const clc_case *c, const fake_launch *l, int i,
                      const spv_param *p, const char *kernel) {
    const char *kind = spv_param_kind_name(p->kind);
    switch (p->kind) {
    case SPV_PARAM_GLOBAL: {
        void *handle = NULL;
        if (l->local[i] || l->size[i] != sizeof handle) {
            problem(f, c, "%s arg %d (%s): %zu bytes%s, want a %zu-byte handle", kernel, i, kind,
                    l->size[i], l->local[i] ? " of local memory" : "", sizeof handle);
            return;
        }
        memcpy(&handle, l->value[i], sizeof handle);
        if (fake_alloc_of_handle(handle) < 0)
            problem(f, c, "%s arg %d (%s): %p is no buffer of the device", kernel, i, kind, handle);
        return;
    }
    case SPV_PARAM_LOCAL:
        if (!l->local[i] || l->size[i] == 0 || l->size[i] % sizeof(float) != 0)
            problem(f, c, "%s arg %d (%s): %zu bytes%s, want local memory of whole floats",
                    kernel, i, kind, l->size[i], l->local[i] ? "" : " with a value");
        return;
    case SPV_PARAM_BYVAL: {
        if (l->local[i] || l->size[i] != p->size) {
            problem(f, c, "%s arg %d (%s of %zu bytes): %zu bytes%s", kernel, i, kind, p->size,
                    l->size[i], l->local[i] ? " of local memory" : "");
            return;
        }
        /* kernels/prelude.cl's tdesc: off, ndim, shape[8], stride[8] */
        int64_t off, ndim;
        memcpy(&off, l->value[i], sizeof off);
        memcpy(&ndim, l->value[i] + sizeof off, sizeof ndim);
        if (off < 0 || ndim < 1 || ndim > BP_KERNEL_MAX_DIMS)
            problem(f, c, "%s arg %d: a tdesc with offset %lld and %lld dims", kernel, i,
                    (long long)off, (long long)ndim);
        return;
    }
    case SPV_PARAM_SCALAR:
        if (l->local[i] || l->size[i] != p->size)
            problem(f, c, "%s arg %d (%zu-byte %s): %zu bytes%s", kernel, i, p->size, kind,
                    l->size[i], l->local[i] ? " of local memory" : "");
        return;
    default:
        problem(f, c, "%s arg %d: a parameter kind the packing does not know", kernel, i);
    }
}

/* Every kernel writes its first argument: the call's output (allocation 0 in every
 * case), of elements of the call's dtype (the variant asked for is the dtype's). */
static void check_output(findings *f, const clc_case *c, const fake_launch *l,
                         const spv_kernel *k) {
    void *handle = NULL;
    if (k->nparams == 0 || k->params[0].kind != SPV_PARAM_GLOBAL || l->local[0] ||
        l->size[0] != sizeof handle) {
        problem(f, c, "%s: its first parameter is not the output buffer", k->name);
        return;
    }
    memcpy(&handle, l->value[0], sizeof handle);
    if (fake_alloc_of_handle(handle) != 0)
        problem(f, c, "%s: arg 0 is a buffer of allocation %d, not the output's", k->name,
                fake_alloc_of_handle(handle));
    if (k->params[0].pointee_size != fake_dtype_size(c->dtype))
        problem(f, c, "%s: writes %zu-byte elements; the output's are %zu bytes", k->name,
                k->params[0].pointee_size, fake_dtype_size(c->dtype));
}

static void check_work_sizes(findings *f, const clc_case *c, const fake_launch *l,
                             const spv_kernel *k) {
    size_t items = 1;
    for (unsigned d = 0; d < l->dims; d++) {
        size_t g = l->global[d], lo = l->local_size[d];
        if (lo == 0 || g == 0 || g % lo != 0)
            problem(f, c, "%s: global size %zu is not a positive multiple of local %zu (dim %u)",
                    k->name, g, lo, d);
        items *= lo;
        if (k->has_local_size && lo != k->local_size[d])
            problem(f, c, "%s: local size %zu in dim %u; the kernel requires %u", k->name, lo, d,
                    k->local_size[d]);
    }
    for (unsigned d = l->dims; d < 3 && k->has_local_size; d++)
        if (k->local_size[d] != 1)
            problem(f, c, "%s: %u dims launched; the kernel requires %u in dim %u", k->name,
                    l->dims, k->local_size[d], d);
    if (items > CLC_FIXED_MIN_WG)
        problem(f, c, "%s: work-groups of %zu items; modules may count on %d", k->name, items,
                CLC_FIXED_MIN_WG);
}

static void check_launch(findings *f, const clc_case *c, const fake_device *dev,
                         const fake_launch *l) {
    if (l->kernel < 0 || l->kernel >= dev->rec.nkernels) {
        problem(f, c, "launch of a kernel the device never gave");
        return;
    }
    const fake_kernel *fk = &dev->rec.kernels[l->kernel];
    char why[300];
    const spv_kernel *k = clc_sig_kernel(fk->program, fk->variant, dev->fp64, fk->name, why,
                                         sizeof why);
    if (!k) {
        problem(f, c, "%s", why);
        return;
    }
    int index = clc_kernel_index(fk->program, fk->name);
    if (index >= 0)
        f->launched[fk->program][index] = true;
    if (l->nargs != k->nparams) {
        problem(f, c, "%s launched with %d arguments; it has %d parameters", k->name, l->nargs,
                k->nparams);
        return;
    }
    size_t local_bytes = 0;
    for (int i = 0; i < l->nargs; i++) {
        check_arg(f, c, l, i, &k->params[i], k->name);
        local_bytes += l->local[i] ? l->size[i] : 0;
    }
    if (local_bytes > dev->clc.local_mem)
        problem(f, c, "%s: %zu bytes of local memory arguments; the device has %llu", k->name,
                local_bytes, (unsigned long long)dev->clc.local_mem);
    check_output(f, c, l, k);
    check_work_sizes(f, c, l, k);
}

static void check_move(findings *f, const clc_case *c, const fake_move *m) {
    if (fake_alloc_of_handle(m->dst) < 0 || (!m->is_fill && fake_alloc_of_handle(m->src) < 0)) {
        problem(f, c, "a %s between buffers the device does not have", m->is_fill ? "fill" : "copy");
        return;
    }
    if (!m->is_fill)
        return;
    size_t es = fake_dtype_size(c->dtype);
    unsigned char want[8];
    memset(want, FAKE_FILL_BYTE, sizeof want);
    if (m->pattern_size != es || m->bytes % es != 0 || m->dst_offset % es != 0 ||
        memcmp(&m->pattern, want, es) != 0)
        problem(f, c, "fill of %zu bytes at %zu with a %zu-byte pattern, want the host's %zu-byte "
                "value", m->bytes, m->dst_offset, m->pattern_size, es);
}

static void check_case(const clc_case *c, const fake_device *dev, void *ctx) {
    findings *f = ctx;
    const fake_record *rec = &dev->rec;
    if (c->status != BP_OK) {
        problem(f, c, "status %d: %s", (int)c->status, rec->error);
        return;
    }
    int work = rec->nlaunches + rec->nmoves;
    if (c->empty && (work || rec->nkernels))
        problem(f, c, "nothing to compute, yet %d launches, %d fills or copies, %d kernels",
                rec->nlaunches, rec->nmoves, rec->nkernels);
    if (!c->empty && work == 0)
        problem(f, c, "nothing enqueued");
    for (int i = 0; i < rec->nlaunches; i++)
        check_launch(f, c, dev, &rec->launches[i]);
    for (int i = 0; i < rec->nmoves; i++)
        check_move(f, c, &rec->moves[i]);
    f->launches += rec->nlaunches;
    f->moves += rec->nmoves;
}

static fake_device device; /* large: its record keeps every argument */

static bool have_modules(void) {
    if (clc_spirv_module_count > 0)
        return true;
    print_message("skipped: this build embeds no SPIR-V modules (see the configure output)\n");
    return false;
}

static void run_all(bool fp64, findings *f) {
    fake_device_init(&device, fp64, 64 * 1024);
    char why[200] = "";
    int calls = clc_run_all_cases(&device, check_case, f, why, sizeof why);
    if (calls < 0)
        fail_msg("%s", why);
    print_message("%d calls on a device %s fp64: %d launches, %d fills and copies checked\n",
                  calls, fp64 ? "with" : "without", f->launches, f->moves);
    assert_int_equal(f->failures, 0);
}

static void test_launches_match_kernels_fp64(void **state) {
    (void)state;
    if (!have_modules())
        return;
    findings f = {0};
    run_all(true, &f);
    /* The cases reach every kernel of every program. */
    for (int p = 0; p < CLC_PROG_COUNT; p++)
        for (int k = 0; clc_programs[p].kernels[k]; k++)
            if (!f.launched[p][k])
                fail_msg("no case launches %s's %s", clc_programs[p].name,
                         clc_programs[p].kernels[k]);
}

static void test_launches_match_kernels_no_fp64(void **state) {
    (void)state;
    if (!have_modules())
        return;
    findings f = {0};
    run_all(false, &f);
}

/* ---- errors ---- */

static bp_status add_f32(fake_device *dev, const bp_tensor_desc *out, const bp_tensor_desc *a,
                         const bp_tensor_desc *b) {
    assert_int_equal(fake_register(), BP_OK);
    return fake_call(dev, "add", BP_DTYPE_F32, NULL, 0, 2, (const bp_tensor_desc *const[]){a, b},
                     out);
}

static void assert_nothing_enqueued(const fake_device *dev) {
    assert_int_equal(dev->rec.nlaunches, 0);
    assert_int_equal(dev->rec.nmoves, 0);
}

static void test_translate_failure(void **state) {
    (void)state;
    fake_device_init(&device, true, 64 * 1024);
    device.fail_translate = true;
    int64_t shape[1] = {8};
    bp_tensor_desc t = fake_tensor(BP_DTYPE_F32, 0, 0, 1, shape);
    assert_int_equal(add_f32(&device, &t, &t, &t), BP_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(device.rec.error, "add: "));
    assert_non_null(strstr(device.rec.error, "is not fake device memory"));
    assert_nothing_enqueued(&device);
}

/* An input that starts inside an element of its buffer. */
static void test_misaligned_offset(void **state) {
    (void)state;
    fake_device_init(&device, true, 64 * 1024);
    int64_t shape[1] = {8};
    bp_tensor_desc out = fake_tensor(BP_DTYPE_F32, 0, 0, 1, shape), a = out, b = out;
    a.data = fake_addr(1, 6);
    assert_int_equal(add_f32(&device, &out, &a, &b), BP_ERR_INVALID_ARGUMENT);
    assert_string_equal(device.rec.error,
                        "fake:0: add: the tensor's data is at byte 6 of its buffer, not a "
                        "multiple of its 4-byte elements");
    assert_nothing_enqueued(&device);
}

static void test_get_kernel_failure(void **state) {
    (void)state;
    fake_device_init(&device, true, 64 * 1024);
    device.fail_get_kernel = true;
    int64_t shape[1] = {8};
    bp_tensor_desc t = fake_tensor(BP_DTYPE_F32, 0, 0, 1, shape);
    assert_int_equal(add_f32(&device, &t, &t, &t), BP_ERR_BACKEND);
    assert_non_null(strstr(device.rec.error, "does not build"));
    assert_nothing_enqueued(&device);
}

/* Every op, in every case, reports the device's failure and enqueues nothing. */
typedef struct failing {
    bp_status want;
    int failures, failed;
} failing;

static void check_failing_case(const clc_case *c, const fake_device *dev, void *ctx) {
    failing *f = ctx;
    bool ok = c->status == BP_OK && dev->rec.nlaunches == 0;
    bool failed = c->status == f->want && dev->rec.nerrors > 0 && dev->rec.nlaunches == 0 &&
                  dev->rec.nmoves == 0;
    /* translate fails for any tensor with elements; get_kernel only where a kernel runs */
    if (!(failed || (ok && (c->empty || f->want == BP_ERR_BACKEND)))) {
        print_error("%s %s (%s): status %d, %d launches, %d fills and copies, error \"%s\"\n",
                    c->op, fake_dtype_name(c->dtype), c->name, (int)c->status, dev->rec.nlaunches,
                    dev->rec.nmoves, dev->rec.error);
        f->failures++;
    }
    f->failed += failed;
}

static void run_failing(bool fail_translate, bp_status want) {
    fake_device_init(&device, true, 64 * 1024);
    device.fail_translate = fail_translate;
    device.fail_get_kernel = !fail_translate;
    failing f = {want, 0, 0};
    char why[200] = "";
    int calls = clc_run_all_cases(&device, check_failing_case, &f, why, sizeof why);
    if (calls < 0)
        fail_msg("%s", why);
    print_message("%d of %d calls failed as the device did\n", f.failed, calls);
    assert_int_equal(f.failures, 0);
    assert_true(f.failed > 0);
}

static void test_every_op_reports_translate_failure(void **state) {
    (void)state;
    run_failing(true, BP_ERR_INVALID_ARGUMENT);
}

static void test_every_op_reports_get_kernel_failure(void **state) {
    (void)state;
    run_failing(false, BP_ERR_BACKEND);
}

static bp_status sdpa_f32(fake_device *dev, int64_t sq, int64_t d) {
    assert_int_equal(fake_register(), BP_OK);
    int64_t qs[4] = {1, 2, sq, d}, kvs[4] = {1, 2, 8, d};
    bp_tensor_desc out = fake_tensor(BP_DTYPE_F32, 0, 0, 4, qs),
                   q = fake_tensor(BP_DTYPE_F32, 1, 0, 4, qs),
                   k = fake_tensor(BP_DTYPE_F32, 2, 0, 4, kvs),
                   v = fake_tensor(BP_DTYPE_F32, 3, 0, 4, kvs);
    bp_sdpa_attrs a = {0};
    return fake_call(dev, "sdpa", BP_DTYPE_F32, &a, sizeof a, 3,
                     (const bp_tensor_desc *const[]){&q, &k, &v}, &out);
}

/* A head dim whose row does not fit the device's local memory. */
static void test_sdpa_head_dim_too_large(void **state) {
    (void)state;
    /* k_sdpa needs (2 D + 2 RWG) floats besides the 4096 bytes clc keeps back: a device
     * with room for D = 64 and no more */
    fake_device_init(&device, true, 4096 + (2 * 64 + 2 * CLC_FIXED_RWG) * sizeof(float));
    assert_int_equal(sdpa_f32(&device, 4, 64), BP_OK);
    assert_int_equal(device.rec.nlaunches, 1);
    assert_string_equal(device.rec.kernels[0].name, "k_sdpa");
    assert_int_equal(sdpa_f32(&device, 4, 128), BP_ERR_UNSUPPORTED);
    char want[200];
    snprintf(want, sizeof want,
             "fake:0: sdpa: head dim 128 needs %zu bytes of local memory; the device has %zu",
             (2 * 128 + 2 * CLC_FIXED_RWG) * sizeof(float),
             (size_t)(4096 + (2 * 64 + 2 * CLC_FIXED_RWG) * sizeof(float)));
    assert_string_equal(device.rec.error, want);
    assert_nothing_enqueued(&device);
    assert_int_equal(device.rec.nkernels, 0);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launches_match_kernels_fp64),
        cmocka_unit_test(test_launches_match_kernels_no_fp64),
        cmocka_unit_test(test_translate_failure),
        cmocka_unit_test(test_misaligned_offset),
        cmocka_unit_test(test_get_kernel_failure),
        cmocka_unit_test(test_every_op_reports_translate_failure),
        cmocka_unit_test(test_every_op_reports_get_kernel_failure),
        cmocka_unit_test(test_sdpa_head_dim_too_large),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
