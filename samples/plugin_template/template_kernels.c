/* Kernels: one, add for f32, registered through the host services in init.
 *
 * What every kernel must do (docs/writing-a-backend.md, §8): take any strided view and
 * inputs that broadcast to the output's shape, write exactly the output's elements,
 * allow the output to be the identical view of an input (in place: read an element
 * before writing it), and enqueue the work on call->stream instead of running it. The
 * call record is borrowed: everything the work needs is copied at enqueue time.
 *
 * <backplane/kernel_plan.h> turns the descriptors into one shape and per-operand
 * strides (broadcast dims get stride 0, contiguous dims are merged), so the body is one
 * strided walk, with a flat fast path when every operand is contiguous.
 *
 * Ops and dtypes without a kernel here fail with BP_ERR_UNSUPPORTED naming what the
 * device has (or run on the cpu with the user's CPU fallback); the conformance suite
 * skips them. Register more pairs as you write them. */
#include <backplane/kernel_plan.h>

#include "template.h"

typedef struct add_args {
    bp_plan plan; /* operand 0: out, 1: a, 2: b */
    float *out;
    const float *a, *b;
} add_args;

static void add_f32_run(void *args) {
    const add_args *k = args;
    const bp_plan *p = &k->plan;
    if (bp_plan_is_flat(p)) {
        for (int64_t i = 0; i < p->numel; i++)
            k->out[i] = k->a[i] + k->b[i];
        return;
    }
    /* Odometer over the plan's dims, last dim fastest, keeping each operand's offset. */
    int64_t index[BP_KERNEL_MAX_DIMS] = {0};
    int64_t offset[3] = {0, 0, 0};
    for (int64_t i = 0; i < p->numel; i++) {
        k->out[offset[0]] = k->a[offset[1]] + k->b[offset[2]];
        for (int d = p->ndim - 1; d >= 0; d--) {
            for (int op = 0; op < 3; op++)
                offset[op] += p->strides[op][d];
            if (++index[d] < p->shape[d])
                break;
            for (int op = 0; op < 3; op++)
                offset[op] -= p->strides[op][d] * p->shape[d];
            index[d] = 0;
        }
    }
}

static bp_status add_f32(const bp_kernel_call *call) {
    const bp_tensor_desc *out = call->outputs[0];
    add_args k = {.out = out->data, .a = call->inputs[0]->data, .b = call->inputs[1]->data};
    bp_plan_elementwise(&k.plan, out, 2, call->inputs);
    if (k.plan.numel == 0)
        return BP_OK; /* an empty tensor: nothing to do */
    return template_submit(call->stream, add_f32_run, &k, sizeof k);
}

bp_status template_register_kernels(const bp_host_services *host) {
    /* register_kernel arrived in ABI 1.1: an older host gets a plugin without kernels. */
    if (!BP_HOST_HAS(host, register_kernel))
        return BP_OK;
    return host->register_kernel(TEMPLATE_NAME, "add", BP_DTYPE_F32, add_f32, NULL, 0);
}
