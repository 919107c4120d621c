/* Registering the arm backend's kernels.
 *
 * Every family of arm_kernel.h lists its kernels for the features found; each is
 * registered behind one trampoline (launch) that copies the call record (the kit's
 * cpukit_call_copy) and runs the family's body on the stream's worker with the device's
 * arm_exec. Every (op, dtype) that the host has a reference kernel for and no family
 * listed gets the variant "reference": the host's reference kernel, run on the worker.
 * BP_LOG=debug shows one line per registration: "arm: kernel <op> <dtype>: <variant>". */
#include "arm_internal.h"

#include <stdlib.h>
#include <string.h>

static const arm_kernel_family families[] = {
    arm_kernels_data, arm_kernels_elementwise, arm_kernels_reduce,
    arm_kernels_norm, arm_kernels_matmul,      arm_kernels_sdpa,
};

/* The plugin links no libbackplane, so no bp_dtype_name: the same names. */
static const char *const dtype_names[BP_DTYPE_COUNT] = {
    "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "bool",
};

static arm_device *device_of(const bp_kernel_call *call) {
    return (arm_device *)call->device; /* &dev->kit, its first member */
}

typedef struct launch_task {
    bp_kernel_call *call; /* the copy; freed by the task */
    const arm_kernel *kernel;
} launch_task;

static void launch_task_run(void *payload) {
    launch_task t;
    memcpy(&t, payload, sizeof t);
    t.kernel->body(t.call, &device_of(t.call)->exec);
    free(t.call);
}

static bp_status launch(const bp_kernel_call *call) {
    arm_device *dev = device_of(call);
    bp_kernel_call *copy = cpukit_call_copy(call);
    if (!copy)
        return dev->backend->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                             "arm:%d: %s: cannot allocate the launch record",
                                             dev->index, call->op_name);
    launch_task t = {copy, call->kernel_data};
    bp_status st = cpukit_stream_submit(call->stream, "a kernel", launch_task_run, &t, sizeof t);
    if (st != BP_OK)
        free(copy);
    return st;
}

/* The "reference" variant. The dispatcher checked the call, so the host's kernel does
 * not fail; if it did, the worker has no caller to tell but the log. */
static void reference_body(const bp_kernel_call *call, const arm_exec *ex) {
    (void)ex;
    const bp_host_services *host = device_of(call)->backend->host;
    bp_status st = host->run_reference_kernel(call);
    if (st != BP_OK)
        host->log(BP_LOG_ERROR, ARM_NAME, "arm: the reference kernel of %s %s failed (%d)",
                  call->op_name, dtype_names[call->dtype], (int)st);
}

static bool listed(const arm_kernel *k, size_t n, const char *op, bp_dtype dtype) {
    for (size_t i = 0; i < n; i++)
        if (k[i].dtype == dtype && strcmp(k[i].op, op) == 0)
            return true;
    return false;
}

/* Appends the families' kernels for be->features to be->kernels (duplicates dropped,
 * logged). */
static bp_status list_family_kernels(arm_backend *be, size_t cap) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        size_t n = families[f](&be->features, NULL, 0);
        arm_kernel *found = calloc(n ? n : 1, sizeof *found);
        if (!found)
            return be->host->set_error(BP_ERR_OUT_OF_MEMORY,
                                       "arm: cannot allocate the kernel list");
        n = families[f](&be->features, found, n);
        for (size_t i = 0; i < n; i++) {
            if (listed(be->kernels, be->nkernels, found[i].op, found[i].dtype) ||
                (unsigned)found[i].dtype >= BP_DTYPE_COUNT || !found[i].body) {
                be->host->log(BP_LOG_WARN, ARM_NAME,
                              "arm: kernel %s of dtype %d (%s) is listed twice or is "
                              "malformed; the first listing stays",
                              found[i].op, (int)found[i].dtype, found[i].variant);
                continue;
            }
            if (be->nkernels == cap) {
                free(found);
                return be->host->set_error(BP_ERR_INTERNAL,
                                           "arm: more than %zu kernels listed", cap);
            }
            be->kernels[be->nkernels++] = found[i];
        }
        free(found);
    }
    return BP_OK;
}

/* Adds a "reference" entry for each (op, dtype) the host has and no family listed. */
static bp_status list_reference_kernels(arm_backend *be, size_t cap) {
    const bp_host_services *host = be->host;
    for (int32_t op = 0; op < host->op_count(); op++) {
        const char *name = host->op_name(op);
        uint32_t mask = name ? host->reference_dtypes(name) : 0;
        for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
            if (!(mask & BP_DTYPE_BIT(dt)) || listed(be->kernels, be->nkernels, name, dt))
                continue;
            if (be->nkernels == cap)
                return host->set_error(BP_ERR_INTERNAL, "arm: more than %zu kernels listed",
                                       cap);
            be->kernels[be->nkernels++] =
                (arm_kernel){.op = name, .dtype = (bp_dtype)dt, .body = reference_body,
                             .variant = "reference"};
        }
    }
    return BP_OK;
}

bp_status arm_kernels_register(arm_backend *be) {
    const bp_host_services *host = be->host;
    /* Each (op, dtype) at most once: the host's ops times the dtypes bound the list. */
    size_t cap = (size_t)host->op_count() * BP_DTYPE_COUNT;
    be->kernels = calloc(cap ? cap : 1, sizeof *be->kernels);
    if (!be->kernels)
        return host->set_error(BP_ERR_OUT_OF_MEMORY, "arm: cannot allocate the kernel list");
    bp_status st = list_family_kernels(be, cap);
    if (st == BP_OK)
        st = list_reference_kernels(be, cap);
    for (size_t i = 0; st == BP_OK && i < be->nkernels; i++) {
        const arm_kernel *k = &be->kernels[i];
        st = host->register_kernel(ARM_NAME, k->op, k->dtype, launch, (void *)k, 0);
        if (st == BP_OK) {
            be->dtypes |= BP_DTYPE_BIT(k->dtype);
            host->log(BP_LOG_DEBUG, ARM_NAME, "arm: kernel %s %s: %s", k->op,
                      dtype_names[k->dtype], k->variant);
        }
    }
    return st; /* the host's message says what failed */
}
