/* The built-in ops and the registration of their cpu kernels. */
#include <string.h>

#include "ops_internal.h"

static const struct {
    const char *name;
    size_t attrs_size;
} builtin_ops[BP_OP_BUILTIN_COUNT] = {
#define BP_OP_ENTRY(id, name, attrs) [BP_OP_##id] = {name, attrs},
    BP_BUILTIN_OPS(BP_OP_ENTRY)
#undef BP_OP_ENTRY
};

void bp_ops_define_builtins(void) {
    for (int i = 0; i < BP_OP_BUILTIN_COUNT; i++) {
        bp_op_id id = -1;
        if (bp_op_define_builtin(builtin_ops[i].name, builtin_ops[i].attrs_size, &id) != BP_OK || id != i)
            bp_log(BP_LOG_ERROR, "ops", "defining built-in op '%s' failed: %s",
                   builtin_ops[i].name, bp_last_error());
    }
}

bp_op_id bp_ops_builtin_id(const char *name) {
    for (int i = 0; name && i < BP_OP_BUILTIN_COUNT; i++)
        if (strcmp(builtin_ops[i].name, name) == 0)
            return i;
    return -1;
}

void bp_ops_register_cpu_kernels(void) {
    for (int i = 0; i < bp_cpu_kernel_count; i++) {
        const bp_cpu_kernel_entry *k = &bp_cpu_kernel_table[i];
        bp_ops_reference_add(bp_ops_builtin_id(k->op), k->dtype, k->fn);
        if (bp_dispatcher_register_builtin("cpu", k->op, k->dtype, bp_cpu_launch, (void *)k->fn) !=
            BP_OK)
            bp_log(BP_LOG_ERROR, "ops", "registering cpu kernel %s/%s failed: %s", k->op,
                   bp_dtype_name(k->dtype), bp_last_error());
    }
}

/* ---- what hal gets from the layers above it (bp_hal_client) ---- */

static void core_init(void) {
    bp_dispatcher_init();
    bp_ops_define_builtins();
    bp_ops_register_cpu_kernels();
}

static const bp_hal_client op_library = {
    .core_init = core_init,
    .backend_dropped = bp_dispatcher_backend_dropped,
    .register_kernel = bp_host_register_kernel,
    .reference_dtypes = bp_host_reference_dtypes,
    .run_reference_kernel = bp_host_run_reference_kernel,
    .op_count = bp_host_op_count,
    .op_name = bp_host_op_name,
};

/* Runs when libbackplane is loaded, before any of its functions can be called. */
__attribute__((constructor)) static void install_op_library(void) { bp_hal_set_client(&op_library); }
