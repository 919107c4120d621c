/* Plugin discovery and loading. The registry loads plugins once per process, so each
 * case runs in a forked child with its own environment (bp_test_run_child) and checks
 * with CHILD_CHECK; the parent asserts that the child exited 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <backplane/plugin.h>

#include "test_util.h"

#define PLUGIN_DIR(name) BP_TEST_PLUGIN_DIR "/" name
#define GOOD_LIB PLUGIN_DIR("good") "/libbp_testdev.so"

/* ---- helpers for children ---- */

/* The last listed candidate whose path contains `needle`, or -1 (*out zeroed). */
static int find_by_path(const char *needle, bp_plugin_info *out) {
    memset(out, 0, sizeof *out);
    int found = -1;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        if (strstr(info.path, needle)) {
            found = i;
            *out = info;
        }
    }
    return found;
}

static int find_by_name(const char *name, bp_plugin_state state, bp_plugin_info *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        if (strcmp(info.name, name) == 0 && info.state == state) {
            *out = info;
            return i;
        }
    }
    return -1;
}

static int count_state(const char *name, bp_plugin_state state) {
    int n = 0;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        n += strcmp(info.name, name) == 0 && info.state == state;
    }
    return n;
}

/* Devices of the backends that are always found: the built-in cpu backend, and the
 * plugins the build puts beside libbackplane (the hpu simulator, opencl, and arm in an
 * aarch64 build). */
static int count_type(const char *type);
static int count_always_there(void) {
    return count_type("cpu") + count_type("hpu") + count_type("opencl") + count_type("arm");
}

static int count_type(const char *type) {
    int n = 0;
    for (int i = 0; i < bp_device_count(); i++) {
        bp_device *dev = NULL;
        CHILD_CHECK(bp_device_get(i, &dev) == BP_OK);
        bp_device_props props = {.struct_size = sizeof props};
        CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
        n += strcmp(props.type, type) == 0;
    }
    return n;
}

/* Every device the listing reports is in the registry, and no other. */
static void check_counts_consistent(void) {
    int listed = 0;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        if (info.state != BP_PLUGIN_SKIPPED)
            listed += info.device_count;
        else
            CHILD_CHECK(info.device_count == 0 && info.reason[0] != '\0');
    }
    CHILD_CHECK(listed == bp_device_count());
}

/* Allocates, fills and reads back memory on `name`: the device really works. */
static void check_device_works(const char *name) {
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open(name, &dev) == BP_OK);
    enum { N = 4096 };
    void *ptr = NULL;
    CHILD_CHECK(bp_memory_alloc(dev, N, NULL, &ptr) == BP_OK && ptr);
    CHILD_CHECK(bp_memory_set_async(dev, ptr, 0x5a, N, NULL) == BP_OK);
    unsigned char host[N];
    memset(host, 0, sizeof host);
    CHILD_CHECK(bp_memory_copy_async(host, NULL, ptr, dev, N, NULL) == BP_OK);
    CHILD_CHECK(bp_device_synchronize(dev) == BP_OK);
    for (int i = 0; i < N; i++)
        CHILD_CHECK(host[i] == 0x5a);
    CHILD_CHECK(bp_memory_free(dev, ptr) == BP_OK);
}

static void check_cpu_builtin_first(void) {
    CHILD_CHECK(bp_plugin_count() >= 1);
    bp_plugin_info cpu = bp_test_plugin_at(0);
    CHILD_CHECK(strcmp(cpu.name, "cpu") == 0);
    CHILD_CHECK(cpu.state == BP_PLUGIN_BUILTIN);
    CHILD_CHECK(cpu.status == BP_OK);
    CHILD_CHECK(strcmp(cpu.path, "(built-in)") == 0);
    CHILD_CHECK(strcmp(cpu.reason, "") == 0);
    CHILD_CHECK(cpu.abi_major == BP_PLUGIN_ABI_MAJOR);
    CHILD_CHECK(cpu.device_count >= 1);
    CHILD_CHECK(cpu.version[0] != '\0');
}

