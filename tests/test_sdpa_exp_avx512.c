/* vexp.h's AVX-512 form (VEXP_AVX512), the exp of the cpu sdpa's 16-lane paths, for
 * tests/test_sdpa_exp.c: this file is compiled with the flags of those paths
 * (-mavx512f ... -mfma, tests/CMakeLists.txt) and called only where the CPU has them. */
#define VEXP_AVX512 1
#include "sdpa_exp_eval.h"

EVAL(eval_avx512, )
