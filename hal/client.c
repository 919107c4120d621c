/* The table through which hal reaches the layers above it (bp_hal_client), and the
 * stand-alone one used when none is installed. */
#include "hal_internal.h"

static void no_core_init(void) {}

static void no_backend_dropped(const char *backend_name) { (void)backend_name; }

static bp_status no_register_kernel(const char *backend_name, const char *op_name,
                                    bp_dtype dtype, bp_kernel_fn fn, void *kernel_data,
                                    int32_t priority) {
    (void)backend_name, (void)op_name, (void)dtype, (void)fn, (void)kernel_data, (void)priority;
    return bp_set_error(BP_ERR_UNSUPPORTED, "register_kernel: no op library in this process");
}

static uint32_t no_reference_dtypes(const char *op_name) {
    (void)op_name;
    return 0;
}

static bp_status no_run_reference_kernel(const bp_kernel_call *call) {
    (void)call;
    return bp_set_error(BP_ERR_UNSUPPORTED, "run_reference_kernel: no op library in this process");
}

static int32_t no_op_count(void) { return 0; }

static const char *no_op_name(int32_t index) {
    (void)index;
    return NULL;
}

static const bp_hal_client standalone = {
    .core_init = no_core_init,
    .backend_dropped = no_backend_dropped,
    .register_kernel = no_register_kernel,
    .reference_dtypes = no_reference_dtypes,
    .run_reference_kernel = no_run_reference_kernel,
    .op_count = no_op_count,
    .op_name = no_op_name,
};

static const bp_hal_client *_Atomic installed;

void bp_hal_set_client(const bp_hal_client *client) { installed = client; }

const bp_hal_client *bp_hal_client_get(void) {
    const bp_hal_client *client = installed;
    return client ? client : &standalone;
}
