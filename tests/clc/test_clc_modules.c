/* The SPIR-V modules embedded in backends/clc (clc_spirv.c, generated at build time):
 * each is SPIR-V of a version the runtimes take, validates (spirv-val, when the build
 * found it: SPIRV_VAL), and holds exactly its program's kernels; and every kernel that
 * the registered op kernels ask a device for, found by running every registered
 * (op, dtype) on a recording fake device (clc_scenarios.h) with and without fp64, is
 * in the module clc_spirv_find picks for it, and every kernel of a module is one of its
 * program's (clc_programs.c). No module is left that nothing picks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clc_scenarios.h"
#include "clc_signatures.h"

/* The newest SPIR-V that the runtimes the modules are for take: Intel's OpenCL CPU
 * runtime reports 1.0 to 1.4; Level Zero GPU drivers take 1.0 and up. */
#define NEWEST_VERSION 0x00010400u

static bool have_modules(void) {
    if (clc_spirv_module_count > 0)
        return true;
    print_message("skipped: this build embeds no SPIR-V modules (see the configure output)\n");
    return false;
}

static const char *module_name(const clc_module *m, char *buf, size_t size) {
    const clc_program_def *def = &clc_programs[m->program];
    snprintf(buf, size, "%s %s%d%s", def->name, def->by_size ? "esize " : "dtype ", m->variant,
             m->fp64 ? " fp64" : "");
    return buf;
}

static void test_modules_are_spirv_of_their_program(void **state) {
    (void)state;
    if (!have_modules())
        return;
    for (size_t i = 0; i < clc_spirv_module_count; i++) {
        const clc_module *m = &clc_spirv_modules[i];
        assert_true((unsigned)m->program < CLC_PROG_COUNT);
        const clc_program_def *def = &clc_programs[m->program];
        char name[64], why[300];
        module_name(m, name, sizeof name);
        if (def->by_size)
            assert_true(m->variant == 1 || m->variant == 2 || m->variant == 4 || m->variant == 8);
        else
            assert_true(m->variant >= 0 && m->variant < BP_DTYPE_COUNT);
        assert_non_null(m->spirv);
        assert_true(m->size >= 20 && m->size % 4 == 0);
        uint32_t magic;
        memcpy(&magic, m->spirv, sizeof magic);
        if (magic != SPV_MAGIC)
            fail_msg("%s: magic 0x%08x", name, magic);
        const spv_module *read = clc_sig_module(i, why, sizeof why);
        if (!read)
            fail_msg("%s", why);
        if (read->version < 0x00010000u || read->version > NEWEST_VERSION)
            fail_msg("%s: SPIR-V version 0x%08x", name, read->version);
        /* only its program's kernels (clc_programs.c); a variant may lack some (the
         * integer elemwise has no k_unary): test_requested_kernels_have_modules checks
         * that the kernels asked for are there */
        if (read->nkernels == 0)
            fail_msg("%s: no kernels", name);
        for (int k = 0; k < read->nkernels; k++)
            if (clc_kernel_index(m->program, read->kernels[k].name) < 0)
                fail_msg("%s: kernel %s is not in program %s's list", name,
                         read->kernels[k].name, def->name);
        for (int k = 0; k < read->nkernels; k++)
            for (int p = 0; p < read->kernels[k].nparams; p++)
                if (read->kernels[k].params[p].kind == SPV_PARAM_OTHER)
                    fail_msg("%s: %s's parameter %d is of a kind no backend sets", name,
                             read->kernels[k].name, p);
    }
    print_message("%zu modules\n", clc_spirv_module_count);
}

/* spirv-val on each embedded module, as written to a file. */
static void test_modules_validate(void **state) {
    (void)state;
    if (!have_modules())
        return;
#ifndef SPIRV_VAL
    print_message("skipped: spirv-val was not found when the build was configured\n");
#else
    char dir[] = "/tmp/bp_clc_modules_XXXXXX";
    assert_non_null(mkdtemp(dir));
    int invalid = 0;
    for (size_t i = 0; i < clc_spirv_module_count; i++) {
        const clc_module *m = &clc_spirv_modules[i];
        char path[128], cmd[512], name[64];
        snprintf(path, sizeof path, "%s/%zu.spv", dir, i);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(m->spirv, 1, m->size, f), m->size);
        assert_int_equal(fclose(f), 0);
        snprintf(cmd, sizeof cmd, "'%s' '%s'", SPIRV_VAL, path);
        if (system(cmd) != 0) {
            print_error("%s does not validate\n", module_name(m, name, sizeof name));
            invalid++;
        }
        unlink(path);
    }
    rmdir(dir);
    assert_int_equal(invalid, 0);