static void run_in_child(void (*fn)(void *), void *arg, const char *const *env) {
    assert_int_equal(bp_test_run_child(fn, arg, env), 0);
}

/* ---- default: only the built-in cpu backend ---- */

static void child_default(void *arg) {
    check_cpu_builtin_first();
    CHILD_CHECK(count_type("cpu") == bp_test_plugin_at(0).device_count);
    check_counts_consistent();
    check_device_works("cpu");

    bp_plugin_info info = {.struct_size = sizeof info};
    CHILD_CHECK(bp_plugin_get_info(bp_plugin_count(), &info) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "out of range"));
    CHILD_CHECK(bp_plugin_get_info(-1, &info) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_plugin_get_info(0, NULL) == BP_ERR_INVALID_ARGUMENT);
    info.struct_size = 0;
    CHILD_CHECK(bp_plugin_get_info(0, &info) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "struct_size"));
}

static void test_default_lists_cpu_builtin(void **state) {
    run_in_child(child_default, NULL, NULL);
}

/* An older caller's smaller struct: nothing past its struct_size is written. */
static void child_small_info(void *arg) {
    union {
        bp_plugin_info info;
        unsigned char bytes[sizeof(bp_plugin_info)];
    } u;
    memset(&u, 0xab, sizeof u);
    size_t small = offsetof(bp_plugin_info, abi_major);
    u.info.struct_size = (uint32_t)small;
    CHILD_CHECK(bp_plugin_get_info(0, &u.info) == BP_OK);
    CHILD_CHECK(u.info.struct_size == small);
    CHILD_CHECK(strcmp(u.info.name, "cpu") == 0);
    CHILD_CHECK(strcmp(u.info.path, "(built-in)") == 0);
    for (size_t k = small; k < sizeof u; k++)
        CHILD_CHECK(u.bytes[k] == 0xab);
}

static void test_get_info_respects_struct_size(void **state) {
    run_in_child(child_small_info, NULL, NULL);
}

/* ---- broken plugins: skipped with their reason, cpu unharmed ---- */

typedef struct broken_case {
    const char *dir;  /* under BP_TEST_PLUGIN_DIR */
    const char *file; /* library name in it */
    bp_status status;
    const char *needles[3]; /* the reason contains each */
} broken_case;

static const broken_case broken_cases[] = {
    {"wrong_abi", "libbp_wrongabi.so", BP_ERR_ABI_MISMATCH, {"ABI 2.0", "ABI 1.x", NULL}},
    {"no_symbol", "libbp_nosymbol.so", BP_ERR_NOT_FOUND, {"bp_plugin_entry", NULL}},
    {"bad_init", "libbp_badinit.so", BP_ERR_DEVICE_LOST, {"simulated driver failure", NULL}},
    {"old_header", "libbp_oldheader.so", BP_ERR_ABI_MISMATCH, {"older header", "bytes", NULL}},
    {"not_a_library",
     "libbp_bogus.so",
     BP_ERR_INVALID_ARGUMENT,
     {"not a shared library", "libbp_bogus.so", NULL}},
    {"reserved_name", "libbp_cpu.so", BP_ERR_INVALID_ARGUMENT, {"reserved", "'cpu'", NULL}},
    {"region_old_abi",
     "libbp_regionold.so",
     BP_ERR_INVALID_ARGUMENT,
     {"region vtable must be NULL in ABI 1.2", "defined in 1.3", NULL}},
    {"region_no_end", "libbp_regionnoend.so", BP_ERR_INVALID_ARGUMENT, {"region->end", NULL}},
};

static void check_broken_skipped(const broken_case *c) {
    bp_plugin_info info;
    int i = find_by_path(c->file, &info);
    if (i < 0)
        fprintf(stderr, "%s not listed\n", c->file);
    CHILD_CHECK(i > 0);
    if (info.state != BP_PLUGIN_SKIPPED || info.status != c->status)
        fprintf(stderr, "%s: state %d status %s reason '%s'\n", c->file, info.state,
                bp_status_str(info.status), info.reason);
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED);
    CHILD_CHECK(info.status == c->status);
    CHILD_CHECK(info.device_count == 0);
    for (int k = 0; c->needles[k]; k++) {
        if (!bp_test_contains(info.reason, c->needles[k]))
            fprintf(stderr, "%s: reason '%s' lacks '%s'\n", c->file, info.reason, c->needles[k]);
        CHILD_CHECK(bp_test_contains(info.reason, c->needles[k]));
    }
}

