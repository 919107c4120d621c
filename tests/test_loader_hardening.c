/* The loader against hostile plugins and files (tests/plugins/hostile_plugin.c): name
 * hijack through aliases, re-entrant and slow init, trust, non-regular candidates, the
 * device cap, and strings without a bound. Like test_loader, each case runs in a forked
 * child (the registry loads once per process). `test_loader_hardening <filter>` runs
 * the tests whose name matches the cmocka filter: each finding is its own ctest entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <backplane/plugin.h>

#include "test_util.h"

#define PLUGIN_DIR(name) BP_TEST_PLUGIN_DIR "/" name
#define GOOD_LIB PLUGIN_DIR("good") "/libbp_testdev.so"

/* ---- helpers for children ---- */

/* The last listed candidate whose path contains `needle`; fails the child if none. */
static bp_plugin_info by_path(const char *needle) {
    int found = -1;
    for (int i = 0; i < bp_plugin_count(); i++)
        if (strstr(bp_test_plugin_at(i).path, needle))
            found = i;
    if (found < 0)
        fprintf(stderr, "no candidate path contains '%s'\n", needle);
    CHILD_CHECK(found >= 0);
    return bp_test_plugin_at(found);
}

static void expect_contains(const char *what, const char *text, const char *needle) {
    if (!bp_test_contains(text, needle))
        fprintf(stderr, "%s: '%s' lacks '%s'\n", what, text, needle);
    CHILD_CHECK(bp_test_contains(text, needle));
}

static void expect_skipped(bp_plugin_info info, bp_status status, const char *needle) {
    if (info.state != BP_PLUGIN_SKIPPED || info.status != status)
        fprintf(stderr, "%s: state %d, status %s, reason '%s'\n", info.path, info.state,
                bp_status_str(info.status), info.reason);
    CHILD_CHECK(info.state == BP_PLUGIN_SKIPPED && info.status == status);
    expect_contains(info.path, info.reason, needle);
}

/* The backend behind device name `name`. */
static void expect_backend(const char *name, const char *backend) {
    bp_device *dev = NULL;
    bp_status st = bp_device_open(name, &dev);
    if (st != BP_OK)
        fprintf(stderr, "opening %s: %s\n", name, bp_last_error());
    CHILD_CHECK(st == BP_OK);
    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
    if (strcmp(props.backend_name, backend) != 0)
        fprintf(stderr, "%s is backend '%s', expected '%s'\n", name, props.backend_name, backend);
    CHILD_CHECK(strcmp(props.backend_name, backend) == 0);
}

static int count_type(const char *type) {
    int n = 0;
    for (int i = 0; i < bp_device_count(); i++) {
        bp_device *dev = NULL;
        CHILD_CHECK(bp_device_get(i, &dev) == BP_OK);
        n += strncmp(bp_device_name(dev), type, strlen(type)) == 0 &&
             bp_device_name(dev)[strlen(type)] == ':';
    }
    return n;
}

/* Every device the listing reports is in the registry, and no other. */
static void check_counts_consistent(void) {
    int listed = 0;
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        listed += info.state != BP_PLUGIN_SKIPPED ? info.device_count : 0;
    }
    CHILD_CHECK(listed == bp_device_count());
}

static void check_cpu_works(void) {
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    bp_tensor *t = NULL;
    int64_t shape[1] = {64};
    CHILD_CHECK(bp_tensor_empty(cpu, BP_DTYPE_F32, 1, shape, &t) == BP_OK);
    CHILD_CHECK(bp_fill(t, 3.0) == BP_OK);
    float host[64];
    CHILD_CHECK(bp_tensor_to_host(t, host, sizeof host) == BP_OK);
    for (int i = 0; i < 64; i++)
        CHILD_CHECK(host[i] == 3.0f);
    bp_tensor_release(t);
}

static void run_in_child(void (*fn)(void *), void *arg, const char *const *env) {
    assert_int_equal(bp_test_run_child(fn, arg, env), 0);
}

/* ---- names beat aliases ---- */

