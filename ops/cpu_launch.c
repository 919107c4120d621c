/* Running the reference cpu kernels as stream work.
 *
 * The dispatcher's call record lives on the caller's stack, and the kernel runs later
 * on the stream's worker thread, so the launch copies the record, the tensor
 * descriptors and the attributes into one heap block that the worker frees. */
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

typedef struct cpu_closure {
    bp_host_kernel_fn fn;
    bp_kernel_call call;
    /* followed by the descriptor pointers, the descriptors, then the attribute bytes */
} cpu_closure;

static void run_closure(void *arg) {
    cpu_closure *c = arg;
    c->fn(&c->call);
    free(c);
}

bp_status bp_cpu_launch(const bp_kernel_call *call) {
    size_t attrs_size = call->attrs ? call->attrs_size : 0;
    size_t n = (size_t)call->n_inputs + (size_t)call->n_outputs;
    size_t ptrs_bytes = n * sizeof(bp_tensor_desc *);
    size_t descs_bytes = n * sizeof(bp_tensor_desc);
    cpu_closure *c = malloc(sizeof *c + ptrs_bytes + descs_bytes + attrs_size);
    if (!c)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "%s: cannot allocate the cpu launch record",
                            call->op_name);
    const bp_tensor_desc **ptrs = (const bp_tensor_desc **)(c + 1);
    bp_tensor_desc *descs = (bp_tensor_desc *)((char *)ptrs + ptrs_bytes);
    for (size_t i = 0; i < n; i++) {
        descs[i] = i < (size_t)call->n_inputs ? *call->inputs[i]
                                               : *call->outputs[i - (size_t)call->n_inputs];
        ptrs[i] = &descs[i];
    }
    void *attrs = (char *)descs + descs_bytes;
    if (attrs_size)
        memcpy(attrs, call->attrs, attrs_size);
    c->fn = (bp_host_kernel_fn)call->kernel_data;
    c->call = *call;
    c->call.inputs = ptrs;
    c->call.outputs = ptrs + call->n_inputs;
    c->call.attrs = attrs_size ? attrs : NULL;
    bp_status st = bp_cpu_backend_descriptor()->stream->enqueue_host(call->stream, run_closure, c);
    if (st != BP_OK)
        free(c);
    return st;
}
