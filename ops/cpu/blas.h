/* A CBLAS sgemm found at run time: libbackplane does not link a BLAS. The lookup is the
 * CPU-class kit's (backends/cpukit/cpukit_blas.h, which the arm plugin uses too): the
 * first call loads OpenBLAS (or the system's CBLAS) with dlopen, so a process that never
 * multiplies matrices neither needs it installed nor starts its threads. */
#ifndef BP_CPU_BLAS_H
#define BP_CPU_BLAS_H

#include "cpukit_blas.h"

enum {
    BP_CBLAS_ROW_MAJOR = CPUKIT_CBLAS_ROW_MAJOR,
    BP_CBLAS_NO_TRANS = CPUKIT_CBLAS_NO_TRANS,
    BP_CBLAS_TRANS = CPUKIT_CBLAS_TRANS,
};

typedef cpukit_sgemm_fn bp_sgemm_fn;

/* cpukit_blas_sgemm, logging through bp_log: NULL when there is none or BP_BLAS=0. */
bp_sgemm_fn bp_blas_sgemm(void);

#endif
