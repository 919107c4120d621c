/* Running a built-in op: output allocation and the call into the dispatcher. */
#include "ops_internal.h"

bp_status bp_op_alloc_out(bp_device *device, bp_dtype dtype, int ndim, const int64_t *shape,
                          bp_tensor **out) {
    if (!out)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "the out pointer is NULL");
    *out = NULL;
    return bp_tensor_empty(device, dtype, ndim, shape, out);
}

bp_status bp_op_run(bp_builtin_op op, bp_dtype dtype, bp_device *device,
                    bp_tensor *const *inputs, int n_inputs, bp_tensor *const *outputs,
                    int n_outputs, const void *attrs) {
    bp_stream *stream = bp_current_stream(device);
    if (!stream)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "%s: no current stream on %s: %s",
                            bp_op_name((bp_op_id)op), device->name, bp_last_error());
    for (int i = 0; i < n_inputs; i++) {
        bp_status st = bp_tensor_note_stream(inputs[i], stream);
        if (st != BP_OK)
            return st;
    }
    for (int i = 0; i < n_outputs; i++) {
        bp_status st = bp_tensor_note_stream(outputs[i], stream);
        if (st != BP_OK)
            return st;
    }
    bp_op_call call = {
        .op = (bp_op_id)op,
        .dtype = dtype,
        .device = device,
        .stream = stream,
        .n_inputs = n_inputs,
        .n_outputs = n_outputs,
        .inputs = inputs,
        .outputs = outputs,
        .attrs = attrs,
    };
    return bp_dispatch(&call);
}
