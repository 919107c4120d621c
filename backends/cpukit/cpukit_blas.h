/* A CBLAS sgemm found at run time, for the CPU-class backends (the cpu backend's
 * matmul, the arm plugin's): neither links a BLAS. The first lookup loads OpenBLAS (or
 * the system's CBLAS) with dlopen, so a process that never multiplies matrices neither
 * needs it installed nor starts its threads. Public headers only (<backplane/plugin.h>
 * for the log levels): plugins compile it in. */
#ifndef BP_CPUKIT_BLAS_H
#define BP_CPUKIT_BLAS_H

#include <stdbool.h>
#include <backplane/plugin.h>

/* The CBLAS constants the callers use, values fixed by the CBLAS standard. */
enum { CPUKIT_CBLAS_ROW_MAJOR = 101, CPUKIT_CBLAS_NO_TRANS = 111, CPUKIT_CBLAS_TRANS = 112 };

/* cblas_sgemm's signature. */
typedef void (*cpukit_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k,
                                float alpha, const float *a, int lda, const float *b, int ldb,
                                float beta, float *c, int ldc);

/* Where the lookup's lines go: bp_log in libbackplane, host->log in a plugin. */
typedef void (*cpukit_log_fn)(bp_log_level level, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether the switch BP_BLAS lets BLAS be used: unset, empty or "1" (the lookup below
 * warns about a value other than 0 and 1). Loads nothing, logs nothing. */
bool cpukit_blas_enabled(void);

/* cblas_sgemm from the first of libopenblas.so.0, libopenblas.so, libcblas.so.3 and
 * libblas.so.3 that has it, or NULL: none, or BP_BLAS not enabled. Looked up once per
 * process, by the first call, which logs what it found through `log` (NULL: silent)
 * as source "matmul"; thread-safe. */
cpukit_sgemm_fn cpukit_blas_sgemm(cpukit_log_fn log);

#endif
