/* bp-conformance: the runner (docs/conformance.md).
 *
 * The parent process only plans, supervises and reports: it never initialises
 * backplane, because backends start threads and threads do not survive fork. A probe
 * child opens the device first and describes it; then each group with a selected test
 * runs in a child of its own (once per --repeat), under the group's time limit, so a
 * backend that crashes or hangs fails that group and the suite goes on.
 *
 * This file also holds the test API of conformance.h that the tests call in the child
 * (bp_conf, bp_conf_skip_reason, bp_conf_test_seed, bp_conf_rand). */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "conformance.h"
#include "execute.h"
#include "junit.h"
#include "options.h"
#include "plan.h"
#include "proto.h"
#include "report.h"
#include "runner.h"
#include "supervise.h"
#include "target.h"
#include "xfail.h"

/* ---- the test API (conformance.h), used in the group's child ---- */

bp_conf_target bp_conf;

static const char *running_test_name = "";
static char skip_reason[512];
static bool skip_reason_set;

void bp_conf_runner_begin_test(const char *full_name) {
    running_test_name = full_name;
    skip_reason_set = false;
    skip_reason[0] = '\0';
}

const char *bp_conf_runner_skip_reason(void) {
    return skip_reason_set ? skip_reason : NULL;
}

void bp_conf_skip_reason(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(skip_reason, sizeof skip_reason, fmt, ap);
    va_end(ap);
    skip_reason_set = true;
}

uint64_t bp_conf_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* FNV-1a of the test's full name, mixed with the seed through splitmix64: a test's data
 * depend on --seed and its own name only, not on which other tests run. */
uint64_t bp_conf_test_seed(void) {
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *p = (const unsigned char *)running_test_name; *p; p++)
        h = (h ^ *p) * 0x100000001b3u;
    uint64_t state = bp_conf.seed ^ h;
    return bp_conf_rand(&state);
}

/* ---- the parent ---- */

typedef struct run_state {
    const bp_conf_options *options;
    const bp_conf_xfail *xfail;
} run_state;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each run of a test as it comes in; the test's line once its last run is in. */
static void on_run(void *ctx, bp_conf_case *c, bp_conf_run *run) {
    const run_state *s = ctx;
    bp_conf_report_fold(c, run);
    if (c->runs < s->options->repeat)
        return;
    bp_conf_report_classify(c, s->options->repeat, s->xfail);
    bp_conf_report_line(stdout, c, s->options->verbose);
}

/* What the probe child sends. */
typedef struct probe {
    bp_conf_header header;
    bool have_header;
    char *error;
} probe;

static void on_probe_message(void *ctx, const bp_conf_msg *msg, const char *payload) {
    probe *p = ctx;
    if (msg->type == BP_CONF_MSG_HEADER && msg->len == sizeof p->header) {
        memcpy(&p->header, payload, sizeof p->header);
        p->have_header = true;
    } else if (msg->type == BP_CONF_MSG_SETUP_ERROR && !p->error) {
        p->error = strdup(payload);
    }
}

static int probe_main(int fd, void *arg) {
    return bp_conf_child_probe(fd, arg);
}

/* Opens the device in a probe child and fills *header; returns 0, or 2 after printing
 * why the device cannot be opened. */
static int run_probe(const bp_conf_options *o, bp_conf_header *header) {
    probe p = {0};
    bp_conf_child_end end = {0};
    int timeout = o->timeout_s ? o->timeout_s : BP_CONF_DEFAULT_TIMEOUT_S;
    if (!bp_conf_supervise(probe_main, (void *)o, timeout, on_probe_message, &p, &end)) {
        fprintf(stderr, "bp-conformance: cannot start a process: %s\n", strerror(errno));
        return 2;
    }
    int rc = 0;
    if (p.error) {
        fprintf(stderr, "bp-conformance: %s\n", p.error);
        rc = 2;
    } else if (!p.have_header) {
        char what[256];
        bp_conf_child_end_describe(&end, timeout, what, sizeof what);
        fprintf(stderr, "bp-conformance: cannot open device '%s': the probe process %s\n",
                o->device, what);
        rc = 2;
    } else {
        *header = p.header;
    }
    free(p.error);
    return rc;
}

/* Warns about entries of the expected-failures file that match no test of the suite
 * (a typo, or a test since renamed): they would silently expect nothing. */
