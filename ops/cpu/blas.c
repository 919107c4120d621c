/* Finding cblas_sgemm at run time (see blas.h). */
#include "blas.h"
#include "ops_internal.h"

bp_sgemm_fn bp_blas_sgemm(void) { return cpukit_blas_sgemm(bp_log); }
