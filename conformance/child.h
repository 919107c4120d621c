/* bp-conformance runner: what the child processes do. Each runs in a process forked by
 * supervise.c and reports on the pipe `fd` (proto.h); each returns its exit status. */
#ifndef BP_CONF_CHILD_H
#define BP_CONF_CHILD_H

#include "options.h"
#include "plan.h"

/* Opens the device under test and sends its header (or why it cannot be opened). */
int bp_conf_child_probe(int fd, const bp_conf_options *options);

/* Opens the device under test and runs the group's selected tests, one at a time
 * through cmocka, sending START before each and RESULT after it. Each test's output is
 * captured into the file open as `capture_fd` (capture.h). */
int bp_conf_child_group(int fd, const bp_conf_plan_group *group, const bp_conf_options *options,
                        int capture_fd);

#endif
