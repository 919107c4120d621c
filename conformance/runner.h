/* bp-conformance runner: the per-test state behind the test API of conformance.h
 * (bp_conf_test_seed, bp_conf_skip_reason), kept in runner.c and set by the child that
 * runs the tests. */
#ifndef BP_CONF_RUNNER_H
#define BP_CONF_RUNNER_H

/* Marks `full_name` ("group.test") as the running test and forgets the last skip reason.
 * The string must live until the next call. */
void bp_conf_runner_begin_test(const char *full_name);

/* The reason the running test gave to bp_conf_skip_reason, or NULL when it gave none. */
const char *bp_conf_runner_skip_reason(void);

#endif
