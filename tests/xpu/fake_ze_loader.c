/* A fake Level Zero loader for the xpu plugin's no-device tests (tests/xpu/xpu.cmake).
 * It exports every function the plugin looks up (backends/xpu/xpu_ze_functions.h):
 * those init calls first behave as FAKE_ZE_MODE says, every other one aborts (unless
 * fake_ze_gpu.c implements it, for the "gpu" mode), so a test
 * passing on it proves that the plugin stopped where it had to. It computes nothing:
 * nothing passing on it is a test of the device code.
 *
 *   FAKE_ZE_MODE   unset or "init_fails": zeInit fails, and zeDriverGet aborts (as
 *                  Debian's loader crashes there after a failed zeInit, with
 *                  intel-opencl-icd installed and no Intel GPU)
 *                  "no_driver": zeInit succeeds, zeDriverGet finds no driver
 *                  "old_api":   one driver, of Level Zero API 1.1
 *                  "no_gpu":    one driver, of API 1.4, with no device
 *                  "gpu":       one driver with pretend GPUs (fake_ze_gpu.c, whose
 *                               functions replace this file's weak stubs; FAKE_ZE_GPUS=2
 *                               for two)
 *
 * Built a second time with -D<function>=<another name>, it lacks that function. The
 * Level Zero header is not included: the stubs' types are not the API's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpu_ze_functions.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

/* ze_result_t values and ZE_MAKE_VERSION, from <level_zero/ze_api.h>. */
#define FAKE_ZE_SUCCESS 0
#define FAKE_ZE_ERROR_UNINITIALIZED 0x78000001
#define FAKE_ZE_VERSION(major, minor) (((major) << 16) | (minor))

static const char *mode(void) {
    const char *m = getenv("FAKE_ZE_MODE");
    return m && m[0] ? m : "init_fails";
}

int fake_ze_gpu_mode(void) {
    return strcmp(mode(), "gpu") == 0;
}

void fake_ze_die(const char *fn) __attribute__((noreturn));
void fake_ze_die(const char *fn) {
    fprintf(stderr, "fake_ze_loader: %s called in mode %s: the plugin went too far\n", fn,
            mode());
    abort();
}

static int fake_driver; /* the one driver's handle is its address */
/* fake_ze_gpu.c */
extern int fake_ze_devices[];
int fake_ze_gpu_count(void);

FAKE_EXPORT int zeInit(uint32_t flags) {
    (void)flags;
    return strcmp(mode(), "init_fails") == 0 ? FAKE_ZE_ERROR_UNINITIALIZED : FAKE_ZE_SUCCESS;
}

FAKE_EXPORT int zeDriverGet(uint32_t *count, void **drivers) {
    if (strcmp(mode(), "init_fails") == 0)
        fake_ze_die("zeDriverGet");
    if (strcmp(mode(), "no_driver") == 0) {
        *count = 0;
        return FAKE_ZE_SUCCESS;
    }
    if (drivers && *count >= 1)
        drivers[0] = &fake_driver;
    *count = 1;
    return FAKE_ZE_SUCCESS;
}

FAKE_EXPORT int zeDriverGetApiVersion(void *driver, uint32_t *version) {
    if (driver != &fake_driver)
        fake_ze_die("zeDriverGetApiVersion (of an unknown driver)");
    *version = strcmp(mode(), "old_api") == 0 ? FAKE_ZE_VERSION(1, 1) : FAKE_ZE_VERSION(1, 4);
    return FAKE_ZE_SUCCESS;
}

FAKE_EXPORT int zeDeviceGet(void *driver, uint32_t *count, void **devices) {
    if (driver != &fake_driver || (strcmp(mode(), "no_gpu") != 0 && !fake_ze_gpu_mode()))
        fake_ze_die("zeDeviceGet");
    uint32_t n = fake_ze_gpu_mode() ? (uint32_t)fake_ze_gpu_count() : 0;
    for (uint32_t i = 0; devices && i < n && i < *count; i++)
        devices[i] = &fake_ze_devices[i];
    *count = n;
    return FAKE_ZE_SUCCESS;
}

/* Weak: fake_ze_gpu.c's definitions win where it has one. */
#define FAKE_ZE_STUB(fn)                                                                   \
    FAKE_EXPORT __attribute__((weak)) int fn(void) {                                       \
        fake_ze_die(#fn);                                                                  \
        return -1;                                                                         \
    }
XPU_ZE_FUNCTIONS(FAKE_ZE_STUB)
