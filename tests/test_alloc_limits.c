/* The caching allocator's limits on the built-in cpu device, through the public API:
 * BP_MEMORY_LIMIT_MB and BP_ALLOC_MAX_SPLIT_MB parse strictly and a bad value fails the
 * device's open; a lowered limit also holds for blocks the cache already has; a block
 * of the maximum split size or more serves no smaller request, so it stays whole and
 * can be released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MIB ((size_t)1 << 20)
/* docs/architecture.md: the default maximum split size and the slack an oversize block
 * may have over the request it serves. */
#define DEFAULT_MAX_SPLIT (256 * MIB)
#define OVERSIZE_SLACK (20 * MIB)

static void *dev_alloc(bp_device *dev, size_t size) {
    void *p = NULL;
    BP_ASSERT_OK(bp_memory_alloc(dev, size, NULL, &p));
    assert_non_null(p);
    return p;
}

static int inside(const void *p, const void *base, size_t size) {
    return (uintptr_t)p >= (uintptr_t)base && (uintptr_t)p < (uintptr_t)base + size;
}

/* ---- environment (children: they fork before this process opens the cpu device) ---- */

typedef struct env_case {
    const char *name;  /* the variable */
    const char *value; /* its value: set in the child, so "" is really empty */
    uint64_t limit;    /* expected stats.limit_bytes when the value is good */
    uint64_t split;    /* expected stats.max_split_bytes when the value is good */
    const char *why;   /* expected in the error when the value is bad, else NULL */
} env_case;

static void child_env(void *arg) {
    const env_case *c = arg;
    CHILD_CHECK(setenv(c->name, c->value, 1) == 0);
    bp_device *dev = NULL;
    bp_status st = bp_device_open("cpu", &dev);
    if (c->why) {
        char quoted[128];
        snprintf(quoted, sizeof quoted, "%s='%s'", c->name, c->value);
        CHILD_CHECK(st == BP_ERR_INVALID_ARGUMENT);
        CHILD_CHECK(bp_test_contains(bp_last_error(), "opening cpu:0"));
        CHILD_CHECK(bp_test_contains(bp_last_error(), quoted));
        CHILD_CHECK(bp_test_contains(bp_last_error(), c->why));
        /* Still an error on the next try: never a device without the limit. */
        CHILD_CHECK(bp_device_open("cpu", &dev) == BP_ERR_INVALID_ARGUMENT);
        return;
    }
    CHILD_CHECK(st == BP_OK);
    bp_memory_stats s = {.struct_size = sizeof s};
    CHILD_CHECK(bp_memory_get_stats(dev, &s) == BP_OK);
    CHILD_CHECK(s.limit_bytes == c->limit);
    CHILD_CHECK(s.max_split_bytes == c->split);
}

static void run_env_cases(const env_case *cases, size_t n) {
    /* Neither variable leaks in from whoever runs the test. */
    const char *const clean[] = {"BP_MEMORY_LIMIT_MB=", "BP_ALLOC_MAX_SPLIT_MB=", NULL};
    for (size_t i = 0; i < n; i++)
        if (bp_test_run_child(child_env, (void *)&cases[i], clean) != 0)
            fail_msg("%s='%s': the child failed (see above)", cases[i].name, cases[i].value);
}

static void test_env_memory_limit(void **state) {
    (void)state;
    static const char *const bad = "not a whole number of MiB";
    static const env_case cases[] = {
        {"BP_MEMORY_LIMIT_MB", "8", 8 * MIB, DEFAULT_MAX_SPLIT, NULL},
        {"BP_MEMORY_LIMIT_MB", "0", 0, DEFAULT_MAX_SPLIT, NULL},
        {"BP_MEMORY_LIMIT_MB", "0008", 8 * MIB, DEFAULT_MAX_SPLIT, NULL},
        {"BP_MEMORY_LIMIT_MB", "17592186044415", 17592186044415ull << 20, DEFAULT_MAX_SPLIT,
         NULL},
        {"BP_MEMORY_LIMIT_MB", "abc", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "-5", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "-0", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "+8", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "1e99", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "0x10", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "12abc", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "8GB", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "8.5", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", " 8", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "8\n", 0, 0, bad},
        {"BP_MEMORY_LIMIT_MB", "", 0, 0, bad},
        /* 2^44 MiB is 2^64 bytes: one past what fits. */
        {"BP_MEMORY_LIMIT_MB", "17592186044416", 0, 0, "out of range"},
        {"BP_MEMORY_LIMIT_MB", "99999999999999999999999", 0, 0, "out of range"},
    };
    run_env_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_env_max_split(void **state) {
    (void)state;
    static const char *const bad = "not a whole number of MiB";
    static const env_case cases[] = {
        {"BP_ALLOC_MAX_SPLIT_MB", "64", 0, 64 * MIB, NULL},
        {"BP_ALLOC_MAX_SPLIT_MB", "0", 0, 0, NULL},
        {"BP_ALLOC_MAX_SPLIT_MB", "1", 0, MIB, NULL},
        {"BP_ALLOC_MAX_SPLIT_MB", "abc", 0, 0, bad},
        {"BP_ALLOC_MAX_SPLIT_MB", "-1", 0, 0, bad},
        {"BP_ALLOC_MAX_SPLIT_MB", "0x10", 0, 0, bad},
        {"BP_ALLOC_MAX_SPLIT_MB", "64MB", 0, 0, bad},
        {"BP_ALLOC_MAX_SPLIT_MB", "", 0, 0, bad},
        {"BP_ALLOC_MAX_SPLIT_MB", "17592186044416", 0, 0, "out of range"},
    };
    run_env_cases(cases, sizeof cases / sizeof cases[0]);
}

/* The limit from the environment works as a limit (the old test_env_limit). */
static void child_env_limit_applies(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("cpu", &dev) == BP_OK);
    void *a = NULL, *b = NULL;
    CHILD_CHECK(bp_memory_alloc(dev, 6 * MIB, NULL, &a) == BP_OK && a);
    CHILD_CHECK(bp_memory_alloc(dev, 4 * MIB, NULL, &b) == BP_ERR_OUT_OF_MEMORY && !b);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "limit 8388608 bytes"));
    CHILD_CHECK(bp_test_contains(bp_last_error(), "requested 4194304 bytes"));
    CHILD_CHECK(bp_test_contains(bp_last_error(), "allocated 6291456 bytes"));
    CHILD_CHECK(bp_memory_free(dev, a) == BP_OK);
}

