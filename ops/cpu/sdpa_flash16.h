/* The flash loop (sdpa_flash.h) on 16 f32 lanes of GCC vector types, for the paths
 * whose own kernels are bf16 products (sdpa_avx512bf16.c, sdpa_amx.c); each includes it
 * once, inside its x86-64 guard, after <stdint.h>. */
#ifndef BP_CPU_SDPA_FLASH16_H
#define BP_CPU_SDPA_FLASH16_H

typedef float vf16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t vi16 __attribute__((vector_size(64), aligned(4)));

#define VL 16
#define VF vf16
#define VI vi16
#define VSPLAT(x) ((vf16){0} + (x))
#define VLANES ((vi16){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
#define VEXP_AVX512 1 /* vexp.h's AVX-512 exp */
#include "sdpa_flash.h"

#endif
