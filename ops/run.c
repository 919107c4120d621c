/* Running a built-in op: output allocation and the call into the dispatcher. */
#include <stdlib.h>

#include "ops_internal.h"

bp_status bp_op_alloc_out(bp_device *device, bp_dtype dtype, int ndim, const int64_t *shape,
                          bp_tensor **out) {
    if (!out)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "the out pointer is NULL");
    *out = NULL;
    return bp_tensor_empty(device, dtype, ndim, shape, out);
}

enum { INLINE_DESCS = 16 };

bp_status bp_op_run(bp_builtin_op op, bp_dtype dtype, bp_device *device,
                    bp_tensor *const *inputs, int n_inputs, bp_tensor *const *outputs,
                    int n_outputs, const void *attrs) {
    bp_stream *stream = bp_current_stream(device);
    if (!stream)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: no current stream on %s: %s",
                            bp_op_name((bp_op_id)op), device->name, bp_last_error());
    int n = n_inputs + n_outputs;
    const bp_tensor_desc *inline_descs[INLINE_DESCS];
    const bp_tensor_desc **descs =
        n <= INLINE_DESCS ? inline_descs : malloc((size_t)n * sizeof *descs);
    if (!descs)
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "%s: out of memory for %d tensors",
                            bp_op_name((bp_op_id)op), n);
    bp_status st = BP_OK;
    for (int i = 0; i < n && st == BP_OK; i++) {
        const bp_tensor *t = i < n_inputs ? inputs[i] : outputs[i - n_inputs];
        st = bp_tensor_note_stream(t, stream);
        descs[i] = &t->desc;
    }
    if (st == BP_OK) {
        bp_op_call call = {
            .kernel = {.op = (bp_op_id)op, .dtype = dtype, .n_inputs = n_inputs,
                       .n_outputs = n_outputs, .inputs = descs, .outputs = descs + n_inputs,
                       .attrs = attrs},
            .device = device,
            .stream = stream,
        };
        st = bp_dispatch_checked(&call);
    }
    if (descs != inline_descs)
        free(descs);
    return st;
}
