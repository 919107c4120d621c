/* Lazy backends: discovery only finds, opens and validates plugins; a backend's init
 * runs when a device of its type (or the list of all devices or plugins) is first
 * asked for. Each case runs in a forked child (the registry initialises once per
 * process). The plugin observer, installed before the first call, records every init
 * as it runs; the "crash" plugin (its init aborts) proves physically that no init ran. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <backplane/plugin.h>

#include "test_util.h"

#define PLUGIN_DIR(name) BP_TEST_PLUGIN_DIR "/" name

/* ---- the observer: which inits ran, in order ---- */

enum { MAX_INITS = 32 };

static char inits[MAX_INITS][BP_PLUGIN_NAME_MAX + 1];
static int init_count;
static int opened_count; /* files dlopened by discovery */

static int record_steps(bp_plugin_step step, const char *name, const char *path, void *ctx) {
    if (step == BP_PLUGIN_STEP_OPEN)
        opened_count++;
    if (step == BP_PLUGIN_STEP_INIT && init_count < MAX_INITS)
        snprintf(inits[init_count++], sizeof inits[0], "%s", name);
    return 1;
}

/* Installs the observer: before anything in the child touches the registry. */
static void observe_inits(void) {
    init_count = 0;
    opened_count = 0;
    CHILD_CHECK(bp_plugin_set_observer(record_steps, NULL) == BP_OK);
}

static int inits_of(const char *name) {
    int n = 0;
    for (int k = 0; k < init_count; k++)
        n += strcmp(inits[k], name) == 0;
    return n;
}

static void expect_inits(const char *const *names) {
    int n = 0;
    for (; names[n]; n++)
        if (n >= init_count || strcmp(inits[n], names[n]) != 0)
            break;
    if (names[n] || n != init_count) {
        fprintf(stderr, "inits run:");
        for (int k = 0; k < init_count; k++)
            fprintf(stderr, " %s", inits[k]);
        fprintf(stderr, "\n");
    }
    CHILD_CHECK(names[n] == NULL && n == init_count);
}

static const char *const no_inits[] = {NULL};

/* ---- helpers ---- */

/* Allocates, copies and runs an op on cpu: streams, events, memory and dispatch. */
static void use_cpu(void) {
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    bp_stream *stream = NULL;
    bp_event *done = NULL;
    CHILD_CHECK(bp_stream_create(cpu, 0, &stream) == BP_OK);
    CHILD_CHECK(bp_event_create(cpu, BP_EVENT_TIMING, &done) == BP_OK);
    float in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (float)i;
    void *buf = NULL;
    CHILD_CHECK(bp_memory_alloc(cpu, sizeof in, stream, &buf) == BP_OK);
    CHILD_CHECK(bp_memory_copy_async(buf, cpu, in, NULL, sizeof in, stream) == BP_OK);
    CHILD_CHECK(bp_memory_copy_async(out, NULL, buf, cpu, sizeof out, stream) == BP_OK);
    CHILD_CHECK(bp_event_record(done, stream) == BP_OK);
    CHILD_CHECK(bp_event_synchronize(done) == BP_OK);
    CHILD_CHECK(memcmp(in, out, sizeof in) == 0);
    CHILD_CHECK(bp_memory_free(cpu, buf) == BP_OK);

    bp_tensor *t = NULL;
    int64_t shape[1] = {64};
    CHILD_CHECK(bp_tensor_empty(cpu, BP_DTYPE_F32, 1, shape, &t) == BP_OK);
    CHILD_CHECK(bp_fill(t, 2.0) == BP_OK);
    float host[64];
    CHILD_CHECK(bp_tensor_to_host(t, host, sizeof host) == BP_OK);
    CHILD_CHECK(host[0] == 2.0f && host[63] == 2.0f);
    bp_tensor_release(t);
    bp_op_id op;
    CHILD_CHECK(bp_op_find("add", &op) == BP_OK);
    CHILD_CHECK(bp_event_destroy(done) == BP_OK);
    CHILD_CHECK(bp_stream_destroy(stream) == BP_OK);
}