static void child_aliases(void *arg) {
    /* The real plugins load, under their names, whatever "aaa" (found first) claims. */
    bp_plugin_info hpu = bp_test_plugin_named("hpu");
    if (hpu.state != BP_PLUGIN_LOADED)
        fprintf(stderr, "hpu: %s\n", hpu.reason);
    CHILD_CHECK(hpu.state == BP_PLUGIN_LOADED);
    CHILD_CHECK(bp_test_plugin_named("opencl").state == BP_PLUGIN_LOADED);
    CHILD_CHECK(bp_test_plugin_named("cuda").state == BP_PLUGIN_LOADED);
    CHILD_CHECK(bp_test_plugin_named("testdev").state == BP_PLUGIN_LOADED);
    expect_backend("hpu:0", "hpu");
    expect_backend("cpu", "cpu");
    expect_backend("testdev:1", "testdev");
    /* opencl's own alias, claimed by no one else. Without an OpenCL device (a build whose
     * target has no OpenCL loader: the aarch64 cross build) the error names the backend. */
    if (bp_test_plugin_named("opencl").device_count > 0) {
        expect_backend("ocl:0", "opencl");
    } else {
        bp_device *ocl = NULL;
        CHILD_CHECK(bp_device_open("ocl:0", &ocl) == BP_ERR_NOT_FOUND);
        expect_contains("opening ocl:0", bp_last_error(), "backend 'opencl' has no devices");
    }

    /* aaa keeps only the alias nobody else has; each drop is noted. */
    bp_plugin_info aaa = bp_test_plugin_named("aaa");
    CHILD_CHECK(aaa.state == BP_PLUGIN_LOADED);
    CHILD_CHECK(strcmp(aaa.aliases, "ok_a") == 0);
    const char *dropped[] = {"'hpu'", "'opencl'", "'cuda'", "'cpu'", "'tdev'", "'aaa'", "'shared'"};
    for (size_t k = 0; k < sizeof dropped / sizeof dropped[0]; k++)
        expect_contains("aaa notes", aaa.notes, dropped[k]);
    expect_backend("ok_a:0", "aaa");

    /* An alias two plugins claim is dropped from both: which file sorts or is found
     * first decides nothing. */
    bp_plugin_info bbb = bp_test_plugin_named("bbb");
    CHILD_CHECK(bbb.state == BP_PLUGIN_LOADED && strcmp(bbb.aliases, "ok_b") == 0);
    expect_contains("bbb notes", bbb.notes, "'shared'");
    bp_plugin_info testdev = bp_test_plugin_named("testdev");
    CHILD_CHECK(strcmp(testdev.aliases, "") == 0);
    expect_contains("testdev notes", testdev.notes, "'tdev'");
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("shared:0", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(bp_device_open("tdev:0", &dev) == BP_ERR_NOT_FOUND);
    check_counts_consistent();
}

static void test_names_beat_aliases(void **state) {
    const char *first[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("aliases") ":" PLUGIN_DIR(
                               "good") ":" PLUGIN_DIR("alias_shared"),
                           NULL};
    run_in_child(child_aliases, NULL, first);
    const char *last[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("alias_shared") ":" PLUGIN_DIR(
                              "good") ":" PLUGIN_DIR("aliases"),
                          NULL};
    run_in_child(child_aliases, NULL, last);
}

/* Explicit loads after autoload: an alias already in use stays with its backend, and a
 * plugin whose name is an alias in use takes it over (names beat aliases). */
static void child_explicit_loads(void *arg) {
    CHILD_CHECK(bp_plugin_load(GOOD_LIB) == BP_OK);
    CHILD_CHECK(bp_plugin_load(PLUGIN_DIR("aliases") "/libbp_aliases.so") == BP_OK);
    expect_backend("tdev:0", "testdev");
    expect_backend("hpu:0", "aaa"); /* no plugin named hpu is loaded yet */
    bp_status st = bp_plugin_load(BP_HPU_PLUGIN);
    if (st != BP_OK)
        fprintf(stderr, "loading hpu: %s\n", bp_last_error());
    CHILD_CHECK(st == BP_OK);
    expect_backend("hpu:0", "hpu");
    bp_plugin_info aaa = bp_test_plugin_named("aaa");
    CHILD_CHECK(!bp_test_contains(aaa.aliases, "hpu") && bp_test_contains(aaa.aliases, "ok_a"));
    expect_contains("aaa notes", aaa.notes, "'hpu'");
    CHILD_CHECK(strcmp(bp_test_plugin_named("testdev").aliases, "tdev") == 0);
    expect_backend("ok_a:0", "aaa");
}

static void test_explicit_load_aliases(void **state) {
    const char *env[] = {"BP_AUTOLOAD=0", NULL};
    run_in_child(child_explicit_loads, NULL, env);
}

/* ---- re-entrant init ---- */

static void child_reentrant(void *arg) {
    bp_plugin_info info = bp_test_plugin_named("reentrant");
    CHILD_CHECK(info.state == BP_PLUGIN_LOADED && info.device_count == 0);
    const char *report = info.unavailable_reason;
    char needle[128];
    snprintf(needle, sizeof needle, "bp_device_open(cpu)=%d (", BP_ERR_INVALID_STATE);
    expect_contains("report", report, needle);
    snprintf(needle, sizeof needle, "bp_plugin_load=%d (", BP_ERR_INVALID_STATE);
    expect_contains("report", report, needle);
    expect_contains("report", report, "bp_device_count=0 (");
    expect_contains("report", report, "bp_plugin_count=0 (");
    expect_contains("report", report, "init of plugin 'reentrant'");
    /* Outside init everything works. */
    CHILD_CHECK(bp_device_count() >= 1);
    check_cpu_works();
}

static void test_reentrant_init_fails_cleanly(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("reentrant"), NULL};
    run_in_child(child_reentrant, NULL, env);
}

