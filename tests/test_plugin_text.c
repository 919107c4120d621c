/* Strings a plugin hands the host (tests/plugins/noisy_text.c): log lines and error
 * messages are read only up to a bound, NUL-terminated, cut with "..." and a kept
 * newline, and their control bytes escaped; so are device descriptions and the reason a
 * backend has no devices. Each test runs in a child that loads the plugin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define PLUGIN_DIR(name) BP_TEST_PLUGIN_DIR "/" name

/* No byte below 0x20 but the newlines ending lines, and no DEL. */
static int printable_text(const char *s, int newlines_allowed) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && !(newlines_allowed && c == '\n')) || c == 0x7f) return 0;
    }
    return 1;
}

/* The line of `log` that contains `needle` (a static copy without its newline), or
 * NULL; *ended says whether the line ended with '\n'. */
static const char *line_with(const char *log, const char *needle, int *ended) {
    static char line[4096];
    const char *hit = strstr(log, needle);
    if (!hit) return NULL;
    const char *start = hit;
    while (start > log && start[-1] != '\n') start--;
    const char *end = strchr(hit, '\n');
    *ended = end != NULL;
    size_t len = end ? (size_t)(end - start) : strlen(start);
    CHILD_CHECK(len < sizeof line);
    memcpy(line, start, len);
    line[len] = '\0';
    return line;
}

static void expect_line(const char *log, const char *needle, const char *whole) {
    int ended = 0;
    const char *line = line_with(log, needle, &ended);
    if (!line || strcmp(line, whole) != 0 || !ended)
        fprintf(stderr, "expected the line\n  %s\ngot\n  %s\n", whole, line ? line : "(none)");
    CHILD_CHECK(line && strcmp(line, whole) == 0 && ended);
}

/* ---- log lines ---- */

static void child_log_lines(void *arg) {
    (void)arg;
    bp_test_capture_begin();
    int count = bp_device_count(); /* loads the plugin: its init logs */
    char *log = bp_test_capture_end();
    CHILD_CHECK(count >= 2);
    /* Every line is the host's: nothing forged a line or left one without its end. */
    CHILD_CHECK(printable_text(log, 1));
    CHILD_CHECK(strncmp(log, "backplane[", 10) == 0);
    for (const char *nl = strchr(log, '\n'); nl && nl[1]; nl = strchr(nl + 1, '\n'))
        CHILD_CHECK(strncmp(nl + 1, "backplane[", 10) == 0);
    CHILD_CHECK(log[strlen(log) - 1] == '\n');

    expect_line(log, "control:",
                "backplane[noisy] warn: control: [\\x1b[31m] bell [\\x07] newline [\\n]FAKE "
                "backplane[cpu] error: forged [\\r] del [\\x7f] end");
    /* A long line is cut, says so, and keeps its newline. */
    int ended = 0;
    const char *line = line_with(log, "long: yyy", &ended);
    CHILD_CHECK(line && ended);
    CHILD_CHECK(strlen(line) > 1000 && strlen(line) < 1600);
    CHILD_CHECK(strcmp(line + strlen(line) - 3, "...") == 0);
    CHILD_CHECK(strstr(line, "TAIL") == NULL);
    /* Formats the host will not read to their end, or at all. */
    expect_line(log, "format is not",
                "backplane[noisy] warn: (a message whose format is not NUL-terminated within "
                "4096 bytes)");
    expect_line(log, "without a format", "backplane[noisy] warn: (a message without a format)");
    expect_line(log, "a source with control bytes",
                "backplane[noisy\\x1b[2J\\n] warn: a source with control bytes");
    line = line_with(log, "an unterminated source", &ended);
    CHILD_CHECK(line && ended);
    CHILD_CHECK(strncmp(line, "backplane[AAAAAAAAAAAAAAAA", 26) == 0);
    CHILD_CHECK(strstr(line, "...] warn: an unterminated source") != NULL);
    CHILD_CHECK(strlen(line) < 200);
    /* Kernel names the host refused without reading past its bound. */
    char expected[160];
    snprintf(expected, sizeof expected,
             "backplane[noisy] warn: register_kernel(unterminated op name) -> %d",
             (int)BP_ERR_INVALID_ARGUMENT);
    expect_line(log, "register_kernel(unterminated op name)", expected);
    snprintf(expected, sizeof expected,
             "backplane[noisy] warn: register_kernel(op name with control bytes) -> %d",
             (int)BP_ERR_INVALID_ARGUMENT);
    expect_line(log, "register_kernel(op name with control bytes)", expected);
    snprintf(expected, sizeof expected,
             "backplane[noisy] warn: register_kernel(unterminated backend name) -> %d",
             (int)BP_ERR_INVALID_ARGUMENT);
    expect_line(log, "register_kernel(unterminated backend name)", expected);
    free(log);
}