static bp_status unused_kernel(const bp_kernel_call *call) {
    (void)call;
    return BP_ERR_INTERNAL;
}

static void run_in_child(void (*fn)(void *), void *arg, const char *const *env) {
    assert_int_equal(bp_test_run_child(fn, arg, env), 0);
}

/* ---- cpu alone initialises no plugin ---- */

static void child_cpu_only(void *arg) {
    observe_inits();
    use_cpu();
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_default(&dev) == BP_OK && strcmp(bp_device_name(dev), "cpu:0") == 0);
    CHILD_CHECK(bp_kernel_register("cpu", "fill", BP_DTYPE_F32, unused_kernel, NULL, -100) ==
                BP_OK);
    expect_inits(no_inits);
    /* Discovery did run: the plugins' files were opened and validated. */
    CHILD_CHECK(opened_count >= 2);
}

/* "crash" aborts in init: the child survives only if no init ran. The plugins beside
 * libbackplane (hpu, opencl, ...) are found too; the observer sees none initialised. */
static void test_cpu_initialises_no_plugin(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("crash") ":" PLUGIN_DIR("good"), NULL};
    run_in_child(child_cpu_only, NULL, env);
}

/* ---- a type initialises itself and nothing else ---- */

static void child_open_one_type(void *arg) {
    observe_inits();
    use_cpu();
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("tdev:1", &dev) == BP_OK); /* by alias */
    CHILD_CHECK(strcmp(bp_device_name(dev), "testdev:1") == 0);
    const char *const testdev[] = {"testdev", NULL};
    expect_inits(testdev);
    CHILD_CHECK(bp_device_open("testdev:0", &dev) == BP_OK);
    CHILD_CHECK(bp_device_open("testdev:2", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "backend 'testdev' has 2 device(s)"));
    expect_inits(testdev); /* once */
    /* Registering a kernel for a type initialises it. */
    CHILD_CHECK(bp_kernel_register("nodev", "fill", BP_DTYPE_F32, unused_kernel, NULL, 1) ==
                BP_OK);
    const char *const both[] = {"testdev", "nodev", NULL};
    expect_inits(both);
    CHILD_CHECK(bp_device_open("nodev", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "no nodev hardware"));
    expect_inits(both);
}

static void child_bp_device(void *arg) {
    observe_inits();
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_default(&dev) == BP_OK);
    CHILD_CHECK(strcmp(bp_device_name(dev), "testdev:1") == 0);
    const char *const testdev[] = {"testdev", NULL};
    expect_inits(testdev);
}

static void test_open_type_initialises_only_it(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("crash") ":" PLUGIN_DIR(
                             "good") ":" PLUGIN_DIR("no_devices"),
                         NULL};
    run_in_child(child_open_one_type, NULL, env);
    const char *device_env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("crash") ":" PLUGIN_DIR("good"),
                                "BP_DEVICE=testdev:1", NULL};
    run_in_child(child_bp_device, NULL, device_env);
}

/* ---- listing initialises everything, in list order ---- */

typedef enum listing_call {
    BY_DEVICE_COUNT,
    BY_DEVICE_GET,
    BY_PLUGIN_COUNT,
    BY_PLUGIN_INFO,
} listing_call;

static void child_listing(void *arg) {
    listing_call call = *(const listing_call *)arg;
    observe_inits();
    use_cpu();
    expect_inits(no_inits);
    bp_device *dev = NULL;
    bp_plugin_info info = {.struct_size = sizeof info};
    switch (call) {
    case BY_DEVICE_COUNT: CHILD_CHECK(bp_device_count() > 1); break;
    case BY_DEVICE_GET: CHILD_CHECK(bp_device_get(0, &dev) == BP_OK); break;
    case BY_PLUGIN_COUNT: CHILD_CHECK(bp_plugin_count() > 1); break;
    case BY_PLUGIN_INFO: CHILD_CHECK(bp_plugin_get_info(0, &info) == BP_OK); break;
    }
    /* Every plugin in use was initialised once, in the order the list shows them. */
    int expected = 0;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info p = bp_test_plugin_at(i);
        if (p.state != BP_PLUGIN_LOADED)
            continue;
        CHILD_CHECK(expected < init_count && strcmp(inits[expected], p.name) == 0);
        expected++;
    }
    CHILD_CHECK(expected == init_count && inits_of("testdev") == 1 && inits_of("nodev") == 1);
}

