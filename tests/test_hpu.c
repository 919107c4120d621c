/* The hpu simulator plugin (backends/hpu, docs/hpu.md) as an application sees it: it
 * is autoloaded from the build tree, its arena has the size BP_HPU_MEMORY_MB asks for
 * (CTest sets 512) but never more than the host's memory, and runs out cleanly, a bad
 * setting skips the plugin with a reason,
 * eager ops pay the modelled host launch cost and regions do not, and the demo's five
 * scenarios on hpu show the seed's shape of results (compiled regions, strict far
 * below bfs in memory, sliced eager host-bound). Results themselves are checked by
 * bp-conformance --device hpu (tests/conformance.cmake). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define MB (1024.0 * 1024.0)
/* hpu_params.h: the eager host launch cost per op. */
#define HPU_EAGER_LAUNCH_MS 0.1

static bp_device *hpu(void) {
    bp_device *dev = NULL;
    BP_ASSERT_OK(bp_device_open("hpu", &dev));
    return dev;
}

static void test_device_and_arena_size(void **state) {
    (void)state;
    bp_device_props props = {.struct_size = sizeof props};
    BP_ASSERT_OK(bp_device_get_props(hpu(), &props));
    assert_string_equal(props.type, "hpu");
    assert_true(bp_test_contains(props.description, "simulator"));
    uint32_t want = BP_CAP_ASYNC_STREAMS | BP_CAP_TIMED_EVENTS | BP_CAP_REGIONS;
    assert_int_equal(props.capabilities & want, want);
    assert_true(props.dtypes & BP_DTYPE_BIT(BP_DTYPE_BF16));
    assert_int_equal(props.total_memory, 512ull << 20);
    assert_true(props.free_memory <= props.total_memory);
}

static void test_arena_out_of_memory(void **state) {
    (void)state;
    bp_device *dev = hpu();
    void *big = NULL;
    assert_int_equal(bp_memory_alloc(dev, 600ull << 20, NULL, &big), BP_ERR_OUT_OF_MEMORY);
    assert_null(big);
    /* The device recovers: what fits still allocates, is usable and frees. */
    void *p = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, 100ull << 20, NULL, &p));
    assert_non_null(p);
    BP_ASSERT_OK(bp_memory_set_async(dev, p, 0x5a, 100ull << 20, NULL));
    unsigned char last = 0;
    BP_ASSERT_OK(bp_memory_copy_async(&last, NULL, (char *)p + (100ull << 20) - 1, dev, 1, NULL));
    BP_ASSERT_OK(bp_device_synchronize(dev));
    assert_int_equal(last, 0x5a);
    BP_ASSERT_OK(bp_memory_free(dev, p));
}

static void child_bad_memory_setting(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("hpu", &dev) == BP_ERR_NOT_FOUND);
    int n = bp_plugin_count();
    int found = 0;
    for (int i = 0; i < n; i++) {
        bp_plugin_info info = {.struct_size = sizeof info};
        CHILD_CHECK(bp_plugin_get_info(i, &info) == BP_OK);
        if (strcmp(info.name, "hpu") == 0) {
            found = 1;
            CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED);
            CHILD_CHECK(bp_test_contains(info.reason, "BP_HPU_MEMORY_MB"));
            CHILD_CHECK(bp_test_contains(info.reason, "lots"));
        }
    }
    CHILD_CHECK(found);
}

static void test_bad_memory_setting_skips_plugin(void **state) {
    (void)state;
    const char *env[] = {"BP_HPU_MEMORY_MB=lots", NULL};
    assert_int_equal(bp_test_run_child(child_bad_memory_setting, NULL, env), 0);
}

/* The host's physical memory in whole MiB, as bytes: what hpu caps its devices at. */
static uint64_t host_ram_bytes(void) {
    uint64_t bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    return bytes >> 20 << 20;
}

/* BP_HPU_MEMORY_MB unset (96 GiB) or larger than the host: each device is capped at
 * its share of the host's memory, reports that, and a request beyond it fails cleanly
 * instead of reserving address space the host cannot back. */
typedef struct capped_case {
    int devices;
    uint64_t requested; /* bytes BP_HPU_MEMORY_MB asks for per device */
} capped_case;

