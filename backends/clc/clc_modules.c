/* clc: choosing among the precompiled modules (clc.h). The tables are generated at
 * build time (clc_spirv.c, clc_native.c); the one rule of choice lives here.
 * clc_native_find is in clc_native_find.c, so that a plugin that never asks for native
 * binaries (opencl) does not link their table. */
#include "clc.h"


int clc_module_fit(clc_program_id program, int variant, bool fp64, clc_program_id want,
                   int want_variant, bool device_fp64) {
    if (program != want || variant != want_variant || (fp64 && !device_fp64))
        return 0;
    return fp64 ? 2 : 1;
}

const clc_module *clc_spirv_find(clc_program_id program, int variant, bool device_fp64) {
    const clc_module *best = NULL;
    int best_fit = 0;
    for (size_t i = 0; i < clc_spirv_module_count; i++) {
        const clc_module *m = &clc_spirv_modules[i];
        int f = clc_module_fit(m->program, m->variant, m->fp64, program, variant, device_fp64);
        if (f > best_fit) {
            best = m;
            best_fit = f;
        }
    }
    return best;
}