static void test_listing_initialises_all(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("no_devices"), NULL};
    const listing_call calls[] = {BY_DEVICE_COUNT, BY_DEVICE_GET, BY_PLUGIN_COUNT, BY_PLUGIN_INFO};
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++)
        run_in_child(child_listing, (void *)&calls[k], env);
}

/* ---- ordinals do not depend on which type was opened first ---- */

/* Opens the devices named in arg (NULL-terminated) first, then checks that bp_device_get
 * lists the devices by backend in the order bp_plugin_get_info lists the backends
 * (discovery order: cpu, then BP_PLUGIN_PATH's testdev and broken, then the plugins
 * beside libbackplane), each by index. */
static void child_ordinals(void *arg) {
    const char *const *first = arg;
    for (; *first; first++) {
        bp_device *dev = NULL;
        CHILD_CHECK(bp_device_open(*first, &dev) == BP_OK);
    }
    int ordinal = 0;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info p = bp_test_plugin_at(i);
        if (p.state == BP_PLUGIN_SKIPPED)
            continue;
        for (int index = 0; index < p.device_count; index++, ordinal++) {
            bp_device *dev = NULL;
            CHILD_CHECK(bp_device_get(ordinal, &dev) == BP_OK);
            char name[BP_NAME_MAX];
            snprintf(name, sizeof name, "%s:%d", p.name, index);
            if (strcmp(bp_device_name(dev), name) != 0)
                fprintf(stderr, "ordinal %d is %s, expected %s\n", ordinal, bp_device_name(dev),
                        name);
            CHILD_CHECK(strcmp(bp_device_name(dev), name) == 0);
        }
    }
    CHILD_CHECK(ordinal == bp_device_count());
    const char *expected[] = {"cpu:0", "testdev:0", "testdev:1", "broken:0", "broken:1"};
    for (int k = 0; k < 5; k++) {
        bp_device *dev = NULL;
        CHILD_CHECK(bp_device_get(k, &dev) == BP_OK);
        CHILD_CHECK(strcmp(bp_device_name(dev), expected[k]) == 0);
    }
}

static void test_ordinals_independent_of_first_open(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("broken"),
                         "BP_BROKEN_DEFECT=", NULL};
    const char *const none[] = {NULL};
    const char *const testdev_first[] = {"testdev:1", NULL};
    const char *const broken_first[] = {"broken:1", "testdev:0", NULL};
    const char *const cpu_first[] = {"cpu", "broken:0", NULL};
    run_in_child(child_ordinals, (void *)none, env);
    run_in_child(child_ordinals, (void *)testdev_first, env);
    run_in_child(child_ordinals, (void *)broken_first, env);
    run_in_child(child_ordinals, (void *)cpu_first, env);
}

/* ---- two threads asking for one type: one init ---- */

enum { THREADS = 4 };

typedef struct opener {
    bp_status status;
    bp_device *device;
} opener;

static pthread_barrier_t start_barrier;

static void *open_gated(void *arg) {
    opener *o = arg;
    pthread_barrier_wait(&start_barrier);
    o->status = bp_device_open("gated:0", &o->device);
    return NULL;
}

/* "gated" writes a byte to BP_TEST_NOTIFY_FD in init, then blocks until it reads one
 * from BP_TEST_GATE_FD. While the first init provably sits there, cpu works; then the
 * gate gets a byte for every thread, so that a second init would not block but leave a
 * second byte in the notify pipe. */
