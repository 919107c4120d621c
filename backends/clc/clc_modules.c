/* clc: choosing among the precompiled modules (clc.h). The tables are generated at
 * build time (clc_spirv.c, clc_native.c); the one rule of choice lives here. */
#include "clc.h"

#include <string.h>

/* How well a module built for (program, variant, fp64) serves a request for
 * (want, want_variant) on a device with or without fp64: 0 not at all, 1 the plain
 * build, 2 the fp64 build on a device with fp64. */
static int fit(clc_program_id program, int variant, bool fp64, clc_program_id want,
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
        int f = fit(m->program, m->variant, m->fp64, program, variant, device_fp64);
        if (f > best_fit) {
            best = m;
            best_fit = f;
        }
    }
    return best;
}

const clc_native_module *clc_native_find(clc_program_id program, int variant, bool device_fp64,
                                         const char *family) {
    const clc_native_module *best = NULL;
    int best_fit = 0;
    for (size_t i = 0; family && i < clc_native_module_count; i++) {
        const clc_native_module *m = &clc_native_modules[i];
        int f = fit(m->program, m->variant, m->fp64, program, variant, device_fp64);
        if (f > best_fit && strcmp(m->family, family) == 0) {
            best = m;
            best_fit = f;
        }
    }
    return best;
}
