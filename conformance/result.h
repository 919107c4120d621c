/* bp-conformance runner: the result of one test, as the runner keeps it.
 *
 * A test runs once per repetition (--repeat); each run gives a bp_conf_run. The runs of
 * one selected test are folded into its bp_conf_case (plan.h), which report.c then
 * classifies against the expected-failures file. */
#ifndef BP_CONF_RESULT_H
#define BP_CONF_RESULT_H

/* What one run of a test did. */
typedef enum bp_conf_status {
    BP_CONF_PASSED = 0,
    BP_CONF_FAILED = 1,
    BP_CONF_SKIPPED = 2,
} bp_conf_status;

/* Why a failed run failed; it becomes the JUnit <failure type>. */
typedef enum bp_conf_failure_kind {
    BP_CONF_FAILURE = 0, /* an assertion (or the group's setup) failed */
    BP_CONF_CRASH = 1,   /* the group's process died (signal or early exit) */
    BP_CONF_TIMEOUT = 2, /* the group ran past its time limit */
} bp_conf_failure_kind;

/* One run of one test. `message` is owned by whoever holds the run: the failure text,
 * the skip reason, or (for a pass) the test's captured output, "" when none. */
typedef struct bp_conf_run {
    bp_conf_status status;
    bp_conf_failure_kind kind;
    double ms;
    char *message;
} bp_conf_run;

/* How a selected test ends up once its runs are folded and the expected-failures file
 * is applied. */
typedef enum bp_conf_outcome {
    BP_CONF_OUT_PASS = 0,
    BP_CONF_OUT_FAIL = 1,
    BP_CONF_OUT_SKIP = 2,
    BP_CONF_OUT_XFAIL = 3, /* failed, and an entry of --xfail expected it */
    BP_CONF_OUT_XPASS = 4, /* passed, although an entry of --xfail expected a failure */
} bp_conf_outcome;

#endif
