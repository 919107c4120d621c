/* opencl: programs, built at first use per (device, program, variant).
 *
 * Each program is the prelude plus one kernels/NAME.cl source, compiled with the variant
 * as a define (-DBP_DT=<dtype> or -DBP_ESIZE=<bytes>); in SPIR-V mode
 * (BP_OPENCL_PROGRAM=spirv, ocl_spirv.c) it is the embedded SPIR-V module of that
 * variant instead, built as it is. Built programs stay in memory per device. On disk
 * (ocl_cache.c: where, and which files are trusted), the device binaries
 * (CL_PROGRAM_BINARIES) are kept, named by a hash of the device name, the driver and
 * device versions, the build options and the source (or the SPIR-V module's bytes), so
 * a driver update or an edited kernel is a new entry. A binary that does not load or
 * build is rebuilt and replaced.
 * BP_OPENCL_BUILD_OPTIONS is appended to every build's options (and so to the key). */
#include "ocl_cache.h"
#include "ocl_internal.h"
#include "clc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ocl_program {
    clc_program_id id;
    int variant;
    cl_program program;
    ocl_kernel kernels[CLC_MAX_KERNELS]; /* created at first use */
    ocl_program *next;
};

/* The options of a build: the variant's defines (a SPIR-V module has them built in),
 * then $BP_OPENCL_BUILD_OPTIONS (extra options for every build, e.g. -cl-mad-enable;
 * part of the disk cache key, as all options are). False when they do not fit in buf. */
static bool build_options(const ocl_device *dev, const clc_program_def *def, int variant, char *buf,
                          size_t size) {
    const char *extra = secure_getenv("BP_OPENCL_BUILD_OPTIONS");
    bool has_extra = extra && extra[strspn(extra, " \t")];
    if (dev->backend->spirv) {
        int n = snprintf(buf, size, "%s", has_extra ? extra : "");
        return n >= 0 && (size_t)n < size;
    }
    int n = snprintf(buf, size,
                     "-cl-std=CL1.2 -DBP_FP64=%d -DRWG=%zu -DTS=%d -DWPT=%d -DSBK=%d -D%s=%d%s%s",
                     dev->info.fp64 ? 1 : 0, dev->clc.rwg, dev->clc.ts, CLC_MATMUL_WPT,
                     CLC_SDPA_SBK, def->by_size ? "BP_ESIZE" : "BP_DT", variant,
                     has_extra ? " " : "", has_extra ? extra : "");
    return n >= 0 && (size_t)n < size;
}

/* What a build is, for messages: its options, or in SPIR-V mode the module and the
 * options. */
static void build_label(const clc_program_def *def, int variant, const clc_module *module,
                        const char *options, char *buf, size_t size) {
    if (!module)
        snprintf(buf, size, "%s", options);
    else
        snprintf(buf, size, "SPIR-V module %s=%d%s, %zu bytes%s%s",
                 def->by_size ? "BP_ESIZE" : "BP_DT", variant, module->fp64 ? " fp64" : "",
                 module->size, options[0] ? "; options " : "", options);
}

/* ---- the disk cache ---- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Hashes each part with its length, so that part boundaries count. */
static uint64_t hash_parts(uint64_t seed, const char *const *parts, int n) {
    uint64_t h = seed;
    for (int i = 0; i < n; i++) {
        uint64_t len = strlen(parts[i]);
        h = fnv1a(h, &len, sizeof len);
        h = fnv1a(h, parts[i], (size_t)len);
    }
    return h;
}

/* The cache file of a program built with `options` from the prelude and def's source,
 * or from `module` in SPIR-V mode (its bytes are hashed). */
static bool cache_path(ocl_device *dev, const clc_program_def *def, const char *options,
                       const clc_module *module, char *buf, size_t size) {
    const char *dir = ocl_cache_dir(dev);
    if (!dir)
        return false;
    char spirv_hash[32] = "";
    if (module)
        snprintf(spirv_hash, sizeof spirv_hash, "spirv-%016llx",
                 (unsigned long long)fnv1a(UINT64_C(0xcbf29ce484222325), module->spirv,
                                           module->size));
    const char *parts[] = {"backplane-opencl-1", dev->info.description, dev->info.driver,
                           dev->info.version,     options,
                           module ? spirv_hash : clc_src_prelude,
                           module ? "" : def->source};
    int np = (int)(sizeof parts / sizeof parts[0]);
    uint64_t h1 = hash_parts(UINT64_C(0xcbf29ce484222325), parts, np);
    uint64_t h2 = hash_parts(UINT64_C(0x84222325cbf29ce4), parts, np);
    int n = snprintf(buf, size, "%s/%s-%016llx%016llx.bin", dir, def->name,
                     (unsigned long long)h1, (unsigned long long)h2);
    return n > 0 && (size_t)n < size;
}

