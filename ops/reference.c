/* The host's reference kernels, offered to plugins through the host services (ABI 1.3:
 * reference_dtypes, run_reference_kernel): a backend whose device memory the host can
 * address (the hpu simulator) gets the cpu kernels' results without writing kernels.
 * The table is filled once, while the dispatcher initialises and before any plugin is
 * loaded, and only read afterwards. */
#include "ops_internal.h"

static bp_host_kernel_fn reference[BP_OP_BUILTIN_COUNT][BP_DTYPE_COUNT];

void bp_ops_reference_add(bp_op_id op, bp_dtype dtype, bp_host_kernel_fn fn) {
    if (op >= 0 && op < BP_OP_BUILTIN_COUNT && (unsigned)dtype < BP_DTYPE_COUNT)
        reference[op][dtype] = fn;
}

uint32_t bp_host_reference_dtypes(const char *op_name) {
    /* Plugins call this from init, inside the registry's initialisation: no bp_op_find. */
    bp_op_id op = bp_ops_builtin_id(op_name);
    if (op < 0)
        return 0;
    uint32_t mask = 0;
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (reference[op][dt])
            mask |= BP_DTYPE_BIT(dt);
    return mask;
}

bp_status bp_host_run_reference_kernel(const bp_kernel_call *call) {
    if (!call)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "run_reference_kernel: call is NULL");
    if (call->op < 0 || call->op >= BP_OP_BUILTIN_COUNT || (unsigned)call->dtype >= BP_DTYPE_COUNT ||
        !reference[call->op][call->dtype]) {
        const bp_op_record *op = bp_op_record_get(call->op);
        return bp_set_error(BP_ERR_UNSUPPORTED,
                            "run_reference_kernel: the host has no reference kernel of op %s "
                            "for dtype %s",
                            op ? op->name : "(unknown op id)", bp_dtype_name(call->dtype));
    }
    reference[call->op][call->dtype](call);
    return BP_OK;
}
