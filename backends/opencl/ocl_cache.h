/* opencl: the disk cache of program binaries (docs/backends/opencl.md).
 *
 * The binaries are native code that the driver loads back into the process, so the
 * cache is trusted like a plugin: its directory comes from variables read with
 * secure_getenv (BP_OPENCL_CACHE, BP_OPENCL_CACHE_DIR, XDG_CACHE_HOME, HOME), is made
 * 0700 where it is missing, and is used only if owned by the effective user (or root)
 * and writable by no one else; a file is loaded only under the same conditions, and
 * written 0600 through a temporary file and rename. */
#ifndef BP_OCL_CACHE_H
#define BP_OCL_CACHE_H

#include <stddef.h>

#include "ocl_internal.h"

/** The cache directory, resolved, created and checked at the first call of the process
 *  (a refused one is logged then, once); NULL when there is no disk cache. */
const char *ocl_cache_dir(ocl_device *dev);

/** The binary cached in file `path` (malloc'd) and its size, or NULL to build from
 *  source: no file, not a valid cache file, or a file not to be trusted (logged with
 *  the reason). */
unsigned char *ocl_cache_read(ocl_device *dev, const char *path, size_t *out_size);

/** Stores `size` bytes of binary in file `path`, atomically and 0600; failures are
 *  logged at debug level and otherwise ignored (the cache is an optimisation). */
void ocl_cache_write(ocl_device *dev, const char *path, const unsigned char *bin, size_t size);

#endif
