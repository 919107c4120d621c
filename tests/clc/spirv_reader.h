/* A small SPIR-V reader for the tests of the embedded kernel modules: the header, and
 * each kernel entry point's name, parameters and required work-group size, read from
 * the word stream as the SPIR-V specification (unified, 1.6) lays it out. Only what the
 * tests check is kept; a module it cannot follow is an error with a message, never a
 * crash. */
#ifndef BP_TEST_SPIRV_READER_H
#define BP_TEST_SPIRV_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPV_MAGIC 0x07230203u
#define SPV_MAX_KERNELS 8
#define SPV_MAX_PARAMS 32
#define SPV_NAME_MAX 64

/* What a kernel parameter is, as a host sets it. */
typedef enum spv_param_kind {
    SPV_PARAM_GLOBAL,  /* a __global pointer (CrossWorkgroup): a buffer handle */
    SPV_PARAM_LOCAL,   /* a __local pointer (Workgroup): a size, no value */
    SPV_PARAM_BYVAL,   /* a struct passed by value (Function pointer, FuncParamAttr ByVal) */
    SPV_PARAM_SCALAR,  /* an integer or float of `size` bytes */
    SPV_PARAM_OTHER,   /* anything else (vectors, __constant, images, ...) */
} spv_param_kind;

typedef struct spv_param {
    spv_param_kind kind;
    size_t size; /* bytes: of the value (scalar, by-value struct); 0 for pointers */
    size_t pointee_size; /* global and local pointers: bytes of what they point to */
} spv_param;

typedef struct spv_kernel {
    char name[SPV_NAME_MAX];
    int nparams;
    spv_param params[SPV_MAX_PARAMS];
    bool has_local_size;    /* OpExecutionMode LocalSize (reqd_work_group_size) */
    uint32_t local_size[3];
} spv_kernel;

typedef struct spv_module {
    uint32_t version; /* the header's: 0x00MMmm00 */
    uint32_t generator;
    int nkernels;
    spv_kernel kernels[SPV_MAX_KERNELS];
    char error[160];  /* why spv_read failed */
} spv_module;

/* Reads `size` bytes of SPIR-V. False with m->error set when it is not a module this
 * reader follows (bad magic or length, an instruction past the end, an id out of
 * bounds, too many kernels or parameters). */
bool spv_read(const void *bytes, size_t size, spv_module *m);

/* The entry point named `name`, or NULL. */
const spv_kernel *spv_find_kernel(const spv_module *m, const char *name);

/* "global pointer", "by-value struct", ...: for messages. */
const char *spv_param_kind_name(spv_param_kind kind);

#endif
