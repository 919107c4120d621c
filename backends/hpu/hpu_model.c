/* hpu: op costs and the roofline timeline (see hpu_model.h). */
#include "hpu_model.h"

#include "hpu_call.h"

static double max2(double a, double b) {
    return a > b ? a : b;
}

static double desc_bytes(const bp_tensor_desc *d) {
    return (double)hpu_desc_numel(d) * (double)hpu_dtype_size(d->dtype);
}

/* Bytes of every input and output, each at its own dtype. */
static double kernel_bytes(const bp_kernel_call *call) {
    double bytes = 0.0;
    for (int32_t i = 0; i < call->n_inputs; i++)
        bytes += desc_bytes(call->inputs[i]);
    for (int32_t i = 0; i < call->n_outputs; i++)
        bytes += desc_bytes(call->outputs[i]);
    return bytes;
}

static double outputs_numel(const bp_kernel_call *call) {
    double n = 0.0;
    for (int32_t i = 0; i < call->n_outputs; i++)
        n += (double)hpu_desc_numel(call->outputs[i]);
    return n;
}

/* 2 * out * K, K being a's reduction dim after the optional transpose. */
static double matmul_flops(const bp_kernel_call *call) {
    if (call->n_inputs < 1 || call->n_outputs < 1)
        return 0.0;
    const bp_tensor_desc *a = call->inputs[0];
    const bp_matmul_attrs *attrs = call->attrs;
    int64_t k = 0;
    if (a->ndim >= 2)
        k = attrs && attrs->trans_a ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    else if (a->ndim == 1)
        k = a->shape[0];
    return 2.0 * outputs_numel(call) * (double)k;
}

/* 4 * B*H * Sq * Skv * D from q [..., Sq, D] and k [..., Skv, D]: two matmuls of
 * 2*Sq*Skv*D each per head; the softmax's work is small beside them. */
static double sdpa_flops(const bp_kernel_call *call) {
    if (call->n_inputs < 2)
        return 0.0;
    const bp_tensor_desc *q = call->inputs[0], *k = call->inputs[1];
    if (q->ndim < 2 || k->ndim < 2)
        return 0.0;
    double batch = 1.0;
    for (int32_t i = 0; i < q->ndim - 2; i++)
        batch *= (double)q->shape[i];
    double sq = (double)q->shape[q->ndim - 2], d = (double)q->shape[q->ndim - 1];
    double skv = (double)k->shape[k->ndim - 2];
    return 4.0 * batch * sq * skv * d;
}

static double kernel_flops(const hpu_op_cost *cost, const bp_kernel_call *call) {
    switch (cost->rule) {
    case HPU_FLOPS_MATMUL:
        return matmul_flops(call);
    case HPU_FLOPS_SDPA:
        return sdpa_flops(call);
    case HPU_FLOPS_PER_INPUT:
        return call->n_inputs > 0 ? cost->flops_per_elem * (double)hpu_desc_numel(call->inputs[0])
                                  : 0.0;
    case HPU_FLOPS_PER_OUTPUT:
    default:
        return cost->flops_per_elem * outputs_numel(call);
    }
}

hpu_work hpu_work_kernel(const hpu_params *p, const hpu_op_cost *cost, const bp_kernel_call *call) {
    hpu_work w = {.engine = cost->engine};
    w.flops = kernel_flops(cost, call);
    w.bytes = kernel_bytes(call);
    double rate = hpu_params_flops_per_us(p, cost->engine, call->dtype);
    w.compute_us = rate > 0.0 ? w.flops / rate : 0.0;
    w.mem_us = w.bytes / hpu_params_hbm_bytes_per_us(p);
    return w;
}

hpu_work hpu_work_copy(const hpu_params *p, bp_copy_kind kind, size_t size) {
    hpu_work w = {.engine = HPU_ENGINE_DMA};
    double bytes = (double)size;
    if (kind == BP_COPY_DEVICE_TO_DEVICE) {
        w.bytes = 2.0 * bytes; /* read and write, both in HBM */
    } else {
        w.bytes = bytes;       /* the device side of the transfer */
        w.compute_us = bytes / hpu_params_host_link_bytes_per_us(p);
    }
    w.mem_us = w.bytes / hpu_params_hbm_bytes_per_us(p);
    return w;
}

hpu_work hpu_work_memset(const hpu_params *p, size_t size) {
    hpu_work w = {.engine = HPU_ENGINE_DMA};
    w.bytes = (double)size;
    w.mem_us = w.bytes / hpu_params_hbm_bytes_per_us(p);
    return w;
}

double hpu_timeline_place(hpu_timeline *tl, const hpu_work *w, double ready_us,
                          double overhead_us, double *out_start_us) {
    double *engine_free = &tl->engine_free_us[w->engine];
    double start = max2(ready_us, *engine_free);
    double end = start + w->compute_us;
    if (w->mem_us > 0.0) { /* work without memory traffic leaves HBM alone */
        double mem_start = max2(start, tl->hbm_free_us);
        tl->hbm_free_us = mem_start + w->mem_us;
        end = max2(end, tl->hbm_free_us);
    }
    end += overhead_us;
    *engine_free = end;
    if (out_start_us)
        *out_start_us = start;
    return end;
}

double hpu_model_eager(hpu_model *m, const hpu_params *p, const hpu_work *w,
                       double stream_ready_us, bool launch) {
    if (launch)
        m->host_us += p->eager_launch_us;
    double ready = max2(stream_ready_us, m->host_us);
    return hpu_timeline_place(&m->timeline, w, ready, p->eager_node_us, NULL);
}

void hpu_model_host_waited(hpu_model *m, double ts_us) {
    m->host_us = max2(m->host_us, ts_us);
}

double hpu_model_record_ts(const hpu_model *m, double stream_ready_us) {
    return max2(stream_ready_us, m->host_us);
}
