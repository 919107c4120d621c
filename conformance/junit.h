/* bp-conformance runner: the JUnit XML report (--junit FILE).
 *
 * <testsuites name="bp-conformance" tests failures errors="0" skipped time> holds the
 * run's <properties> (device, description, backend, backend_version, plugin, seed,
 * repeat) and one <testsuite name="group"> per group with a selected test, which holds
 * one <testcase classname="group" name="test" time="seconds"> per selected test:
 * empty for a pass; <failure type="failure|crash|timeout|xpass" message="first line">
 * with the whole message for a failure; <skipped message="reason"/> for a skip and
 * <skipped message="expected failure: reason"/> for an expected failure (whose failure
 * text goes to <system-out>). */
#ifndef BP_CONF_JUNIT_H
#define BP_CONF_JUNIT_H

#include <stdbool.h>

#include "options.h"
#include "plan.h"
#include "target.h"

/* Writes the report of a finished run to options->junit. Returns false after printing
 * why the file could not be written. */
bool bp_conf_junit_write(const bp_conf_options *options, const bp_conf_plan *plan,
                         const bp_conf_header *header, double seconds);

#endif
