/* The kernels of the embedded SPIR-V modules (clc.h's clc_spirv_modules), read once
 * with spirv_reader.h, as the tests of backends/clc look them up. */
#ifndef BP_TEST_CLC_SIGNATURES_H
#define BP_TEST_CLC_SIGNATURES_H

#include "clc.h"
#include "spirv_reader.h"

/* The read module of clc_spirv_modules[index], or NULL with `why` (it does not read). */
const spv_module *clc_sig_module(size_t index, char *why, size_t why_size);

/* Kernel `name` of the module that clc_spirv_find picks for (program, variant) on a
 * device with or without fp64, or NULL with `why` (no module, it does not read, or it
 * lacks the kernel). */
const spv_kernel *clc_sig_kernel(clc_program_id program, int variant, bool fp64,
                                 const char *name, char *why, size_t why_size);

#endif