/* ---- slow init ---- */

static int device_count_seen;

static void *discovering_thread(void *arg) {
    device_count_seen = bp_device_count();
    return NULL;
}

/* "gated" blocks in init until this child writes to its gate; while it provably sits
 * there (it has written to the notify pipe and the gate is still closed), cpu works
 * from another thread. */
static void child_slow_init(void *arg) {
    const bp_test_gate gate = bp_test_gate_open();

    pthread_t thread;
    CHILD_CHECK(pthread_create(&thread, NULL, discovering_thread, NULL) == 0);
    char byte = 0;
    CHILD_CHECK(read(gate.notify_read, &byte, 1) == 1);
    /* gated's init is running now, and stays there until the write below. */
    check_cpu_works();
    bp_op_id op;
    CHILD_CHECK(bp_op_find("add", &op) == BP_OK);
    CHILD_CHECK(write(gate.gate_write, "g", 1) == 1);
    CHILD_CHECK(pthread_join(thread, NULL) == 0);

    CHILD_CHECK(bp_test_plugin_named("gated").state == BP_PLUGIN_LOADED);
    CHILD_CHECK(device_count_seen == bp_device_count());
    CHILD_CHECK(count_type("gated") == 1);
    expect_backend("gated:0", "gated");
}

static void test_slow_init_leaves_cpu_usable(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("gated"), NULL};
    run_in_child(child_slow_init, NULL, env);
}

/* ---- the log line before init ---- */

static void child_init_logged(void *arg) {
    const char *log_path = arg;
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHILD_CHECK(fd >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO);
    close(fd);
    CHILD_CHECK(bp_device_count() >= 1);
    fflush(stderr);
    FILE *f = fopen(log_path, "r");
    CHILD_CHECK(f != NULL);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    CHILD_CHECK(bp_test_contains(text, "initialising testdev from " GOOD_LIB));
    CHILD_CHECK(bp_test_contains(text, "initialising reentrant from "));
}