static void child_broken(void *arg) {
    const broken_case *c = arg;
    check_cpu_builtin_first();
    check_broken_skipped(c);
    check_counts_consistent();
    CHILD_CHECK(count_state("cpu", BP_PLUGIN_BUILTIN) == 1);
    check_device_works("cpu");
}

static void test_broken_plugins_skipped(void **state) {
    for (size_t k = 0; k < sizeof broken_cases / sizeof broken_cases[0]; k++) {
        char path[1024];
        snprintf(path, sizeof path, "BP_PLUGIN_PATH=%s/%s", BP_TEST_PLUGIN_DIR,
                 broken_cases[k].dir);
        const char *env[] = {path, NULL};
        print_message("case %s\n", broken_cases[k].dir);
        run_in_child(child_broken, (void *)&broken_cases[k], env);
    }
}

/* All broken cases at once, around the good one: each is isolated from the others. */
static void child_all_together(void *arg) {
    check_cpu_builtin_first();
    for (size_t k = 0; k < sizeof broken_cases / sizeof broken_cases[0]; k++)
        check_broken_skipped(&broken_cases[k]);
    bp_plugin_info info;
    CHILD_CHECK(find_by_name("testdev", BP_PLUGIN_LOADED, &info) >= 0);
    CHILD_CHECK(count_type("testdev") == 2);
    check_counts_consistent();
    check_device_works("cpu");
    check_device_works("testdev:1");
}

static void test_broken_and_good_together(void **state) {
    char path[4096];
    int len = snprintf(path, sizeof path, "BP_PLUGIN_PATH=%s", PLUGIN_DIR("good"));
    for (size_t k = 0; k < sizeof broken_cases / sizeof broken_cases[0]; k++)
        len += snprintf(path + len, sizeof path - (size_t)len, ":%s/%s", BP_TEST_PLUGIN_DIR,
                        broken_cases[k].dir);
    assert_true(len < (int)sizeof path);
    const char *env[] = {path, NULL};
    run_in_child(child_all_together, NULL, env);
}

/* ---- the good plugin ---- */

static void child_good(void *arg) {
    check_cpu_builtin_first();
    bp_plugin_info info;
    CHILD_CHECK(find_by_path("libbp_testdev.so", &info) > 0);
    CHILD_CHECK(info.state == BP_PLUGIN_LOADED);
    CHILD_CHECK(info.status == BP_OK);
    CHILD_CHECK(strcmp(info.name, "testdev") == 0);
    CHILD_CHECK(strcmp(info.version, "1.0.0") == 0);
    CHILD_CHECK(info.abi_major == BP_PLUGIN_ABI_MAJOR && info.abi_minor == BP_PLUGIN_ABI_MINOR);
    CHILD_CHECK(info.priority == 0);
    CHILD_CHECK(info.device_count == 2);
    CHILD_CHECK(strcmp(info.reason, "") == 0);
    CHILD_CHECK(strcmp(info.unavailable_reason, "") == 0);

    bp_device *d1 = NULL, *d0 = NULL, *d = NULL;
    CHILD_CHECK(bp_device_open("testdev:1", &d1) == BP_OK);
    CHILD_CHECK(strcmp(bp_device_name(d1), "testdev:1") == 0);
    CHILD_CHECK(bp_device_open("TDEV:0", &d0) == BP_OK);
    CHILD_CHECK(strcmp(bp_device_name(d0), "testdev:0") == 0);
    CHILD_CHECK(bp_device_open("tdev", &d) == BP_OK && d == d0);
    CHILD_CHECK(bp_device_open("testdev:2", &d) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(count_type("testdev") == 2);
    CHILD_CHECK(bp_device_count() == count_always_there() + 2);
    check_counts_consistent();

    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_get_props(d1, &props) == BP_OK);
    CHILD_CHECK(strcmp(props.backend_name, "testdev") == 0);
    CHILD_CHECK(props.capabilities & BP_CAP_PEER_COPY);
    CHILD_CHECK(props.capabilities & BP_CAP_TIMED_EVENTS);
    CHILD_CHECK(strcmp(props.features, "testdev-feature-a testdev-feature-b") == 0); /* ABI 1.5 */
    check_device_works("testdev:1");
    check_device_works("cpu");
}

