/* The GPU-class kit (backends/gpukit) on its own, as a plugin links it: the allocation
 * map (ranges added out of order, lookups inside, at the end and outside a range,
 * removal, clearing with each handle released once) and the host-function thread (jobs
 * run in push order, one at a time, and stop runs the jobs still queued). Job order is
 * checked through a log the jobs write, and "still queued" by a gate the test holds
 * shut, never by timing. The kit's allocations go through wrappers (the test links with
 * --wrap=calloc,--wrap=realloc) that fail on demand, for its out-of-memory paths. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpukit.h"
#include "recording_host.h"

/* ---- allocations that fail on demand ---- */

static bool allocations_fail;
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_calloc(size_t n, size_t size) {
    return allocations_fail ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t size) {
    return allocations_fail ? NULL : __real_realloc(p, size);
}

/* ---- the allocation map ---- */

static int handles[4];

static void map_with_three(gpukit_memmap *m) {
    gpukit_memmap_init(m);
    /* Out of address order: the map keeps itself sorted. */
    assert_true(gpukit_memmap_add(m, 0x3000, 0x100, &handles[2]));
    assert_true(gpukit_memmap_add(m, 0x1000, 0x800, &handles[0]));
    assert_true(gpukit_memmap_add(m, 0x2000, 0x10, &handles[1]));
}

static void test_memmap_find(void **state) {
    (void)state;
    gpukit_memmap m;
    map_with_three(&m);
    assert_int_equal(gpukit_memmap_used(&m), 0x800 + 0x10 + 0x100);
    gpukit_range r;
    uint64_t off = 99;
    assert_true(gpukit_memmap_find(&m, 0x1000, 0x800, &r, &off));
    assert_int_equal(r.addr, 0x1000);
    assert_ptr_equal(r.handle, &handles[0]);
    assert_int_equal(off, 0);
    assert_true(gpukit_memmap_find(&m, 0x2008, 8, &r, &off));
    assert_ptr_equal(r.handle, &handles[1]);
    assert_int_equal(off, 8);
    assert_true(gpukit_memmap_find(&m, 0x30ff, 1, &r, &off));
    assert_ptr_equal(r.handle, &handles[2]);
    /* An empty range may sit at a range's end, nothing else may leave it. */
    assert_true(gpukit_memmap_find(&m, 0x2010, 0, &r, &off));
    assert_int_equal(off, 0x10);
    assert_false(gpukit_memmap_find(&m, 0x2010, 1, &r, &off));
    assert_false(gpukit_memmap_find(&m, 0x2008, 9, &r, &off));
    assert_false(gpukit_memmap_find(&m, 0x0fff, 1, &r, &off)); /* below every range */
    assert_false(gpukit_memmap_find(&m, 0x2800, 1, &r, &off)); /* in a gap */
    assert_false(gpukit_memmap_find(&m, 0x1000, UINT64_MAX, &r, &off));
    gpukit_memmap_fini(&m);
}

static void test_memmap_remove(void **state) {
    (void)state;
    gpukit_memmap m;
    map_with_three(&m);
    void *h = NULL;
    uint64_t size = 0;
    assert_false(gpukit_memmap_remove(&m, 0x2008, &h, &size)); /* not a range's start */
    assert_true(gpukit_memmap_remove(&m, 0x2000, &h, &size));
    assert_ptr_equal(h, &handles[1]);
    assert_int_equal(size, 0x10);
    assert_false(gpukit_memmap_remove(&m, 0x2000, &h, &size)); /* twice */
    gpukit_range r;
    uint64_t off;
    assert_false(gpukit_memmap_find(&m, 0x2000, 1, &r, &off));
    assert_true(gpukit_memmap_find(&m, 0x3000, 1, &r, &off));
    assert_int_equal(gpukit_memmap_used(&m), 0x800 + 0x100);
    gpukit_memmap_fini(&m);
}

static void count_release(void *handle, void *ctx) {
    (*(int *)handle)++;
    (*(int *)ctx)++;
}

static void test_memmap_clear(void **state) {
    (void)state;
    gpukit_memmap m;
    handles[0] = handles[1] = handles[2] = 0;
    map_with_three(&m);
    /* Many more than the first table's room, so the table grows. */
    static int many[200];
    for (int i = 0; i < 200; i++)
        assert_true(gpukit_memmap_add(&m, 0x100000 + (uint64_t)i * 0x100, 0x80, &many[i]));
    int released = 0;
    gpukit_memmap_clear(&m, count_release, &released);
    assert_int_equal(released, 203);
    assert_int_equal(handles[0] + handles[1] + handles[2], 3);
    for (int i = 0; i < 200; i++)
        assert_int_equal(many[i], 1);
    assert_int_equal(gpukit_memmap_used(&m), 0);
    gpukit_range r;
    uint64_t off;
    assert_false(gpukit_memmap_find(&m, 0x1000, 1, &r, &off));
    /* Cleared, the map takes ranges again (a device opened after a close). */
    assert_true(gpukit_memmap_add(&m, 0x1000, 1, &handles[3]));
    assert_true(gpukit_memmap_find(&m, 0x1000, 1, &r, &off));
    gpukit_memmap_fini(&m);
}