static void child_concurrent_open(void *arg) {
    observe_inits();
    const bp_test_gate gate = bp_test_gate_open();

    pthread_t threads[THREADS];
    opener openers[THREADS];
    CHILD_CHECK(pthread_barrier_init(&start_barrier, NULL, THREADS) == 0);
    for (int t = 0; t < THREADS; t++)
        CHILD_CHECK(pthread_create(&threads[t], NULL, open_gated, &openers[t]) == 0);
    char byte = 0;
    CHILD_CHECK(read(gate.notify_read, &byte, 1) == 1);
    /* gated's init runs now, and stays there until the writes below. */
    use_cpu();
    char bytes[THREADS];
    memset(bytes, 'g', sizeof bytes);
    CHILD_CHECK(write(gate.gate_write, bytes, sizeof bytes) == (ssize_t)sizeof bytes);
    for (int t = 0; t < THREADS; t++)
        CHILD_CHECK(pthread_join(threads[t], NULL) == 0);
    pthread_barrier_destroy(&start_barrier);

    for (int t = 0; t < THREADS; t++)
        CHILD_CHECK(openers[t].status == BP_OK && openers[t].device == openers[0].device);
    CHILD_CHECK(fcntl(gate.notify_read, F_SETFL, O_NONBLOCK) == 0);
    CHILD_CHECK(read(gate.notify_read, &byte, 1) == -1 && errno == EAGAIN);
    const char *const gated[] = {"gated", NULL};
    expect_inits(gated);
    CHILD_CHECK(bp_test_plugin_named("gated").state == BP_PLUGIN_LOADED);
}

static void test_concurrent_first_open_one_init(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("gated"), NULL};
    run_in_child(child_concurrent_open, NULL, env);
}

/* ---- a lazy init that fails: as when every init ran at the first call ---- */

static void check_badinit_skipped(void) {
    bp_plugin_info info = bp_test_plugin_named("badinit");
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED && info.status == BP_ERR_DEVICE_LOST);
    CHILD_CHECK(info.device_count == 0);
    CHILD_CHECK(bp_test_contains(info.reason, "init failed (BP_ERR_DEVICE_LOST)"));
    CHILD_CHECK(bp_test_contains(info.reason, "simulated driver failure"));
    const char *const badinit[] = {"badinit", NULL};
    expect_inits(badinit);
}

typedef enum first_call { OPEN_FIRST, REGISTER_FIRST, LIST_FIRST } first_call;

static void child_failed_init(void *arg) {
    first_call first = *(const first_call *)arg;
    observe_inits();
    bp_device *dev = NULL;
    switch (first) {
    case OPEN_FIRST:
        CHILD_CHECK(bp_device_open("badinit:0", &dev) == BP_ERR_NOT_FOUND);
        CHILD_CHECK(bp_test_contains(bp_last_error(), "unknown device type 'badinit'"));
        CHILD_CHECK(bp_test_contains(bp_last_error(), "types present: cpu"));
        CHILD_CHECK(!bp_test_contains(strstr(bp_last_error(), "types present"), "badinit"));
        break;
    case REGISTER_FIRST:
        CHILD_CHECK(bp_kernel_register("badinit", "fill", BP_DTYPE_F32, unused_kernel, NULL, 1) ==
                    BP_ERR_NOT_FOUND);
        CHILD_CHECK(bp_test_contains(bp_last_error(), "backend 'badinit' was unloaded"));
        break;
    case LIST_FIRST:
        break;
    }
    check_badinit_skipped();
    CHILD_CHECK(bp_device_open("badinit:0", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_kernel_register("badinit", "fill", BP_DTYPE_F32, unused_kernel, NULL, 1) ==
                BP_ERR_NOT_FOUND);
    expect_inits((const char *const[]){"badinit", NULL}); /* tried once */
    use_cpu();
}

static void test_failed_lazy_init_reported(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("bad_init"), "BP_PLUGINS=badinit", NULL};
    const first_call calls[] = {OPEN_FIRST, REGISTER_FIRST, LIST_FIRST};
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++)
        run_in_child(child_failed_init, (void *)&calls[k], env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_initialises_no_plugin),
        cmocka_unit_test(test_open_type_initialises_only_it),
        cmocka_unit_test(test_listing_initialises_all),
        cmocka_unit_test(test_ordinals_independent_of_first_open),
        cmocka_unit_test(test_concurrent_first_open_one_init),
        cmocka_unit_test(test_failed_lazy_init_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