static void test_good_plugin_loads(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good"), NULL};
    run_in_child(child_good, NULL, env);
}

/* A plugin file named directly in BP_PLUGIN_PATH works as well as its directory. */
static void test_plugin_file_in_path(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" GOOD_LIB, NULL};
    run_in_child(child_good, NULL, env);
}

/* Zero devices is a successful load that says why. */
static void child_no_devices(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(find_by_name("nodev", BP_PLUGIN_LOADED, &info) > 0);
    CHILD_CHECK(info.device_count == 0);
    CHILD_CHECK(bp_test_contains(info.unavailable_reason, "no nodev hardware"));
    CHILD_CHECK(count_type("nodev") == 0);
    check_counts_consistent();
}

static void test_plugin_without_devices(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("no_devices"), NULL};
    run_in_child(child_no_devices, NULL, env);
}

/* ---- duplicates ---- */

static void child_duplicates(void *arg) {
    bp_plugin_info kept, lost;
    CHILD_CHECK(count_state("testdev", BP_PLUGIN_LOADED) == 1);
    CHILD_CHECK(find_by_name("testdev", BP_PLUGIN_LOADED, &kept) > 0);
    CHILD_CHECK(kept.priority == 0);
    CHILD_CHECK(bp_test_contains(kept.path, "/good/libbp_testdev.so"));
    CHILD_CHECK(find_by_path("libbp_testdev_low.so", &lost) > 0);
    CHILD_CHECK(lost.state == BP_PLUGIN_SKIPPED);
    CHILD_CHECK(lost.priority == -5);
    CHILD_CHECK(bp_test_contains(lost.reason, "duplicate of 'testdev'"));
    CHILD_CHECK(bp_test_contains(lost.reason, kept.path));
    CHILD_CHECK(bp_test_contains(lost.reason, "(priority 0)"));
    CHILD_CHECK(count_type("testdev") == 2);
    check_device_works("testdev:0");
}

static void test_duplicates_highest_priority_wins(void **state) {
    const char *good_first[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("dup_low"),
                                NULL};
    const char *low_first[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("dup_low") ":" PLUGIN_DIR("good"),
                               NULL};
    run_in_child(child_duplicates, NULL, good_first);
    run_in_child(child_duplicates, NULL, low_first);
}

/* The same file reached twice: the first wins, the second is listed. */
static void child_same_file(void *arg) {
    int loaded = 0, same = 0;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        if (!bp_test_contains(info.path, "libbp_testdev.so"))
            continue;
        if (info.state == BP_PLUGIN_LOADED)
            loaded++;
        else if (bp_test_contains(info.reason, "same file as"))
            same++;
    }
    CHILD_CHECK(loaded == 1);
    CHILD_CHECK(same == 1);
    CHILD_CHECK(count_type("testdev") == 2);
}

static void test_same_file_twice(void **state) {
    const char *file_twice[] = {"BP_PLUGIN_PATH=" GOOD_LIB ":" GOOD_LIB, NULL};
    const char *file_and_dir[] = {"BP_PLUGIN_PATH=" GOOD_LIB ":" PLUGIN_DIR("good"), NULL};
    /* A path that differs in spelling but is the same file. */
    const char *two_spellings[] = {
        "BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("good") "/../good/libbp_testdev.so",
        NULL};
    run_in_child(child_same_file, NULL, file_twice);
    run_in_child(child_same_file, NULL, file_and_dir);
    run_in_child(child_same_file, NULL, two_spellings);
}

/* ---- switches ---- */

