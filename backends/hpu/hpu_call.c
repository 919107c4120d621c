/* hpu: deep copies of kernel calls, and element/byte arithmetic on descriptors. */
#include "hpu_call.h"

#include <stdlib.h>
#include <string.h>

hpu_call *hpu_call_copy(const bp_kernel_call *call) {
    size_t nargs = (size_t)call->n_inputs + (size_t)call->n_outputs;
    /* hpu_init refused hosts older than ABI 1.4, whose records lack attrs_size. */
    size_t attrs = call->attrs && BP_CALL_HAS(call, attrs_size) ? call->attrs_size : 0;
    /* Layout: the record, the descriptor pointers, the descriptors, the attributes;
     * each part keeps 8-byte alignment (descriptors hold int64, attributes doubles). */
    size_t ptr_bytes = nargs * sizeof(const bp_tensor_desc *);
    size_t desc_bytes = nargs * sizeof(bp_tensor_desc);
    hpu_call *c = malloc(sizeof *c + ptr_bytes + desc_bytes + attrs);
    if (!c)
        return NULL;
    memset(&c->call, 0, sizeof c->call);
    /* Never read past the host's record. */
    size_t rec = call->struct_size < sizeof c->call ? call->struct_size : sizeof c->call;
    memcpy(&c->call, call, rec);
    c->call.struct_size = sizeof c->call;

    const bp_tensor_desc **ptrs = (const bp_tensor_desc **)(c + 1);
    bp_tensor_desc *descs = (bp_tensor_desc *)((char *)ptrs + ptr_bytes);
    for (size_t i = 0; i < nargs; i++) {
        size_t ni = (size_t)call->n_inputs;
        descs[i] = i < ni ? *call->inputs[i] : *call->outputs[i - ni];
        ptrs[i] = &descs[i];
    }
    void *attr_copy = (char *)descs + desc_bytes;
    if (attrs)
        memcpy(attr_copy, call->attrs, attrs);
    c->call.inputs = ptrs;
    c->call.outputs = ptrs + call->n_inputs;
    c->call.attrs = attrs ? attr_copy : NULL;
    return c;
}

size_t hpu_dtype_size(bp_dtype dtype) {
    static const unsigned char bytes[BP_DTYPE_COUNT] = {
        [BP_DTYPE_F32] = 4, [BP_DTYPE_F16] = 2, [BP_DTYPE_BF16] = 2,
        [BP_DTYPE_F64] = 8, [BP_DTYPE_I8] = 1,  [BP_DTYPE_U8] = 1,
        [BP_DTYPE_I32] = 4, [BP_DTYPE_I64] = 8, [BP_DTYPE_BOOL] = 1,
    };
    return (unsigned)dtype < BP_DTYPE_COUNT ? bytes[dtype] : 0;
}

int64_t hpu_desc_numel(const bp_tensor_desc *d) {
    int64_t n = 1;
    for (int32_t i = 0; i < d->ndim && i < BP_KERNEL_MAX_DIMS; i++)
        n *= d->shape[i];
    return n;
}

void hpu_desc_span(const bp_tensor_desc *d, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t base = (uintptr_t)d->data;
    int64_t esize = (int64_t)hpu_dtype_size(d->dtype);
    if (!d->data || hpu_desc_numel(d) <= 0 || esize == 0) {
        *lo = *hi = base;
        return;
    }
    int64_t min_off = 0, max_off = 0; /* in elements, relative to element [0,...,0] */
    for (int32_t i = 0; i < d->ndim && i < BP_KERNEL_MAX_DIMS; i++) {
        int64_t reach = (d->shape[i] - 1) * d->strides[i];
        if (reach < 0)
            min_off += reach;
        else
            max_off += reach;
    }
    *lo = base + (uintptr_t)(min_off * esize);
    *hi = base + (uintptr_t)((max_off + 1) * esize);
}
