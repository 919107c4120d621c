/* The arm backend's kernels, as the backend sees them (backends/arm/kernels).
 *
 * A kernel family (elementwise, data movement, reductions, norms, matmul, sdpa) lists
 * its kernels for the CPU features found at run time: for each (op, dtype) it picks
 * the best variant the CPU can run (SVE, NEON with FP16 or BF16 instructions, plain
 * NEON) and names it, so what runs is visible (BP_LOG=debug prints one line per
 * registration: "arm: kernel <op> <dtype>: <variant>").
 *
 * A kernel body runs on the stream's worker thread, after all earlier work of the
 * stream, on a deep copy of the call record (descriptors and attributes) that lives
 * until it returns. The dispatcher has checked shapes, dtypes, strides and overlaps
 * before the launch (docs/ops.md, plugin.h's rules on bp_kernel_call), so a body
 * does not fail: the scratch memory it needs is a bounded block on its stack (at most
 * 64 KiB per thread; workers have the default 8 MiB stacks), never a malloc that could
 * fail halfway through an output. Large work is split over the cluster's cores with
 * ex->parallel_for.
 *
 * Only public headers and this directory: a backend never sees core internals. */
#ifndef BP_ARM_KERNEL_H
#define BP_ARM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <backplane/plugin.h>

/** The ISA features of the cores (getauxval(AT_HWCAP/AT_HWCAP2) on Linux). */
typedef struct arm_features {
    bool asimd;         /**< NEON (always on aarch64 Linux) */
    bool fp16;          /**< FP16 arithmetic in NEON (FEAT_FP16: "fphp asimdhp") */
    bool dotprod;       /**< SDOT/UDOT */
    bool bf16;          /**< BFDOT, BFMMLA, BFCVT (FEAT_BF16) */
    bool i8mm;          /**< SMMLA/UMMLA (FEAT_I8MM) */
    bool sve;           /**< SVE */
    bool sve2;          /**< SVE2 */
    uint32_t sve_bits;  /**< SVE vector length in bits (128..2048), 0 without SVE */
} arm_features;

/** Does fn(ctx, begin, end) over a split of [0, n). */
typedef void (*arm_range_fn)(void *ctx, int64_t begin, int64_t end);

/** Where a kernel body runs: one device (a core cluster). */
typedef struct arm_exec {
    const arm_features *features;
    /** Cores of the cluster that parallel_for may use (>= 1). */
    int threads;
    /** Runs fn over [0, n) split into chunks of at least `grain` elements on the
     *  cluster's cores (the calling worker takes part) and returns when all chunks are
     *  done. Chunks are disjoint; with n <= grain it is one call fn(ctx, 0, n) on the
     *  caller's thread. Safe to call from several streams' workers at once. */
    void (*parallel_for)(const struct arm_exec *ex, int64_t n, int64_t grain, arm_range_fn fn,
                         void *ctx);
    void *pool; /**< the backend's, for parallel_for */
    /** The host's log (host->log), for a kernel's rare lines (the matmul family's BLAS
     *  lookup at its first call); NULL: say nothing. */
    void (*log)(bp_log_level level, const char *source, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
} arm_exec;

/** A kernel body (see the top of this file). */
typedef void (*arm_kernel_body)(const bp_kernel_call *call, const arm_exec *ex);

/** One registration. */
typedef struct arm_kernel {
    const char *op;        /**< "add" */
    bp_dtype dtype;
    arm_kernel_body body;
    const char *variant;   /**< what runs: "sve", "neon", "neon-fp16", "bfmmla", "openblas", ... */
} arm_kernel;

/** A family writes its kernels for the features `f` to out[0..cap) and returns how
 *  many it has (it may return more than cap: then only cap were written, and the
 *  caller passes a larger array). Never fails; a variant a family cannot run on `f`
 *  is not listed (a portable one stands in). */
typedef size_t (*arm_kernel_family)(const arm_features *f, arm_kernel *out, size_t cap);

/* The families (kernels/<family>.c). */
size_t arm_kernels_data(const arm_features *f, arm_kernel *out, size_t cap);        /* fill copy cat */
size_t arm_kernels_elementwise(const arm_features *f, arm_kernel *out, size_t cap); /* add..gelu, where */
size_t arm_kernels_reduce(const arm_features *f, arm_kernel *out, size_t cap);      /* sum mean max softmax */
size_t arm_kernels_norm(const arm_features *f, arm_kernel *out, size_t cap);        /* rmsnorm layernorm rope */
size_t arm_kernels_matmul(const arm_features *f, arm_kernel *out, size_t cap);      /* matmul */
size_t arm_kernels_sdpa(const arm_features *f, arm_kernel *out, size_t cap);        /* sdpa */

#endif