static void child_autoload_off(void *arg) {
    check_cpu_builtin_first();
    CHILD_CHECK(bp_plugin_count() == 1);
    CHILD_CHECK(bp_device_count() == count_type("cpu"));
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("testdev", &dev) == BP_ERR_NOT_FOUND);
    check_device_works("cpu");
}

static void test_autoload_off(void **state) {
    const char *env[] = {"BP_AUTOLOAD=0", "BP_PLUGIN_PATH=" PLUGIN_DIR("good"), NULL};
    run_in_child(child_autoload_off, NULL, env);
}

/* A value that is neither 0 nor 1 fails closed: no plugin code is loaded, with a
 * warning naming the value. */
static void child_autoload_invalid(void *arg) {
    (void)arg;
    bp_test_capture_begin();
    int plugins = bp_plugin_count();
    char *err = bp_test_capture_end();
    CHILD_CHECK(plugins == 1);
    CHILD_CHECK(bp_test_contains(err, "BP_AUTOLOAD='false' is not 0 or 1"));
    CHILD_CHECK(bp_test_contains(err, "plugin discovery is off"));
    free(err);
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("testdev", &dev) == BP_ERR_NOT_FOUND);
    check_device_works("cpu");
}

static void test_autoload_invalid_fails_closed(void **state) {
    const char *env[] = {"BP_AUTOLOAD=false", "BP_LOG=warn", "BP_PLUGIN_PATH=" PLUGIN_DIR("good"),
                         NULL};
    run_in_child(child_autoload_invalid, NULL, env);
}

static void child_select_testdev(void *arg) {
    check_cpu_builtin_first();
    bp_plugin_info info;
    CHILD_CHECK(find_by_name("testdev", BP_PLUGIN_LOADED, &info) > 0);
    CHILD_CHECK(find_by_name("nodev", BP_PLUGIN_SKIPPED, &info) > 0);
    CHILD_CHECK(bp_test_contains(info.reason, "not selected by BP_PLUGINS"));
    CHILD_CHECK(count_type("testdev") == 2);
    check_counts_consistent();
}

static void test_select_with_bp_plugins(void **state) {
    const char *env[] = {"BP_PLUGINS= testdev ,cpu",
                         "BP_PLUGIN_PATH=" PLUGIN_DIR("no_devices") ":" PLUGIN_DIR("good"), NULL};
    run_in_child(child_select_testdev, NULL, env);
}

/* Every plugin BP_PLUGINS names loads, whatever the discovery order. */
static void child_select_two(void *arg) {
    bp_plugin_info testdev, nodev;
    int t = find_by_name("testdev", BP_PLUGIN_LOADED, &testdev);
    int n = find_by_name("nodev", BP_PLUGIN_LOADED, &nodev);
    CHILD_CHECK(t > 0 && n > 0);
    check_counts_consistent();
}

static void test_select_two(void **state) {
    const char *env[] = {"BP_PLUGINS=nodev,testdev",
                         "BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("no_devices"), NULL};
    run_in_child(child_select_two, NULL, env);
}

static void child_select_missing(void *arg) {
    check_cpu_builtin_first();
    bp_plugin_info info;
    CHILD_CHECK(find_by_name("nonexistent", BP_PLUGIN_SKIPPED, &info) > 0);
    CHILD_CHECK(info.status == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(info.reason, "requested by BP_PLUGINS"));
    CHILD_CHECK(bp_test_contains(info.reason, "'nonexistent'"));
    CHILD_CHECK(count_state("nonexistent", BP_PLUGIN_SKIPPED) == 1);
    CHILD_CHECK(find_by_name("testdev", BP_PLUGIN_SKIPPED, &info) > 0);
    CHILD_CHECK(bp_test_contains(info.reason, "not selected"));
    CHILD_CHECK(count_type("testdev") == 0);
    check_device_works("cpu");
}

static void test_select_missing_plugin(void **state) {
    const char *env[] = {"BP_PLUGINS=nonexistent,nonexistent", "BP_PLUGIN_PATH=" PLUGIN_DIR("good"),
                         NULL};
    run_in_child(child_select_missing, NULL, env);
}

static void child_missing_dir(void *arg) {
    check_cpu_builtin_first();
    bp_plugin_info info;
    CHILD_CHECK(find_by_path("no_such_directory", &info) > 0);
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED);
    CHILD_CHECK(info.status == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(info.reason, "does not exist"));
    CHILD_CHECK(find_by_path("no_such_plugin.so", &info) > 0);
    CHILD_CHECK(bp_test_contains(info.reason, "does not exist"));
    CHILD_CHECK(count_type("testdev") == 2);
}

