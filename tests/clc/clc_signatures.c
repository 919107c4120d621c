/* The kernels of the embedded SPIR-V modules (clc_signatures.h). */
#include "clc_signatures.h"

#include <stdio.h>
#include <stdlib.h>

static spv_module *modules; /* clc_spirv_module_count entries, read at first use */
static bool *read_ok;

const spv_module *clc_sig_module(size_t index, char *why, size_t why_size) {
    if (index >= clc_spirv_module_count) {
        snprintf(why, why_size, "module %zu of %zu", index, clc_spirv_module_count);
        return NULL;
    }
    if (!modules) {
        modules = calloc(clc_spirv_module_count, sizeof *modules);
        read_ok = calloc(clc_spirv_module_count, sizeof *read_ok);
        if (!modules || !read_ok) {
            snprintf(why, why_size, "out of memory");
            return NULL;
        }
        for (size_t i = 0; i < clc_spirv_module_count; i++)
            read_ok[i] = spv_read(clc_spirv_modules[i].spirv, clc_spirv_modules[i].size,
                                  &modules[i]);
    }
    const clc_module *m = &clc_spirv_modules[index];
    if (!read_ok[index]) {
        snprintf(why, why_size, "the module of %s variant %d%s does not read: %s",
                 clc_programs[m->program].name, m->variant, m->fp64 ? " (fp64)" : "",
                 modules[index].error);
        return NULL;
    }
    return &modules[index];
}

const spv_kernel *clc_sig_kernel(clc_program_id program, int variant, bool fp64,
                                 const char *name, char *why, size_t why_size) {
    const char *prog = (unsigned)program < CLC_PROG_COUNT ? clc_programs[program].name : "?";
    const clc_module *m = clc_spirv_find(program, variant, fp64);
    if (!m) {
        snprintf(why, why_size, "no SPIR-V module of %s variant %d for a device %s fp64",
                 prog, variant, fp64 ? "with" : "without");
        return NULL;
    }
    const spv_module *read = clc_sig_module((size_t)(m - clc_spirv_modules), why, why_size);
    if (!read)
        return NULL;
    const spv_kernel *k = spv_find_kernel(read, name);
    if (!k)
        snprintf(why, why_size, "the module of %s variant %d%s has no kernel %s", prog,
                 variant, m->fp64 ? " (fp64)" : "", name);
    return k;
}
