/* bp-conformance: what a test group sees.
 *
 * A group is a list of tests (cmocka test functions) over one device: the device
 * under test, opened by the runner in the group's own child process before any test
 * of the group runs. Tests use cmocka's assertions; a test that needs something the
 * device does not report (a capability, a dtype, a second device) skips with
 * BP_CONF_SKIP and its reason. Assertions must be made on the thread that runs the
 * test: worker threads collect what they saw and the test checks it after joining. */
#ifndef BP_CONFORMANCE_H
#define BP_CONFORMANCE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <backplane/backplane.h>

#include "level.h"

/* The device under test and the run's settings, filled by the runner in the child
 * process before the group's first test. */
typedef struct bp_conf_target {
    const char *device_name; /* as given with --device: "cuda:0" */
    bp_device *device;       /* the opened device */
    bp_device_props props;   /* its properties (struct_size set) */
    const char *plugin_path; /* the plugin library of the device's backend, or NULL
                                when it is built in (cpu) */
    uint64_t seed;           /* --seed */
    bp_conf_level level;     /* --level: BP_CONF_LEVEL_FULL adds the large shapes */
} bp_conf_target;

extern bp_conf_target bp_conf;

/* One test. Its full name, used by --filter, --list, JUnit and the expected-failures
 * file, is "<group>.<name>". */
typedef struct bp_conf_test {
    const char *name;           /* "copy_sizes_and_offsets" */
    void (*fn)(void **state);   /* cmocka test function; *state is `arg` */
    const char *checks;         /* one line: what passing means */
    void *arg;                  /* passed to fn as *state (a group may share one fn) */
} bp_conf_test;

/* A group of tests, run in one child process with one timeout. */
typedef struct bp_conf_group {
    const char *name;           /* "memory" */
    const char *summary;        /* one line */
    const bp_conf_test *tests;
    size_t n_tests;
    int timeout_s;              /* per-group timeout; 0: the runner's default */
} bp_conf_group;

/* The groups, in the order they run (suite.c). */
extern const bp_conf_group *const bp_conf_groups[];
extern const size_t bp_conf_group_count;

/* Records why the running test is skipped (printed, and the JUnit <skipped> message). */
void bp_conf_skip_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Skips the running test with a printf-style reason. */
#define BP_CONF_SKIP(...)                 \
    do {                                  \
        bp_conf_skip_reason(__VA_ARGS__); \
        skip();                           \
    } while (0)

/* Skips unless the device reports capability `cap` (a BP_CAP_* bit). */
#define BP_CONF_REQUIRE_CAP(cap)                                                             \
    do {                                                                                     \
        if (!(bp_conf.props.capabilities & (cap)))                                           \
            BP_CONF_SKIP("the device does not report capability %s", #cap);                  \
    } while (0)

/* Fails the running test at file:line with a printf-style message, as cmocka's
 * fail_msg does at its own line (expect.c). */
void bp_conf_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Fails at file:line unless `expr` returns BP_OK; the message gives the status and
 * bp_last_error(). For helpers that report their caller's location. */
#define BP_CONF_OK_AT(file, line, expr)                                                      \
    do {                                                                                     \
        bp_status bp_conf_st_ = (expr);                                                      \
        if (bp_conf_st_ != BP_OK)                                                            \
            bp_conf_fail_at(file, line, "%s returned %s: %s", #expr,                         \
                            bp_status_str(bp_conf_st_), bp_last_error());                    \
    } while (0)

/* Fails unless `expr` returns BP_OK; the message gives the status and bp_last_error(). */
#define BP_CONF_OK(expr) BP_CONF_OK_AT(__FILE__, __LINE__, expr)

/* Fails unless `expr` returns `code` and leaves a non-empty bp_last_error() message. */
#define BP_CONF_ERR(expr, code)                                                              \
    do {                                                                                     \
        bp_clear_error();                                                                    \
        bp_status bp_conf_st_ = (expr);                                                      \
        if (bp_conf_st_ != (code))                                                           \
            fail_msg("%s returned %s, expected %s (%s)", #expr, bp_status_str(bp_conf_st_),  \
                     bp_status_str(code), bp_last_error());                                  \
        if (!bp_last_error()[0])                                                             \
            fail_msg("%s returned %s without an error message", #expr,                       \
                     bp_status_str(bp_conf_st_));                                            \
    } while (0)

/* The seed of the running test: --seed mixed with the test's full name, so a test's
 * data does not change when other tests are filtered out. */
uint64_t bp_conf_test_seed(void);

/* splitmix64: the next pseudo-random 64-bit value of *state. */
uint64_t bp_conf_rand(uint64_t *state);

#endif