#endif
}

/* ---- every kernel asked for has its module ---- */

typedef struct lookups {
    int failures;
    bool *picked; /* per module: clc_spirv_find chose it for some request */
    bool asked[FAKE_MAX_REGISTERED]; /* per registration: some case asked for a kernel */
} lookups;

static void check_requests(const clc_case *c, const fake_device *dev, void *ctx) {
    lookups *l = ctx;
    for (int i = 0; i < dev->rec.nkernels; i++) {
        const fake_kernel *k = &dev->rec.kernels[i];
        char why[300];
        if (clc_kernel_index(k->program, k->name) < 0 ||
            !clc_sig_kernel(k->program, k->variant, dev->fp64, k->name, why, sizeof why)) {
            if (clc_kernel_index(k->program, k->name) < 0)
                snprintf(why, sizeof why, "%s is not a kernel of program %d", k->name,
                         (int)k->program);
            print_error("%s %s (%s): %s\n", c->op, fake_dtype_name(c->dtype), c->name, why);
            l->failures++;
            continue;
        }
        l->picked[clc_spirv_find(k->program, k->variant, dev->fp64) - clc_spirv_modules] = true;
    }
    if (c->status != BP_OK) {
        print_error("%s %s (%s): status %d: %s\n", c->op, fake_dtype_name(c->dtype), c->name,
                    (int)c->status, dev->rec.error);
        l->failures++;
    }
    const fake_host *host = fake_host_get();
    for (int r = 0; r < host->nregistered; r++)
        if (strcmp(host->registered[r].op, c->op) == 0 && host->registered[r].dtype == c->dtype)
            l->asked[r] |= dev->rec.nkernels > 0;
}

static fake_device device;

static void test_requested_kernels_have_modules(void **state) {
    (void)state;
    if (!have_modules())
        return;
    lookups l = {0};
    l.picked = calloc(clc_spirv_module_count, sizeof *l.picked);
    assert_non_null(l.picked);
    for (int fp64 = 0; fp64 < 2; fp64++) {
        fake_device_init(&device, fp64, 64 * 1024);
        char why[200] = "";
        if (clc_run_all_cases(&device, check_requests, &l, why, sizeof why) < 0)
            fail_msg("%s", why);
    }
    /* every registered (op, dtype) asked for a kernel in some case */
    const fake_host *host = fake_host_get();
    assert_true(host->nregistered > 0);
    for (int r = 0; r < host->nregistered; r++) {
        const fake_registration *reg = &host->registered[r];
        if (!l.asked[r]) {
            print_error("%s %s: no case asked for a kernel\n", reg->op,
                        fake_dtype_name(reg->dtype));
            l.failures++;
        }
    }
    for (size_t i = 0; i < clc_spirv_module_count; i++)
        if (!l.picked[i]) {
            char name[64];
            print_error("module %s is embedded but no registered kernel uses it\n",
                        module_name(&clc_spirv_modules[i], name, sizeof name));
            l.failures++;
        }
    free(l.picked);
    print_message("%d registered (op, dtype) kernels\n", host->nregistered);
    assert_int_equal(l.failures, 0);
}

/* A build log made fit for a message: trailing whitespace gone, a long one cut at 2000
 * bytes with its start kept and "..." at the cut. */
static void test_build_log_trim(void **state) {
    (void)state;
    char shortlog[] = "error: x\n \t\r\n";
    clc_build_log_trim(shortlog);
    assert_string_equal(shortlog, "error: x");
    char *longlog = malloc(5001);
    assert_non_null(longlog);
    memset(longlog, 'a', 5000);
    longlog[0] = 'E';
    longlog[5000] = '\0';
    clc_build_log_trim(longlog);
    assert_int_equal(strlen(longlog), 1999);
    assert_int_equal(longlog[0], 'E');
    assert_string_equal(longlog + 1996, "...");
    free(longlog);
    clc_build_log_trim(NULL);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modules_are_spirv_of_their_program),
        cmocka_unit_test(test_modules_validate),
        cmocka_unit_test(test_requested_kernels_have_modules),
        cmocka_unit_test(test_build_log_trim),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
