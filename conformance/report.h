/* bp-conformance runner: folding a test's runs together, classifying it against the
 * expected failures, and the lines a person reads. */
#ifndef BP_CONF_REPORT_H
#define BP_CONF_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "plan.h"
#include "target.h"
#include "xfail.h"

/* Adds one run to the test's record; takes run->message. */
void bp_conf_report_fold(bp_conf_case *c, bp_conf_run *run);

/* Once all `repeat` runs are in: sets the outcome (and for a test that failed in some
 * runs only, a message saying in how many). */
void bp_conf_report_classify(bp_conf_case *c, unsigned repeat, const bp_conf_xfail *xfail);

/* True when the test fails the run: FAIL, or XPASS under --strict-xfail. */
bool bp_conf_report_is_failure(const bp_conf_case *c, bool strict_xfail);

/* Prints the test's line ("PASS  memory.alloc  (3 ms)") and, under it, the rest of a
 * failure message (and with `verbose`, a passing test's output), flushed. */
void bp_conf_report_line(FILE *out, const bp_conf_case *c, bool verbose);

/* The run's header: the device as the probe child described it. */
void bp_conf_report_header(FILE *out, const bp_conf_header *header,
                           const bp_conf_options *options, const bp_conf_plan *plan,
                           size_t n_xfail);

/* The totals of the plan's tests. */
typedef struct bp_conf_totals {
    size_t passed, failed, skipped, xfail, xpass;
} bp_conf_totals;

void bp_conf_report_totals(const bp_conf_plan *plan, bp_conf_totals *totals);

/* "N passed, N failed, N skipped, N xfail, N xpass in X.X s", then the failures per group
 * when there are any. */
void bp_conf_report_summary(FILE *out, const bp_conf_plan *plan, const bp_conf_totals *totals,
                            bool strict_xfail, double seconds);

/* --list: the selected tests with what each checks, and the level they would run at. */
void bp_conf_report_list(FILE *out, const bp_conf_plan *plan, bp_conf_level level);

#endif