static void test_missing_directory_listed(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("no_such_directory") "::" PLUGIN_DIR(
                             "good") ":" PLUGIN_DIR("no_such_plugin.so"),
                         NULL};
    run_in_child(child_missing_dir, NULL, env);
}

/* ---- bp_plugin_load ---- */

static void child_explicit_load(void *arg) {
    int before = bp_plugin_count();
    CHILD_CHECK(count_type("testdev") == 0);
    CHILD_CHECK(bp_plugin_load(GOOD_LIB) == BP_OK);
    CHILD_CHECK(bp_plugin_count() == before + 1);
    bp_plugin_info info = bp_test_plugin_at(before);
    CHILD_CHECK(info.state == BP_PLUGIN_LOADED && info.device_count == 2);
    CHILD_CHECK(strcmp(info.path, GOOD_LIB) == 0);
    CHILD_CHECK(count_type("testdev") == 2);
    check_device_works("tdev:1");

    CHILD_CHECK(bp_plugin_load(GOOD_LIB) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "already loaded"));
    CHILD_CHECK(bp_test_contains(bp_last_error(), "libbp_testdev.so"));
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("dup_low") "/libbp_testdev_low.so") ==
                BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "'testdev'"));
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("nowhere") "/libbp_x.so") == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "does not exist"));
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("not_a_library") "/libbp_bogus.so") ==
                BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "not a shared library"));
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("good")) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_plugin_load(NULL) == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_plugin_load("") == BP_ERR_INVALID_ARGUMENT);

    /* Rejected loads are listed; the registry is unchanged. */
    CHILD_CHECK(bp_plugin_count() == before + 6);
    CHILD_CHECK(count_type("testdev") == 2);
    check_counts_consistent();
}

/* The kernels a plugin registered in an init that then failed are gone with it, and
 * its name can no longer take registrations. */
static bp_status never_called_kernel(const bp_kernel_call *call) {
    (void)call;
    return BP_ERR_INTERNAL;
}

static void child_unloaded_plugin_registration(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(find_by_path("libbp_badinit.so", &info) > 0);
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED);
    CHILD_CHECK(bp_kernel_register("badinit", "fill", BP_DTYPE_F32, never_called_kernel, NULL,
                                   1) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "backend 'badinit' was unloaded"));
    check_device_works("cpu");
}

static void test_registration_after_unload(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("bad_init"), NULL};
    run_in_child(child_unloaded_plugin_registration, NULL, env);
}

/* A plugin built against the ABI 1.0 header (older minor, smaller stream vtable) still
 * loads and works under a newer host. */
static void child_abi_1_0(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(find_by_path("libbp_testdev_abi10.so", &info) > 0);
    CHILD_CHECK(info.state == BP_PLUGIN_LOADED);
    CHILD_CHECK(info.abi_major == 1 && info.abi_minor == 0);
    /* Its props struct ends before the ABI 1.5 features: the host reports none. */
    bp_device *dev = NULL;
    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_open("testdev:1", &dev) == BP_OK);
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK && strcmp(props.features, "") == 0);
    check_device_works("testdev:1");
}

static void test_older_minor_abi_loads(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("abi_1_0"), NULL};
    run_in_child(child_abi_1_0, NULL, env);
}

/* A guard table of the ABI 1.0 size (no get_current) is still valid: the plugin loads,
 * its set_current is used, and the host does not read the get_current that this build
 * leaves set past the table's struct_size. */
