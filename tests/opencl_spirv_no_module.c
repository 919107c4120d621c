/* opencl_spirv_no_module: a kernel variant that no SPIR-V module was built for gives a
 * clear error. Run with BP_OPENCL_PROGRAM=spirv and BP_OPENCL_FP64=0 on a device that
 * takes SPIR-V (tests/opencl_spirv.cmake): a cast into f64 needs the 'convert' kernels
 * for f64, built only with fp64, which the device is then without. The device does not
 * list f64, but nothing stops a tensor of it being made. Prints the status and message;
 * exit 0 when the copy failed with BP_ERR_UNSUPPORTED. */
#include <backplane/backplane.h>
#include <stdio.h>

int main(void) {
    bp_device *dev = NULL;
    bp_tensor *src = NULL, *dst = NULL;
    int64_t n = 16;
    bp_status st = bp_device_open("opencl:0", &dev);
    if (st == BP_OK)
        st = bp_tensor_empty(dev, BP_DTYPE_F32, 1, &n, &src);
    if (st == BP_OK)
        st = bp_tensor_empty(dev, BP_DTYPE_F64, 1, &n, &dst);
    if (st != BP_OK) {
        printf("setup failed: %s: %s\n", bp_status_str(st), bp_last_error());
        return 2;
    }
    st = bp_copy(dst, src);
    printf("bp_copy f32 -> f64: %s: %s\n", bp_status_str(st), st == BP_OK ? "" : bp_last_error());
    bp_tensor_release(src);
    bp_tensor_release(dst);
    return st == BP_ERR_UNSUPPORTED ? 0 : 1;
}
