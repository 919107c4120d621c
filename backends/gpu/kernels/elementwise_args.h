/* gpu kernels: the by-value arguments of kernels/elementwise.cu, shared by the device
 * code and the host's elementwise ops (plain C, so that nvcc, hipcc and the C compiler lay
 * them out alike).
 *
 * A gpu_ew_layout is a plan of <backplane/kernel_plan.h> (bp_plan) as the kernels take
 * it: operands over one shape, strides in elements, element i of the layout (row-major,
 * the last dim fastest) at offset sum_d index_d * strides[k][d] in operand k. */
#ifndef CU_ELEMENTWISE_ARGS_H
#define CU_ELEMENTWISE_ARGS_H

#include <stdint.h>

#define GPU_EW_MAX_DIMS 8
#define GPU_EW_MAX_OPERANDS 4

/* How the kernels of same-dtype maps (ew_unary, ew_binary, ew_move, ew_fill) walk a
 * layout; other kernels only tell GPU_EW_FLAT from the rest. */
#define GPU_EW_STRIDED 0 /* element by element, through the shape and strides */
#define GPU_EW_FLAT 1    /* every operand contiguous: element i at offset i */
/* The last dim holds a whole number of 16-byte packs and has stride 1 in the output and
 * 1 or 0 (a broadcast) in each input; an operand with stride 1 there has every other
 * stride a whole number of packs: the kernel walks packs of the last dim. */
#define GPU_EW_INNER 2

typedef struct gpu_ew_layout {
    int32_t ndim;   /* 1 .. GPU_EW_MAX_DIMS; dims past ndim have shape 1, stride 0 */
    int32_t path;   /* GPU_EW_STRIDED, GPU_EW_FLAT or GPU_EW_INNER */
    int64_t numel;
    int64_t shape[GPU_EW_MAX_DIMS];
    int64_t strides[GPU_EW_MAX_OPERANDS][GPU_EW_MAX_DIMS];
} gpu_ew_layout;

/* Rows of a row op (reductions, softmax, norms, rope): `rows` gives row r's start in
 * the output (operand 0) and the input (operand 1); element j of a row is at
 * j * in_stride and j * out_stride from there. */
typedef struct gpu_ew_rows {
    gpu_ew_layout rows;
    int64_t len;
    int64_t in_stride;
    int64_t out_stride;
} gpu_ew_rows;

/* The `op` argument of ew_unary_*, ew_binary_* and ew_reduce_*. */
enum {
    GPU_EW_SCALE = 0,
    GPU_EW_EXP = 1,
    GPU_EW_TANH = 2,
    GPU_EW_SILU = 3,
    GPU_EW_GELU_ERF = 4,
    GPU_EW_GELU_TANH = 5,
};
enum { GPU_EW_ADD = 0, GPU_EW_SUB = 1, GPU_EW_MUL = 2, GPU_EW_DIV = 3 };
enum { GPU_EW_SUM = 0, GPU_EW_MAX = 1, GPU_EW_MEAN = 2 };

/* The source dtype of ew_convert_*: bp_dtype's values (checked by the host's elementwise ops). */
#define GPU_EW_F32 0
#define GPU_EW_F16 1
#define GPU_EW_BF16 2
#define GPU_EW_F64 3
#define GPU_EW_I8 4
#define GPU_EW_U8 5
#define GPU_EW_I32 6
#define GPU_EW_I64 7
#define GPU_EW_BOOL 8

/* Threads per block of every kernel at most (their __launch_bounds__). */
#define GPU_EW_MAX_BLOCK 256
/* Softmax rows up to this long run one warp per row, the row in registers, in blocks
 * of this many threads (exactly: the kernels' __launch_bounds__). */
#define GPU_EW_SOFTMAX_WARP_MAX 2048
#define GPU_EW_SOFTMAX_WARP_BLOCK 128
/* The block kernels of rows (ew_softmax_block, ew_norm) keep rows up to this long in
 * shared memory: 44 KiB of f32, which with their static 128 bytes stays under the 48 KiB
 * a block may take without raising the kernel's limit. */
#define GPU_EW_ROW_CACHE_MAX 11264

#endif
