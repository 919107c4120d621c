/* Helpers of the op tests: random tensors, float64 views of tensors, comparisons.
 * Include after cmocka.h and test_util.h. */
#ifndef BP_OP_TEST_UTIL_H
#define BP_OP_TEST_UTIL_H

#include <backplane/backplane.h>

#include "tolerances.h"

/* The float dtypes every float op is tested in, and all dtypes. */
extern const bp_dtype bp_test_float_dtypes[3];
extern const bp_dtype bp_test_all_dtypes[BP_DTYPE_COUNT];

/* A contiguous tensor on `dev` with uniform random values in [lo, hi) (integers:
 * rounded; bool: random 0/1), never all zeros. When values is non-NULL, *values gets
 * a malloc'ed array of the numel values as stored (after rounding to the dtype). */
bp_tensor *bp_test_random_tensor(bp_device *dev, bp_dtype dtype, int ndim, const int64_t *shape,
                                 uint64_t seed, double lo, double hi, double **values);

/* The tensor's elements in row-major order, converted to double (malloc'ed). */
double *bp_test_tensor_values(const bp_tensor *t);

/* Rounds a double as storing it in `dtype` would (float dtypes round to nearest even). */
double bp_test_round(double v, bp_dtype dtype);

/* Fails unless every got[i] is within the tolerance of `dtype` (accumulating `terms`)
 * of want[i]; names `what`, the index and both values. NaN matches NaN, inf matches
 * the same inf. */
void bp_test_assert_close(const char *what, const double *got, const double *want, int64_t n,
                          bp_dtype dtype, double terms);

#endif
