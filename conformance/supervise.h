/* bp-conformance runner: running a function in a child process under a time limit.
 *
 * The parent never initialises backplane (backends start threads, and threads do not
 * survive fork): everything that touches a device runs in a child forked here, which
 * reports to the parent through a pipe (proto.h). */
#ifndef BP_CONF_SUPERVISE_H
#define BP_CONF_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

/* How the child ended. */
typedef enum bp_conf_child_how {
    BP_CONF_CHILD_EXITED = 0,    /* code: its exit status */
    BP_CONF_CHILD_SIGNALED = 1,  /* code: the signal */
    BP_CONF_CHILD_TIMED_OUT = 2, /* killed at the time limit */
} bp_conf_child_how;

typedef struct bp_conf_child_end {
    bp_conf_child_how how;
    int code;
} bp_conf_child_end;

/* The child's work: reports on `fd`, returns the child's exit status. */
typedef int (*bp_conf_child_main)(int fd, void *arg);

/* Called in the parent for each message of the child, in order. */
typedef void (*bp_conf_on_message)(void *ctx, const bp_conf_msg *msg, const char *payload);

/* Forks a child that runs child_main(fd, arg) and exits with its status; passes each of
 * its messages to on_message until it ends; kills it (SIGKILL) when it is still running
 * timeout_s seconds after the fork, and always reaps it. Returns false when no child
 * could be started (errno set). */
bool bp_conf_supervise(bp_conf_child_main child_main, void *arg, int timeout_s,
                       bp_conf_on_message on_message, void *ctx, bp_conf_child_end *end);

/* "crashed with signal 6 (Aborted)", "exited with status 3", "timed out after 120 s". */
void bp_conf_child_end_describe(const bp_conf_child_end *end, int timeout_s, char *out,
                                size_t out_len);

#endif
