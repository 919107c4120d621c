/* bp-info: runs the tool as a user would and checks its JSON and text output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "test_util.h"
#include <backplane/plugin.h>

#define PLUGIN_DIR(name) BP_TEST_PLUGIN_DIR "/" name

/* Runs bp-info with `option` (or none) and `env`; returns the exit status. */
static int run_info(const char *option, const char *const *env, char **out) {
    const char *argv[] = {BP_INFO_EXE, option, NULL};
    return bp_test_run_command(argv, env, out);
}

static cJSON *run_json(const char *const *env) {
    char *out = NULL;
    int rc = run_info("--json", env, &out);
    assert_non_null(out);
    if (rc != 0)
        fail_msg("bp-info --json exited %d; output:\n%s", rc, out);
    cJSON *root = cJSON_Parse(out);
    if (!root)
        fail_msg("bp-info --json printed invalid JSON:\n%s", out);
    free(out);
    return root;
}

static const char *string_of(const cJSON *object, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    assert_true(cJSON_IsString(item));
    return item->valuestring;
}

/* The element of array `key` whose `field` contains `needle`, or NULL. */
static const cJSON *find_entry(const cJSON *root, const char *key, const char *field,
                               const char *needle) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, key);
    assert_true(cJSON_IsArray(list));
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, field);
        if (cJSON_IsString(value) && strstr(value->valuestring, needle))
            return item;
    }
    return NULL;
}

static int has_string(const cJSON *array, const char *value) {
    assert_true(cJSON_IsArray(array));
    const cJSON *item;
    cJSON_ArrayForEach(item, array) {
        if (cJSON_IsString(item) && strcmp(item->valuestring, value) == 0)
            return 1;
    }
    return 0;
}

static void check_cpu_listed(const cJSON *root) {
    const cJSON *cpu = find_entry(root, "plugins", "name", "cpu");
    assert_non_null(cpu);
    assert_string_equal(string_of(cpu, "state"), "built-in");
    assert_string_equal(string_of(cpu, "path"), "(built-in)");
    assert_string_equal(string_of(cpu, "status"), "BP_OK");

    const cJSON *dev = find_entry(root, "devices", "name", "cpu:0");
    assert_non_null(dev);
    assert_string_equal(string_of(dev, "type"), "cpu");
    assert_string_equal(string_of(dev, "backend"), "cpu");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(dev, "total_memory");
    assert_true(cJSON_IsNumber(total) && total->valuedouble > 0);
    assert_true(has_string(cJSON_GetObjectItemCaseSensitive(dev, "dtypes"), "f32"));
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(dev, "capabilities")));
    const cJSON *priority = cJSON_GetObjectItemCaseSensitive(dev, "stream_priority");
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(priority, "least")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(priority, "greatest")));
}

static void test_default_json(void **state) {
    cJSON *root = run_json(NULL);
    assert_string_equal(string_of(root, "version"), bp_version());
    check_cpu_listed(root);
    cJSON_Delete(root);
}

/* The acceptance case: a plugin of the wrong ABI is listed with its reason and
 * nothing else breaks. */
static void test_wrong_abi_listed(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("wrong_abi"), NULL};
    cJSON *root = run_json(env);
    const cJSON *p = find_entry(root, "plugins", "path", "libbp_wrongabi.so");
    assert_non_null(p);
    assert_string_equal(string_of(p, "state"), "skipped");
    assert_string_equal(string_of(p, "status"), "BP_ERR_ABI_MISMATCH");
    assert_string_equal(string_of(p, "abi"), "2.0");
    const char *reason = string_of(p, "reason");
    if (!bp_test_contains(reason, "ABI 2.0") || !bp_test_contains(reason, "ABI 1.x"))
        fail_msg("reason '%s' does not name both ABI versions", reason);
    check_cpu_listed(root);
    cJSON_Delete(root);
}

static void test_good_plugin_json(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("no_devices"), NULL};
    cJSON *root = run_json(env);
    const cJSON *p = find_entry(root, "plugins", "name", "testdev");
    assert_non_null(p);
    assert_string_equal(string_of(p, "state"), "loaded");
    char abi[16];
    snprintf(abi, sizeof abi, "%d.%d", BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR);
    assert_string_equal(string_of(p, "abi"), abi); /* what testdev was built against */
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(p, "device_count")->valueint, 2);
    const cJSON *nodev = find_entry(root, "plugins", "name", "nodev");
    assert_non_null(nodev);
    assert_true(bp_test_contains(string_of(nodev, "unavailable_reason"), "no nodev hardware"));

    const cJSON *dev = find_entry(root, "devices", "name", "testdev:1");
    assert_non_null(dev);
    assert_string_equal(string_of(dev, "backend_version"), "1.0.0");
    assert_true(bp_test_contains(string_of(dev, "description"), "test device 1"));
    assert_true(has_string(cJSON_GetObjectItemCaseSensitive(dev, "capabilities"), "peer_copy"));
    assert_string_equal(string_of(dev, "features"), "testdev-feature-a testdev-feature-b");
    const cJSON *cpu = find_entry(root, "devices", "name", "cpu:0");
    assert_non_null(cpu);
    assert_string_equal(string_of(cpu, "features"), ""); /* the cpu backend reports none */
    check_cpu_listed(root);
    cJSON_Delete(root);
}

