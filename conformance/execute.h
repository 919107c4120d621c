/* bp-conformance runner: one run of one group, in its own child process, as the parent
 * sees it: every selected test of the group gets exactly one bp_conf_run, whatever the
 * child does (passes, fails, crashes, hangs, or cannot open the device). */
#ifndef BP_CONF_EXECUTE_H
#define BP_CONF_EXECUTE_H

#include "options.h"
#include "plan.h"
#include "result.h"

/* Receives the run of one test as soon as it is final; takes run->message. */
typedef void (*bp_conf_on_run)(void *ctx, bp_conf_case *c, bp_conf_run *run);

/* Runs the group once. Returns false (errno set) when no child could be started; the
 * group's tests have then been given a failed run saying so. */
bool bp_conf_execute_group(bp_conf_plan_group *group, const bp_conf_options *options,
                           bp_conf_on_run on_run, void *ctx);

#endif
