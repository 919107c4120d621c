/* bp-conformance runner: one run of one group (execute.h).
 *
 * The child says START before each test and RESULT after it. A result is handed on at
 * once, except the group's last one: that test is only known to have passed once the
 * process has also exited cleanly (a crash or hang at exit is blamed on it, the test
 * that ran last). When the child dies or hangs, the test it had started fails with the
 * signal, exit status or timeout, and the tests after it fail as not run. */
#include "execute.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "child.h"
#include "cmocka_output.h"
#include "proto.h"
#include "strbuf.h"
#include "supervise.h"

typedef struct group_run {
    bp_conf_plan_group *group;
    const bp_conf_options *options;
    bp_conf_on_run on_run;
    void *ctx;
    size_t next;          /* tests [0, next) have been handed on */
    long running;         /* the test started and not finished, or -1 */
    double running_since; /* when it started (parent's clock, ms) */
    bp_conf_run held;     /* the last test's result, until the child has exited */
    bool holding;
    char *setup_error;    /* the child could not open the device: why */
    int capture_fd;       /* where the child captures each test's output */
} group_run;

typedef struct child_args {
    const bp_conf_plan_group *group;
    const bp_conf_options *options;
    int capture_fd;
} child_args;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int group_child_main(int fd, void *arg) {
    const child_args *a = arg;
    return bp_conf_child_group(fd, a->group, a->options, a->capture_fd);
}

