/* clc: the OpenCL C kernels shared by the opencl and xpu plugins (docs/writing-a-backend.md
 * §14), a static position-independent library with hidden symbols, like cpukit.
 *
 *   kernels/NAME.cl   the one source of the kernels (prelude.cl + one file per program)
 *   clc_programs.c    the programs: names, sources, kernels, and how a variant is built
 *   clc_ops.c         every op: from a bp_kernel_call to kernel launches, fills and copies
 *                     on a backend's clc_device_ops (argument packing lives only here)
 *   clc_spirv.c       (generated at build time) the SPIR-V modules of every program and
 *                     variant, compiled with clang -target spir64 + llvm-spirv, validated
 *   clc_native.c      (generated at build time) ahead-of-time Intel GPU binaries (ocloc)
 *
 * A backend supplies a clc_device per device (its parameters and its operations) and a
 * function from its stream to that clc_device; clc_register_kernels registers every
 * (op, dtype) with the host. Only the public plugin ABI is used. */
#ifndef BP_CLC_H
#define BP_CLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <backplane/plugin.h>

/* ---- programs ---- */

/* The programs, each built per variant (a dtype or an element size). */
typedef enum clc_program_id {
    CLC_PROG_MOVE,      /* variant: element size; fill, move, where */
    CLC_PROG_CONVERT,   /* variant: destination dtype; convert from any dtype */
    CLC_PROG_ELEMWISE,  /* variant: dtype; binary and unary elementwise ops */
    CLC_PROG_REDUCE,    /* variant: dtype; reduce and softmax */
    CLC_PROG_NORM,      /* variant: dtype; rmsnorm, layernorm, rope */
    CLC_PROG_MATMUL,    /* variant: dtype */
    CLC_PROG_SDPA,      /* variant: dtype */
    CLC_PROG_COUNT
} clc_program_id;

#define CLC_MAX_KERNELS 6

typedef struct clc_program_def {
    const char *name;   /* "move": kernels/move.cl */
    const char *source; /* its embedded text (the prelude comes first in every build) */
    bool by_size;       /* the variant is an element size (BP_ESIZE), else a dtype (BP_DT) */
    const char *kernels[CLC_MAX_KERNELS + 1]; /* NULL-terminated */
} clc_program_def;

extern const clc_program_def clc_programs[CLC_PROG_COUNT];
extern const char clc_src_prelude[];

/* Index of kernel `name` in program `id`'s list, or -1. */
int clc_kernel_index(clc_program_id id, const char *name);

/* Compile-time parameters of the kernels (-D options):
 *   RWG  the work-group size of the row kernels (reductions, softmax, norms, sdpa)
 *   TS   matmul's work-group is TS x TS work-items, each computing WPT x WPT outputs
 *   SBK  sdpa's many-rows kernel stages keys and values in blocks of SBK
 * Source builds (opencl) pick RWG and TS per device (clc_device_params); precompiled
 * modules (SPIR-V) are built with CLC_FIXED_RWG and CLC_FIXED_TS and need a device
 * that takes work-groups of CLC_FIXED_MIN_WG. */
#define CLC_MATMUL_WPT 8
#define CLC_SDPA_SBK 32
#define CLC_FIXED_RWG 64
#define CLC_FIXED_TS 16
#define CLC_FIXED_MIN_WG 256

/* The dtypes the kernels take on a device: every dtype, f64 only with fp64. f16 and bf16
 * are stored as 16-bit words and computed in f32 (kernels/prelude.cl), so neither needs
 * the device's fp16. */
uint32_t clc_device_dtypes(bool fp64);

/* RWG and TS for a device whose largest work-group is max_wg. */
void clc_device_params(size_t max_wg, size_t *rwg, int *ts);

/* A driver's build log of the kernels made fit for an error message, in place (NULL:
 * nothing): at most 2000 bytes, the start kept (the first errors are the useful ones,
 * "..." marks the cut), no trailing whitespace. */
void clc_build_log_trim(char *log);

/* ---- SPIR-V modules (clc_spirv.c, generated) ---- */