/* Stores the program's binary in the disk cache. */
static void cache_write(ocl_device *dev, cl_program prog, const char *path) {
    const ocl_api *api = &dev->backend->api;
    size_t size = 0;
    if (api->clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *bin = malloc(size);
    if (!bin)
        return;
    unsigned char *bins[1] = {bin};
    if (api->clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        ocl_cache_write(dev, path, bin, size);
    free(bin);
}

/* ---- building ---- */

/* The error of a failed build: `what` is the build's label (build_label). */
static bp_status build_error(ocl_device *dev, cl_program prog, const clc_program_def *def,
                             const char *what, cl_int err) {
    const ocl_api *api = &dev->backend->api;
    size_t len = 0;
    char *log = NULL;
    if (api->clGetProgramBuildInfo(prog, dev->info.id, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) ==
            CL_SUCCESS &&
        len > 0 && (log = calloc(1, len + 1)) != NULL &&
        api->clGetProgramBuildInfo(prog, dev->info.id, CL_PROGRAM_BUILD_LOG, len, log, NULL) !=
            CL_SUCCESS)
        log[0] = '\0';
    clc_build_log_trim(log);
    /* Options the compiler rejects outright usually come from BP_OPENCL_BUILD_OPTIONS:
     * say so before the log, which the message's length limit may cut. */
    const char *extra = secure_getenv("BP_OPENCL_BUILD_OPTIONS");
    bool blame_extra = err == CL_INVALID_BUILD_OPTIONS && extra && extra[0];
    bp_status st = dev->backend->host->set_error(
        BP_ERR_BACKEND, "opencl:%d: building the '%s' kernels (%s) failed with %s (%d)%s%s%s: %s",
        dev->index, def->name, what, ocl_error_name(err), (int)err,
        blame_extra ? " (check BP_OPENCL_BUILD_OPTIONS='" : "", blame_extra ? extra : "",
        blame_extra ? "')" : "", log && log[0] ? log : "(no build log)");
    free(log);
    return st;
}

/* The program from the cached binary, or NULL (then built from source). */
static cl_program load_cached(ocl_device *dev, const char *path, const char *options) {
    const ocl_api *api = &dev->backend->api;
    size_t size = 0;
    unsigned char *bin = ocl_cache_read(dev, path, &size);
    if (!bin)
        return NULL;
    cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
    const unsigned char *bins[1] = {bin};
    cl_program prog = api->clCreateProgramWithBinary(dev->context, 1, &dev->info.id, &size, bins,
                                                     &bin_status, &err);
    free(bin);
    if (prog && (err != CL_SUCCESS || bin_status != CL_SUCCESS ||
                 api->clBuildProgram(prog, 1, &dev->info.id, options, NULL, NULL) !=
                     CL_SUCCESS)) {
        api->clReleaseProgram(prog);
        prog = NULL;
    }
    if (!prog)
        dev->backend->host->log(BP_LOG_DEBUG, OCL_NAME,
                                "opencl:%d: the cached binary %s does not load: rebuilding",
                                dev->index, path);
    return prog;
}

/* The program, not yet built: from the variant's SPIR-V module (`module` set) or from
 * source. */
static bp_status create_program(ocl_device *dev, clc_program_id id, const clc_module *module,
                                cl_program *out) {
    const ocl_api *api = &dev->backend->api;
    cl_int err = CL_SUCCESS;
    if (module) {
        *out = dev->create_il(dev->context, module->spirv, module->size, &err);
        return *out ? BP_OK
                     : ocl_fail(dev, err, "creating a program from SPIR-V (clCreateProgramWithIL)");
    }
    const char *srcs[2] = {clc_src_prelude, clc_programs[id].source};
    *out = api->clCreateProgramWithSource(dev->context, 2, srcs, NULL, &err);
    return *out ? BP_OK : ocl_fail(dev, err, "clCreateProgramWithSource");
}

static bp_status build_program(ocl_device *dev, clc_program_id id, int variant, cl_program *out) {
    const ocl_api *api = &dev->backend->api;
    const clc_program_def *def = &clc_programs[id];
    char options[1024], label[1200], path[1200];
    if (!build_options(dev, def, variant, options, sizeof options))
        return dev->backend->host->set_error(
            BP_ERR_INVALID_ARGUMENT,
            "opencl:%d: building the '%s' kernels: BP_OPENCL_BUILD_OPTIONS is too long "
            "(the options must fit in %zu bytes)",
            dev->index, def->name, sizeof options - 1);
    const clc_module *module = NULL;
    if (dev->backend->spirv) {
        bp_status st = ocl_spirv_module(dev, id, variant, &module);
        if (st != BP_OK)
            return st;
    }
    build_label(def, variant, module, options, label, sizeof label);
    bool cached = cache_path(dev, def, options, module, path, sizeof path);
    cl_program prog = cached ? load_cached(dev, path, options) : NULL;
    if (prog) {
        *out = prog;
        return BP_OK;
    }
    bp_status st = create_program(dev, id, module, &prog);
    if (st != BP_OK)
        return st;
    cl_int err = api->clBuildProgram(prog, 1, &dev->info.id, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        st = build_error(dev, prog, def, label, err);
        api->clReleaseProgram(prog);
        return st;
    }
    dev->backend->host->log(BP_LOG_DEBUG, OCL_NAME, "opencl:%d: built the '%s' kernels (%s)",
                            dev->index, def->name, label);
    if (cached)
        cache_write(dev, prog, path);
    *out = prog;
    return BP_OK;
}

static void program_free(ocl_device *dev, ocl_program *p) {
    const ocl_api *api = &dev->backend->api;
    for (int i = 0; i < CLC_MAX_KERNELS; i++) {
        if (!p->kernels[i].kernel)
            continue;
        api->clReleaseKernel(p->kernels[i].kernel);
        pthread_mutex_destroy(&p->kernels[i].lock);
    }
    if (p->program)
        api->clReleaseProgram(p->program);
    free(p);
}

static bp_status program_create(ocl_device *dev, clc_program_id id, int variant,
                                ocl_program **out) {
    ocl_program *p = calloc(1, sizeof *p);
    if (!p)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "opencl:%d: out of host memory for a program",
                                             dev->index);
    p->id = id;
    p->variant = variant;
    ocl_altstack alt; /* the compiler may touch the thread's signal state */
    ocl_altstack_save(&alt);
    bp_status st = build_program(dev, id, variant, &p->program);
    ocl_altstack_restore(&alt);
    if (st != BP_OK) {
        free(p);
        return st;
    }
    *out = p;
    return BP_OK;
}

/* Kernel k of program p, created at its first use (a program built for an integer
 * dtype lacks the float-only kernels). Called with programs_lock held. */
static bp_status program_kernel(ocl_device *dev, ocl_program *p, int k) {
    ocl_kernel *kern = &p->kernels[k];
    if (kern->kernel)
        return BP_OK;
    const char *name = clc_programs[p->id].kernels[k];
    cl_int err = CL_SUCCESS;
    kern->kernel = dev->backend->api.clCreateKernel(p->program, name, &err);
    if (!kern->kernel) {
        char what[96];
        snprintf(what, sizeof what, "clCreateKernel of %s (variant %d)", name, p->variant);
        return ocl_fail(dev, err, what);
    }
    pthread_mutex_init(&kern->lock, NULL);
    return BP_OK;
}

bp_status ocl_get_kernel(ocl_device *dev, clc_program_id id, int variant, const char *name,
                         ocl_kernel **out) {
    const clc_program_def *def = &clc_programs[id];
    int k = 0;
    while (def->kernels[k] && strcmp(def->kernels[k], name) != 0)
        k++;
    if (!def->kernels[k])
        return dev->backend->host->set_error(BP_ERR_INTERNAL,
                                             "opencl: program '%s' has no kernel '%s'",
                                             def->name, name);
    bp_status st = BP_OK;
    pthread_mutex_lock(&dev->programs_lock);
    ocl_program *p = dev->programs;
    while (p && (p->id != id || p->variant != variant))
        p = p->next;
    if (!p) {
        /* Built under the lock: a second caller waits for the first build. */
        st = program_create(dev, id, variant, &p);
        if (st == BP_OK) {
            p->next = dev->programs;
            dev->programs = p;
        }
    }
    if (st == BP_OK)
        st = program_kernel(dev, p, k);
    pthread_mutex_unlock(&dev->programs_lock);
    if (st == BP_OK)
        *out = &p->kernels[k];
    return st;
}

void ocl_programs_destroy(ocl_device *dev) {
    pthread_mutex_lock(&dev->programs_lock);
    ocl_program *p = dev->programs;
    dev->programs = NULL;
    pthread_mutex_unlock(&dev->programs_lock);
    while (p) {
        ocl_program *next = p->next;
        program_free(dev, p);
        p = next;
    }
}