static void test_env_limit_applies(void **state) {
    (void)state;
    const char *const env[] = {"BP_MEMORY_LIMIT_MB=8", "BP_ALLOC_MAX_SPLIT_MB=", NULL};
    assert_int_equal(bp_test_run_child(child_env_limit_applies, NULL, env), 0);
}

/* ---- a lowered limit holds for cached blocks ---- */

static void test_lowered_limit_holds_for_cached_blocks(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    /* A 64 MiB segment with 8 MiB in use: the limit cannot release it. */
    char *big = dev_alloc(dev, 64 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, big));
    char *held = dev_alloc(dev, 8 * MIB);
    assert_ptr_equal(held, big); /* split from the cached segment */
    BP_ASSERT_OK(bp_memory_set_limit(dev, 16 * MIB));
    bp_memory_stats s0 = bp_test_memory_stats(dev);
    assert_int_equal(s0.reserved_bytes, 64 * MIB);
    assert_int_equal(s0.limit_bytes, 16 * MIB);

    /* 56 MiB of it are cached, but 8 + 32 MiB in use is over the 16 MiB limit. */
    void *p = (void *)0x1;
    BP_ASSERT_ERR(bp_memory_alloc(dev, 32 * MIB, NULL, &p), BP_ERR_OUT_OF_MEMORY,
                  "requested 33554432 bytes, allocated 8388608 bytes, reserved 67108864 bytes, "
                  "limit 16777216 bytes");
    assert_null(p);
    BP_ASSERT_ERR(bp_memory_alloc(dev, 9 * MIB, NULL, &p), BP_ERR_OUT_OF_MEMORY,
                  "above the limit");
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.allocated_bytes, 8 * MIB);
    assert_int_equal(s1.num_allocs, s0.num_allocs);

    /* Within the limit, the cache still serves. */
    char *small = dev_alloc(dev, 4 * MIB);
    assert_true(inside(small, big, 64 * MIB));
    bp_memory_stats s2 = bp_test_memory_stats(dev);
    assert_int_equal(s2.allocated_bytes, 12 * MIB);
    assert_int_equal(s2.num_backend_allocs, s0.num_backend_allocs);
    BP_ASSERT_OK(bp_memory_free(dev, small));

    /* Once it is all freed, the next allocation first gets back under the limit. */
    BP_ASSERT_OK(bp_memory_free(dev, held));
    void *q = dev_alloc(dev, 2 * MIB);
    bp_memory_stats s3 = bp_test_memory_stats(dev);
    assert_int_equal(s3.num_backend_frees - s0.num_backend_frees, 1);
    assert_int_equal(s3.reserved_bytes, 2 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, q));
    BP_ASSERT_OK(bp_memory_set_limit(dev, 0));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* ---- the maximum split size ---- */

/* The scenario scaled down: one huge block, freed, then a working set of small
 * tensors. They do not carve the huge block, so it stays whole: emptying the cache
 * gives it back and only the working set stays reserved. */
