/* A CBLAS sgemm found at run time: libbackplane does not link a BLAS. The first call
 * loads OpenBLAS (or the system's CBLAS) with dlopen, so a process that never
 * multiplies matrices neither needs it installed nor starts its threads. */
#ifndef BP_CPU_BLAS_H
#define BP_CPU_BLAS_H

/* The CBLAS constants this file uses, values fixed by the CBLAS standard. */
enum { BP_CBLAS_ROW_MAJOR = 101, BP_CBLAS_NO_TRANS = 111, BP_CBLAS_TRANS = 112 };

/* cblas_sgemm's signature. */
typedef void (*bp_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k,
                            float alpha, const float *a, int lda, const float *b, int ldb,
                            float beta, float *c, int ldc);

/* cblas_sgemm from the first of libopenblas.so.0, libopenblas.so, libcblas.so.3 and
 * libblas.so.3 that has it, or NULL (none, or BP_BLAS=0 in the environment). Looked up
 * once; thread-safe. */
bp_sgemm_fn bp_blas_sgemm(void);

#endif
