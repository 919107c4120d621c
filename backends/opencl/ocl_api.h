/* opencl: the OpenCL entry points the plugin uses, loaded at run time.
 *
 * The plugin links no OpenCL library: ocl_api_load() dlopens the ICD loader
 * (libOpenCL.so.1, else libOpenCL.so) and looks up every function of OCL_API_FUNCTIONS
 * into one table. A machine without a loader then gets a plugin with zero devices and
 * a reason, not a plugin that fails to load. */
#ifndef BP_OCL_API_H
#define BP_OCL_API_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <signal.h>

/* X(name) for every OpenCL function the plugin calls. */
#define OCL_API_FUNCTIONS(X)                                                               \
    X(clGetPlatformIDs)                                                                    \
    X(clGetPlatformInfo)                                                                   \
    X(clGetDeviceIDs)                                                                      \
    X(clGetDeviceInfo)                                                                     \
    X(clCreateContext)                                                                     \
    X(clReleaseContext)                                                                    \
    X(clCreateCommandQueue)                                                                \
    X(clReleaseCommandQueue)                                                               \
    X(clFlush)                                                                             \
    X(clFinish)                                                                            \
    X(clCreateBuffer)                                                                      \
    X(clReleaseMemObject)                                                                  \
    X(clEnqueueReadBuffer)                                                                 \
    X(clEnqueueWriteBuffer)                                                                \
    X(clEnqueueCopyBuffer)                                                                 \
    X(clEnqueueFillBuffer)                                                                 \
    X(clEnqueueMarkerWithWaitList)                                                         \
    X(clEnqueueBarrierWithWaitList)                                                        \
    X(clCreateUserEvent)                                                                   \
    X(clSetUserEventStatus)                                                                \
    X(clSetEventCallback)                                                                  \
    X(clGetEventInfo)                                                                      \
    X(clGetEventProfilingInfo)                                                             \
    X(clWaitForEvents)                                                                     \
    X(clRetainEvent)                                                                       \
    X(clReleaseEvent)                                                                      \
    X(clCreateProgramWithSource)                                                           \
    X(clCreateProgramWithBinary)                                                           \
    X(clBuildProgram)                                                                      \
    X(clGetProgramBuildInfo)                                                               \
    X(clGetProgramInfo)                                                                    \
    X(clReleaseProgram)                                                                    \
    X(clCreateKernel)                                                                      \
    X(clReleaseKernel)                                                                     \
    X(clSetKernelArg)                                                                      \
    X(clEnqueueNDRangeKernel)

/* Programs from SPIR-V (BP_OPENCL_PROGRAM=spirv, ocl_program.c): clCreateProgramWithIL
 * is OpenCL 2.1 core, clCreateProgramWithILKHR (cl_khr_il_program, the same signature)
 * an extension of earlier platforms; CL_DEVICE_IL_VERSION (= _KHR) lists the ILs a
 * device takes ("SPIR-V_1.0 SPIR-V_1.1 ..."). Named here as the 1.2 headers lack them. */
typedef cl_program (*ocl_create_program_with_il_fn)(cl_context context, const void *il,
                                                     size_t length, cl_int *errcode_ret);
#define OCL_DEVICE_IL_VERSION 0x105B

/* The table: one pointer per function, typed like the header's declaration (only its
 * type is taken, so nothing refers to the symbol). The last two are optional (NULL when
 * the loader lacks them: an OpenCL 1.2 loader has no clCreateProgramWithIL). */
typedef struct ocl_api {
    void *lib; /* the dlopen handle, NULL when not loaded */
#define OCL_API_FIELD(name) __typeof__(&name) name;
    OCL_API_FUNCTIONS(OCL_API_FIELD)
#undef OCL_API_FIELD
    ocl_create_program_with_il_fn clCreateProgramWithIL;
    __typeof__(&clGetExtensionFunctionAddressForPlatform) clGetExtensionFunctionAddressForPlatform;
} ocl_api;

/* Loads the ICD loader ($BP_OPENCL_LIBRARY if set, else libOpenCL.so.1 or libOpenCL.so)
 * and every function. Returns 0 on success; otherwise nonzero, with why in `reason`
 * (e.g. "libOpenCL.so.1 not found (...)", or the variable's value and dlerror's text). */
int ocl_api_load(ocl_api *api, char *reason, size_t reason_size);

/* The calling thread's alternate signal stack, kept around calls that may initialize a
 * driver. LLVM-based drivers (PoCL) replace it with one of their own (malloc'd) on the
 * thread that first enumerates their devices: the application's own alternate stack
 * would be lost, and a sanitizer that unmaps "its" stack when that thread exits aborts
 * ("unable to unmap"). ocl_altstack_restore puts back what ocl_altstack_save saw. */
typedef struct ocl_altstack {
    stack_t stack;
    int saved;
} ocl_altstack;
void ocl_altstack_save(ocl_altstack *s);
void ocl_altstack_restore(const ocl_altstack *s);

/* Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL error" for unknown ones. */
const char *ocl_error_name(cl_int err);

#endif
