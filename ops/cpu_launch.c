/* Running the reference cpu kernels as stream work.
 *
 * The dispatcher's call record lives on the caller's stack, and the kernel runs later
 * on the stream's worker thread, so the launch runs the kernel on the kit's deep copy
 * of the record (cpukit_call_copy), which the worker frees. */
#include <stdlib.h>

#include "cpukit.h"
#include "ops_internal.h"

static void run_copy(void *arg) {
    bp_kernel_call *call = arg;
    ((bp_host_kernel_fn)call->kernel_data)(call);
    free(call);
}

bp_status bp_cpu_launch(const bp_kernel_call *call) {
    bp_kernel_call *copy = cpukit_call_copy(call);
    if (!copy)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "%s: cannot allocate the cpu launch record",
                            call->op_name);
    bp_status st = bp_cpu_backend_descriptor()->stream->enqueue_host(call->stream, run_copy, copy);
    if (st != BP_OK)
        free(copy);
    return st;
}
