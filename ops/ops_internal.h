/* Internal contract of the op library: built-in op ids, the argument checks every op
 * shares, how an op runs, and how cpu kernels are written and registered. */
#ifndef BP_OPS_INTERNAL_H
#define BP_OPS_INTERNAL_H

#include "dispatcher_internal.h"
#include "tensor_internal.h"

/* Built-in ops (id, name, attribute bytes), defined in this order at init so that the
 * enum value is the op id. */
#define BP_BUILTIN_OPS(X)                       \
    X(FILL, "fill", sizeof(bp_fill_attrs))              \
    X(COPY, "copy", 0)                       \
    X(ADD, "add", 0)                         \
    X(SUB, "sub", 0)                         \
    X(MUL, "mul", 0)                         \
    X(DIV, "div", 0)                         \
    X(SCALE, "scale", sizeof(bp_scale_attrs))           \
    X(EXP, "exp", 0)                         \
    X(TANH, "tanh", 0)                       \
    X(SILU, "silu", 0)                       \
    X(GELU, "gelu", sizeof(bp_gelu_attrs))              \
    X(WHERE, "where", 0)                     \
    X(SUM, "sum", sizeof(bp_reduce_attrs))              \
    X(MAX, "max", sizeof(bp_reduce_attrs))              \
    X(MEAN, "mean", sizeof(bp_reduce_attrs))            \
    X(SOFTMAX, "softmax", sizeof(bp_softmax_attrs))     \
    X(RMSNORM, "rmsnorm", sizeof(bp_norm_attrs))        \
    X(LAYERNORM, "layernorm", sizeof(bp_norm_attrs))    \
    X(ROPE, "rope", sizeof(bp_rope_attrs))              \
    X(MATMUL, "matmul", sizeof(bp_matmul_attrs))        \
    X(CAT, "cat", sizeof(bp_cat_attrs))                 \
    X(SDPA, "sdpa", sizeof(bp_sdpa_attrs))

typedef enum bp_builtin_op {
#define BP_OP_ENUM(id, name, attrs) BP_OP_##id,
    BP_BUILTIN_OPS(BP_OP_ENUM)
#undef BP_OP_ENUM
    BP_OP_BUILTIN_COUNT
} bp_builtin_op;

/* Defines the built-in ops (ids = enum values). Called by bp_dispatcher_init. */
BP_INTERNAL void bp_ops_define_builtins(void);

/* ---- argument checks (ops/checks.c); each sets the last error naming `op` ---- */

/* Every tensor non-NULL and on one device; returns that device in *out_device. */
BP_INTERNAL bp_status bp_check_tensors(const char *op, bp_tensor *const *tensors, int n,
                                       bp_device **out_device);
/* Every tensor has dtype `dtype` (NULL entries are skipped). */
BP_INTERNAL bp_status bp_check_dtype(const char *op, bp_tensor *const *tensors, int n,
                                     bp_dtype dtype);
/* The dtype is one of the BP_DTYPE_BIT mask `allowed`. */
BP_INTERNAL bp_status bp_check_dtype_allowed(const char *op, bp_dtype dtype, uint32_t allowed);
/* NumPy broadcast of n shapes into out_shape/out_ndim; a mismatch names the shapes. */
BP_INTERNAL bp_status bp_broadcast_shapes(const char *op, bp_tensor *const *tensors, int n,
                                          int64_t *out_shape, int *out_ndim);
/* Normalises a possibly negative dim for a tensor of `ndim` dims (range [-ndim, ndim)). */
BP_INTERNAL bp_status bp_check_dim(const char *op, int dim, int ndim, int *out_dim);
/* `out` has the dtype and shape expected, is on `device`, and does not overlap any
 * input's storage unless `same_view_ok` and it is exactly that input's view. */
BP_INTERNAL bp_status bp_check_out(const char *op, bp_tensor *out, bp_device *device,
                                   bp_dtype dtype, int ndim, const int64_t *shape,
                                   bp_tensor *const *inputs, int n_inputs, bool same_view_ok);

/* ---- running an op (ops/run.c) ---- */

/* Dispatches a built-in op on the thread's current stream of `device` after noting
 * that stream as a user of every tensor's storage. Every tensor is non-NULL: an op
 * leaves an absent optional input out (kernels tell by n_inputs or the attrs). */
BP_INTERNAL bp_status bp_op_run(bp_builtin_op op, bp_dtype dtype, bp_device *device,
                                bp_tensor *const *inputs, int n_inputs,
                                bp_tensor *const *outputs, int n_outputs, const void *attrs);
/* The allocating form's helper: a new contiguous output tensor on `device` (*out is
 * NULL on failure). */
BP_INTERNAL bp_status bp_op_alloc_out(bp_device *device, bp_dtype dtype, int ndim,
                                      const int64_t *shape, bp_tensor **out);
/* The CPU fallback of bp_dispatch (ops/fallback.c). */
BP_INTERNAL bp_status bp_cpu_fallback(const bp_op_record *op, const bp_op_call *call);

/* ---- cpu kernels (ops/cpu/) ----
 *
 * A cpu kernel is a plain host function computing on host pointers:
 *     void bp_cpu_<op>_<dtype>(const bp_kernel_call *call);
 * listed in an ops/cpu/<family>.list file as "<op> <dtype>". The build generates the table of
 * the listed (or, with BP_SELECTED_OPS, the selected) kernels; bp_ops_register_cpu_kernels
 * registers each for device type cpu behind bp_cpu_launch, which copies the call and
 * runs the function on the stream's worker thread (enqueue_host). Kernels must not
 * fail: every check happens before dispatch. Large kernels split their work with
 * bp_parallel_for. */
typedef void (*bp_host_kernel_fn)(const bp_kernel_call *call);

typedef struct bp_cpu_kernel_entry {
    const char *op;
    bp_dtype dtype;
    bp_host_kernel_fn fn;
} bp_cpu_kernel_entry;

/* Generated (cpu_kernel_table.c). */
extern BP_INTERNAL const bp_cpu_kernel_entry bp_cpu_kernel_table[];
extern BP_INTERNAL const int bp_cpu_kernel_count;
/* 1 when the table was filtered by BP_SELECTED_OPS. */
extern BP_INTERNAL const int bp_cpu_kernels_selective;

BP_INTERNAL void bp_ops_register_cpu_kernels(void);
/* The reference kernels offered to plugins (ops/reference.c): filled by
 * bp_ops_register_cpu_kernels before any plugin loads. */
BP_INTERNAL bp_op_id bp_ops_builtin_id(const char *name); /* -1 when not built in */
BP_INTERNAL void bp_ops_reference_add(bp_op_id op, bp_dtype dtype, bp_host_kernel_fn fn);
/* The registered cpu kernel: enqueues kernel_data (a bp_host_kernel_fn) on the stream. */
BP_INTERNAL bp_status bp_cpu_launch(const bp_kernel_call *call);

/* Runs fn(ctx, begin, end) over [0, n) in chunks of at least `grain`, on the calling
 * thread and the worker pool (one thread per extra core), and returns when all are
 * done. Small n runs inline. Safe to call from several threads at once. */
BP_INTERNAL void bp_parallel_for(int64_t n, int64_t grain,
                                 void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);
/* The threads a bp_parallel_for runs on (the caller included; BP_NUM_THREADS, else
 * one per core): what a library with its own threads is told to use (ops/cpu/matmul.c). */
BP_INTERNAL int bp_parallel_threads(void);

#endif
