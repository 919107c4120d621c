/* The GPU backend core (backends/gpu) on its own, as a GPU plugin links it, driven by a
 * driver table written here (a device whose memory is the host's and whose work is done
 * at once), so that the core's logic runs without a GPU: the table checked at init, the
 * driver's load failure as the reason, device properties and BP_GPU_PORTABLE_KERNELS,
 * driver errors as "<type>:<index>: <call> ...: <result text>", a kernel missing from
 * the images as an error that names it, and regions captured into graphs: a one-stream
 * region launched in chunks, and the same region again updating the cached executables
 * instead of instantiating new ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_internal.h"
#include "recording_host.h"

/* One image, of the matmul family, whose module has no kernel (the fake driver's
 * module_get_function finds none); no elementwise or sdpa image. */
static const unsigned char image_bytes[1];
const gpu_image gpu_images[] = {{"matmul", image_bytes, sizeof image_bytes}};
const int gpu_image_count = 1;

/* ---- the fake driver ---- */

enum { FAKE_OK = 0, FAKE_NOT_READY = 1, FAKE_OOM = 2, FAKE_ERROR = 3 };

typedef struct fake_graph {
    size_t nodes;
} fake_graph;

static struct {
    int load_fails, alloc_fails;
    int capturing;              /* a stream captures (one at a time here) */
    size_t captured;            /* work enqueued during the capture */
    int instantiated, updated, graph_launches;
    void *current;
} fake;
static int fake_context, fake_handle;

static int fake_load(int *driver_version, char *reason, size_t size) {
    if (fake.load_fails) {
        snprintf(reason, size, "fake: no driver");
        return -1;
    }
    *driver_version = 42;
    return 0;
}

static gpu_result_class fake_classify(gpu_result r) {
    return r == FAKE_OK         ? GPU_RESULT_OK
           : r == FAKE_NOT_READY ? GPU_RESULT_NOT_READY
           : r == FAKE_OOM       ? GPU_RESULT_OUT_OF_MEMORY
                                 : GPU_RESULT_ERROR;
}

static const char *fake_result_text(gpu_result r, char *buf, size_t size) {
    snprintf(buf, size, "FAKE_%d", r);
    return buf;
}