static void warn_unused_xfail(const bp_conf_xfail *xfail) {
    for (size_t e = 0; e < xfail->n_entries; e++) {
        bool used = false;
        for (size_t g = 0; g < bp_conf_group_count && !used; g++) {
            const bp_conf_group *group = bp_conf_groups[g];
            for (size_t t = 0; t < group->n_tests && !used; t++) {
                char *name = bp_conf_full_name(group, &group->tests[t]);
                used = name && fnmatch(xfail->entries[e].glob, name, 0) == 0;
                free(name);
            }
        }
        if (!used)
            fprintf(stderr,
                    "bp-conformance: warning: the expected failure '%s' (line %u) matches no "
                    "test of the suite\n",
                    xfail->entries[e].glob, xfail->entries[e].line);
    }
}

/* Runs every group of the plan, --repeat times each. */
static void run_groups(bp_conf_plan *plan, const bp_conf_options *o, const bp_conf_xfail *xfail) {
    run_state state = {o, xfail};
    for (size_t g = 0; g < plan->n_groups; g++)
        for (unsigned rep = 0; rep < o->repeat; rep++)
            if (!bp_conf_execute_group(&plan->groups[g], o, on_run, &state))
                fprintf(stderr, "bp-conformance: cannot start the process of group %s: %s\n",
                        plan->groups[g].group->name, strerror(errno));
}

/* Checks early that the report can be written (an hour of tests should not end in
 * "cannot write"); this also removes a report of an earlier run. */
static bool junit_writable(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bp-conformance: cannot write the JUnit report '%s': %s\n", path,
                strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

/* The run proper, after the plan and the expected failures are ready. */
static int run(bp_conf_plan *plan, const bp_conf_options *o, const bp_conf_xfail *xfail) {
    double start = now_s();
    if (o->junit && !junit_writable(o->junit))
        return 2;
    /* --plugin: that library and the built-in cpu only, so that no other copy of the
     * backend is found by autoload. Set before any fork, in the parent, which has no
     * threads; cmocka would take its output format from the environment over ours. */
    if (o->plugin && setenv("BP_AUTOLOAD", "0", 1) != 0) {
        fprintf(stderr, "bp-conformance: cannot set BP_AUTOLOAD: %s\n", strerror(errno));
        return 2;
    }
    unsetenv("CMOCKA_MESSAGE_OUTPUT");
    /* Inherited SIGCHLD = SIG_IGN (some CI launchers) would reap the children for us and
     * hide how they ended. */
    signal(SIGCHLD, SIG_DFL);
    bp_conf_header *header = calloc(1, sizeof *header);
    if (!header) {
        fputs("bp-conformance: out of memory\n", stderr);
        return 2;
    }
    int rc = run_probe(o, header);
    if (rc == 0) {
        bp_conf_report_header(stdout, header, o, plan, xfail->n_entries);
        run_groups(plan, o, xfail);
        bp_conf_totals totals;
        bp_conf_report_totals(plan, &totals);
        double seconds = now_s() - start;
        bp_conf_report_summary(stdout, plan, &totals, o->strict_xfail, seconds);
        rc = totals.failed > 0 || (o->strict_xfail && totals.xpass > 0) ? 1 : 0;
        if (o->junit && !bp_conf_junit_write(o, plan, header, seconds))
            rc = 2;
    }
    free(header);
    return rc;
}

int main(int argc, char **argv) {
    bp_conf_options options;
    bp_conf_plan plan = {0};
    bp_conf_xfail xfail = {0};
    int rc = bp_conf_options_parse(argc, argv, &options);
    if (rc == 0 && options.help) {
        bp_conf_options_usage(stdout);
    } else if (rc == 0 && !bp_conf_plan_build(&plan, bp_conf_groups, bp_conf_group_count,
                                              &options)) {
        fputs("bp-conformance: out of memory\n", stderr);
        rc = 2;
    } else if (rc == 0 && plan.n_cases == 0) {
        fputs(options.n_filters ? "bp-conformance: no test matches the --filter patterns\n"
                                : "bp-conformance: the suite has no tests\n",
              stderr);
        rc = 2;
    } else if (rc == 0 && (rc = bp_conf_xfail_load(options.xfail, &xfail)) == 0) {
        warn_unused_xfail(&xfail);
        if (options.list)
            bp_conf_report_list(stdout, &plan, options.level);
        else
            rc = run(&plan, &options, &xfail);
    }
    bp_conf_xfail_free(&xfail);
    bp_conf_plan_free(&plan);
    bp_conf_options_free(&options);
    return rc;
}
