/* backplane: element types. */
#ifndef BACKPLANE_DTYPE_H
#define BACKPLANE_DTYPE_H

#include <stddef.h>
#include <backplane/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element type of tensor data. Values are stable across ABI versions. */
typedef enum bp_dtype {
    BP_DTYPE_F32 = 0,
    BP_DTYPE_F16 = 1,
    BP_DTYPE_BF16 = 2,
    BP_DTYPE_F64 = 3,
    BP_DTYPE_I8 = 4,
    BP_DTYPE_U8 = 5,
    BP_DTYPE_I32 = 6,
    BP_DTYPE_I64 = 7,
    BP_DTYPE_BOOL = 8,
    BP_DTYPE_COUNT = 9
} bp_dtype;

/** Bit for a dtype in a mask such as bp_device_props.dtypes. */
#define BP_DTYPE_BIT(dt) (1u << (unsigned)(dt))

/** Lower-case name ("f32", "bf16"); "invalid" for an out-of-range value. */
BP_API const char *bp_dtype_name(bp_dtype dtype);

/** Size of one element in bytes; 0 for an out-of-range value. */
BP_API size_t bp_dtype_size(bp_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