static gpu_result device_count(int *count) { *count = 1; return FAKE_OK; }
static gpu_result device_get(int *device, int ordinal) { *device = ordinal; return FAKE_OK; }
static gpu_result device_name(char *buf, int size, int device) {
    (void)device;
    snprintf(buf, (size_t)size, "Fake GPU");
    return FAKE_OK;
}
static gpu_result device_total_mem(size_t *bytes, int device) {
    (void)device;
    *bytes = (size_t)1 << 30;
    return FAKE_OK;
}
static gpu_result device_attribute(int *value, gpu_device_attribute a, int device) {
    (void)device;
    *value = a == GPU_ATTR_MULTIPROCESSORS ? 8 : a == GPU_ATTR_WARP_SIZE ? 64 : 65536;
    return FAKE_OK;
}
static gpu_result device_arch(char *buf, size_t size, int device) {
    (void)device;
    snprintf(buf, size, "gfx90a");
    return FAKE_OK;
}
static gpu_result device_can_access_peer(int *can, int device, int peer) {
    (void)device;
    (void)peer;
    *can = 0;
    return FAKE_OK;
}
static gpu_result ctx_retain(void **ctx, int device) {
    (void)device;
    *ctx = &fake_context;
    return FAKE_OK;
}
static gpu_result ctx_release(int device) { (void)device; return FAKE_OK; }
static gpu_result ctx_enter(void *ctx) { fake.current = ctx; return FAKE_OK; }
static gpu_result ctx_get_current(void **ctx) { *ctx = fake.current; return FAKE_OK; }
static gpu_result ctx_synchronize(void) { return FAKE_OK; }
static gpu_result ctx_priority_range(int *least, int *greatest) {
    *least = 0;
    *greatest = -1;
    return FAKE_OK;
}
static gpu_result ctx_enable_peer(void *peer) { (void)peer; return FAKE_OK; }
static gpu_result mem_get_info(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = (size_t)1 << 30;
    return FAKE_OK;
}
static gpu_result mem_alloc(uint64_t *ptr, size_t size) {
    void *p = fake.alloc_fails ? NULL : malloc(size);
    *ptr = (uint64_t)(uintptr_t)p;
    return p ? FAKE_OK : FAKE_OOM;
}
static gpu_result mem_free(uint64_t ptr) { free((void *)(uintptr_t)ptr); return FAKE_OK; }
static gpu_result host_alloc(void **ptr, size_t size) {
    *ptr = malloc(size);
    return *ptr ? FAKE_OK : FAKE_OOM;
}
static gpu_result host_free(void *ptr) { free(ptr); return FAKE_OK; }
/* Work on a stream: done at once, or counted while a capture runs. */
static gpu_result enqueue(void) {
    fake.captured += fake.capturing != 0;
    return FAKE_OK;
}
static gpu_result memcpy_async(uint64_t dst, uint64_t src, size_t size, void *stream) {
    (void)stream;
    if (!fake.capturing)
        memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, size);
    return enqueue();
}
static gpu_result memcpy_peer_async(uint64_t dst, int dd, void *dc, uint64_t src, int sd,
                                    void *sc, size_t size, void *stream) {
    (void)dd;
    (void)dc;
    (void)sd;
    (void)sc;
    return memcpy_async(dst, src, size, stream);
}
static gpu_result memset_async(uint64_t dst, unsigned char value, size_t size, void *stream) {
    (void)stream;
    if (!fake.capturing)
        memset((void *)(uintptr_t)dst, value, size);
    return enqueue();
}
static gpu_result stream_create(void **stream, int priority) {
    (void)priority;
    *stream = &fake_handle;
    return FAKE_OK;
}
static gpu_result handle_done(void *handle) { (void)handle; return FAKE_OK; }
static gpu_result stream_wait_event(void *stream, void *event) {
    (void)stream;
    (void)event;
    return enqueue();
}
static gpu_result launch_host_func(void *stream, void (*fn)(void *), void *arg) {
    (void)stream;
    fn(arg);
    return enqueue();
}
static gpu_result event_create(void **event, int timing) {
    (void)timing;
    *event = &fake_handle;
    return FAKE_OK;
}
static gpu_result event_record(void *event, void *stream) {
    (void)event;
    (void)stream;
    return enqueue();
}
static gpu_result event_elapsed(float *ms, void *start, void *end) {
    (void)start;
    (void)end;
    *ms = 1.0f;
    return FAKE_OK;
}
static gpu_result module_load(void **module, const void *image) {
    (void)image;
    *module = &fake_handle;
    return FAKE_OK;
}
static gpu_result module_get_function(void **function, void *module, const char *name) {
    (void)module;
    (void)name;
    *function = NULL;
    return FAKE_ERROR;
}
static gpu_result function_set_smem(void *function, int bytes) {
    (void)function;
    (void)bytes;
    return FAKE_OK;
}
static gpu_result launch(void *ctx, void *function, const unsigned grid[3],
                         const unsigned block[3], unsigned smem, void *stream, void **params) {
    (void)ctx;
    (void)function;
    (void)grid;
    (void)block;
    (void)smem;
    (void)stream;
    (void)params;
    return enqueue();
}
static gpu_result begin_capture(void *stream) {
    (void)stream;
    fake.capturing = 1;
    fake.captured = 0;
    return FAKE_OK;
}
static gpu_result end_capture(void *stream, void **graph) {
    (void)stream;
    fake_graph *g = malloc(sizeof *g);
    if (g)
        g->nodes = fake.captured;
    fake.capturing = 0;
    *graph = g;
    return g ? FAKE_OK : FAKE_OOM;
}
static gpu_result graph_node_count(void *graph, size_t *count) {
    *count = ((fake_graph *)graph)->nodes;
    return FAKE_OK;
}
static gpu_result graph_instantiate(void **exec, void *graph) {
    (void)graph;
    fake.instantiated++;
    *exec = malloc(1);
    return *exec ? FAKE_OK : FAKE_OOM;
}
static gpu_result graph_exec_update(void *exec, void *graph) {
    (void)exec;
    (void)graph;
    fake.updated++;
    return FAKE_OK;
}
static gpu_result graph_launch(void *exec, void *stream) {
    (void)exec;
    (void)stream;
    fake.graph_launches++;
    return FAKE_OK;
}
static gpu_result free_handle(void *handle) { free(handle); return FAKE_OK; }

