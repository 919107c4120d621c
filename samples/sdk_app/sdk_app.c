/* sdk_app: the smallest application of an installed backplane SDK. It prints the
 * library's version beside the headers' and copies a buffer to the cpu device and back.
 * tests/sdk.cmake builds it from the install tree alone, with CMake and with pkg-config. */
#include <stdio.h>
#include <string.h>
#include <backplane/backplane.h>

static int fail(const char *what) {
    fprintf(stderr, "sdk_app: %s: %s\n", what, bp_last_error());
    return 1;
}

int main(void) {
    printf("sdk_app: libbackplane %s, headers %s\n", bp_version(), BP_VERSION_STRING);
    if (strcmp(bp_version(), BP_VERSION_STRING) != 0) {
        fprintf(stderr, "sdk_app: the library is not the headers' version\n");
        return 1;
    }

    bp_device *dev;
    bp_stream *stream;
    if (bp_device_open("cpu", &dev) != BP_OK)
        return fail("bp_device_open(cpu)");
    if (bp_stream_create(dev, 0, &stream) != BP_OK)
        return fail("bp_stream_create");

    int in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = i * 3;
    memset(out, 0, sizeof out);
    void *buf;
    if (bp_memory_alloc(dev, sizeof in, stream, &buf) != BP_OK)
        return fail("bp_memory_alloc");
    if (bp_memory_copy_async(buf, dev, in, NULL, sizeof in, stream) != BP_OK ||
        bp_memory_copy_async(out, NULL, buf, dev, sizeof out, stream) != BP_OK)
        return fail("bp_memory_copy_async");
    if (bp_stream_synchronize(stream) != BP_OK)
        return fail("bp_stream_synchronize");

    int same = memcmp(in, out, sizeof in) == 0;
    printf("sdk_app: %s round trip %s\n", bp_device_name(dev), same ? "ok" : "FAILED");
    bp_memory_free(dev, buf);
    bp_stream_destroy(stream);
    return same ? 0 : 1;
}