static void child_arena_capped(void *arg) {
    const capped_case *c = arg;
    int devices = c->devices;
    uint64_t share = (host_ram_bytes() / (uint64_t)devices) >> 20 << 20;
    uint64_t want = c->requested < share ? c->requested : share;
    for (int i = 0; i < devices; i++) {
        char name[16];
        snprintf(name, sizeof name, "hpu:%d", i);
        bp_device *dev = NULL;
        CHILD_CHECK(bp_device_open(name, &dev) == BP_OK);
        void *p = NULL;
        bp_status st = bp_memory_alloc(dev, (size_t)(share + (1u << 20)), NULL, &p);
        CHILD_CHECK(st == BP_ERR_OUT_OF_MEMORY && !p);
        CHILD_CHECK(bp_test_contains(bp_last_error(), "exceeds the device's total memory"));
        bp_device_props props = {.struct_size = sizeof props};
        CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
        CHILD_CHECK(props.total_memory == want);
        CHILD_CHECK(props.free_memory <= props.total_memory);
    }
}

static void test_arena_capped_by_host_memory(void **state) {
    (void)state;
    capped_case one = {1, 96ull << 30};
    const char *defaults[] = {"BP_HPU_MEMORY_MB=", "BP_HPU_DEVICES=", NULL};
    assert_int_equal(bp_test_run_child(child_arena_capped, &one, defaults), 0);
    capped_case two = {2, 2 * host_ram_bytes()};
    char mb[32];
    snprintf(mb, sizeof mb, "BP_HPU_MEMORY_MB=%llu", (unsigned long long)(two.requested >> 20));
    const char *more[] = {mb, "BP_HPU_DEVICES=2", NULL};
    assert_int_equal(bp_test_run_child(child_arena_capped, &two, more), 0);
}

/* n adds of a 64-element tensor on `stream`, between two timing events: the modelled ms. */
static double time_adds(bp_device *dev, bp_stream *stream, int n, const char *region_hints) {
    int64_t shape[1] = {64};
    float host[64];
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    bp_tensor *a = NULL, *acc = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, host, &a));
    BP_ASSERT_OK(bp_tensor_from_host(dev, BP_DTYPE_F32, 1, shape, host, &acc));
    bp_event *t0 = NULL, *t1 = NULL;
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t0));
    BP_ASSERT_OK(bp_event_create(dev, BP_EVENT_TIMING, &t1));
    BP_ASSERT_OK(bp_stream_synchronize(stream));
    BP_ASSERT_OK(bp_event_record(t0, stream));
    if (region_hints)
        BP_ASSERT_OK(bp_region_begin(stream, region_hints));
    {
        bp_status st;
        BP_STREAM_GUARD(stream, &st);
        BP_ASSERT_OK(st);
        for (int i = 0; i < n; i++)
            BP_ASSERT_OK(bp_add_out(acc, a, acc));
    }
    bp_region_report report = {.struct_size = sizeof report};
    if (region_hints) {
        BP_ASSERT_OK(bp_region_end(stream, &report));
        assert_int_equal(report.nodes, n);
        assert_int_equal(report.backend_compiled, 1);
    }
    BP_ASSERT_OK(bp_event_record(t1, stream));
    BP_ASSERT_OK(bp_event_synchronize(t1));
    float ms = 0;
    BP_ASSERT_OK(bp_event_elapsed_ms(t0, t1, &ms));
    /* The result is real: acc = i + n * i. */
    BP_ASSERT_OK(bp_tensor_to_host(acc, host, sizeof host));
    for (int i = 0; i < 64; i++)
        assert_float_equal(host[i], (float)i * (float)(n + 1), 0);
    bp_event_destroy(t0);
    bp_event_destroy(t1);
    bp_tensor_release(a);
    bp_tensor_release(acc);
    return ms;
}

static void test_eager_pays_launch_cost_region_does_not(void **state) {
    (void)state;
    bp_device *dev = hpu();
    bp_stream *stream = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &stream));
    enum { N = 200 };
    double eager = time_adds(dev, stream, N, NULL);
    double region = time_adds(dev, stream, N, "{\"order\":\"strict\"}");
    print_message("hpu: %d tiny adds: eager %.3f ms, one region %.3f ms (modelled)\n", N, eager,
                  region);
    /* Eager is host-bound: every op waits for its launch. */
    assert_true(eager >= N * HPU_EAGER_LAUNCH_MS * 0.999);
    /* The region is one launch: far less than N launches. */
    assert_true(region < eager / 10);
    assert_true(region > 0);
    BP_ASSERT_OK(bp_stream_destroy(stream));
}