static void test_init_logged_first(void **state) {
    char log_path[] = "/tmp/bp_loader_log_XXXXXX";
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    const char *env[] = {"BP_LOG=info",
                         "BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("reentrant"), NULL};
    run_in_child(child_init_logged, log_path, env);
    unlink(log_path);
}

/* ---- trust ---- */

typedef struct trust_case {
    const char *name;
    mode_t dir_mode, file_mode;
    int other_owner; /* chown the file to nobody (needs root) */
    const char *allow;   /* BP_PLUGIN_ALLOW_INSECURE, or NULL */
    const char *needle;  /* in the reason; NULL: it loads */
} trust_case;

static const trust_case trust_cases[] = {
    {"safe", 0700, 0755, 0, NULL, NULL},
    {"file g+w", 0700, 0775, 0, NULL, "writable by its group"},
    {"file o+w", 0700, 0757, 0, NULL, "writable by others"},
    {"dir g+w", 0770, 0755, 0, NULL, "writable by its group"},
    {"dir sticky o+w", 01777, 0755, 0, NULL, "writable by others"},
    {"other owner", 0700, 0755, 1, NULL, "owned by user 65534"},
    {"opt-out", 0777, 0777, 0, "1", NULL},
    {"opt-out misspelt", 0700, 0775, 0, "yes", "writable by its group"},
    {"opt-out off", 0700, 0775, 0, "0", "writable by its group"},
};

static char trust_lib[4096];

static void child_trust(void *arg) {
    const trust_case *c = arg;
    bp_plugin_info info = by_path(trust_lib);
    if (!c->needle) {
        if (info.state != BP_PLUGIN_LOADED)
            fprintf(stderr, "%s: %s\n", c->name, info.reason);
        CHILD_CHECK(info.state == BP_PLUGIN_LOADED);
        if (c->allow)
            expect_contains("notes", info.notes, "BP_PLUGIN_ALLOW_INSECURE");
        return;
    }
    expect_skipped(info, BP_ERR_INVALID_ARGUMENT, c->needle);
    expect_contains("reason", info.reason, "refused");
    CHILD_CHECK(count_type("testdev") == 0);
    /* bp_plugin_load applies the same rule. */
    CHILD_CHECK(bp_plugin_load(trust_lib) == BP_ERR_INVALID_ARGUMENT);
    expect_contains("bp_plugin_load", bp_last_error(), c->needle);
}

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb");
    FILE *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

static void test_untrusted_files_refused(void **state) {
    char dir[] = "/tmp/bp_trust_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(trust_lib, sizeof trust_lib, "%s/libbp_testdev.so", dir);
    copy_file(GOOD_LIB, trust_lib);
    for (size_t k = 0; k < sizeof trust_cases / sizeof trust_cases[0]; k++) {
        const trust_case *c = &trust_cases[k];
        if (c->other_owner && geteuid() != 0) {
            print_message("case %s: skipped (changing a file's owner needs root)\n", c->name);
            continue;
        }
        print_message("case %s\n", c->name);
        assert_int_equal(chmod(dir, c->dir_mode), 0);
        assert_int_equal(chmod(trust_lib, c->file_mode), 0);
        assert_int_equal(chown(trust_lib, c->other_owner ? 65534 : geteuid(), (gid_t)-1), 0);
        char path[4200], allow[64];
        snprintf(path, sizeof path, "BP_PLUGIN_PATH=%s", dir);
        snprintf(allow, sizeof allow, "BP_PLUGIN_ALLOW_INSECURE=%s", c->allow ? c->allow : "");
        const char *env[] = {path, allow, NULL};
        run_in_child(child_trust, (void *)c, env);
    }
    unlink(trust_lib);
    rmdir(dir);
}

/* ---- candidates that are not regular files ---- */

static char odd_dir[64];

static void child_non_regular(void *arg) {
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/libbp_fifo.so", odd_dir);
    expect_skipped(by_path("libbp_dangling.so"), BP_ERR_NOT_FOUND, "dangling symbolic link");
    expect_skipped(by_path("libbp_loop.so"), BP_ERR_NOT_FOUND, "symbolic link loop");
    expect_skipped(by_path("libbp_dir.so"), BP_ERR_INVALID_ARGUMENT, "a directory");
    expect_skipped(by_path("libbp_fifo.so"), BP_ERR_INVALID_ARGUMENT, "a FIFO");
    /* A link to a trusted plugin is fine. */
    bp_plugin_info link = by_path("libbp_link.so");
    CHILD_CHECK(link.state == BP_PLUGIN_LOADED && strcmp(link.name, "testdev") == 0);
    /* Named directly, and loaded explicitly: the same, and the FIFO is never opened. */
    CHILD_CHECK(bp_plugin_load(fifo) == BP_ERR_INVALID_ARGUMENT);
    expect_contains("bp_plugin_load", bp_last_error(), "a FIFO");
}

static void test_non_regular_candidates_listed(void **state) {
    snprintf(odd_dir, sizeof odd_dir, "/tmp/bp_odd_XXXXXX");
    assert_non_null(mkdtemp(odd_dir));
    char path[256];
    snprintf(path, sizeof path, "%s/libbp_dangling.so", odd_dir);
    assert_int_equal(symlink("/nonexistent/libbp_x.so", path), 0);
    snprintf(path, sizeof path, "%s/libbp_loop.so", odd_dir);
    assert_int_equal(symlink("libbp_loop.so", path), 0);
    snprintf(path, sizeof path, "%s/libbp_dir.so", odd_dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/libbp_fifo.so", odd_dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/libbp_link.so", odd_dir);
    assert_int_equal(symlink(GOOD_LIB, path), 0);
    char env_path[256];
    snprintf(env_path, sizeof env_path, "BP_PLUGIN_PATH=%s:%s/libbp_fifo.so", odd_dir, odd_dir);
    const char *env[] = {env_path, NULL};
    run_in_child(child_non_regular, NULL, env);
    const char *names[] = {"libbp_dangling.so", "libbp_loop.so", "libbp_fifo.so", "libbp_link.so"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", odd_dir, names[k]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/libbp_dir.so", odd_dir);
    rmdir(path);
    rmdir(odd_dir);
}

/* ---- devices per backend ---- */

static void child_device_cap(void *arg) {
    bp_plugin_info many = bp_test_plugin_named("many");
    CHILD_CHECK(many.state == BP_PLUGIN_LOADED);
    CHILD_CHECK(many.device_count == 32);
    expect_contains("many notes", many.notes, "reports 1000000 devices");
    expect_contains("many notes", many.notes, "at most 32 per backend");
    /* The plugins found after it still have their devices. */
    CHILD_CHECK(count_type("testdev") == 2);
    CHILD_CHECK(count_type("many") == 32);
    expect_backend("testdev:1", "testdev");
    expect_backend("many:31", "many");
    check_counts_consistent();
}

static void test_device_cap_per_backend(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("many") ":" PLUGIN_DIR("good"), NULL};
    run_in_child(child_device_cap, NULL, env);
}

