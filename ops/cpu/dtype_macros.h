/* Per-dtype names for cpu kernels generated with macros: for a dtype suffix D (f32,
 * f16, bf16, i32, i64), T_D is the stored type, A_D the type the math runs in, U_D the
 * type integer math wraps in (unsigned, so overflow is defined), and LD_D / ST_D
 * convert between T_D and A_D. A generator macro pastes them: T_##dt, LD_##dt(x). */
#ifndef BP_CPU_DTYPE_MACROS_H
#define BP_CPU_DTYPE_MACROS_H

#include <stdint.h>

#include "dtype_convert.h"

#define T_f32 float
#define A_f32 float
#define U_f32 float
#define LD_f32(v) (v)
#define ST_f32(v) (v)
#define T_f16 uint16_t
#define A_f16 float
#define U_f16 float
#define LD_f16(v) bp_f16_to_f32(v)
#define ST_f16(v) bp_f32_to_f16(v)
#define T_bf16 uint16_t
#define A_bf16 float
#define U_bf16 float
#define LD_bf16(v) bp_bf16_to_f32(v)
#define ST_bf16(v) bp_f32_to_bf16(v)
#define T_i32 int32_t
#define A_i32 int32_t
#define U_i32 uint32_t
#define LD_i32(v) (v)
#define ST_i32(v) (v)
#define T_i64 int64_t
#define A_i64 int64_t
#define U_i64 uint64_t
#define LD_i64(v) (v)
#define ST_i64(v) (v)

#endif
