/* cuda kernels: the by-value arguments of kernels/elementwise.cu, shared by the device
 * code and cu_ops_elementwise.c (plain C, so that both compilers lay them out alike).
 *
 * A cu_ew_layout is a plan of <backplane/kernel_plan.h> (bp_plan) as the kernels take
 * it: operands over one shape, strides in elements, element i of the layout (row-major,
 * the last dim fastest) at offset sum_d index_d * strides[k][d] in operand k. */
#ifndef CU_ELEMENTWISE_ARGS_H
#define CU_ELEMENTWISE_ARGS_H

#include <stdint.h>

#define CU_EW_MAX_DIMS 8
#define CU_EW_MAX_OPERANDS 4

/* How the kernels of same-dtype maps (ew_unary, ew_binary, ew_move, ew_fill) walk a
 * layout; other kernels only tell CU_EW_FLAT from the rest. */
#define CU_EW_STRIDED 0 /* element by element, through the shape and strides */
#define CU_EW_FLAT 1    /* every operand contiguous: element i at offset i */
/* The last dim holds a whole number of 16-byte packs and has stride 1 in the output and
 * 1 or 0 (a broadcast) in each input; an operand with stride 1 there has every other
 * stride a whole number of packs: the kernel walks packs of the last dim. */
#define CU_EW_INNER 2

typedef struct cu_ew_layout {
    int32_t ndim;   /* 1 .. CU_EW_MAX_DIMS; dims past ndim have shape 1, stride 0 */
    int32_t path;   /* CU_EW_STRIDED, CU_EW_FLAT or CU_EW_INNER */
    int64_t numel;
    int64_t shape[CU_EW_MAX_DIMS];
    int64_t strides[CU_EW_MAX_OPERANDS][CU_EW_MAX_DIMS];
} cu_ew_layout;

/* Rows of a row op (reductions, softmax, norms, rope): `rows` gives row r's start in
 * the output (operand 0) and the input (operand 1); element j of a row is at
 * j * in_stride and j * out_stride from there. */
typedef struct cu_ew_rows {
    cu_ew_layout rows;
    int64_t len;
    int64_t in_stride;
    int64_t out_stride;
} cu_ew_rows;

/* The `op` argument of ew_unary_*, ew_binary_* and ew_reduce_*. */
enum {
    CU_EW_SCALE = 0,
    CU_EW_EXP = 1,
    CU_EW_TANH = 2,
    CU_EW_SILU = 3,
    CU_EW_GELU_ERF = 4,
    CU_EW_GELU_TANH = 5,
};
enum { CU_EW_ADD = 0, CU_EW_SUB = 1, CU_EW_MUL = 2, CU_EW_DIV = 3 };
enum { CU_EW_SUM = 0, CU_EW_MAX = 1, CU_EW_MEAN = 2 };

/* The source dtype of ew_convert_*: bp_dtype's values (checked by cu_ops_elementwise.c). */
#define CU_EW_F32 0
#define CU_EW_F16 1
#define CU_EW_BF16 2
#define CU_EW_F64 3
#define CU_EW_I8 4
#define CU_EW_U8 5
#define CU_EW_I32 6
#define CU_EW_I64 7
#define CU_EW_BOOL 8

/* Threads per block of every kernel at most (their __launch_bounds__). */
#define CU_EW_MAX_BLOCK 256
/* Softmax rows up to this long run one warp per row, the row in registers, in blocks
 * of this many threads (exactly: the kernels' __launch_bounds__). */
#define CU_EW_SOFTMAX_WARP_MAX 2048
#define CU_EW_SOFTMAX_WARP_BLOCK 128
/* The block kernels of rows (ew_softmax_block, ew_norm) keep rows up to this long in
 * shared memory: 44 KiB of f32, which with their static 128 bytes stays under the 48 KiB
 * a block may take without raising the kernel's limit. */
#define CU_EW_ROW_CACHE_MAX 11264

#endif
