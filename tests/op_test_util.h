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

/* A logical shape: ndim sizes in d[0..ndim). */
typedef struct bp_test_shape {
    int ndim;
    int64_t d[BP_MAX_DIMS];
} bp_test_shape;

/* The number of elements of s (1 for ndim 0). */
int64_t bp_test_numel(bp_test_shape s);

/* A malloc'ed, uninitialized array of n doubles (never NULL-sized: n <= 0 gives 1). */
double *bp_test_alloc_values(int64_t n);

/* The shape of t. */
bp_test_shape bp_test_shape_of(const bp_tensor *t);

/* Fails unless t has exactly the shape s (ndim, then every size). */
void bp_test_assert_shape(const bp_tensor *t, bp_test_shape s);

/* Fails unless t has n elements whose values (downloaded with bp_test_tensor_values)
 * are within bp_test_assert_close's tolerance of want, at t's dtype and `terms`. */
void bp_test_check_tensor(const char *what, const bp_tensor *t, const double *want, int64_t n,
                          double terms);

/* Row-major values of `view` (a view of the contiguous `base` holding base_vals),
 * gathered through the view's strides and offset (malloc'ed). */
double *bp_test_view_values(const bp_tensor *view, const bp_tensor *base, const double *base_vals);

#endif
