/* clc: clc_native_find (clc.h), apart from clc_spirv_find so that only a plugin that asks
 * for native binaries links their table (clc_native.c). */
#include "clc.h"

#include <string.h>

const clc_native_module *clc_native_find(clc_program_id program, int variant, bool device_fp64,
                                         const char *family) {
    const clc_native_module *best = NULL;
    int best_fit = 0;
    for (size_t i = 0; family && i < clc_native_module_count; i++) {
        const clc_native_module *m = &clc_native_modules[i];
        int f = clc_module_fit(m->program, m->variant, m->fp64, program, variant, device_fp64);
        if (f > best_fit && strcmp(m->family, family) == 0) {
            best = m;
            best_fit = f;
        }
    }
    return best;
}