static void test_huge_block_not_split_for_small_requests(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    size_t max_split = bp_test_memory_stats(dev).max_split_bytes;
    assert_int_equal(max_split, DEFAULT_MAX_SPLIT);
    size_t huge_size = 2 * max_split;
    char *huge = dev_alloc(dev, huge_size);
    BP_ASSERT_OK(bp_memory_free(dev, huge));

    enum { N = 4 };
    void *t[N];
    for (int i = 0; i < N; i++) {
        t[i] = dev_alloc(dev, 2 * MIB);
        if (inside(t[i], huge, huge_size))
            fail_msg("tensor %d was carved from the freed %zu-byte block", i, huge_size);
    }
    bp_memory_stats s = bp_test_memory_stats(dev);
    assert_int_equal(s.allocated_bytes, N * 2 * MIB);
    assert_int_equal(s.reserved_bytes, huge_size + N * 2 * MIB);
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    s = bp_test_memory_stats(dev);
    assert_int_equal(s.reserved_bytes, N * 2 * MIB);
    assert_int_equal(s.allocated_bytes, N * 2 * MIB);
    for (int i = 0; i < N; i++)
        BP_ASSERT_OK(bp_memory_free(dev, t[i]));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* An oversize block serves an oversize request only when it wastes less than the slack,
 * and is not split for it. */
static void test_oversize_block_reuse(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    size_t max_split = bp_test_memory_stats(dev).max_split_bytes;
    size_t big_size = max_split + 64 * MIB;
    char *big = dev_alloc(dev, big_size);
    BP_ASSERT_OK(bp_memory_free(dev, big));

    bp_memory_stats s0 = bp_test_memory_stats(dev);
    char *close = dev_alloc(dev, big_size - OVERSIZE_SLACK + MIB);
    assert_ptr_equal(close, big);
    bp_memory_stats s1 = bp_test_memory_stats(dev);
    assert_int_equal(s1.cache_hits - s0.cache_hits, 1);
    assert_int_equal(s1.allocated_bytes, big_size); /* whole: not split */
    BP_ASSERT_OK(bp_memory_free(dev, close));

    char *far = dev_alloc(dev, max_split);
    assert_ptr_not_equal(far, big);
    assert_int_equal(bp_test_memory_stats(dev).reserved_bytes, big_size + max_split);
    BP_ASSERT_OK(bp_memory_free(dev, far));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* Under a limit, a cached oversize block that serves nothing is given back when a
 * request would otherwise fail. */
static void test_oversize_block_released_under_pressure(void **state) {
    (void)state;
    bp_device *dev = bp_test_clean_cpu();
    size_t max_split = bp_test_memory_stats(dev).max_split_bytes;
    char *big = dev_alloc(dev, max_split);
    BP_ASSERT_OK(bp_memory_free(dev, big));
    BP_ASSERT_OK(bp_memory_set_limit(dev, max_split + 8 * MIB));
    void *a = dev_alloc(dev, 8 * MIB);
    void *b = dev_alloc(dev, 8 * MIB); /* over the limit but for the cached big block */
    bp_memory_stats s = bp_test_memory_stats(dev);
    assert_int_equal(s.reserved_bytes, 16 * MIB);
    assert_int_equal(s.allocated_bytes, 16 * MIB);
    BP_ASSERT_OK(bp_memory_free(dev, a));
    BP_ASSERT_OK(bp_memory_free(dev, b));
    BP_ASSERT_OK(bp_memory_set_limit(dev, 0));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
}

/* BP_ALLOC_MAX_SPLIT_MB=0: no maximum, a freed huge block serves small requests (the
 * behaviour before the maximum existed, for who wants it). */
static void child_no_max_split(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("cpu", &dev) == BP_OK);
    void *huge = NULL, *small = NULL;
    CHILD_CHECK(bp_memory_alloc(dev, 512 * MIB, NULL, &huge) == BP_OK);
    CHILD_CHECK(bp_memory_free(dev, huge) == BP_OK);
    CHILD_CHECK(bp_memory_alloc(dev, 2 * MIB, NULL, &small) == BP_OK);
    CHILD_CHECK(small == huge);
    CHILD_CHECK(bp_memory_free(dev, small) == BP_OK);
}

static void test_no_max_split(void **state) {
    (void)state;
    const char *const env[] = {"BP_ALLOC_MAX_SPLIT_MB=0", "BP_MEMORY_LIMIT_MB=", NULL};
    assert_int_equal(bp_test_run_child(child_no_max_split, NULL, env), 0);
}

int main(void) {
    /* The tests in this process expect the defaults, whatever the caller's environment. */
    unsetenv("BP_MEMORY_LIMIT_MB");
    unsetenv("BP_ALLOC_MAX_SPLIT_MB");
    const struct CMUnitTest tests[] = {
        /* First: their children fork before this process opens the cpu device, so they
         * read the environment themselves. */
        cmocka_unit_test(test_env_memory_limit),
        cmocka_unit_test(test_env_max_split),
        cmocka_unit_test(test_env_limit_applies),
        cmocka_unit_test(test_no_max_split),
        cmocka_unit_test(test_lowered_limit_holds_for_cached_blocks),
        cmocka_unit_test(test_huge_block_not_split_for_small_requests),
        cmocka_unit_test(test_oversize_block_reuse),
        cmocka_unit_test(test_oversize_block_released_under_pressure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
