/* Checking ops against their float64 references (op_reference.h), shared by the op
 * unit tests and bp-conformance: random tensors, float64 views of tensors, and
 * comparisons with the tolerances of tolerances.h. Failures are cmocka failures on
 * the calling thread. Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>. */
#ifndef BP_OP_CHECK_H
#define BP_OP_CHECK_H

#include <backplane/backplane.h>

#include "op_reference.h"
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

/* Fails unless every got[i] is within the tolerance of `dtype` (accumulating `terms`)
 * of want[i]. The message names `what`, the dtype, how many elements are off and the
 * worst one: its index, both values and the error. NaN matches NaN, inf matches the
 * same inf. */
void bp_test_assert_close(const char *what, const double *got, const double *want, int64_t n,
                          bp_dtype dtype, double terms);

/* bp_test_assert_close over an array of logical shape `shape`, whose failure message
 * also gives the worst element's coordinates. */
void bp_test_assert_close_shaped(const char *what, const double *got, const double *want,
                                 bp_ref_shape shape, bp_dtype dtype, double terms);

/* A malloc'ed, uninitialized array of n doubles (never NULL-sized: n <= 0 gives 1). */
double *bp_test_alloc_values(int64_t n);

/* The shape of t. */
bp_ref_shape bp_test_shape_of(const bp_tensor *t);

/* Fails unless t has exactly the shape s (ndim, then every size). */
void bp_test_assert_shape(const bp_tensor *t, bp_ref_shape s);

/* Fails unless t has n elements whose values (downloaded with bp_test_tensor_values)
 * are within bp_test_assert_close's tolerance of want, at t's dtype and `terms`. */
void bp_test_check_tensor(const char *what, const bp_tensor *t, const double *want, int64_t n,
                          double terms);

/* Row-major values of `view` (a view of the contiguous `base` holding base_vals),
 * gathered through the view's strides and offset (malloc'ed). */
double *bp_test_view_values(const bp_tensor *view, const bp_tensor *base, const double *base_vals);

/* ALiBi slopes as models use them, 2^(-8 (h + 1) / H) for h < heads, as an f32 [heads]
 * tensor on dev; *values gets them as stored (malloc'ed). */
bp_tensor *bp_test_alibi_slopes(bp_device *dev, int64_t heads, double **values);

/* The op of a reference enum, through its public function: the _out form into `out`
 * when it is non-NULL, else the allocating form into *made. */
bp_status bp_test_binary(bp_ref_binary_op op, bp_tensor *a, bp_tensor *b, bp_tensor *out,
                         bp_tensor **made);
/* alpha: scale's factor. */
bp_status bp_test_unary(bp_ref_unary_op op, bp_tensor *a, double alpha, bp_tensor *out,
                        bp_tensor **made);
bp_status bp_test_reduce(bp_ref_reduce_op op, bp_tensor *a, int dim, int keepdim, bp_tensor *out,
                         bp_tensor **made);

#endif
