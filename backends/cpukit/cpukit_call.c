/* Deep copies of kernel call records (cpukit.h): the dispatcher's record lives on the
 * caller's stack, and the kernel runs later on the stream's worker thread. */
#include "cpukit.h"

#include <stdlib.h>
#include <string.h>

bp_kernel_call *cpukit_call_copy(const bp_kernel_call *call) {
    size_t attrs_size = 0;
    if (call->attrs) {
        if (!BP_CALL_HAS(call, attrs_size))
            return NULL;
        attrs_size = call->attrs_size;
    }
    size_t n = (size_t)call->n_inputs + (size_t)call->n_outputs;
    size_t ptrs_bytes = n * sizeof(bp_tensor_desc *);
    size_t descs_bytes = n * sizeof(bp_tensor_desc);
    /* The record, then the descriptor pointers, the descriptors, the attribute bytes. */
    bp_kernel_call *copy = malloc(sizeof *copy + ptrs_bytes + descs_bytes + attrs_size);
    if (!copy)
        return NULL;
    const bp_tensor_desc **ptrs = (const bp_tensor_desc **)(copy + 1);
    bp_tensor_desc *descs = (bp_tensor_desc *)((char *)ptrs + ptrs_bytes);
    for (size_t i = 0; i < n; i++) {
        descs[i] = i < (size_t)call->n_inputs ? *call->inputs[i]
                                               : *call->outputs[i - (size_t)call->n_inputs];
        ptrs[i] = &descs[i];
    }
    void *attrs = (char *)descs + descs_bytes;
    if (attrs_size)
        memcpy(attrs, call->attrs, attrs_size);
    size_t have = call->struct_size < sizeof *copy ? call->struct_size : sizeof *copy;
    memset(copy, 0, sizeof *copy);
    memcpy(copy, call, have);
    copy->struct_size = sizeof *copy;
    copy->inputs = ptrs;
    copy->outputs = ptrs + call->n_inputs;
    copy->attrs = attrs_size ? attrs : NULL;
    copy->attrs_size = attrs_size;
    return copy;
}