/* alloc's insert and free's take: the entry, its handle back, and the messages of a
 * table that cannot grow and of a free of no live allocation. */
static void test_memmap_insert_and_take(void **state) {
    (void)state;
    gpukit_memmap m;
    gpukit_memmap_init(&m);
    last_error[0] = last_log[0] = '\0';
    allocations_fail = true; /* the empty table's first growth */
    assert_int_equal(gpukit_memmap_insert(&m, 0x1000, 0x10, &handles[0], &recording_host, "xpu",
                                          3),
                     BP_ERR_OUT_OF_MEMORY);
    allocations_fail = false;
    assert_string_equal(last_error, "xpu:3: out of host memory for the allocation table");
    assert_int_equal(gpukit_memmap_used(&m), 0);
    assert_int_equal(gpukit_memmap_insert(&m, 0x1000, 0x10, &handles[0], &recording_host, "xpu",
                                          3),
                     BP_OK);
    void *handle = NULL;
    assert_false(gpukit_memmap_take(&m, NULL, &recording_host, "xpu", 3, &handle));
    assert_string_equal(last_log, ""); /* freeing NULL is no error */
    assert_false(gpukit_memmap_take(&m, (void *)(uintptr_t)0x1008, &recording_host, "xpu", 3,
                                    &handle));
    char want[160];
    snprintf(want, sizeof want,
             "%d xpu: xpu:3: free of %p, which is not a live allocation of this device: ignored",
             (int)BP_LOG_ERROR, (void *)(uintptr_t)0x1008);
    assert_string_equal(last_log, want);
    assert_null(handle);
    assert_true(gpukit_memmap_take(&m, (void *)(uintptr_t)0x1000, &recording_host, "xpu", 3,
                                   &handle));
    assert_ptr_equal(handle, &handles[0]);
    assert_int_equal(gpukit_memmap_used(&m), 0);
    gpukit_memmap_fini(&m);
}

/* translate: the allocation and offset, or the error naming what was translated. */
static void test_memmap_translate(void **state) {
    (void)state;
    gpukit_memmap m;
    map_with_three(&m);
    gpukit_range r;
    uint64_t off = 0;
    assert_int_equal(gpukit_memmap_translate(&m, (void *)(uintptr_t)0x1010, 0x10, &recording_host,
                                             "opencl", 0, "copy to the device", &r, &off),
                     BP_OK);
    assert_ptr_equal(r.handle, &handles[0]);
    assert_int_equal(off, 0x10);
    assert_int_equal(gpukit_memmap_translate(&m, (void *)(uintptr_t)0x2008, 9, &recording_host,
                                             "opencl", 0, "memset", &r, &off),
                     BP_ERR_INVALID_ARGUMENT);
    char want[160];
    snprintf(want, sizeof want,
             "opencl:0: memset: 9 bytes at device address %p are not inside one live "
             "allocation of this device",
             (void *)(uintptr_t)0x2008);
    assert_string_equal(last_error, want);
    gpukit_memmap_fini(&m);
}

/* ---- the host-function thread ---- */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open, entered;
} gate;

static gate the_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};
static int order[16], n_order;
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct test_job {
    gpukit_host_job job;
    int id;
    bool wait_gate;
} test_job;

static void run_test_job(gpukit_host_job *j) {
    test_job *t = (test_job *)j;
    if (t->wait_gate) {
        pthread_mutex_lock(&the_gate.lock);
        the_gate.entered = true;
        pthread_cond_broadcast(&the_gate.cond);
        while (!the_gate.open)
            pthread_cond_wait(&the_gate.cond, &the_gate.lock);
        pthread_mutex_unlock(&the_gate.lock);
    }
    pthread_mutex_lock(&order_lock);
    order[n_order++] = t->id;
    pthread_mutex_unlock(&order_lock);
    free(t);
}

static void push(gpukit_host_thread *t, int id, bool wait_gate) {
    test_job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->job.run = run_test_job;
    j->id = id;
    j->wait_gate = wait_gate;
    gpukit_host_thread_push(t, &j->job);
}