static void child_guard_1_0(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(find_by_name("broken", BP_PLUGIN_LOADED, &info) > 0);
    CHILD_CHECK(info.abi_major == 1 && info.abi_minor == 1 && info.device_count == 2);
    bp_device *dev = NULL, *current = NULL;
    CHILD_CHECK(bp_device_open("broken:1", &dev) == BP_OK);
    bp_device_guard guard;
    CHILD_CHECK(bp_device_guard_begin(&guard, dev) == BP_OK);
    CHILD_CHECK(bp_device_backend_current(dev, &current) == BP_ERR_UNSUPPORTED);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "backend 'broken'") && current == NULL);
    bp_device_guard_end(&guard);
    check_device_works("broken:1");
}

static void test_guard_table_1_0_loads(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("broken_guard_1_0"), "BP_BROKEN_DEFECT=",
                         NULL};
    run_in_child(child_guard_1_0, NULL, env);
}

/* bp-broken's BP_BROKEN_DEFECT: an unknown name fails init, and the reason the listing
 * shows names the valid ones. */
static void child_unknown_defect(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(find_by_path("broken/libbp_broken.so", &info) > 0);
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED && info.status == BP_ERR_INVALID_ARGUMENT);
    CHILD_CHECK(bp_test_contains(info.reason, "unknown BP_BROKEN_DEFECT 'no_such_defect'"));
    CHILD_CHECK(bp_test_contains(info.reason, "valid names: event_early, wait_ignored"));
    CHILD_CHECK(bp_test_contains(info.reason, "query_hang"));
    CHILD_CHECK(count_type("broken") == 0);
    check_counts_consistent();
}

static void child_current_abi(void *arg) {
    bp_plugin_info info;
    CHILD_CHECK(find_by_name("broken", BP_PLUGIN_LOADED, &info) > 0);
    CHILD_CHECK(info.abi_major == BP_PLUGIN_ABI_MAJOR && info.abi_minor == BP_PLUGIN_ABI_MINOR &&
                info.device_count == 2);
    check_device_works("broken:0");
}

static void test_broken_plugin_defect_names(void **state) {
    const char *bad[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("broken"), "BP_BROKEN_DEFECT=no_such_defect",
                         NULL};
    run_in_child(child_unknown_defect, NULL, bad);
    const char *none[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("broken"), "BP_BROKEN_DEFECT=", NULL};
    run_in_child(child_current_abi, NULL, none);
}

static void test_explicit_load(void **state) {
    run_in_child(child_explicit_load, NULL, NULL);
    /* Explicit loading works with autoload off too. */
    const char *off[] = {"BP_AUTOLOAD=0", NULL};
    run_in_child(child_explicit_load, NULL, off);
}

static void child_explicit_wrong_abi(void *arg) {
    const char *path = PLUGIN_DIR("wrong_abi") "/libbp_wrongabi.so";
    CHILD_CHECK(bp_plugin_load(path) == BP_ERR_ABI_MISMATCH);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "libbp_wrongabi.so"));
    CHILD_CHECK(bp_test_contains(bp_last_error(), "ABI 2.0"));
    CHILD_CHECK(bp_test_contains(bp_last_error(), "ABI 1.x"));
    bp_plugin_info info;
    CHILD_CHECK(find_by_path("libbp_wrongabi.so", &info) > 0);
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED && info.status == BP_ERR_ABI_MISMATCH);
    CHILD_CHECK(info.abi_major == BP_PLUGIN_ABI_MAJOR + 1);

    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("bad_init") "/libbp_badinit.so") == BP_ERR_DEVICE_LOST);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "simulated driver failure"));
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("no_symbol") "/libbp_nosymbol.so") == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_test_contains(bp_last_error(), "bp_plugin_entry"));
    CHILD_CHECK(bp_plugin_count() == 4);
    check_device_works("cpu");
}

static void test_explicit_load_wrong_abi(void **state) {
    const char *env[] = {"BP_AUTOLOAD=0", NULL};
    run_in_child(child_explicit_wrong_abi, NULL, env);
}

/* ---- threads ---- */

enum { THREADS = 8 };

