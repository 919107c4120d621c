/* Finding cblas_sgemm at run time (see cpukit_blas.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpukit_blas.h"

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static bool blas_looked_up;
static cpukit_sgemm_fn blas_sgemm;

/* BP_BLAS is read with secure_getenv: it chooses code. */
static const char *blas_switch(void) { return secure_getenv("BP_BLAS"); }

bool cpukit_blas_enabled(void) {
    const char *value = blas_switch();
    return value == NULL || value[0] == '\0' || strcmp(value, "1") == 0;
}

#define LOG(...) (log ? log(__VA_ARGS__) : (void)0)

static void find_sgemm(cpukit_log_fn log) {
    if (!cpukit_blas_enabled()) {
        /* An unclear value loads no library: the built-in kernel is always there. */
        if (strcmp(blas_switch(), "0") != 0)
            LOG(BP_LOG_WARN, "matmul", "BP_BLAS='%s' is not 0 or 1; f32 matmul uses the "
                "built-in kernel", blas_switch());
        LOG(BP_LOG_INFO, "matmul", "BP_BLAS: using the built-in matmul kernel");
        return;
    }
    static const char *const libraries[] = {"libopenblas.so.0", "libopenblas.so", "libcblas.so.3",
                                            "libblas.so.3"};
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        void *lib = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            LOG(BP_LOG_DEBUG, "matmul", "no %s: %s", libraries[i], dlerror());
            continue;
        }
        void *fn = dlsym(lib, "cblas_sgemm");
        if (!fn) {
            LOG(BP_LOG_DEBUG, "matmul", "%s has no cblas_sgemm", libraries[i]);
            dlclose(lib);
            continue;
        }
        /* POSIX lets a dlsym result be converted to a function pointer. */
        memcpy(&blas_sgemm, &fn, sizeof blas_sgemm);
        LOG(BP_LOG_INFO, "matmul", "f32 matmul uses cblas_sgemm from %s", libraries[i]);
        return; /* the library stays loaded for the life of the process */
    }
    LOG(BP_LOG_INFO, "matmul", "no CBLAS library found (install libopenblas0 for faster f32 "
        "matmul): using the built-in kernel");
}

cpukit_sgemm_fn cpukit_blas_sgemm(cpukit_log_fn log) {
    pthread_mutex_lock(&blas_lock);
    if (!blas_looked_up) {
        find_sgemm(log);
        blas_looked_up = true;
    }
    cpukit_sgemm_fn fn = blas_sgemm;
    pthread_mutex_unlock(&blas_lock);
    return fn;
}
