/* Checking ops against their float64 references (op_reference.h), shared by the op
 * unit tests and bp-conformance: random tensors, float64 views of tensors, and
 * comparisons with the error bounds of tolerances.h. Failures are cmocka failures on
 * the calling thread, reported at the caller's file and line. Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>. */
#ifndef BP_OP_CHECK_H
#define BP_OP_CHECK_H

#include <backplane/backplane.h>

#include "op_reference.h"
#include "tolerances.h"

/* The float dtypes every float op is tested in, and all dtypes. */
extern const bp_dtype bp_test_float_dtypes[3];
extern const bp_dtype bp_test_all_dtypes[BP_DTYPE_COUNT];

/* Writes n uniform random values in [lo, hi) of `dtype` (integers: rounded; bool:
 * random 0/1), never all zeros, into the host buffer `buf` as the dtype stores them,
 * and returns them as doubles (malloc'ed): what bp_test_random_tensor uploads. */
double *bp_test_random_values(void *buf, bp_dtype dtype, int64_t n, uint64_t seed, double lo,
                              double hi);

/* A contiguous tensor on `dev` with uniform random values in [lo, hi) (integers:
 * rounded; bool: random 0/1), never all zeros. When values is non-NULL, *values gets
 * a malloc'ed array of the numel values as stored (after rounding to the dtype). */
bp_tensor *bp_test_random_tensor(bp_device *dev, bp_dtype dtype, int ndim, const int64_t *shape,
                                 uint64_t seed, double lo, double hi, double **values);

/* A contiguous tensor on `dev` holding `values` (row-major, numel of shape of them)
 * stored in dtype: floats rounded to nearest even, integers truncated (they must fit). */
bp_tensor *bp_test_tensor_from_values(bp_device *dev, bp_dtype dtype, int ndim,
                                      const int64_t *shape, const double *values);

/* The tensor's elements in row-major order, converted to double (malloc'ed). */
double *bp_test_tensor_values(const bp_tensor *t);

/* Fails unless every got[i] is within the bound of tolerances.h of want (its values and
 * magnitudes; an exact want must match bit for bit) at `dtype`. The message names
 * `what`, the dtype, how many elements are off and the worst one: its index, got, want,
 * the error, the bound and g(K) * M. NaN matches NaN, inf matches the same inf. The
 * failure is reported at the caller's file and line (these are macros). */
#define bp_test_assert_close(what, got, want, n, dtype) \
    bp_test_assert_close_at(what, got, want, n, dtype, __FILE__, __LINE__)
void bp_test_assert_close_at(const char *what, const double *got, bp_ref_result want, int64_t n,
                             bp_dtype dtype, const char *file, int line);

/* bp_test_assert_close over an array of logical shape `shape`, whose failure message
 * also gives the worst element's coordinates. */
#define bp_test_assert_close_shaped(what, got, want, shape, dtype) \
    bp_test_assert_close_shaped_at(what, got, want, shape, dtype, __FILE__, __LINE__)
void bp_test_assert_close_shaped_at(const char *what, const double *got, bp_ref_result want,
                                    bp_ref_shape shape, bp_dtype dtype, const char *file,
                                    int line);

/* The number of elements of got that fail bp_test_assert_close's comparison with want
 * (no failure is raised): for tests of the bound itself. */
int64_t bp_test_count_out_of_bounds(const double *got, bp_ref_result want, int64_t n,
                                    bp_dtype dtype);

/* A malloc'ed, uninitialized array of n doubles (never NULL-sized: n <= 0 gives 1). */
double *bp_test_alloc_values(int64_t n);

/* The shape of t. */
bp_ref_shape bp_test_shape_of(const bp_tensor *t);

/* Fails unless t has exactly the shape s (ndim, then every size). */
void bp_test_assert_shape(const bp_tensor *t, bp_ref_shape s);

/* Fails unless t has n elements whose values (downloaded with bp_test_tensor_values)
 * are within bp_test_assert_close's bound of want at t's dtype; reported at the
 * caller's line. */
#define bp_test_check_tensor(what, t, want, n) \
    bp_test_check_tensor_at(what, t, want, n, __FILE__, __LINE__)
void bp_test_check_tensor_at(const char *what, const bp_tensor *t, bp_ref_result want, int64_t n,
                             const char *file, int line);

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
