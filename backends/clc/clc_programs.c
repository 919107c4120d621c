/* clc: the programs (clc.h): their sources, kernels and build parameters. */
#include "clc.h"

#include <string.h>

extern const char clc_src_move[];
extern const char clc_src_convert[];
extern const char clc_src_elemwise[];
extern const char clc_src_reduce[];
extern const char clc_src_norm[];
extern const char clc_src_matmul[];
extern const char clc_src_sdpa[];

const clc_program_def clc_programs[CLC_PROG_COUNT] = {
    [CLC_PROG_MOVE] = {"move", clc_src_move, true, {"k_fill", "k_move", "k_where", NULL}},
    [CLC_PROG_CONVERT] = {"convert", clc_src_convert, false, {"k_convert", NULL}},
    [CLC_PROG_ELEMWISE] = {"elemwise", clc_src_elemwise, false, {"k_binary", "k_unary", NULL}},
    [CLC_PROG_REDUCE] = {"reduce", clc_src_reduce, false, {"k_reduce", "k_softmax", NULL}},
    [CLC_PROG_NORM] = {"norm", clc_src_norm, false, {"k_rmsnorm", "k_layernorm", "k_rope", NULL}},
    [CLC_PROG_MATMUL] = {"matmul", clc_src_matmul, false, {"k_matmul", NULL}},
    [CLC_PROG_SDPA] = {"sdpa", clc_src_sdpa, false, {"k_sdpa", "k_sdpa_rows", NULL}},
};

int clc_kernel_index(clc_program_id id, const char *name) {
    if ((unsigned)id >= CLC_PROG_COUNT || !name)
        return -1;
    for (int k = 0; clc_programs[id].kernels[k]; k++)
        if (strcmp(clc_programs[id].kernels[k], name) == 0)
            return k;
    return -1;
}

uint32_t clc_device_dtypes(bool fp64) {
    uint32_t all = (1u << BP_DTYPE_COUNT) - 1u;
    return fp64 ? all : all & ~BP_DTYPE_BIT(BP_DTYPE_F64);
}

void clc_device_params(size_t max_wg, size_t *rwg, int *ts) {
    size_t limit = max_wg < CLC_FIXED_RWG ? max_wg : CLC_FIXED_RWG;
    *rwg = 1;
    while (*rwg * 2 <= limit)
        *rwg *= 2;
    *ts = max_wg >= 256 ? 16 : max_wg >= 64 ? 8 : 4;
}

void clc_build_log_trim(char *log) {
    if (!log)
        return;
    enum { LOG_MAX = 2000 };
    if (strlen(log) > LOG_MAX)
        memcpy(log + LOG_MAX - 4, "...", 4);
    for (size_t n = strlen(log); n > 0 && strchr(" \t\r\n", log[n - 1]); n--)
        log[n - 1] = '\0';
}
