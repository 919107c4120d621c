/* Finding cblas_sgemm at run time (see blas.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "env.h"
#include "ops_internal.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static bp_sgemm_fn blas_sgemm;

static void find_sgemm(void) {
    /* An unclear value loads no library: the built-in kernel is always there. */
    if (!bp_env_switch("BP_BLAS", true, false, "matmul", "f32 matmul uses the built-in kernel")) {
        bp_log(BP_LOG_INFO, "matmul", "BP_BLAS: using the built-in matmul kernel");
        return;
    }
    static const char *const libraries[] = {"libopenblas.so.0", "libopenblas.so", "libcblas.so.3",
                                            "libblas.so.3"};
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        void *lib = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            bp_log(BP_LOG_DEBUG, "matmul", "no %s: %s", libraries[i], dlerror());
            continue;
        }
        void *fn = dlsym(lib, "cblas_sgemm");
        if (!fn) {
            bp_log(BP_LOG_DEBUG, "matmul", "%s has no cblas_sgemm", libraries[i]);
            dlclose(lib);
            continue;
        }
        /* POSIX lets a dlsym result be converted to a function pointer. */
        memcpy(&blas_sgemm, &fn, sizeof blas_sgemm);
        bp_log(BP_LOG_INFO, "matmul", "f32 matmul uses cblas_sgemm from %s", libraries[i]);
        return; /* the library stays loaded for the life of the process */
    }
    bp_log(BP_LOG_INFO, "matmul", "no CBLAS library found (install libopenblas0 for faster f32 "
           "matmul): using the built-in kernel");
}

bp_sgemm_fn bp_blas_sgemm(void) {
    pthread_once(&blas_once, find_sgemm);
    return blas_sgemm;
}
