/* Conformance group "errors": every error the public headers document, provoked on the
 * device under test, returns its documented status and leaves a message in
 * bp_last_error() (BP_CONF_ERR checks both). Most checks are made by the core before
 * the backend is called; running them against each backend proves that the backend's
 * state (its streams, events, allocations and kernels) reaches those checks intact,
 * and that an error leaves the device usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "gate.h"
#include "work.h"

/* Another device than the one under test: cpu when that is not the target, else any
 * other listed device; NULL when there is none. */
static bp_device *other_device(void) {
    bp_device *cpu = NULL;
    if (bp_device_open("cpu", &cpu) == BP_OK && cpu != bp_conf.device)
        return cpu;
    for (int i = 0; i < bp_device_count(); i++) {
        bp_device *dev = NULL;
        if (bp_device_get(i, &dev) == BP_OK && dev != bp_conf.device)
            return dev;
    }
    return NULL;
}

/* Fails unless the device still allocates memory and runs work on it after the
 * errors. (Whether the data is right is the memory group's business: checking it here
 * would fail these tests for a copy bug.) */
static void expect_device_usable(void) {
    bp_stream *s = bp_conf_stream();
    void *p = bp_conf_alloc(4096, s);
    BP_CONF_OK(bp_memory_set_async(bp_conf.device, p, 0x7e, 4096, s));
    BP_CONF_OK(bp_stream_synchronize(s));
    BP_CONF_OK(bp_memory_free(bp_conf.device, p));
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- device_names ---- */

static void test_device_names(void **state) {
    const char *type = bp_conf.props.type;
    bp_device *dev = NULL;
    char name[BP_NAME_MAX * 2];

    /* Malformed: BP_ERR_INVALID_ARGUMENT. */
    BP_CONF_ERR(bp_device_open(NULL, &dev), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_device_open(type, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_device_open("", &dev), BP_ERR_INVALID_ARGUMENT);
    static const char *const malformed[] = {"%s:", "%s:x", "%s:+1", "%s:0:1", " %s", "%s :0",
                                            "%s:0 ", "%s: 0", "%s:0x1"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        snprintf(name, sizeof name, malformed[i], type);
        BP_CONF_ERR(bp_device_open(name, &dev), BP_ERR_INVALID_ARGUMENT);
    }

    /* Unknown type: BP_ERR_NOT_FOUND. */
    BP_CONF_ERR(bp_device_open("bpconfnosuchtype", &dev), BP_ERR_NOT_FOUND);
    BP_CONF_ERR(bp_device_open("bpconfnosuchtype:0", &dev), BP_ERR_NOT_FOUND);

    /* Index out of range: BP_ERR_NOT_FOUND. */
    int of_type = 0;
    for (int i = 0; i < bp_device_count(); i++) {
        bp_device *d = NULL;
        bp_device_props p = {.struct_size = sizeof p};
        BP_CONF_OK(bp_device_get(i, &d));
        BP_CONF_OK(bp_device_get_props(d, &p));
        of_type += strcmp(p.type, type) == 0;
    }
    snprintf(name, sizeof name, "%s:%d", type, of_type);
    BP_CONF_ERR(bp_device_open(name, &dev), BP_ERR_NOT_FOUND);
    snprintf(name, sizeof name, "%s:%d", type, of_type + 1000);
    BP_CONF_ERR(bp_device_open(name, &dev), BP_ERR_NOT_FOUND);
    /* Negative or beyond int is out of range too, not malformed. */
    static const char *const far[] = {"%s:-1", "%s:2147483648", "%s:99999999999"};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        snprintf(name, sizeof name, far[i], type);
        BP_CONF_ERR(bp_device_open(name, &dev), BP_ERR_NOT_FOUND);
    }

    /* bp_device_get outside 0..count-1 is an error too. */
    bp_clear_error();
    bp_status st = bp_device_get(bp_device_count(), &dev);
    if (st == BP_OK || !bp_last_error()[0])
        fail_msg("bp_device_get(bp_device_count()) returned %s with message '%s'",
                 bp_status_str(st), bp_last_error());
}

/* ---- null_arguments ---- */

static void test_null_arguments(void **state) {
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    bp_event *e = NULL;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &e));
    bp_stream *out_s = NULL;
    bp_event *out_e = NULL;
    int prio = 0;
    float ms = 0;
    void *p = NULL;
    char host[64];
    void *block = bp_conf_alloc(64, s);

    /* Streams. */
    BP_CONF_ERR(bp_stream_create(NULL, 0, &out_s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_create(dev, 0, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_default(NULL, &out_s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_default(dev, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_synchronize(NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_query(NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_get_priority(NULL, &prio), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_get_priority(s, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_wait_event(NULL, e), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_wait_event(s, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_OK(bp_stream_destroy(NULL)); /* documented no-op */
    if (bp_stream_device(NULL))
        fail_msg("bp_stream_device(NULL) is not NULL");

    /* Events. */
    BP_CONF_ERR(bp_event_create(NULL, BP_EVENT_DEFAULT, &out_e), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_create(dev, BP_EVENT_DEFAULT, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_record(NULL, s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_record(e, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_query(NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_synchronize(NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_elapsed_ms(NULL, e, &ms), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_elapsed_ms(e, NULL, &ms), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_elapsed_ms(e, e, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_OK(bp_event_destroy(NULL)); /* documented no-op */

    /* Memory. */
    BP_CONF_ERR(bp_memory_alloc(NULL, 64, NULL, &p), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_alloc(dev, 64, s, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_free(NULL, block), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_record_stream(dev, NULL, s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_record_stream(dev, block, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_get_stats(dev, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_empty_cache(NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_host_alloc(dev, 64, NULL), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_copy_async(NULL, dev, host, NULL, sizeof host, s),
                BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_copy_async(host, NULL, NULL, dev, sizeof host, s),
                BP_ERR_INVALID_ARGUMENT);
    /* At least one side must be a device. */
    char other[64];
    BP_CONF_ERR(bp_memory_copy_async(other, NULL, host, NULL, sizeof host, s),
                BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_set_async(dev, NULL, 0, 64, s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_set_async(NULL, block, 0, 64, s), BP_ERR_INVALID_ARGUMENT);

    BP_CONF_OK(bp_memory_free(dev, block));
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_stream_destroy(s));
    expect_device_usable();
}

/* ---- invalid_free ---- */

static void test_invalid_free(void **state) {
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    bp_memory_stats before = bp_conf_memory_stats();

    /* Pointers the allocator never handed out. */
    char *heap = malloc(4096);
    if (!heap)
        fail_msg("cannot allocate 4096 bytes of host memory");
    int local = 0;
    BP_CONF_ERR(bp_memory_free(dev, heap), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_free(dev, &local), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_record_stream(dev, heap, s), BP_ERR_INVALID_ARGUMENT);

    /* Inside a live block, not its start; then a double free. */
    char *p = bp_conf_alloc(8192, s);
    BP_CONF_ERR(bp_memory_free(dev, p + 256), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_OK(bp_memory_free(dev, p));
    BP_CONF_ERR(bp_memory_free(dev, p), BP_ERR_INVALID_ARGUMENT);

    /* Host memory: a foreign pointer and a double free. */
    BP_CONF_ERR(bp_host_free(dev, heap), BP_ERR_INVALID_ARGUMENT);
    void *h = NULL;
    BP_CONF_OK(bp_host_alloc(dev, 4096, &h));
    BP_CONF_OK(bp_host_free(dev, h));
    BP_CONF_ERR(bp_host_free(dev, h), BP_ERR_INVALID_ARGUMENT);
    free(heap);

    bp_conf_expect_allocated_unchanged(&before, "after the rejected frees");
    BP_CONF_OK(bp_stream_destroy(s));
    expect_device_usable();
}

/* ---- default_stream_destroy ---- */

static void test_default_stream_destroy(void **state) {
    bp_stream *def = NULL;
    BP_CONF_OK(bp_stream_default(bp_conf.device, &def));
    BP_CONF_ERR(bp_stream_destroy(def), BP_ERR_INVALID_ARGUMENT);
    /* It is still the working default stream. */
    bp_stream *again = NULL;
    BP_CONF_OK(bp_stream_default(bp_conf.device, &again));
    if (again != def)
        fail_msg("the default stream changed after a refused destroy");
    void *p = bp_conf_alloc(4096, def);
    BP_CONF_OK(bp_memory_set_async(bp_conf.device, p, 0x21, 4096, def));
    BP_CONF_OK(bp_stream_synchronize(def));
    BP_CONF_OK(bp_stream_query(def));
    BP_CONF_OK(bp_memory_free(bp_conf.device, p));
}

/* ---- destroyed_handles ---- */

static void test_destroyed_handles(void **state) {
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream(), *live = bp_conf_stream();
    bp_event *e = NULL;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &e));
    BP_CONF_OK(bp_event_record(e, s));
    BP_CONF_OK(bp_stream_destroy(s));
    /* Recently destroyed handles are detected (<backplane/stream.h>). */
    BP_CONF_ERR(bp_stream_destroy(s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_synchronize(s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_query(s), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_record(e, s), BP_ERR_INVALID_ARGUMENT);
    void *p = NULL;
    BP_CONF_ERR(bp_memory_alloc(dev, 64, s, &p), BP_ERR_INVALID_ARGUMENT);

    /* An event recorded on the destroyed stream is still complete and usable. */
    BP_CONF_OK(bp_event_synchronize(e));
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_ERR(bp_event_destroy(e), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_query(e), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_synchronize(e), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_event_record(e, live), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_stream_wait_event(live, e), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_OK(bp_stream_destroy(live));
    expect_device_usable();
}

/* ---- event_timing_errors ---- */

static void test_event_timing_errors(void **state) {
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    bp_event *plain = NULL, *plain2 = NULL;
    float ms = -1;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &plain));
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &plain2));
    BP_CONF_OK(bp_event_record(plain, s));
    BP_CONF_OK(bp_event_record(plain2, s));
    BP_CONF_OK(bp_stream_synchronize(s));
    /* Without BP_EVENT_TIMING: BP_ERR_INVALID_ARGUMENT on any device. */
    BP_CONF_ERR(bp_event_elapsed_ms(plain, plain2, &ms), BP_ERR_INVALID_ARGUMENT);

    if (!(bp_conf.props.capabilities & BP_CAP_TIMED_EVENTS)) {
        bp_event *t = NULL;
        BP_CONF_ERR(bp_event_create(dev, BP_EVENT_TIMING, &t), BP_ERR_UNSUPPORTED);
        print_message("no BP_CAP_TIMED_EVENTS: BP_EVENT_TIMING is refused; the timed checks "
                      "are left out\n");
    } else {
        bp_event *t0 = NULL, *t1 = NULL, *never = NULL;
        BP_CONF_OK(bp_event_create(dev, BP_EVENT_TIMING, &t0));
        BP_CONF_OK(bp_event_create(dev, BP_EVENT_TIMING, &t1));
        BP_CONF_OK(bp_event_create(dev, BP_EVENT_TIMING, &never));
        BP_CONF_OK(bp_event_record(t0, s));
        BP_CONF_OK(bp_event_record(t1, s));
        BP_CONF_OK(bp_stream_synchronize(s));
        BP_CONF_ERR(bp_event_elapsed_ms(t0, plain, &ms), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_ERR(bp_event_elapsed_ms(plain, t1, &ms), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_ERR(bp_event_elapsed_ms(t0, never, &ms), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_ERR(bp_event_elapsed_ms(never, t1, &ms), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_OK(bp_event_elapsed_ms(t0, t1, &ms));

        /* Not completed (the stream is held on a gate): BP_ERR_NOT_READY, with a
         * message. The gate opens before any check can end the test. */
        bp_conf_gate gate;
        bp_conf_gate_init(&gate);
        BP_CONF_OK(bp_conf_gate_hold(&gate, s));
        bp_status rec = bp_event_record(t1, s);
        bp_clear_error();
        bp_status st = rec == BP_OK ? bp_event_elapsed_ms(t0, t1, &ms) : rec;
        bool message = bp_last_error()[0] != '\0';
        bp_conf_gate_destroy(&gate, 1); /* opens it; before any check can end the test */
        BP_CONF_OK(rec);
        if (st != BP_ERR_NOT_READY)
            fail_msg("bp_event_elapsed_ms to an event behind a held host function returned %s, "
                     "expected BP_ERR_NOT_READY: %s", bp_status_str(st), bp_last_error());
        if (!message)
            fail_msg("bp_event_elapsed_ms returned BP_ERR_NOT_READY without a message");
        BP_CONF_OK(bp_stream_synchronize(s));
        BP_CONF_OK(bp_event_destroy(t0));
        BP_CONF_OK(bp_event_destroy(t1));
        BP_CONF_OK(bp_event_destroy(never));
    }
    BP_CONF_OK(bp_event_destroy(plain));
    BP_CONF_OK(bp_event_destroy(plain2));
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- other_device_handles ---- */

static void test_other_device_handles(void **state) {
    bp_device *other = other_device();
    if (!other)
        BP_CONF_SKIP("no second device is listed");
    bp_device *dev = bp_conf.device;
    bp_stream *mine = bp_conf_stream(), *theirs = NULL;
    BP_CONF_OK(bp_stream_create(other, 0, &theirs));
    bp_event *e = NULL;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &e));
    /* An event records only on a stream of its own device. */
    BP_CONF_ERR(bp_event_record(e, theirs), BP_ERR_INVALID_ARGUMENT);

    /* A copy's stream belongs to one of its two devices. */
    char host[64] = {0};
    void *p = bp_conf_alloc(sizeof host, mine);
    BP_CONF_ERR(bp_memory_copy_async(p, dev, host, NULL, sizeof host, theirs),
                BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_memory_copy_async(host, NULL, p, dev, sizeof host, theirs),
                BP_ERR_INVALID_ARGUMENT);

    /* Timing events of two devices cannot be compared. */
    bp_device_props op = {.struct_size = sizeof op};
    BP_CONF_OK(bp_device_get_props(other, &op));
    if ((bp_conf.props.capabilities & op.capabilities & BP_CAP_TIMED_EVENTS)) {
        bp_event *t0 = NULL, *t1 = NULL;
        BP_CONF_OK(bp_event_create(dev, BP_EVENT_TIMING, &t0));
        BP_CONF_OK(bp_event_create(other, BP_EVENT_TIMING, &t1));
        BP_CONF_OK(bp_event_record(t0, mine));
        BP_CONF_OK(bp_event_record(t1, theirs));
        BP_CONF_OK(bp_stream_synchronize(mine));
        BP_CONF_OK(bp_stream_synchronize(theirs));
        float ms = 0;
        BP_CONF_ERR(bp_event_elapsed_ms(t0, t1, &ms), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_OK(bp_event_destroy(t0));
        BP_CONF_OK(bp_event_destroy(t1));
    }
    print_message("other device: %s\n", bp_device_name(other));
    BP_CONF_OK(bp_memory_free(dev, p));
    BP_CONF_OK(bp_event_destroy(e));
    BP_CONF_OK(bp_stream_destroy(mine));
    BP_CONF_OK(bp_stream_destroy(theirs));
    expect_device_usable();
}

/* ---- tensor_errors ---- */

static void test_tensor_errors(void **state) {
    bp_device *dev = bp_conf.device;
    bp_tensor *t = NULL;
    int64_t shape[BP_MAX_DIMS + 1];
    for (int i = 0; i <= BP_MAX_DIMS; i++)
        shape[i] = 1;
    BP_CONF_ERR(bp_tensor_empty(dev, BP_DTYPE_COUNT, 1, shape, &t), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, BP_MAX_DIMS + 1, shape, &t),
                BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, -1, shape, &t), BP_ERR_INVALID_ARGUMENT);
    const int64_t negative[2] = {4, -2};
    BP_CONF_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 2, negative, &t), BP_ERR_INVALID_ARGUMENT);
    const int64_t overflow[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 16};
    BP_CONF_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 3, overflow, &t), BP_ERR_INVALID_ARGUMENT);
    /* More elements than the device has memory: BP_ERR_OUT_OF_MEMORY. */
    uint64_t total = bp_conf.props.total_memory;
    if (total && total < ((uint64_t)1 << 60)) {
        const int64_t huge[1] = {(int64_t)(total / 4 + (1 << 20))};
        BP_CONF_ERR(bp_tensor_empty(dev, BP_DTYPE_F32, 1, huge, &t), BP_ERR_OUT_OF_MEMORY);
    }
    if (t)
        fail_msg("a failed bp_tensor_empty left a tensor in out_tensor");
    expect_device_usable();
}

/* ---- op_errors ---- */

static bp_tensor *tensor_on(bp_device *dev, bp_dtype dtype, int ndim, const int64_t *shape) {
    bp_tensor *t = NULL;
    BP_CONF_OK(bp_tensor_empty(dev, dtype, ndim, shape, &t));
    return t;
}

/* A dtype the device reports other than f32, or BP_DTYPE_COUNT when it has none. */
static bp_dtype second_dtype(void) {
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (dt != BP_DTYPE_F32 && (bp_conf.props.dtypes & BP_DTYPE_BIT(dt)))
            return (bp_dtype)dt;
    return BP_DTYPE_COUNT;
}

static void test_op_errors(void **state) {
    bp_device *dev = bp_conf.device;
    const int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s32[2] = {3, 2};
    bp_tensor *a = tensor_on(dev, BP_DTYPE_F32, 2, s23);
    bp_tensor *b = tensor_on(dev, BP_DTYPE_F32, 2, s45);
    bp_tensor *wrong_out = tensor_on(dev, BP_DTYPE_F32, 2, s32);
    bp_tensor *out = NULL;

    /* Shapes that do not broadcast, and an out tensor of the wrong shape. */
    BP_CONF_ERR(bp_add(a, b, &out), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_add_out(a, a, wrong_out), BP_ERR_INVALID_ARGUMENT);
    BP_CONF_ERR(bp_add(a, NULL, &out), BP_ERR_INVALID_ARGUMENT);

    /* Inputs of two dtypes (no implicit promotion), and an out of another dtype. */
    bp_dtype other_dt = second_dtype();
    if (other_dt != BP_DTYPE_COUNT) {
        bp_tensor *c = tensor_on(dev, other_dt, 2, s23);
        BP_CONF_ERR(bp_add(a, c, &out), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_ERR(bp_add_out(a, a, c), BP_ERR_INVALID_ARGUMENT);
        bp_tensor_release(c);
    } else {
        print_message("the device reports only f32: dtype mismatches left out\n");
    }

    /* Tensors of two devices, cpu and the target. */
    bp_device *cpu = NULL;
    BP_CONF_OK(bp_device_open("cpu", &cpu));
    if (cpu != dev) {
        bp_tensor *h = tensor_on(cpu, BP_DTYPE_F32, 2, s23);
        BP_CONF_ERR(bp_add(a, h, &out), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_ERR(bp_add(h, a, &out), BP_ERR_INVALID_ARGUMENT);
        BP_CONF_ERR(bp_copy(a, h), BP_ERR_INVALID_ARGUMENT);
        bp_tensor_release(h);
    } else {
        print_message("the target is the cpu: the device mix is left out\n");
    }
    if (out)
        fail_msg("a failed op left a tensor in out");
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(wrong_out);
    BP_CONF_OK(bp_device_synchronize(dev));
}

/* ---- unregistered_kernel ---- */

static void test_unregistered_kernel(void **state) {
    bp_device *dev = bp_conf.device;
    bp_op_id op = -1, found = -1;
    BP_CONF_ERR(bp_op_find("bp_conf_no_such_op", &found), BP_ERR_NOT_FOUND);
    /* An op no backend has a kernel for: dispatching it on the device is unsupported
     * (with or without the cpu fallback, which has no kernel either). */
    BP_CONF_OK(bp_op_define("bp_conf_kernel_less", 0, &op));
    if (bp_kernel_dtypes(op, dev))
        fail_msg("op 'bp_conf_kernel_less' reports kernels on %s", bp_conf.props.name);
    const int64_t shape[1] = {16};
    bp_tensor *t = tensor_on(dev, BP_DTYPE_F32, 1, shape);
    const bp_tensor_desc *outputs[1] = {bp_tensor_kernel_desc(t)};
    bp_op_call call;
    memset(&call, 0, sizeof call);
    call.kernel.op = op;
    call.kernel.dtype = BP_DTYPE_F32;
    call.kernel.n_outputs = 1;
    call.kernel.outputs = outputs;
    call.device = dev;
    BP_CONF_ERR(bp_dispatch(&call), BP_ERR_UNSUPPORTED);
    bp_tensor_release(t);
    expect_device_usable();
}

/* ---- plugin_load_errors ---- */

static void test_plugin_load_errors(void **state) {
    BP_CONF_ERR(bp_plugin_load("/nonexistent/bp-conformance/libbp_nothing.so"), BP_ERR_NOT_FOUND);
    if (!bp_conf.plugin_path) {
        print_message("built-in backend: loading it twice is not checked\n");
        return;
    }
    /* The plugin is loaded already: loading it again is refused. */
    BP_CONF_ERR(bp_plugin_load(bp_conf.plugin_path), BP_ERR_INVALID_ARGUMENT);
    expect_device_usable();
}

static const bp_conf_test errors_tests[] = {
    {"device_names", test_device_names,
     "malformed names are BP_ERR_INVALID_ARGUMENT, unknown types and indices BP_ERR_NOT_FOUND",
     NULL},
    {"null_arguments", test_null_arguments,
     "NULL arguments of stream, event and memory functions are BP_ERR_INVALID_ARGUMENT", NULL},
    {"invalid_free", test_invalid_free,
     "freeing foreign, interior or already freed pointers is BP_ERR_INVALID_ARGUMENT", NULL},
    {"default_stream_destroy", test_default_stream_destroy,
     "destroying the default stream is refused and leaves it working", NULL},
    {"destroyed_handles", test_destroyed_handles,
     "using a destroyed stream or event is BP_ERR_INVALID_ARGUMENT", NULL},
    {"event_timing_errors", test_event_timing_errors,
     "elapsed time of untimed or unrecorded events is an error; timing without the capability "
     "is BP_ERR_UNSUPPORTED", NULL},
    {"other_device_handles", test_other_device_handles,
     "an event or copy given a stream of another device is BP_ERR_INVALID_ARGUMENT", NULL},
    {"tensor_errors", test_tensor_errors,
     "bad tensor dtypes, dims and sizes are BP_ERR_INVALID_ARGUMENT; too large is out of memory",
     NULL},
    {"op_errors", test_op_errors,
     "ops with mismatched shapes, dtypes or devices are BP_ERR_INVALID_ARGUMENT", NULL},
    {"unregistered_kernel", test_unregistered_kernel,
     "dispatching an op without a kernel is BP_ERR_UNSUPPORTED", NULL},
    {"plugin_load_errors", test_plugin_load_errors,
     "loading a missing plugin is BP_ERR_NOT_FOUND, a loaded one again BP_ERR_INVALID_ARGUMENT",
     NULL},
};

const bp_conf_group bp_conf_group_errors = {
    .name = "errors",
    .summary = "each documented error returns its status and a message",
    .tests = errors_tests,
    .n_tests = sizeof errors_tests / sizeof errors_tests[0],
    .timeout_s = 60,
};