typedef struct thread_result {
    bp_status status;
    int count;
} thread_result;

static pthread_barrier_t start_barrier;

static void *load_thread(void *arg) {
    thread_result *result = arg;
    pthread_barrier_wait(&start_barrier);
    result->count = bp_device_count();
    result->status = bp_plugin_load(GOOD_LIB);
    return NULL;
}

static void child_threads(void *arg) {
    pthread_t threads[THREADS];
    thread_result results[THREADS];
    CHILD_CHECK(pthread_barrier_init(&start_barrier, NULL, THREADS) == 0);
    for (int t = 0; t < THREADS; t++)
        CHILD_CHECK(pthread_create(&threads[t], NULL, load_thread, &results[t]) == 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&start_barrier);

    int ok = 0;
    for (int t = 0; t < THREADS; t++) {
        CHILD_CHECK(results[t].count >= 1);
        if (results[t].status == BP_OK)
            ok++;
        else
            CHILD_CHECK(results[t].status == BP_ERR_INVALID_ARGUMENT);
    }
    CHILD_CHECK(ok == 1);
    CHILD_CHECK(count_state("testdev", BP_PLUGIN_LOADED) == 1);
    CHILD_CHECK(count_type("testdev") == 2);
    CHILD_CHECK(bp_plugin_count() == 1 + THREADS);
    check_counts_consistent();
    check_device_works("testdev:0");
}

static void test_concurrent_first_use_and_load(void **state) {
    const char *env[] = {"BP_AUTOLOAD=0", NULL};
    run_in_child(child_threads, NULL, env);
}

/* Threads racing on first use with autoload: every one sees the same registry. */
static void *count_thread(void *arg) {
    thread_result *result = arg;
    pthread_barrier_wait(&start_barrier);
    result->count = bp_device_count();
    result->status = bp_plugin_count() > 1 ? BP_OK : BP_ERR_NOT_FOUND;
    return NULL;
}

static void child_threads_autoload(void *arg) {
    pthread_t threads[THREADS];
    thread_result results[THREADS];
    CHILD_CHECK(pthread_barrier_init(&start_barrier, NULL, THREADS) == 0);
    for (int t = 0; t < THREADS; t++)
        CHILD_CHECK(pthread_create(&threads[t], NULL, count_thread, &results[t]) == 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&start_barrier);
    for (int t = 0; t < THREADS; t++) {
        CHILD_CHECK(results[t].status == BP_OK);
        CHILD_CHECK(results[t].count == results[0].count);
    }
    CHILD_CHECK(results[0].count == count_always_there() + 2);
}

static void test_concurrent_autoload(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("dup_low"), NULL};
    run_in_child(child_threads_autoload, NULL, env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_lists_cpu_builtin),
        cmocka_unit_test(test_get_info_respects_struct_size),
        cmocka_unit_test(test_broken_plugins_skipped),
        cmocka_unit_test(test_broken_and_good_together),
        cmocka_unit_test(test_good_plugin_loads),
        cmocka_unit_test(test_plugin_file_in_path),
        cmocka_unit_test(test_plugin_without_devices),
        cmocka_unit_test(test_duplicates_highest_priority_wins),
        cmocka_unit_test(test_same_file_twice),
        cmocka_unit_test(test_autoload_off),
        cmocka_unit_test(test_autoload_invalid_fails_closed),
        cmocka_unit_test(test_select_with_bp_plugins),
        cmocka_unit_test(test_select_two),
        cmocka_unit_test(test_select_missing_plugin),
        cmocka_unit_test(test_missing_directory_listed),
        cmocka_unit_test(test_older_minor_abi_loads),
        cmocka_unit_test(test_guard_table_1_0_loads),
        cmocka_unit_test(test_broken_plugin_defect_names),
        cmocka_unit_test(test_registration_after_unload),
        cmocka_unit_test(test_explicit_load),
        cmocka_unit_test(test_explicit_load_wrong_abi),
        cmocka_unit_test(test_concurrent_first_use_and_load),
        cmocka_unit_test(test_concurrent_autoload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
