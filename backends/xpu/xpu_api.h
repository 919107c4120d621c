/* xpu: the Level Zero entry points the plugin uses, loaded at run time.
 *
 * The plugin links no Level Zero library: xpu_api_load() dlopens the loader
 * (libze_loader.so.1, or $BP_XPU_LIBRARY) and looks up every function of
 * xpu_ze_functions.h into one table. A machine without a loader then gets a plugin with
 * zero devices and a reason, not a plugin that fails to load. */
#ifndef BP_XPU_API_H
#define BP_XPU_API_H

#include <stddef.h>
#include <level_zero/ze_api.h>

#include "xpu_ze_functions.h"

/* The Level Zero API version the plugin needs of a driver: 1.2 is where
 * ze_device_properties_t reports timerResolution in cycles per second
 * (ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2), which timing events convert with. */
#define XPU_ZE_API_NEEDED ZE_API_VERSION_1_2

/* The table: one pointer per function, typed like the header's declaration (only its
 * type is taken, so nothing refers to the symbol). */
typedef struct xpu_api {
    void *lib; /* the dlopen handle, NULL when not loaded */
    const char *name; /* what was loaded: $BP_XPU_LIBRARY or "libze_loader.so.1" */
#define XPU_API_FIELD(fn) __typeof__(&fn) fn;
    XPU_ZE_INIT_FUNCTIONS(XPU_API_FIELD)
    XPU_ZE_FUNCTIONS(XPU_API_FIELD)
#undef XPU_API_FIELD
} xpu_api;

/* Loads the loader ($BP_XPU_LIBRARY if set, else libze_loader.so.1) and every function.
 * Returns 0 on success; otherwise nonzero, with why in `reason`. */
int xpu_api_load(xpu_api *api, char *reason, size_t reason_size);

/* Name of a Level Zero result ("ZE_RESULT_ERROR_DEVICE_LOST"), or "ze_result_t" for
 * unknown ones. */
const char *xpu_result_name(ze_result_t r);

#endif
