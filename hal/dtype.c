/* Element type names and sizes. */
#include "hal_internal.h"

static const struct {
    const char *name;
    size_t size;
} dtype_info[BP_DTYPE_COUNT] = {
    [BP_DTYPE_F32] = {"f32", 4},  [BP_DTYPE_F16] = {"f16", 2}, [BP_DTYPE_BF16] = {"bf16", 2},
    [BP_DTYPE_F64] = {"f64", 8},  [BP_DTYPE_I8] = {"i8", 1},   [BP_DTYPE_U8] = {"u8", 1},
    [BP_DTYPE_I32] = {"i32", 4},  [BP_DTYPE_I64] = {"i64", 8}, [BP_DTYPE_BOOL] = {"bool", 1},
};

const char *bp_dtype_name(bp_dtype dtype) {
    return (unsigned)dtype < BP_DTYPE_COUNT ? dtype_info[dtype].name : "invalid";
}

size_t bp_dtype_size(bp_dtype dtype) {
    return (unsigned)dtype < BP_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}
