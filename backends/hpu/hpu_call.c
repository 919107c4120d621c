/* hpu: element/byte arithmetic on kernel descriptors. */
#include "hpu_call.h"


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