/* The report says what the hpu's compiler did with each hint. */
static void test_report_dispositions(void **state) {
    (void)state;
    bp_device *dev = hpu();
    bp_stream *stream = NULL;
    BP_ASSERT_OK(bp_stream_create(dev, 0, &stream));
    int64_t shape[1] = {256};
    bp_tensor *a = NULL, *b = NULL;
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &a));
    BP_ASSERT_OK(bp_tensor_empty(dev, BP_DTYPE_F32, 1, shape, &b));
    BP_ASSERT_OK(bp_region_begin(stream, "{\"order\":\"bfs\",\"max_parallel\":2,"
                                         "\"group_id\":3,\"vendor_knob\":1}"));
    {
        bp_status st;
        BP_STREAM_GUARD(stream, &st);
        BP_ASSERT_OK(st);
        BP_ASSERT_OK(bp_fill(a, 1.0));
        BP_ASSERT_OK(bp_fill(b, 2.0));
    }
    bp_region_report r = {.struct_size = sizeof r};
    BP_ASSERT_OK(bp_region_end(stream, &r));
    assert_int_equal(r.backend_compiled, 1);
    assert_int_equal(r.nodes, 2);
    int seen = 0;
    for (int i = 0; i < r.hint_count; i++) {
        const bp_region_hint *h = &r.hints[i];
        print_message("%s: %s (%s)\n", h->key,
                      h->disposition == BP_HINT_HONOURED ? "honoured" : "ignored", h->reason);
        if (strcmp(h->key, "order") == 0) {
            assert_int_equal(h->disposition, BP_HINT_HONOURED);
            seen |= 1;
        } else if (strcmp(h->key, "max_parallel") == 0 || strcmp(h->key, "group_id") == 0) {
            assert_int_equal(h->disposition, BP_HINT_IGNORED);
            assert_true(bp_test_contains(h->reason, "hpu region compiler"));
            seen |= strcmp(h->key, "group_id") == 0 ? 2 : 4;
        } else if (strcmp(h->key, "vendor_knob") == 0) {
            assert_int_equal(h->disposition, BP_HINT_IGNORED);
            assert_true(bp_test_contains(h->reason, "unknown key"));
            seen |= 8;
        }
    }
    assert_int_equal(seen, 15);
    float host[256];
    BP_ASSERT_OK(bp_tensor_to_host(b, host, sizeof host));
    assert_float_equal(host[255], 2.0f, 0);
    bp_tensor_release(a);
    bp_tensor_release(b);
    BP_ASSERT_OK(bp_stream_destroy(stream));
}

/* ---- the demo on hpu ---- */

static double row_number(const cJSON *row, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_demo_on_hpu(void **state) {
    (void)state;
    const char *argv[] = {SLICED_ATTENTION_EXE, "--device", "hpu", "--shape", "4,16,256,32",
                          "--dtype", "bf16", "--json", NULL};
    char *out = NULL;
    int rc = bp_test_run_command(argv, NULL, &out);
    if (rc != 0)
        fprintf(stderr, "sliced_attention exited %d:\n%s\n", rc, out ? out : "");
    assert_int_equal(rc, 0);
    cJSON *rows = cJSON_Parse(out);
    assert_non_null(rows);
    assert_int_equal(cJSON_GetArraySize(rows), 5);
    const char *names[5] = {"naive_eager", "sliced_eager", "sliced_bfs", "sliced_strict",
                            "sliced_auto"};
    double peak[5], ms[5];
    for (int i = 0; i < 5; i++) {
        const cJSON *row = cJSON_GetArrayItem(rows, i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(row, "scenario");
        assert_true(cJSON_IsString(name));
        assert_string_equal(name->valuestring, names[i]);
        peak[i] = row_number(row, "peak_scratch_mb");
        ms[i] = row_number(row, "time_ms");
        assert_true(ms[i] > 0);
        if (i >= 2)
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "backend_compiled")));
        print_message("%-14s peak %8.3f MB  modelled %8.3f ms\n", names[i], peak[i], ms[i]);
    }
    /* 64 slices (one per batch x head): bfs keeps every slice's scores, strict two. */
    assert_true(peak[3] > 0 && peak[2] >= 30 * peak[3]);
    /* Sliced eager is host-bound (64 slices x 4 launches), the regions are not. */
    assert_true(ms[1] > 2 * ms[2] && ms[1] > 2 * ms[3]);
    /* auto fits between the two in memory and is no slower than strict. */
    assert_true(peak[4] <= peak[2] && peak[4] >= peak[3]);
    assert_true(ms[4] <= ms[3] * 1.0001);
    cJSON_Delete(rows);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* Forks a child with its own registry: before the parent opens anything. */
        cmocka_unit_test(test_bad_memory_setting_skips_plugin),
        cmocka_unit_test(test_arena_capped_by_host_memory),
        cmocka_unit_test(test_device_and_arena_size),
        cmocka_unit_test(test_arena_out_of_memory),
        cmocka_unit_test(test_eager_pays_launch_cost_region_does_not),
        cmocka_unit_test(test_report_dispositions),
        cmocka_unit_test(test_demo_on_hpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