static void test_log_lines_from_a_plugin(void **state) {
    (void)state;
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("noisy"), "BP_LOG=warn", NULL};
    assert_int_equal(bp_test_run_child(child_log_lines, NULL, env), 0);
}

/* ---- error messages ---- */

static void child_error_messages(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("noisy:1", &dev) == BP_ERR_BACKEND);
    CHILD_CHECK(strcmp(bp_last_error(),
                       "opening noisy:1: control: [\\x1b[31m] newline [\\n] tab [\\t]") == 0);

    CHILD_CHECK(bp_device_open("noisy:2", &dev) == BP_ERR_BACKEND);
    const char *e = bp_last_error();
    CHILD_CHECK(strncmp(e, "opening noisy:2: long: yyy", 26) == 0);
    CHILD_CHECK(strlen(e) > 900 && strlen(e) < 1024);
    CHILD_CHECK(strcmp(e + strlen(e) - 3, "...") == 0);

    CHILD_CHECK(bp_device_open("noisy:3", &dev) == BP_ERR_BACKEND);
    CHILD_CHECK(strcmp(bp_last_error(), "opening noisy:3: (a plugin's error message whose "
                                        "format is not NUL-terminated within 4096 bytes)") == 0);
    CHILD_CHECK(bp_device_open("noisy:4", &dev) == BP_ERR_BACKEND);
    CHILD_CHECK(strcmp(bp_last_error(), "opening noisy:4: (a plugin's error without a "
                                        "message)") == 0);

    /* A description without a NUL: cut at its field, escaped, terminated. */
    CHILD_CHECK(bp_device_open("noisy:0", &dev) == BP_OK);
    bp_device_props props = {.struct_size = sizeof props};
    CHILD_CHECK(bp_device_get_props(dev, &props) == BP_OK);
    CHILD_CHECK(memchr(props.description, '\0', sizeof props.description) != NULL);
    CHILD_CHECK(strncmp(props.description, "desc\\x1b[31m\\ndddd", 18) == 0);
    CHILD_CHECK(strlen(props.description) == sizeof props.description - 1);
    CHILD_CHECK(printable_text(props.description, 0));
    /* The features likewise (ABI 1.5). */
    CHILD_CHECK(strncmp(props.features, "sve\\x1b[31m\\nffff", 17) == 0);
    CHILD_CHECK(strlen(props.features) == sizeof props.features - 1);
    CHILD_CHECK(printable_text(props.features, 0));
}

static void test_error_messages_from_a_plugin(void **state) {
    (void)state;
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("noisy"), "BP_LOG=error", NULL};
    assert_int_equal(bp_test_run_child(child_error_messages, NULL, env), 0);
}

static void child_unavailable_reason(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("noisynodev:0", &dev) == BP_ERR_NOT_FOUND);
    CHILD_CHECK(strcmp(bp_last_error(),
                       "device 'noisynodev:0' not found: backend 'noisynodev' has no devices "
                       "(no \\x1b[31mhardware\\n(forged line))") == 0);
}

static void test_unavailable_reason_from_a_plugin(void **state) {
    (void)state;
    const char *env[] = {"BP_PLUGIN_PATH=" PLUGIN_DIR("noisy_no_devices"), "BP_LOG=error", NULL};
    assert_int_equal(bp_test_run_child(child_unavailable_reason, NULL, env), 0);
}

int main(void) {
    /* The parent never initialises backplane: each test's child loads the plugin. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_lines_from_a_plugin),
        cmocka_unit_test(test_error_messages_from_a_plugin),
        cmocka_unit_test(test_unavailable_reason_from_a_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