static void test_text_output(void **state) {
    char *out = NULL;
    assert_int_equal(run_info(NULL, NULL, &out), 0);
    assert_true(bp_test_contains(out, "cpu:0"));
    assert_true(bp_test_contains(out, "built-in"));
    assert_true(bp_test_contains(out, bp_version()));
    free(out);

    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR(
                             "wrong_abi") ":" PLUGIN_DIR("no_devices"),
                         NULL};
    assert_int_equal(run_info(NULL, env, &out), 0);
    if (!bp_test_contains(out, "testdev:1") || !bp_test_contains(out, "ABI 2.0") ||
        !bp_test_contains(out, "no nodev hardware") ||
        !bp_test_contains(out, "features: testdev-feature-a testdev-feature-b"))
        fail_msg("unexpected text output:\n%s", out);
    free(out);
}

/* A plugin whose init kills the process (abort, exit) is probed in a child: it is
 * listed with how it died, and the other plugins and devices are still listed. */
static void test_crashing_plugins_reported(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("crash") ":" PLUGIN_DIR(
                             "good") ":" PLUGIN_DIR("exit"),
                         NULL};
    cJSON *root = run_json(env);
    const cJSON *crash = find_entry(root, "plugins", "path", "crash/libbp_crash.so");
    assert_non_null(crash);
    assert_string_equal(string_of(crash, "state"), "skipped");
    assert_string_equal(string_of(crash, "name"), "crash");
    if (!bp_test_contains(string_of(crash, "reason"), "killed by signal 6"))
        fail_msg("crash reason: %s", string_of(crash, "reason"));
    const cJSON *exiter = find_entry(root, "plugins", "path", "exit/libbp_exit.so");
    assert_non_null(exiter);
    assert_string_equal(string_of(exiter, "state"), "skipped");
    if (!bp_test_contains(string_of(exiter, "reason"), "exited with status 7"))
        fail_msg("exiter reason: %s", string_of(exiter, "reason"));
    const cJSON *testdev = find_entry(root, "plugins", "name", "testdev");
    assert_non_null(testdev);
    assert_string_equal(string_of(testdev, "state"), "loaded");
    assert_non_null(find_entry(root, "devices", "name", "testdev:1"));
    check_cpu_listed(root);
    cJSON_Delete(root);

    char *out = NULL;
    assert_int_equal(run_info(NULL, env, &out), 0);
    if (!bp_test_contains(out, "killed by signal 6") || !bp_test_contains(out, "libbp_crash.so") ||
        !bp_test_contains(out, "exited with status 7") || !bp_test_contains(out, "testdev:1"))
        fail_msg("unexpected text output:\n%s", out);
    free(out);
}

/* Aliases and the loader's notes are listed. */
static void test_aliases_and_notes_listed(void **state) {
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("good") ":" PLUGIN_DIR("many"), NULL};
    cJSON *root = run_json(env);
    const cJSON *testdev = find_entry(root, "plugins", "name", "testdev");
    assert_non_null(testdev);
    assert_string_equal(string_of(testdev, "aliases"), "tdev");
    const cJSON *many = find_entry(root, "plugins", "name", "many");
    assert_non_null(many);
    assert_true(bp_test_contains(string_of(many, "notes"), "reports 1000000 devices"));
    cJSON_Delete(root);
}

static void test_bad_option(void **state) {
    char *out = NULL;
    assert_int_equal(run_info("--bogus", NULL, &out), 2);
    assert_string_equal(out, ""); /* usage goes to stderr */
    free(out);
    assert_int_equal(run_info("--help", NULL, &out), 0);
    assert_true(bp_test_contains(out, "Usage: bp-info"));
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_json),     cmocka_unit_test(test_wrong_abi_listed),
        cmocka_unit_test(test_good_plugin_json), cmocka_unit_test(test_text_output),
        cmocka_unit_test(test_crashing_plugins_reported),
        cmocka_unit_test(test_aliases_and_notes_listed), cmocka_unit_test(test_bad_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
