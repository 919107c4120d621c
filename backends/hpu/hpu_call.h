/* hpu: what kernel calls touch. (A deferred launch, an eager op on a stream worker or a
 * node of a captured region, keeps the kit's deep copy of the call: cpukit_call_copy.) */
#ifndef BP_HPU_CALL_H
#define BP_HPU_CALL_H

#include <backplane/plugin.h>

#include <stddef.h>
#include <stdint.h>

/** Bytes of one element of `dtype` (0 for an invalid value). */
size_t hpu_dtype_size(bp_dtype dtype);

/** Elements of the view. */
int64_t hpu_desc_numel(const bp_tensor_desc *d);

/** Bytes the view spans as [*lo, *hi): from its lowest to one past its highest element
 *  address (lo == hi for an empty view). */
void hpu_desc_span(const bp_tensor_desc *d, uintptr_t *lo, uintptr_t *hi);

#endif
