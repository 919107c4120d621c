/* The CPU-class kit (backends/cpukit) on its own, as a backend links it: the deep copy
 * of a call record, the thread pool (coverage of the range, its threads started pinned
 * and through the start function), and stream workers that cannot start on their CPU
 * set. The rest of the kit (streams, events, memory) is the cpu backend's, which the
 * conformance suite and the stream/event tests cover. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpukit.h"
#include "recording_host.h"

/* ---- call records ---- */

typedef struct attrs {
    double alpha;
    int64_t axis;
} attrs;

static void test_call_copy_is_deep(void **state) {
    bp_tensor_desc in = {.data = (void *)0x1000, .dtype = BP_DTYPE_F32, .ndim = 1,
                         .shape = {4}, .strides = {1}};
    bp_tensor_desc out = in;
    out.data = (void *)0x2000;
    const bp_tensor_desc *inputs[] = {&in}, *outputs[] = {&out};
    attrs a = {0.5, 1};
    bp_kernel_call call = {.struct_size = sizeof call, .op = 3, .op_name = "scale",
                           .dtype = BP_DTYPE_F32, .n_inputs = 1, .n_outputs = 1,
                           .inputs = inputs, .outputs = outputs, .attrs = &a,
                           .attrs_size = sizeof a};
    bp_kernel_call *copy = cpukit_call_copy(&call);
    assert_non_null(copy);
    /* The caller's record and everything it points to may go now. */
    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    memset(&a, 0, sizeof a);
    assert_int_equal(copy->struct_size, sizeof *copy);
    assert_string_equal(copy->op_name, "scale");
    assert_ptr_equal(copy->inputs[0]->data, (void *)0x1000);
    assert_ptr_equal(copy->outputs[0]->data, (void *)0x2000);
    assert_int_equal(copy->outputs[0]->shape[0], 4);
    assert_int_equal(copy->attrs_size, sizeof(attrs));
    const attrs *ca = copy->attrs;
    assert_true(ca->alpha == 0.5 && ca->axis == 1);
    free(copy);
}

/* A record of a host older than ABI 1.4 ends before attrs_size: with attributes the kit
 * cannot know their size, and refuses (NULL) instead of guessing. */
static void test_call_copy_without_attrs_size(void **state) {
    attrs a = {1.0, 0};
    bp_kernel_call call = {.struct_size = offsetof(bp_kernel_call, attrs_size),
                           .op_name = "scale", .attrs = &a};
    assert_null(cpukit_call_copy(&call));
    call.attrs = NULL; /* without attributes the old record is enough */
    bp_kernel_call *copy = cpukit_call_copy(&call);
    assert_non_null(copy);
    assert_null(copy->attrs);
    assert_int_equal(copy->attrs_size, 0);
    free(copy);
}

/* ---- the pool ---- */

typedef struct coverage {
    int64_t n;
    int hits[1000];
    int64_t min_chunk, chunks;
    pthread_mutex_t lock;
} coverage;

static void mark(void *ctx, int64_t begin, int64_t end) {
    coverage *c = ctx;
    pthread_mutex_lock(&c->lock);
    for (int64_t i = begin; i < end; i++)
        c->hits[i]++;
    if (end < c->n && (c->min_chunk == 0 || end - begin < c->min_chunk))
        c->min_chunk = end - begin; /* every chunk but the last */
    c->chunks++;
    pthread_mutex_unlock(&c->lock);
}

static void test_pool_covers_the_range(void **state) {
    cpukit_pool *pool = NULL;
    assert_int_equal(cpukit_pool_create("kit-test", 4, NULL, &pool), 0);
    assert_int_equal(cpukit_pool_threads(pool), 4);
    static const int64_t sizes[][2] = {{1000, 7}, {1000, 1}, {999, 400}, {5, 10}, {0, 1}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        coverage c = {.n = sizes[k][0], .lock = PTHREAD_MUTEX_INITIALIZER};
        cpukit_pool_parallel_for(pool, c.n, sizes[k][1], mark, &c);
        for (int64_t i = 0; i < c.n; i++)
            assert_int_equal(c.hits[i], 1);
        if (c.min_chunk)
            assert_true(c.min_chunk >= sizes[k][1]);
        if (c.n > 0 && c.n <= sizes[k][1])
            assert_int_equal(c.chunks, 1);
    }
    cpukit_pool_destroy(pool);
    assert_int_equal(cpukit_pool_create("kit-test", 0, NULL, &pool), EINVAL);
}

/* Each pool thread runs the start function first, on the CPU set given. */
typedef struct started {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int count;
    int pinned_right; /* threads whose affinity is exactly the set */
    cpu_set_t expected;
} started;

static void on_start(void *arg) {
    started *s = arg;
    cpu_set_t mine;
    bool right = sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_EQUAL(&mine, &s->expected);
    pthread_mutex_lock(&s->lock);
    s->count++;
    s->pinned_right += right;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void test_pool_threads_start_pinned(void **state) {
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    started s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    CPU_ZERO(&s.expected);
    for (int n = 0; n < CPU_SETSIZE; n++)
        if (CPU_ISSET(n, &allowed)) {
            CPU_SET(n, &s.expected); /* the first core this process may use */
            break;
        }
    cpu_thread_setup setup = {.cpus = &s.expected, .start = on_start, .start_arg = &s};
    cpukit_pool *pool = NULL;
    assert_int_equal(cpukit_pool_create("kit-pinned", 3, &setup, &pool), 0);
    assert_int_equal(cpukit_pool_threads(pool), 3);
    pthread_mutex_lock(&s.lock);
    while (s.count < 2) /* waits for both pool threads, whatever the timing */
        pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);
    assert_int_equal(s.pinned_right, 2);
    cpukit_pool_destroy(pool);
}

/* ---- stream workers on a CPU set they cannot run on ---- */

static void test_stream_on_unusable_cpus(void **state) {
    cpu_set_t allowed, none_usable;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    CPU_ZERO(&none_usable);
    int cpu = CPU_SETSIZE - 1;
    while (cpu >= 0 && CPU_ISSET(cpu, &allowed))
        cpu--;
    if (cpu < 0) {
        print_message("skipped: this process may run on every CPU of cpu_set_t\n");
        skip();
    }
    CPU_SET(cpu, &none_usable);
    cpukit_device dev;
    cpu_thread_setup workers = {.cpus = &none_usable};
    cpukit_device_init(&dev, &recording_host, "kit:0", "kit0", &workers, 1u << 20);
    void *stream = NULL;
    assert_int_equal(cpukit_stream_vtable.create(&dev, 0, &stream), BP_ERR_BACKEND);
    if (!strstr(last_error, "kit:0: cannot start a stream worker thread"))
        fail_msg("unexpected error: %s", last_error);
    assert_null(stream);
    cpukit_device_fini(&dev);
}

/* A device's memory figures: free never above the total it was given. */
static void test_mem_info_within_total(void **state) {
    cpukit_device dev;
    cpukit_device_init(&dev, &recording_host, "kit:0", "kit0", NULL, 4096);
    uint64_t free_bytes = 0, total = 0;
    assert_int_equal(cpukit_device_mem_info(&dev, &free_bytes, &total), BP_OK);
    assert_int_equal(total, 4096);
    assert_true(free_bytes <= total);
    cpukit_device_fini(&dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_call_copy_is_deep),
        cmocka_unit_test(test_call_copy_without_attrs_size),
        cmocka_unit_test(test_pool_covers_the_range),
        cmocka_unit_test(test_pool_threads_start_pinned),
        cmocka_unit_test(test_stream_on_unusable_cpus),
        cmocka_unit_test(test_mem_info_within_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
