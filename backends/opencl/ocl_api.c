/* opencl: loading the ICD loader (ocl_api.h). */
#include "ocl_api.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h> /* secure_getenv (_GNU_SOURCE) */
#include <string.h>

int ocl_api_load(ocl_api *api, char *reason, size_t reason_size) {
    memset(api, 0, sizeof *api);
    /* BP_OPENCL_LIBRARY picks the loader (a path or a soname), e.g. a vendor's own; read
     * with secure_getenv, like the core's other library-choosing variables, so a setuid
     * program never loads a library named by its caller's environment. */
    const char *choice = secure_getenv("BP_OPENCL_LIBRARY");
    void *lib;
    if (choice && choice[0]) {
        lib = dlopen(choice, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char *why = dlerror();
            snprintf(reason, reason_size, "BP_OPENCL_LIBRARY=%s cannot be loaded: %s", choice,
                     why ? why : "dlopen failed");
            return -1;
        }
    } else {
        lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            snprintf(reason, reason_size,
                     "libOpenCL.so.1 not found (install an OpenCL ICD loader, e.g. Debian's "
                     "ocl-icd-libopencl1, or name one with BP_OPENCL_LIBRARY)");
            return -1;
        }
    }
    const char *missing = NULL;
#define OCL_API_LOOKUP(name)                                                               \
    if (!missing) {                                                                        \
        void *sym = dlsym(lib, #name);                                                     \
        if (sym)                                                                           \
            api->name = (__typeof__(api->name))sym;                                        \
        else                                                                               \
            missing = #name;                                                               \
    }
    OCL_API_FUNCTIONS(OCL_API_LOOKUP)
#undef OCL_API_LOOKUP
    if (missing) {
        snprintf(reason, reason_size,
                 "the OpenCL loader %s lacks %s (an OpenCL 1.2 ICD loader is needed)",
                 choice && choice[0] ? choice : "libOpenCL.so.1", missing);
        dlclose(lib);
        memset(api, 0, sizeof *api);
        return -1;
    }
    api->clCreateProgramWithIL = (ocl_create_program_with_il_fn)dlsym(lib, "clCreateProgramWithIL");
    api->clGetExtensionFunctionAddressForPlatform = (__typeof__(
        api->clGetExtensionFunctionAddressForPlatform))dlsym(
        lib, "clGetExtensionFunctionAddressForPlatform");
    /* Kept loaded until the process exits: vendor drivers keep threads of their own,
     * which an unload could pull the code from under. */
    api->lib = lib;
    return 0;
}

void ocl_altstack_save(ocl_altstack *s) {
    s->saved = sigaltstack(NULL, &s->stack) == 0;
}

void ocl_altstack_restore(const ocl_altstack *s) {
    stack_t now;
    if (!s->saved || sigaltstack(NULL, &now) != 0 || (now.ss_flags & SS_ONSTACK))
        return;
    bool was_off = (s->stack.ss_flags & SS_DISABLE) != 0, is_off = (now.ss_flags & SS_DISABLE) != 0;
    if (was_off == is_off && (was_off || (now.ss_sp == s->stack.ss_sp &&
                                          now.ss_size == s->stack.ss_size)))
        return;
    stack_t back = s->stack;
    back.ss_flags = was_off ? SS_DISABLE : 0;
    sigaltstack(&back, NULL);
}

const char *ocl_error_name(cl_int err) {
    switch (err) {
#define OCL_ERR(name) case name: return #name;
    OCL_ERR(CL_SUCCESS)
    OCL_ERR(CL_DEVICE_NOT_FOUND)
    OCL_ERR(CL_DEVICE_NOT_AVAILABLE)
    OCL_ERR(CL_COMPILER_NOT_AVAILABLE)
    OCL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    OCL_ERR(CL_OUT_OF_RESOURCES)
    OCL_ERR(CL_OUT_OF_HOST_MEMORY)
    OCL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
    OCL_ERR(CL_MEM_COPY_OVERLAP)
    OCL_ERR(CL_BUILD_PROGRAM_FAILURE)
    OCL_ERR(CL_MAP_FAILURE)
    OCL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    OCL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    OCL_ERR(CL_COMPILE_PROGRAM_FAILURE)
    OCL_ERR(CL_LINK_PROGRAM_FAILURE)
    OCL_ERR(CL_INVALID_VALUE)
    OCL_ERR(CL_INVALID_DEVICE_TYPE)
    OCL_ERR(CL_INVALID_PLATFORM)
    OCL_ERR(CL_INVALID_DEVICE)
    OCL_ERR(CL_INVALID_CONTEXT)
    OCL_ERR(CL_INVALID_QUEUE_PROPERTIES)
    OCL_ERR(CL_INVALID_COMMAND_QUEUE)
    OCL_ERR(CL_INVALID_HOST_PTR)
    OCL_ERR(CL_INVALID_MEM_OBJECT)
    OCL_ERR(CL_INVALID_BINARY)
    OCL_ERR(CL_INVALID_BUILD_OPTIONS)
    OCL_ERR(CL_INVALID_PROGRAM)
    OCL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    OCL_ERR(CL_INVALID_KERNEL_NAME)
    OCL_ERR(CL_INVALID_KERNEL_DEFINITION)
    OCL_ERR(CL_INVALID_KERNEL)
    OCL_ERR(CL_INVALID_ARG_INDEX)
    OCL_ERR(CL_INVALID_ARG_VALUE)
    OCL_ERR(CL_INVALID_ARG_SIZE)
    OCL_ERR(CL_INVALID_KERNEL_ARGS)
    OCL_ERR(CL_INVALID_WORK_DIMENSION)
    OCL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    OCL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    OCL_ERR(CL_INVALID_GLOBAL_OFFSET)
    OCL_ERR(CL_INVALID_EVENT_WAIT_LIST)
    OCL_ERR(CL_INVALID_EVENT)
    OCL_ERR(CL_INVALID_OPERATION)
    OCL_ERR(CL_INVALID_BUFFER_SIZE)
    OCL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
#undef OCL_ERR
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL error";
    }
}
