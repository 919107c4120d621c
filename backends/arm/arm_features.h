/* The ISA features of the cores and the SVE vector length (aarch64 Linux only). */
#ifndef BP_ARM_FEATURES_H
#define BP_ARM_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "arm_kernel.h"

/** Fills *f from getauxval(AT_HWCAP/AT_HWCAP2) and, with SVE, the calling thread's
 *  vector length (prctl PR_SVE_GET_VL). */
void arm_features_detect(arm_features *f);

/** The features as words: "asimd fp16 dotprod bf16 i8mm sve sve2 sve_bits=256". */
void arm_features_format(const arm_features *f, char *out, size_t out_size);

/** Applies BP_ARM_SVE_BITS (`text`, the variable's value; NULL or "" when unset) to *f:
 *  the vector length the backend's threads will use. Returns 0 with *out_bits = 0 when
 *  unset, 0 with *out_bits = the length when the CPU can run it (checked on a scratch
 *  thread: the caller's own vector length is left alone), or -1 with `why` saying what
 *  is wrong: not a multiple of 128 from 128 to 2048, no SVE, or a length the CPU cannot
 *  run. */
int arm_sve_bits_choose(const char *text, const arm_features *f, uint32_t *out_bits, char *why,
                        size_t why_size);

/** Sets the calling thread's SVE vector length to `bits` (a length arm_sve_bits_choose
 *  accepted); nothing for 0. */
void arm_sve_bits_apply(uint32_t bits);

#endif
