/* The tests' SPIR-V reader (spirv_reader.h) on a module written here word by word (so
 * that it does not depend on what llvm-spirv emits), and on broken ones: a clear error,
 * never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "spirv_reader.h"

#define OP(words, opcode) (((uint32_t)(words) << 16) | (opcode))
#define NAME_K_A ((uint32_t)'k' | (uint32_t)'_' << 8 | (uint32_t)'a' << 16)

/* kernel void k_a(global float *, local float *, struct {long; int; long[8];} (by
 * value), int) with reqd_work_group_size(64, 1, 1) */
static const uint32_t module[] = {
    SPV_MAGIC, 0x00010000, 0, 20, 0,
    OP(2, 17), 6,                              /* OpCapability Kernel */
    OP(4, 15), 6, 10, NAME_K_A,                /* OpEntryPoint Kernel %10 "k_a" */
    OP(6, 16), 10, 17, 64, 1, 1,               /* OpExecutionMode %10 LocalSize 64 1 1 */
    OP(4, 71), 12, 38, 2,                      /* OpDecorate %12 FuncParamAttr ByVal */
    OP(4, 21), 1, 64, 0,                       /* %1 = OpTypeInt 64 0 */
    OP(4, 21), 2, 32, 0,                       /* %2 = OpTypeInt 32 0 */
    OP(3, 22), 3, 32,                          /* %3 = OpTypeFloat 32 */
    OP(5, 43), 1, 4, 8, 0,                     /* %4 = OpConstant %1 8 */
    OP(4, 28), 5, 1, 4,                        /* %5 = OpTypeArray %1 %4 */
    OP(5, 30), 6, 1, 2, 5,                     /* %6 = OpTypeStruct %1 %2 %5: 80 bytes */
    OP(4, 32), 7, 5, 3,                        /* %7 = OpTypePointer CrossWorkgroup %3 */
    OP(4, 32), 8, 4, 3,                        /* %8 = OpTypePointer Workgroup %3 */
    OP(4, 32), 9, 7, 6,                        /* %9 = OpTypePointer Function %6 */
    OP(2, 19), 13,                             /* %13 = OpTypeVoid */
    OP(7, 33), 14, 13, 7, 8, 9, 2,             /* %14 = OpTypeFunction %13 %7 %8 %9 %2 */
    OP(5, 54), 13, 10, 0, 14,                  /* %10 = OpFunction %13 None %14 */
    OP(3, 55), 7, 11,                          /* OpFunctionParameter %7 */
    OP(3, 55), 8, 15,                          /* OpFunctionParameter %8 */
    OP(3, 55), 9, 12,                          /* OpFunctionParameter %9 (ByVal) */
    OP(3, 55), 2, 16,                          /* OpFunctionParameter %2 */
    OP(1, 56),                                 /* OpFunctionEnd */
};
#define WORDS (sizeof module / sizeof module[0])
/* Word indexes the broken copies change. */
#define AT_BOUND 3
#define AT_ENTRY_NAME 10
#define AT_BYVAL_ATTRIBUTE 20
#define AT_CONSTANT 32

static spv_module m;

static void assert_the_kernel(const spv_module *read) {
    assert_int_equal(read->version, 0x00010000);
    assert_int_equal(read->nkernels, 1);
    const spv_kernel *k = spv_find_kernel(read, "k_a");
    assert_non_null(k);
    assert_null(spv_find_kernel(read, "k_b"));
    assert_true(k->has_local_size);
    assert_int_equal(k->local_size[0], 64);
    assert_int_equal(k->local_size[1], 1);
    assert_int_equal(k->local_size[2], 1);
    assert_int_equal(k->nparams, 4);
    assert_int_equal(k->params[0].kind, SPV_PARAM_GLOBAL);
    assert_int_equal(k->params[0].pointee_size, 4);
    assert_int_equal(k->params[1].kind, SPV_PARAM_LOCAL);
    assert_int_equal(k->params[1].pointee_size, 4);
    assert_int_equal(k->params[2].kind, SPV_PARAM_BYVAL);
    assert_int_equal(k->params[2].size, 80); /* 8, 4 + 4 padding, 64 */
    assert_int_equal(k->params[3].kind, SPV_PARAM_SCALAR);
    assert_int_equal(k->params[3].size, 4);
}

static void test_reads_a_kernel(void **state) {
    (void)state;
    assert_true(spv_read(module, sizeof module, &m));
    assert_the_kernel(&m);
}

static void test_reads_the_other_byte_order(void **state) {
    (void)state;
    uint32_t swapped[WORDS];
    for (size_t i = 0; i < WORDS; i++)
        swapped[i] = __builtin_bswap32(module[i]);
    assert_true(spv_read(swapped, sizeof swapped, &m));
    assert_the_kernel(&m);
}

static void test_function_pointer_without_byval_is_other(void **state) {
    (void)state;
    uint32_t copy[WORDS];
    memcpy(copy, module, sizeof copy);
    copy[AT_BYVAL_ATTRIBUTE] = 0; /* FuncParamAttr Zext, not ByVal */
    assert_true(spv_read(copy, sizeof copy, &m));
    assert_int_equal(m.kernels[0].params[2].kind, SPV_PARAM_OTHER);
}

/* A broken copy: `word` set to `value`, the first `words` words kept; the error names
 * `what`. */
static void assert_refused(size_t words, size_t word, uint32_t value, const char *what) {
    uint32_t copy[WORDS];
    memcpy(copy, module, sizeof copy);
    if (word < WORDS)
        copy[word] = value;
    assert_false(spv_read(copy, words * 4, &m));
    if (!strstr(m.error, what))
        fail_msg("error \"%s\" does not say \"%s\"", m.error, what);
}

static void test_refuses_broken_modules(void **state) {
    (void)state;
    assert_false(spv_read(NULL, 0, &m));
    assert_false(spv_read(module, 6, &m));
    assert_non_null(strstr(m.error, "not a SPIR-V module"));
    assert_refused(WORDS, 0, 0x12345678, "magic 0x12345678");
    assert_refused(WORDS, AT_BOUND, 0, "id bound 0");
    assert_refused(WORDS, AT_BOUND, 5, "outside the bound 5");
    assert_refused(WORDS - 2, WORDS, 0, "runs past the end");
    assert_refused(WORDS, 5, 0, "(0 words)");
    assert_refused(WORDS, AT_ENTRY_NAME, 0x41414141, "its name has no end");
    assert_refused(WORDS, AT_CONSTANT, OP(2, 43), "too short");
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_a_kernel),
        cmocka_unit_test(test_reads_the_other_byte_order),
        cmocka_unit_test(test_function_pointer_without_byval_is_other),
        cmocka_unit_test(test_refuses_broken_modules),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