static const gpu_driver fake_driver = {
    .platform = GPU_PLATFORM_NVIDIA,
    .device_type = "fake",
    .vendor = "Fake",
    .multiprocessor = "SMs",
    .kernel_compiler = "fakecc",
    .load = fake_load,
    .classify = fake_classify,
    .result_text = fake_result_text,
    .device_count = device_count,
    .device_get = device_get,
    .device_name = device_name,
    .device_total_mem = device_total_mem,
    .device_attribute = device_attribute,
    .device_arch = device_arch,
    .device_can_access_peer = device_can_access_peer,
    .primary_ctx_retain = ctx_retain,
    .primary_ctx_release = ctx_release,
    .ctx_enter = ctx_enter,
    .ctx_get_current = ctx_get_current,
    .ctx_synchronize = ctx_synchronize,
    .ctx_stream_priority_range = ctx_priority_range,
    .ctx_enable_peer_access = ctx_enable_peer,
    .mem_get_info = mem_get_info,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .mem_host_alloc = host_alloc,
    .mem_host_free = host_free,
    .memcpy_async = memcpy_async,
    .memcpy_peer_async = memcpy_peer_async,
    .memset_d8_async = memset_async,
    .stream_create = stream_create,
    .stream_destroy = handle_done,
    .stream_synchronize = handle_done,
    .stream_query = handle_done,
    .stream_wait_event = stream_wait_event,
    .launch_host_func = launch_host_func,
    .event_create = event_create,
    .event_destroy = handle_done,
    .event_record = event_record,
    .event_query = handle_done,
    .event_synchronize = handle_done,
    .event_elapsed_ms = event_elapsed,
    .module_load = module_load,
    .module_unload = handle_done,
    .module_get_function = module_get_function,
    .function_set_max_dynamic_smem = function_set_smem,
    .launch = launch,
    .stream_begin_capture = begin_capture,
    .stream_end_capture = end_capture,
    .graph_node_count = graph_node_count,
    .graph_instantiate = graph_instantiate,
    .graph_exec_update = graph_exec_update,
    .graph_launch = graph_launch,
    .graph_exec_destroy = free_handle,
    .graph_destroy = free_handle,
    .name =
        {
#define FAKE_NAME(member) .member = "fake_" #member,
            GPU_DRIVER_CALLS(FAKE_NAME)
#undef FAKE_NAME
        },
};

/* The host: recording_host's set_error (last_error), and a log that keeps every line of
 * the test (logs), one a line. */
static char logs[8192];

static void keep_log(bp_log_level level, const char *source, const char *fmt, ...) {
    size_t n = strlen(logs);
    va_list ap;
    va_start(ap, fmt);
    n += (size_t)snprintf(logs + n, sizeof logs - n, "%d %s: ", (int)level, source);
    if (n < sizeof logs)
        n += (size_t)vsnprintf(logs + n, sizeof logs - n, fmt, ap);
    va_end(ap);
    if (n + 1 < sizeof logs)
        strcat(logs, "\n");
}

static bp_host_services host;

static int reset(void **state) {
    (void)state;
    memset(&fake, 0, sizeof fake);
    logs[0] = '\0';
    host = recording_host;
    host.log = keep_log;
    unsetenv("BP_GPU_PORTABLE_KERNELS");
    return 0;
}

static void *init(const gpu_driver *drv) {
    void *backend = NULL;
    assert_int_equal(gpu_backend_init(drv, &host, &backend), BP_OK);
    assert_non_null(backend);
    return backend;
}

/* ---- the table and the driver's load ---- */

static void test_incomplete_table(void **state) {
    (void)state;
    gpu_driver broken = fake_driver;
    broken.graph_launch = NULL;
    void *backend = init(&broken);
    assert_int_equal(gpu_device_vtable.count(backend), 0);
    assert_string_equal(gpu_device_vtable.unavailable_reason(backend),
                        "the plugin's driver table has no graph_launch");
    gpu_backend_shutdown(backend);
}

static void test_load_failure(void **state) {
    (void)state;
    fake.load_fails = 1;
    void *backend = init(&fake_driver);
    assert_int_equal(gpu_device_vtable.count(backend), 0);
    assert_non_null(strstr(gpu_device_vtable.unavailable_reason(backend), "fake: no driver"));
    gpu_backend_shutdown(backend);
}

/* ---- devices ---- */

static void description(const char *portable, char *out, size_t size) {
    if (portable)
        setenv("BP_GPU_PORTABLE_KERNELS", portable, 1);
    void *backend = init(&fake_driver);
    bp_backend_device_props props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    assert_int_equal(gpu_device_vtable.get_props(backend, 0, &props), BP_OK);
    snprintf(out, size, "%s", props.description);
    gpu_backend_shutdown(backend);
}

