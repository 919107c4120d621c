/* Work that spans devices: peer copies within a backend, copies staged between
 * backends, cross-backend event waits, and the errors for mixing devices. Runs with
 * the testdev plugin (two devices, peer copy) loaded through BP_PLUGIN_PATH. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { SIZE = 1 << 20, BIG = 32 << 20 };

typedef struct devices {
    bp_device *cpu, *t0, *t1;
    unsigned char *in, *out;
} devices;

static int devices_setup(void **state) {
    devices *d = calloc(1, sizeof *d);
    BP_ASSERT_OK(bp_device_open("cpu", &d->cpu));
    BP_ASSERT_OK(bp_device_open("testdev:0", &d->t0));
    BP_ASSERT_OK(bp_device_open("tdev:1", &d->t1));
    d->in = malloc(SIZE);
    d->out = calloc(1, SIZE);
    bp_test_fill_random(d->in, SIZE, 404);
    *state = d;
    return 0;
}

static int devices_teardown(void **state) {
    devices *d = *state;
    free(d->in);
    free(d->out);
    free(d);
    return 0;
}

static void *alloc_on(bp_device *dev, size_t size) {
    void *p = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, size, NULL, &p));
    assert_non_null(p);
    return p;
}

/* testdev:0 -> testdev:1 through the backend's own peer copy, on either device's stream. */
static void test_peer_copy_within_backend(void **state) {
    devices *d = *state;
    void *a = alloc_on(d->t0, SIZE), *b = alloc_on(d->t1, SIZE);
    BP_ASSERT_OK(bp_memory_copy_async(a, d->t0, d->in, NULL, SIZE, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(b, d->t1, a, d->t0, SIZE, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(d->out, NULL, b, d->t1, SIZE, NULL));
    BP_ASSERT_OK(bp_device_synchronize(d->t1));
    assert_memory_equal(d->out, d->in, SIZE);

    bp_stream *on_source = NULL;
    BP_ASSERT_OK(bp_stream_default(d->t0, &on_source));
    memset(d->out, 0, SIZE);
    BP_ASSERT_OK(bp_memory_set_async(d->t1, b, 0, SIZE, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(b, d->t1, a, d->t0, SIZE, on_source));
    BP_ASSERT_OK(bp_memory_copy_async(d->out, NULL, b, d->t1, SIZE, NULL));
    assert_memory_equal(d->out, d->in, SIZE);
    BP_ASSERT_OK(bp_memory_free(d->t0, a));
    BP_ASSERT_OK(bp_memory_free(d->t1, b));
}

/* cpu <-> testdev: two backends, so the copy is staged through host memory and has
 * completed when the call returns, after the source's pending work. */
static void test_staged_copy_between_backends(void **state) {
    devices *d = *state;
    void *c = alloc_on(d->cpu, BIG), *t = alloc_on(d->t0, SIZE);
    bp_stream *cs = NULL;
    BP_ASSERT_OK(bp_stream_create(d->cpu, 0, &cs));
    /* Slow work on the cpu ends by writing the payload: the staged copy must see it. */
    for (int i = 0; i < 6; i++)
        BP_ASSERT_OK(bp_memory_set_async(d->cpu, c, i, BIG, cs));
    BP_ASSERT_OK(bp_memory_copy_async(c, d->cpu, d->in, NULL, SIZE, cs));
    BP_ASSERT_OK(bp_memory_copy_async(t, d->t0, c, d->cpu, SIZE, NULL));
    BP_ASSERT_OK(bp_memory_copy_async(d->out, NULL, t, d->t0, SIZE, NULL));
    assert_memory_equal(d->out, d->in, SIZE);

    /* And back, on the cpu stream (the destination's). */
    BP_ASSERT_OK(bp_memory_set_async(d->cpu, c, 0, SIZE, cs));
    BP_ASSERT_OK(bp_memory_copy_async(c, d->cpu, t, d->t0, SIZE, cs));
    memset(d->out, 0, SIZE);
    BP_ASSERT_OK(bp_memory_copy_async(d->out, NULL, c, d->cpu, SIZE, cs));
    BP_ASSERT_OK(bp_stream_synchronize(cs));
    assert_memory_equal(d->out, d->in, SIZE);
    BP_ASSERT_OK(bp_stream_destroy(cs));
    BP_ASSERT_OK(bp_memory_free(d->cpu, c));
    BP_ASSERT_OK(bp_memory_free(d->t0, t));
}

/* A testdev stream waiting on a cpu event: the host waits for the event. */
static void test_wait_on_event_of_other_backend(void **state) {
    devices *d = *state;
    void *c = alloc_on(d->cpu, BIG);
    bp_stream *cs = NULL, *ts = NULL;
    bp_event *ev = NULL;
    BP_ASSERT_OK(bp_stream_create(d->cpu, 0, &cs));
    BP_ASSERT_OK(bp_stream_default(d->t0, &ts));
    BP_ASSERT_OK(bp_event_create(d->cpu, BP_EVENT_DEFAULT, &ev));
    bp_conf_gate gate;
    bp_conf_gate_init(&gate);
    BP_ASSERT_OK(bp_conf_gate_hold(&gate, cs));
    for (int i = 0; i < 6; i++)
        BP_ASSERT_OK(bp_memory_set_async(d->cpu, c, i, BIG, cs));
    BP_ASSERT_OK(bp_event_record(ev, cs));
    assert_int_equal(bp_event_query(ev), BP_ERR_NOT_READY);
    /* The wait blocks this thread until the event completes: open the gate first. */
    bp_conf_gate_open(&gate);
    BP_ASSERT_OK(bp_stream_wait_event(ts, ev));
    BP_ASSERT_OK(bp_event_query(ev));
    assert_int_equal(((unsigned char *)c)[BIG - 1], 5); /* the last memset has run */
    bp_conf_gate_destroy(&gate, 1);
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_stream_destroy(cs));
    BP_ASSERT_OK(bp_memory_free(d->cpu, c));
}

static void test_mixing_devices_is_an_error(void **state) {
    devices *d = *state;
    void *t = alloc_on(d->t0, SIZE);
    bp_stream *cs = NULL, *t1s = NULL;
    BP_ASSERT_OK(bp_stream_default(d->cpu, &cs));
    BP_ASSERT_OK(bp_stream_default(d->t1, &t1s));
    BP_ASSERT_ERR(bp_memory_copy_async(t, d->t0, d->in, NULL, SIZE, cs), BP_ERR_INVALID_ARGUMENT,
                  "the stream belongs to cpu:0, not to testdev:0");
    BP_ASSERT_ERR(bp_memory_copy_async(d->out, NULL, d->in, NULL, SIZE, cs),
                  BP_ERR_INVALID_ARGUMENT, "both sides are host memory");
    BP_ASSERT_ERR(bp_memory_copy_async(NULL, d->t0, d->in, NULL, SIZE, NULL),
                  BP_ERR_INVALID_ARGUMENT, "destination pointer is NULL");
    BP_ASSERT_ERR(bp_memory_set_async(d->t0, t, 0, SIZE, t1s), BP_ERR_INVALID_ARGUMENT,
                  "belongs to testdev:1");
    BP_ASSERT_ERR(bp_memory_alloc(d->t0, SIZE, cs, &(void *){NULL}), BP_ERR_INVALID_ARGUMENT,
                  "belongs to cpu:0");
    BP_ASSERT_ERR(bp_memory_record_stream(d->t0, t, cs), BP_ERR_INVALID_ARGUMENT,
                  "the stream belongs to cpu:0, the memory to testdev:0");
    /* A testdev pointer is foreign to the cpu allocator. */
    BP_ASSERT_ERR(bp_memory_free(d->cpu, t), BP_ERR_INVALID_ARGUMENT, "cpu:0");

    bp_event *ev = NULL, *other = NULL;
    BP_ASSERT_OK(bp_event_create(d->t0, BP_EVENT_TIMING, &ev));
    BP_ASSERT_OK(bp_event_create(d->t1, BP_EVENT_TIMING, &other));
    BP_ASSERT_ERR(bp_event_record(ev, t1s), BP_ERR_INVALID_ARGUMENT,
                  "the event belongs to testdev:0 but the stream to testdev:1");
    BP_ASSERT_OK(bp_event_record(other, t1s));
    bp_stream *t0s = NULL;
    BP_ASSERT_OK(bp_stream_default(d->t0, &t0s));
    BP_ASSERT_OK(bp_event_record(ev, t0s));
    float ms = 0;
    BP_ASSERT_ERR(bp_event_elapsed_ms(ev, other, &ms), BP_ERR_INVALID_ARGUMENT,
                  "start is on testdev:0 but end on testdev:1");

    void *host = NULL;
    BP_ASSERT_OK(bp_host_alloc(d->t0, 4096, &host));
    BP_ASSERT_ERR(bp_host_free(d->t1, host), BP_ERR_INVALID_ARGUMENT,
                  "was allocated for testdev:0, not testdev:1");
    BP_ASSERT_OK(bp_host_free(d->t0, host));
    BP_ASSERT_OK(bp_event_destroy(ev));
    BP_ASSERT_OK(bp_event_destroy(other));
    BP_ASSERT_OK(bp_memory_free(d->t0, t));
}

/* testdev registers a fill kernel for f32 from its init (host->register_kernel): ops on
 * testdev tensors reach it, and other dtypes get the missing-kernel error. */
static void test_plugin_registered_kernel(void **state) {
    devices *d = *state;
    bp_op_id fill = -1;
    BP_ASSERT_OK(bp_op_find("fill", &fill));
    assert_int_equal(bp_kernel_dtypes(fill, d->t0), BP_DTYPE_BIT(BP_DTYPE_F32));

    int64_t shape[2] = {3, 5};
    bp_tensor *t = NULL, *column = NULL;
    BP_ASSERT_OK(bp_tensor_empty(d->t0, BP_DTYPE_F32, 2, shape, &t));
    BP_ASSERT_OK(bp_fill(t, 2.5));
    BP_ASSERT_OK(bp_tensor_narrow(t, 1, 3, 1, &column)); /* a strided view: column 3 */
    BP_ASSERT_OK(bp_fill(column, -7.0));
    float got[15];
    BP_ASSERT_OK(bp_tensor_to_host(t, got, sizeof got));
    for (int i = 0; i < 15; i++)
        assert_true(got[i] == (i % 5 == 3 ? -7.0f : 2.5f));

    bp_tensor *ints = NULL;
    BP_ASSERT_OK(bp_tensor_empty(d->t0, BP_DTYPE_I32, 2, shape, &ints));
    BP_ASSERT_ERR(bp_fill(ints, 1), BP_ERR_UNSUPPORTED,
                  "no kernel for op 'fill' on testdev:0 (device type 'testdev') with dtype i32; "
                  "dtypes with a kernel there: f32");
    bp_tensor_release(ints);
    bp_tensor_release(column);
    bp_tensor_release(t);
}

/* Each device has its own allocator and statistics. */
static void test_allocators_are_per_device(void **state) {
    devices *d = *state;
    bp_memory_stats s0 = {.struct_size = sizeof s0}, s1 = {.struct_size = sizeof s1};
    BP_ASSERT_OK(bp_memory_get_stats(d->t1, &s1));
    uint64_t t1_allocs = s1.num_allocs;
    void *t = alloc_on(d->t0, SIZE);
    BP_ASSERT_OK(bp_memory_get_stats(d->t0, &s0));
    BP_ASSERT_OK(bp_memory_get_stats(d->t1, &s1));
    assert_true(s0.allocated_bytes >= SIZE);
    assert_int_equal(s1.allocated_bytes, 0);
    assert_int_equal(s1.num_allocs, t1_allocs);
    BP_ASSERT_OK(bp_memory_free(d->t0, t));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_peer_copy_within_backend, devices_setup,
                                        devices_teardown),
        cmocka_unit_test_setup_teardown(test_staged_copy_between_backends, devices_setup,
                                        devices_teardown),
        cmocka_unit_test_setup_teardown(test_wait_on_event_of_other_backend, devices_setup,
                                        devices_teardown),
        cmocka_unit_test_setup_teardown(test_mixing_devices_is_an_error, devices_setup,
                                        devices_teardown),
        cmocka_unit_test_setup_teardown(test_allocators_are_per_device, devices_setup,
                                        devices_teardown),
        cmocka_unit_test_setup_teardown(test_plugin_registered_kernel, devices_setup,
                                        devices_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