typedef struct clc_module {
    clc_program_id program;
    int variant;   /* as the program's variant: a dtype or an element size */
    bool fp64;     /* built with BP_FP64=1 (needs a device with fp64) */
    const unsigned char *spirv;
    size_t size;   /* bytes */
} clc_module;

extern const clc_module clc_spirv_modules[];
extern const size_t clc_spirv_module_count;

/* The module of (program, variant) for a device with or without fp64: the fp64 build
 * where the device has fp64 and one exists, else the plain one; NULL when there is
 * none (e.g. an f64 variant on a device without fp64). */
const clc_module *clc_spirv_find(clc_program_id program, int variant, bool device_fp64);

/* Device binaries compiled ahead of time from the same SPIR-V (ocloc, for Intel GPU
 * families such as "pvc" and "dg2"; clc_native.c, generated; empty when ocloc was not
 * found at build time). A backend prefers one for its device's family and falls back
 * to the SPIR-V module when it does not load. */
typedef struct clc_native_module {
    clc_program_id program;
    int variant;
    bool fp64;
    const char *family;  /* ocloc's device name */
    const unsigned char *binary;
    size_t size;
} clc_native_module;

extern const clc_native_module clc_native_modules[];
extern const size_t clc_native_module_count;

/* The native binary of (program, variant) for `family`, chosen as clc_spirv_find
 * chooses; NULL when there is none. */
const clc_native_module *clc_native_find(clc_program_id program, int variant, bool device_fp64,
                                         const char *family);

/* How well a module built for (program, variant, fp64) serves a request for
 * (want, want_variant) on a device with or without fp64: 0 not at all, 1 the plain
 * build, 2 the fp64 build on a device with fp64 (clc_modules.c). */
int clc_module_fit(clc_program_id program, int variant, bool fp64, clc_program_id want,
                   int want_variant, bool device_fp64);

/* ---- what a backend provides ---- */

/* One kernel argument: `size` bytes at `value`, or local memory of `size` bytes when
 * value is NULL. A buffer argument is the backend's handle (cl_mem, a USM pointer),
 * passed as a pointer-sized value. */
typedef struct clc_karg {
    size_t size;
    const void *value;
} clc_karg;

typedef struct clc_device clc_device;

typedef struct clc_device_ops {
    /* The buffer handle and byte offset of device address ptr (inside a live allocation,
     * or at its end when size is 0); `what` names the op in the error. */
    bp_status (*translate)(clc_device *dev, const void *ptr, size_t size, void **handle,
                           size_t *offset, const char *what);
    /* Kernel `name` of program `id` built for `variant`, built at first use. */
    bp_status (*get_kernel)(clc_device *dev, clc_program_id id, int variant, const char *name,
                            void **kernel);
    /* Enqueues the kernel with the arguments on the stream (dims 1..3). */
    bp_status (*launch)(void *stream, void *kernel, const char *what, int nargs,
                        const clc_karg *args, unsigned dims, const size_t *global,
                        const size_t *local);
    /* Fills `bytes` at handle + offset with the pattern (1, 2, 4 or 8 bytes). */
    bp_status (*fill)(void *stream, void *handle, size_t offset, const void *pattern,
                      size_t pattern_size, size_t bytes);
    /* Copies `bytes` between non-overlapping ranges. */
    bp_status (*copy)(void *stream, void *dst, size_t dst_offset, void *src, size_t src_offset,
                      size_t bytes);
} clc_device_ops;

struct clc_device {
    const clc_device_ops *ops;
    const bp_host_services *host;
    const char *type;   /* "opencl", "xpu": in messages, "<type>:<index>: ..." */
    int index;
    size_t rwg;         /* RWG the device's programs were built with */
    int ts;             /* TS likewise */
    size_t max_wg;
    uint64_t local_mem; /* bytes of local (shared) memory per work-group */
};

/* The clc_device of a backend stream (a bp_kernel_call's stream). */
typedef clc_device *(*clc_stream_device_fn)(void *stream);

/* Registers every (op, dtype) kernel with the host under `backend`'s name. A plugin
 * calls it once, at registration; stream_device is kept for the kernels' calls. */
bp_status clc_register_kernels(const bp_host_services *host, const char *backend,
                               clc_stream_device_fn stream_device);

#endif
