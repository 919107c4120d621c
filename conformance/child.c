/* bp-conformance runner: the child processes (child.h). */
#include "child.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "cmocka_output.h"
#include "proto.h"
#include "runner.h"
#include "target.h"

/* Signals cmocka catches around each test to report "Test failed with exception" and go
 * on with the next test. After a fault inside a backend its state is unknown (a lock
 * may be held, memory corrupt), so the runner lets the fault end the group's process
 * instead: the parent then reports the test as crashed with that signal. */
static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS};
#define N_FAULT_SIGNALS (sizeof fault_signals / sizeof fault_signals[0])
static struct sigaction fault_actions[N_FAULT_SIGNALS];

static const bp_conf_test *running_test;

static void save_fault_actions(void) {
    for (size_t i = 0; i < N_FAULT_SIGNALS; i++)
        sigaction(fault_signals[i], NULL, &fault_actions[i]);
}

/* The test function cmocka runs: puts back the fault handlers cmocka has just replaced
 * (the default, or a sanitizer's), then runs the test. cmocka restores its saved ones
 * after the test. */
static void run_test_body(void **state) {
    for (size_t i = 0; i < N_FAULT_SIGNALS; i++)
        sigaction(fault_signals[i], &fault_actions[i], NULL);
    running_test->fn(state);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void send_text(int fd, bp_conf_msg_type type, uint32_t test, bp_conf_status status,
                      double ms, const char *text) {
    bp_conf_msg_send(fd, type, test, (uint32_t)status, ms, text, strlen(text));
}

/* Runs the test through cmocka with its output captured; returns its status, and its
 * message in *message (the caller frees it; NULL when out of memory). */
static bp_conf_status run_in_cmocka(const bp_conf_case *c, bp_conf_capture *capture,
                                    double *ms, char **message) {
    const struct CMUnitTest unit = {
        .name = c->full_name, .test_func = run_test_body, .initial_state = c->test->arg};
    bp_conf_runner_begin_test(c->full_name);
    running_test = c->test;
    *message = NULL;
    if (!bp_conf_capture_begin(capture)) {
        char text[256];
        snprintf(text, sizeof text, "cannot capture the test's output: %s", strerror(errno));
        *message = strdup(text);
        return BP_CONF_FAILED;
    }
    double start = now_ms();
    int failures = _cmocka_run_group_tests(c->group->name, &unit, 1, NULL, NULL);
    *ms = now_ms() - start;
    char *output = bp_conf_capture_end(capture);
    bool cmocka_skipped = false;
    char *text = output ? bp_conf_cmocka_message(output, &cmocka_skipped) : NULL;
    free(output);
    const char *reason = bp_conf_runner_skip_reason();
    bp_conf_status status = failures > 0              ? BP_CONF_FAILED
                            : reason || cmocka_skipped ? BP_CONF_SKIPPED
                                                       : BP_CONF_PASSED;
    if (status == BP_CONF_FAILED && text && !text[0]) {
        free(text);
        text = strdup("failed without a message from cmocka");
    } else if (status == BP_CONF_SKIPPED) {
        free(text);
        text = strdup(reason ? reason : "skipped without a reason");
    }
    *message = text;
    return status;
}

static void run_one_test(int fd, uint32_t index, const bp_conf_case *c, bp_conf_capture *capture) {
    bp_conf_msg_send(fd, BP_CONF_MSG_START, index, 0, 0.0, NULL, 0);
    double ms = 0.0;
    char *message = NULL;
    bp_conf_status status = c->test->fn ? run_in_cmocka(c, capture, &ms, &message)
                                        : BP_CONF_FAILED;
    const char *text = message ? message
                       : c->test->fn ? "out of memory while reading the test's output"
                                     : "the test has no function";
    send_text(fd, BP_CONF_MSG_RESULT, index, status, ms, text);
    free(message);
}

int bp_conf_child_probe(int fd, const bp_conf_options *o) {
    char err[1024];
    if (!bp_conf_target_open(o->device, o->plugin, o->seed, o->level, err, sizeof err)) {
        send_text(fd, BP_CONF_MSG_SETUP_ERROR, 0, BP_CONF_FAILED, 0.0, err);
        return 0;
    }
    bp_conf_header *header = malloc(sizeof *header);
    if (!header) {
        send_text(fd, BP_CONF_MSG_SETUP_ERROR, 0, BP_CONF_FAILED, 0.0, "out of memory");
        return 0;
    }
    bp_conf_target_describe(header);
    bp_conf_msg_send(fd, BP_CONF_MSG_HEADER, 0, 0, 0.0, header, sizeof *header);
    free(header);
    return 0;
}

int bp_conf_child_group(int fd, const bp_conf_plan_group *g, const bp_conf_options *o,
                        int capture_fd) {
    char err[1024];
    if (!bp_conf_target_open(o->device, o->plugin, o->seed, o->level, err, sizeof err)) {
        send_text(fd, BP_CONF_MSG_SETUP_ERROR, 0, BP_CONF_FAILED, 0.0, err);
        return 0;
    }
    bp_conf_capture capture;
    bp_conf_capture_init(&capture, capture_fd);
    /* The parent has removed CMOCKA_MESSAGE_OUTPUT, which would override this: cmocka's
     * report must be in the one format cmocka_output.c reads. */
    cmocka_set_message_output(CM_OUTPUT_STDOUT);
    save_fault_actions();
    for (size_t i = 0; i < g->n_cases; i++)
        run_one_test(fd, (uint32_t)i, &g->cases[i], &capture);
    bp_conf_capture_close(&capture);
    return 0;
}