/* Five plugins of a million devices: the registry fills, and the ones that did not fit
 * say so. */
static void child_registry_full(void *arg) {
    CHILD_CHECK(bp_device_count() == 128);
    bp_plugin_info last = bp_test_plugin_named("manye");
    CHILD_CHECK(last.state == BP_PLUGIN_LOADED && last.device_count < 32);
    expect_contains("manye notes", last.notes, "registry full");
    check_counts_consistent();
    check_cpu_works();
}

static void test_registry_full_reported(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("many") ":" PLUGIN_DIR("many_more"), NULL};
    run_in_child(child_registry_full, NULL, env);
}

/* ---- strings from plugins ---- */

static void child_strings(void *arg) {
    bp_plugin_info info = bp_test_plugin_named("strings");
    CHILD_CHECK(info.state == BP_PLUGIN_LOADED);
    size_t len = strlen(info.version);
    CHILD_CHECK(len > 0 && len < BP_NAME_MAX);
    CHILD_CHECK(strspn(info.version, "x") == len);
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("strings:0", &dev) == BP_OK);
    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
    CHILD_CHECK(strlen(props.description) == sizeof props.description - 1);
    CHILD_CHECK(strspn(props.description, "d") == sizeof props.description - 1);
    CHILD_CHECK(strspn(props.backend_version, "x") == strlen(props.backend_version));

    bp_plugin_info nodev = bp_test_plugin_named("stringsnodev");
    CHILD_CHECK(nodev.state == BP_PLUGIN_LOADED && nodev.device_count == 0);
    len = strlen(nodev.unavailable_reason);
    CHILD_CHECK(len > 0 && len <= 1024 && strspn(nodev.unavailable_reason, "x") == len);
    CHILD_CHECK(bp_device_open("stringsnodev:0", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(strlen(bp_last_error()) < 2048);
    check_cpu_works();
}

static void test_plugin_strings_bounded(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("strings") ":" PLUGIN_DIR("strings_nodev"),
                         NULL};
    run_in_child(child_strings, NULL, env);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_beat_aliases),
        cmocka_unit_test(test_explicit_load_aliases),
        cmocka_unit_test(test_reentrant_init_fails_cleanly),
        cmocka_unit_test(test_slow_init_leaves_cpu_usable),
        cmocka_unit_test(test_init_logged_first),
        cmocka_unit_test(test_untrusted_files_refused),
        cmocka_unit_test(test_non_regular_candidates_listed),
        cmocka_unit_test(test_device_cap_per_backend),
        cmocka_unit_test(test_registry_full_reported),
        cmocka_unit_test(test_plugin_strings_bounded),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