static void test_host_thread_order_and_stop(void **state) {
    (void)state;
    gpukit_host_thread *t = NULL;
    assert_int_equal(gpukit_host_thread_start(&t), 0);
    assert_non_null(t);
    n_order = 0;
    push(t, 1, true); /* holds the thread until the gate opens */
    pthread_mutex_lock(&the_gate.lock);
    while (!the_gate.entered)
        pthread_cond_wait(&the_gate.cond, &the_gate.lock);
    pthread_mutex_unlock(&the_gate.lock);
    for (int id = 2; id <= 6; id++)
        push(t, id, false);
    pthread_mutex_lock(&order_lock);
    assert_int_equal(n_order, 0); /* job 1 is held: nothing after it has run */
    pthread_mutex_unlock(&order_lock);
    pthread_mutex_lock(&the_gate.lock);
    the_gate.open = true;
    pthread_cond_broadcast(&the_gate.cond);
    pthread_mutex_unlock(&the_gate.lock);
    gpukit_host_thread_stop(t); /* runs what is still queued, then joins */
    assert_int_equal(n_order, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(order[i], i + 1);
    gpukit_host_thread_stop(NULL);
}

/* mem_info from the map: free is what the live ranges leave of the total, 0 past it. */
static void test_memmap_mem_info(void **state) {
    (void)state;
    gpukit_memmap m;
    map_with_three(&m); /* 0x910 bytes live */
    uint64_t free_bytes = 1, total = 1;
    gpukit_memmap_mem_info(&m, 0x1000, &free_bytes, &total);
    assert_int_equal(free_bytes, 0x1000 - 0x910);
    assert_int_equal(total, 0x1000);
    gpukit_memmap_mem_info(&m, 0x100, &free_bytes, NULL);
    assert_int_equal(free_bytes, 0);
    gpukit_memmap_fini(&m);
}

/* ensure starts a stream's thread once: a second call keeps the one running. */
static void test_host_thread_ensure(void **state) {
    (void)state;
    bp_host_services host;
    memset(&host, 0, sizeof host); /* set_error is called only when a start fails */
    gpukit_host_thread *t = NULL;
    assert_int_equal(gpukit_host_thread_ensure(&t, &host, "test", 0), BP_OK);
    assert_non_null(t);
    gpukit_host_thread *first = t;
    assert_int_equal(gpukit_host_thread_ensure(&t, &host, "test", 0), BP_OK);
    assert_ptr_equal(t, first);
    n_order = 0;
    push(t, 7, false);
    gpukit_host_thread_stop(t);
    assert_int_equal(n_order, 1);
    assert_int_equal(order[0], 7);
}

static void host_fn(void *arg) {
    *(int *)arg += 1;
}

/* A job for enqueue_host: fn checked, run, fn and arg set, the rest zeroed; or the
 * error naming the device. */
static void test_host_job_new(void **state) {
    (void)state;
    last_error[0] = '\0';
    gpukit_host_job *j = NULL;
    assert_int_equal(gpukit_host_job_new(&recording_host, "opencl", 1, NULL, NULL,
                                         sizeof(test_job), run_test_job, &j),
                     BP_ERR_INVALID_ARGUMENT);
    assert_string_equal(last_error, "opencl:1: enqueue_host: fn is NULL");
    assert_null(j);
    allocations_fail = true;
    assert_int_equal(gpukit_host_job_new(&recording_host, "opencl", 1, host_fn, NULL,
                                         sizeof(test_job), run_test_job, &j),
                     BP_ERR_OUT_OF_MEMORY);
    allocations_fail = false;
    assert_string_equal(last_error, "opencl:1: out of host memory for a host function");
    assert_null(j);
    int calls = 0;
    assert_int_equal(gpukit_host_job_new(&recording_host, "opencl", 1, host_fn, &calls,
                                         sizeof(test_job), run_test_job, &j),
                     BP_OK);
    assert_ptr_equal(j->run, run_test_job);
    assert_null(j->next);
    test_job *t = (test_job *)j;
    assert_int_equal(t->id, 0);
    assert_false(t->wait_gate);
    j->fn(j->arg);
    assert_int_equal(calls, 1);
    free(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memmap_find),
        cmocka_unit_test(test_memmap_remove),
        cmocka_unit_test(test_memmap_clear),
        cmocka_unit_test(test_memmap_mem_info),
        cmocka_unit_test(test_memmap_insert_and_take),
        cmocka_unit_test(test_memmap_translate),
        cmocka_unit_test(test_host_thread_order_and_stop),
        cmocka_unit_test(test_host_thread_ensure),
        cmocka_unit_test(test_host_job_new),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
