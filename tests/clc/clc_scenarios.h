/* Representative calls of every (op, dtype) that backends/clc registers, on a fake
 * device (clc_fake.h): for each op, the cases that take its different paths
 * (contiguous, strided and broadcast operands, transposed matmul, both sdpa kernels,
 * norms with and without weight and bias, empty tensors, ...). The tests that check
 * what the kernels ask of the device run them all. */
#ifndef BP_TEST_CLC_SCENARIOS_H
#define BP_TEST_CLC_SCENARIOS_H

#include "clc_fake.h"

typedef struct clc_case {
    const char *op;
    bp_dtype dtype;
    const char *name;  /* "broadcast", "empty", ... */
    bool empty;        /* nothing to compute: nothing may be enqueued */
    bp_status status;  /* what the kernel returned */
} clc_case;

/* Called after each call, with the device's record of it. */
typedef void (*clc_case_fn)(const clc_case *c, const fake_device *dev, void *ctx);

/* Registers clc's kernels with the fake host and runs the cases of every registered
 * (op, dtype) on dev (a device without fp64 skips f64, which it does not offer), then
 * `each` after every call. Returns the number of calls, or -1 with `why` naming a
 * registered op that has no cases here (a new op must get them). */
int clc_run_all_cases(fake_device *dev, clc_case_fn each, void *ctx, char *why,
                      size_t why_size);

#endif
