/* xpu_convert_error: a kernel the xpu plugin cannot build for its device gives a clear
 * error, never a crash. Run on the fake loader's pretend GPU (tests/xpu/xpu.cmake) made
 * unable to run the kernels: work-groups below the 256 work-items the modules are built
 * for, or no fp64 (a cast into f64 needs the 'convert' kernels for f64, built only with
 * fp64; the device then does not list f64, but nothing stops a tensor of it being
 * made). Casts f32 into f64 on xpu:0 and prints the status and message; exit 0 when the
 * cast failed with BP_ERR_UNSUPPORTED. */
#include <backplane/backplane.h>
#include <stdio.h>

int main(void) {
    bp_device *dev = NULL;
    bp_tensor *src = NULL, *dst = NULL;
    int64_t n = 16;
    bp_status st = bp_device_open("xpu:0", &dev);
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