/* Hands on a failed run of test `i` with a message built from fmt. */
static void fail_test(group_run *r, size_t i, bp_conf_failure_kind kind, double ms,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fail_test(group_run *r, size_t i, bp_conf_failure_kind kind, double ms,
                      const char *fmt, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    bp_conf_run run = {BP_CONF_FAILED, kind, ms, strdup(text)};
    r->on_run(r->ctx, &r->group->cases[i], &run);
}

static void on_result(group_run *r, const bp_conf_msg *msg, const char *payload) {
    /* Results come in order; anything else is a confused child, ignored. */
    if (msg->test != r->next || r->holding || msg->status > BP_CONF_SKIPPED)
        return;
    bp_conf_run run = {(bp_conf_status)msg->status, BP_CONF_FAILURE, msg->ms, strdup(payload)};
    r->running = -1;
    if (r->next + 1 == r->group->n_cases) {
        r->held = run;
        r->holding = true;
        return;
    }
    r->next++;
    r->on_run(r->ctx, &r->group->cases[msg->test], &run);
}

static void on_message(void *ctx, const bp_conf_msg *msg, const char *payload) {
    group_run *r = ctx;
    switch (msg->type) {
    case BP_CONF_MSG_START:
        if (msg->test == r->next && !r->holding) {
            r->running = (long)msg->test;
            r->running_since = now_ms();
        }
        break;
    case BP_CONF_MSG_RESULT:
        on_result(r, msg, payload);
        break;
    case BP_CONF_MSG_SETUP_ERROR:
        if (!r->setup_error)
            r->setup_error = strdup(payload[0] ? payload : "the group's setup failed");
        break;
    default:
        break;
    }
}

/* The verb of "not run: the group <verb> in <test>". */
static const char *end_verb(const bp_conf_child_end *end, char *buf, size_t len) {
    if (end->how == BP_CONF_CHILD_TIMED_OUT)
        return "timed out";
    if (end->how == BP_CONF_CHILD_SIGNALED)
        return "crashed";
    snprintf(buf, len, "exited with status %d", end->code);
    return buf;
}

/* The test that was running when the child died or hung fails with how it ended, and
 * with what it had printed until then (an abort message, a sanitizer report, the
 * backend's log), which the child left in the capture file. */
static void fail_culprit(group_run *r, bp_conf_failure_kind kind, const char *what) {
    bp_conf_strbuf sb = {0};
    bp_conf_strbuf_puts(&sb, what);
    char *output = bp_conf_capture_read(r->capture_fd);
    bool skipped = false;
    char *printed = output ? bp_conf_cmocka_message(output, &skipped) : NULL;
    if (printed && printed[0])
        bp_conf_strbuf_printf(&sb, "\n%s", printed);
    free(printed);
    free(output);
    char *message = bp_conf_strbuf_take(&sb);
    bp_conf_run run = {BP_CONF_FAILED, kind, now_ms() - r->running_since,
                       message ? message : strdup(what)};
    r->on_run(r->ctx, &r->group->cases[r->next], &run);
    r->next++;
}

/* The child ended before every result was in: blame the test it was running, and fail
 * the rest as not run. */
static void fail_unfinished(group_run *r, const bp_conf_child_end *end) {
    bp_conf_failure_kind kind = end->how == BP_CONF_CHILD_TIMED_OUT ? BP_CONF_TIMEOUT
                                                                   : BP_CONF_CRASH;
    char what[256], verb_buf[64];
    bp_conf_child_end_describe(end, r->group->timeout_s, what, sizeof what);
    const char *verb = end_verb(end, verb_buf, sizeof verb_buf);
    const char *culprit = NULL;
    if (r->running >= 0 && (size_t)r->running == r->next) {
        culprit = r->group->cases[r->next].full_name;
        fail_culprit(r, kind, what);
    }
    for (; r->next < r->group->n_cases; r->next++) {
        if (culprit)
            fail_test(r, r->next, kind, 0.0, "not run: the group %s in %s", verb, culprit);
        else if (r->next > 0)
            fail_test(r, r->next, kind, 0.0, "not run: the group %s after %s", verb,
                      r->group->cases[r->next - 1].full_name);
        else
            fail_test(r, r->next, kind, 0.0,
                      "not run: the group's process %s before its first test", what);
    }
}

/* Every result is in; the last one stands only if the process also ended cleanly. */
static void finish_last(group_run *r, const bp_conf_child_end *end) {
    bp_conf_run run = r->held;
    r->holding = false;
    if (end->how != BP_CONF_CHILD_EXITED || end->code != 0) {
        char what[256];
        bp_conf_child_end_describe(end, r->group->timeout_s, what, sizeof what);
        bp_conf_strbuf sb = {0};
        bp_conf_strbuf_printf(&sb, "the group's process %s after this test, its last",
                              what);
        if (run.message && run.message[0])
            bp_conf_strbuf_printf(&sb, "\n%s", run.message);
        free(run.message);
        run = (bp_conf_run){BP_CONF_FAILED,
                            end->how == BP_CONF_CHILD_TIMED_OUT ? BP_CONF_TIMEOUT : BP_CONF_CRASH,
                            run.ms, bp_conf_strbuf_take(&sb)};
    }
    r->next++;
    r->on_run(r->ctx, &r->group->cases[r->next - 1], &run);
}

/* A setup error fails every test not handed on yet with its message. */
static void fail_setup(group_run *r) {
    if (r->holding) {
        free(r->held.message);
        r->holding = false;
    }
    for (; r->next < r->group->n_cases; r->next++)
        fail_test(r, r->next, BP_CONF_FAILURE, 0.0, "%s", r->setup_error);
}

bool bp_conf_execute_group(bp_conf_plan_group *group, const bp_conf_options *options,
                           bp_conf_on_run on_run, void *ctx) {
    group_run r = {.group = group, .options = options, .on_run = on_run, .ctx = ctx,
                   .running = -1};
    bp_conf_child_end end = {0};
    double start = now_ms();
    FILE *capture = tmpfile();
    bool started = false;
    if (capture) {
        r.capture_fd = fileno(capture);
        child_args args = {group, options, r.capture_fd};
        started = bp_conf_supervise(group_child_main, &args, group->timeout_s, on_message, &r,
                                    &end);
    }
    group->seconds += (now_ms() - start) / 1e3;
    if (!started) {
        int saved = errno;
        for (; r.next < group->n_cases; r.next++)
            fail_test(&r, r.next, BP_CONF_CRASH, 0.0, "cannot start the group's process: %s",
                      strerror(saved));
        if (capture)
            fclose(capture);
        errno = saved;
        return false;
    }
    if (r.setup_error)
        fail_setup(&r);
    else if (r.holding)
        finish_last(&r, &end);
    else
        fail_unfinished(&r, &end);
    free(r.setup_error);
    fclose(capture);
    return true;
}
