/* hpu: kernel calls kept past the dispatch that made them, and what they touch.
 *
 * The host's bp_kernel_call and everything it points to live only during the kernel
 * call; a deferred launch (an eager op on a stream worker, a node of a captured region)
 * keeps a deep copy: the record, the descriptors and the attribute bytes in one block. */
#ifndef BP_HPU_CALL_H
#define BP_HPU_CALL_H

#include <backplane/plugin.h>

#include <stddef.h>
#include <stdint.h>

typedef struct hpu_call {
    bp_kernel_call call; /* inputs/outputs/attrs point into this block */
} hpu_call;

/** A deep copy of `call` with its call->attrs_size attribute bytes (none when call->attrs is
 *  NULL), or NULL when out of host memory. Free with free(). */
hpu_call *hpu_call_copy(const bp_kernel_call *call);

/** Bytes of one element of `dtype` (0 for an invalid value). */
size_t hpu_dtype_size(bp_dtype dtype);

/** Elements of the view. */
int64_t hpu_desc_numel(const bp_tensor_desc *d);

/** Bytes the view spans as [*lo, *hi): from its lowest to one past its highest element
 *  address (lo == hi for an empty view). */
void hpu_desc_span(const bp_tensor_desc *d, uintptr_t *lo, uintptr_t *hi);

#endif