static void test_props_and_portable_switch(void **state) {
    (void)state;
    char text[256];
    description(NULL, text, sizeof text);
    assert_string_equal(text, "Fake GPU (gfx90a, 8 SMs)");
    assert_null(strstr(logs, "BP_GPU_PORTABLE_KERNELS"));
    description("1", text, sizeof text);
    assert_string_equal(text, "Fake GPU (gfx90a, 8 SMs, portable kernels)");
    assert_non_null(strstr(logs, "fake: portable kernels only (BP_GPU_PORTABLE_KERNELS=1)"));
    logs[0] = '\0';
    description("on", text, sizeof text);
    assert_string_equal(text, "Fake GPU (gfx90a, 8 SMs)");
    assert_non_null(strstr(logs, "fake: BP_GPU_PORTABLE_KERNELS='on' is not 0 (fast paths) or 1 "
                                 "(portable kernels only); using the fast paths\n"));
    assert_null(strstr(logs, "portable kernels only (BP_GPU"));
}

static void test_driver_errors(void **state) {
    (void)state;
    void *backend = init(&fake_driver);
    void *dev = NULL, *p = NULL;
    assert_int_equal(gpu_device_vtable.open(backend, 0, &dev), BP_OK);
    assert_int_equal(gpu_memory_vtable.alloc(dev, 64, &p), BP_OK);
    gpu_memory_vtable.free(dev, p);
    fake.alloc_fails = 1;
    assert_int_equal(gpu_memory_vtable.alloc(dev, 64, &p), BP_ERR_OUT_OF_MEMORY);
    assert_string_equal(last_error, "fake:0: fake_mem_alloc of 64 bytes: FAKE_2");
    gpu_device_vtable.close(dev);
    gpu_backend_shutdown(backend);
}

/* ---- kernels ---- */

static void test_missing_kernel(void **state) {
    (void)state;
    void *backend = init(&fake_driver);
    void *dev = NULL, *s = NULL;
    assert_int_equal(gpu_device_vtable.open(backend, 0, &dev), BP_OK);
    assert_int_equal(gpu_stream_vtable.create(dev, 0, &s), BP_OK);
    const unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    assert_int_equal(gpu_launch(s, GPU_K_matmul_f16_simt, grid, block, 0, NULL, "matmul"),
                     BP_ERR_BACKEND);
    assert_string_equal(last_error, "fake:0: kernel matmul_f16_simt is not in the embedded "
                                    "modules (fake_module_get_function): FAKE_3");
    assert_int_equal(gpu_launch(s, GPU_K_ew_unary_f32, grid, block, 0, NULL, "exp"),
                     BP_ERR_BACKEND);
    assert_string_equal(last_error, "fake:0: kernel ew_unary_f32 is not in the embedded modules "
                                    "(no elementwise image)");
    gpu_stream_vtable.destroy(s);
    gpu_device_vtable.close(dev);
    gpu_backend_shutdown(backend);
}

/* ---- regions ---- */

/* A one-stream region of `copies` copies on s. */
static void region_of_copies(void *dev, void *s, int copies) {
    static char a[64], b[64];
    void *const streams[] = {s};
    bp_region_info info = {.struct_size = sizeof info, .order = 1, .width = 1,
                           .nodes = copies, .nstreams = 1, .streams = streams};
    void *region = NULL;
    assert_int_equal(gpu_region_vtable.begin(dev, &info, &region), BP_OK);
    for (int i = 0; i < copies; i++)
        assert_int_equal(gpu_memory_vtable.copy_async(s, a, b, sizeof a, BP_COPY_DEVICE_TO_DEVICE),
                         BP_OK);
    assert_int_equal(gpu_region_vtable.end(region), BP_OK);
}

static void test_region_chunks_and_cache(void **state) {
    (void)state;
    void *backend = init(&fake_driver);
    void *dev = NULL, *s = NULL;
    assert_int_equal(gpu_device_vtable.open(backend, 0, &dev), BP_OK);
    assert_int_equal(gpu_stream_vtable.create(dev, 0, &s), BP_OK);
    /* 300 copies: chunks of 128, 128 and 44, each its own executable. */
    region_of_copies(dev, s, 300);
    assert_int_equal(fake.instantiated, 3);
    assert_int_equal(fake.updated, 0);
    assert_int_equal(fake.graph_launches, 3);
    /* The same region again: the three executables are updated in place. */
    region_of_copies(dev, s, 300);
    assert_int_equal(fake.instantiated, 3);
    assert_int_equal(fake.updated, 3);
    assert_int_equal(fake.graph_launches, 6);
    gpu_stream_vtable.destroy(s);
    gpu_device_vtable.close(dev);
    gpu_backend_shutdown(backend);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_incomplete_table, reset),
        cmocka_unit_test_setup(test_load_failure, reset),
        cmocka_unit_test_setup(test_props_and_portable_switch, reset),
        cmocka_unit_test_setup(test_driver_errors, reset),
        cmocka_unit_test_setup(test_missing_kernel, reset),
        cmocka_unit_test_setup(test_region_chunks_and_cache, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
