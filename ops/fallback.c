/* The CPU fallback: an op with no kernel on a device runs on the cpu, when enabled
 * (BP_CPU_FALLBACK=1 or bp_set_cpu_fallback). Inputs are copied to the cpu, the cpu
 * kernel runs, and the outputs are copied back; the call returns when they are. */
#include <stdlib.h>

#include "ops_internal.h"

static void release_all(bp_tensor **tensors, int n) {
    for (int i = 0; i < n; i++)
        bp_tensor_release(tensors[i]);
}

bp_status bp_cpu_fallback(const bp_op_record *op, const bp_op_call *call) {
    const bp_kernel_call *kc = &call->kernel;
    bp_device *cpu = NULL;
    bp_status st = bp_device_open("cpu", &cpu);
    if (st != BP_OK)
        return st;
    if (!atomic_exchange((atomic_bool *)&op->fallback_warned, true))
        bp_log(BP_LOG_WARN, "dispatcher", "op '%s' has no kernel on %s for %s: running it on the "
               "cpu (BP_CPU_FALLBACK); this copies its tensors each call", op->name,
               call->device->name, bp_dtype_name(kc->dtype));
    int n = kc->n_inputs + kc->n_outputs;
    bp_tensor **host = calloc(n > 0 ? (size_t)n : 1, sizeof *host);
    const bp_tensor_desc **host_descs = calloc(n > 0 ? (size_t)n : 1, sizeof *host_descs);
    if (!host || !host_descs) {
        free(host);
        free(host_descs);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "%s: cpu fallback: out of memory", op->name);
    }
    for (int i = 0; i < kc->n_inputs && st == BP_OK; i++) {
        bp_tensor *in = bp_tensor_of_desc(kc->inputs[i]);
        st = bp_tensor_to(in, cpu, in->dtype, &host[i]);
    }
    for (int i = 0; i < kc->n_outputs && st == BP_OK; i++) {
        const bp_tensor *out = bp_tensor_of_desc(kc->outputs[i]);
        if (!bp_tensor_is_contiguous(out))
            st = bp_set_error(BP_ERR_UNSUPPORTED, "%s: the cpu fallback needs contiguous outputs",
                              op->name);
        else
            st = bp_tensor_empty(cpu, out->dtype, out->ndim, out->shape, &host[kc->n_inputs + i]);
    }
    if (st == BP_OK) {
        for (int i = 0; i < n; i++)
            host_descs[i] = &host[i]->desc;
        bp_op_call on_cpu = {.kernel = *kc, .device = cpu, .stream = NULL};
        on_cpu.kernel.inputs = host_descs;
        on_cpu.kernel.outputs = host_descs + kc->n_inputs;
        st = bp_dispatch(&on_cpu);
    }
    for (int i = 0; i < kc->n_outputs && st == BP_OK; i++) {
        bp_tensor *out = bp_tensor_of_desc(kc->outputs[i]);
        size_t bytes = (size_t)bp_tensor_numel(out) * bp_dtype_size(out->dtype);
        st = bp_memory_copy_async(bp_tensor_data(out), call->device,
                                  bp_tensor_data(host[kc->n_inputs + i]), cpu, bytes, call->stream);
    }
    release_all(host, n);
    free(host);
    free(host_descs);
    return st == BP_OK ? st : bp_error_prefix(st, "cpu fallback");
}
