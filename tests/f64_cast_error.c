/* f64_cast_error DEVICE: a kernel the device's plugin cannot build gives a clear error,
 * never a crash. Casts f32 into f64 on DEVICE and prints the status and message; exit 0
 * when the cast failed with BP_ERR_UNSUPPORTED, 1 when it did not, 2 when the setup
 * failed. The tests run it where the plugin has no kernels for that cast:
 *   - opencl with BP_OPENCL_PROGRAM=spirv and BP_OPENCL_FP64=0 (tests/opencl_spirv.cmake):
 *     the 'convert' kernels for f64 are built only with fp64, so no SPIR-V module exists;
 *   - xpu on the fake loader's pretend GPU (tests/xpu/xpu.cmake), without fp64 or with
 *     work-groups below the 256 work-items the modules are built for.
 * The device then does not list f64, but nothing stops a tensor of it being made. */
#include <backplane/backplane.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: f64_cast_error DEVICE\n");
        return 2;
    }
    bp_device *dev = NULL;
    bp_tensor *src = NULL, *dst = NULL;
    int64_t n = 16;
    bp_status st = bp_device_open(argv[1], &dev);
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
