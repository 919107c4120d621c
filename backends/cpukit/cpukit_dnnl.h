/* oneDNN's matmul primitive as an engine of the CPU-class backends' matmul (the cpu
 * backend's ops/cpu/matmul.c): f32, bf16 and f16 operands used in place with their
 * strides and broadcast batch dims, accumulated in f32 by oneDNN, output in the
 * operands' dtype. oneDNN 3 (the C API of dnnl.h) is loaded with dlopen at the first
 * matmul that asks for it: libdnnl.so.3, or the file BP_ONEDNN_LIBRARY names (no other
 * search), so libbackplane keeps no link-time dependency and a process that never
 * multiplies matrices loads nothing. Built only on x86-64 where dnnl.h was found
 * (scripts/onednn.sh; CMake's BP_ONEDNN_INCLUDE_DIR): elsewhere the functions below
 * report oneDNN unavailable. Public headers only. docs/ops.md, "cpu matmul engines". */
#ifndef BP_CPUKIT_DNNL_H
#define BP_CPUKIT_DNNL_H

#include <stdbool.h>
#include <backplane/plugin.h>

#include "cpukit_blas.h"
#include "cpukit_matmul.h"

#ifdef BP_CPUKIT_ONEDNN

/* Loads oneDNN once per process (thread-safe; later calls return the first answer):
 * NULL when it is ready, else why not (a static string: the file is missing, it is not
 * oneDNN 3, a function is missing, ...). The first call logs the version and path (or
 * the reason) through `log` at info level. */
const char *cpukit_dnnl_load(cpukit_log_fn log);

/* Runs one matmul of geometry g (cpukit_matmul.h; k > 0) in dtype dt on oneDNN, on
 * the calling thread and `threads` OpenMP threads of oneDNN's (the calling thread's
 * OpenMP thread count is set to it: an OpenMP ICV of that thread alone). Returns false
 * when oneDNN is not loaded, has no implementation for it other than its slow
 * reference one (logged once per dtype at info level through `log`), or failed: the
 * caller then computes the whole of c with another engine. The first primitive of each dtype logs
 * the implementation oneDNN chose. */
bool cpukit_dnnl_matmul(const cpukit_mm_geometry *g, bp_dtype dt, const void *a, const void *b,
                        void *c, int threads, cpukit_log_fn log);

#else

static inline const char *cpukit_dnnl_load(cpukit_log_fn log) {
    (void)log;
    return "this build has no oneDNN engine (x86-64 with dnnl.h only: scripts/onednn.sh)";
}

static inline bool cpukit_dnnl_matmul(const cpukit_mm_geometry *g, bp_dtype dt, const void *a,
                                      const void *b, void *c, int threads, cpukit_log_fn log) {
    (void)g, (void)dt, (void)a, (void)b, (void)c, (void)threads, (void)log;
    return false;
}

#endif

#endif
