/* bp-conformance runner: a test's runs, its outcome and its lines (report.h). */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

#define EM_DASH "\xe2\x80\x94" /* UTF-8 */

static const char *plural(size_t n) {
    return n == 1 ? "" : "s";
}

static void take_message(bp_conf_case *c, bp_conf_run *run) {
    free(c->message);
    c->message = run->message;
    run->message = NULL;
}

void bp_conf_report_fold(bp_conf_case *c, bp_conf_run *run) {
    c->runs++;
    c->ms += run->ms;
    /* The message kept: the first failure, else the latest skip reason, else the
     * latest output. */
    switch (run->status) {
    case BP_CONF_FAILED:
        if (++c->failed_runs == 1) {
            c->kind = run->kind;
            take_message(c, run);
        }
        break;
    case BP_CONF_SKIPPED:
        c->skipped_runs++;
        if (c->failed_runs == 0)
            take_message(c, run);
        break;
    case BP_CONF_PASSED:
        if (c->failed_runs == 0 && c->skipped_runs == 0)
            take_message(c, run);
        break;
    }
    free(run->message);
    run->message = NULL;
}

void bp_conf_report_classify(bp_conf_case *c, unsigned repeat, const bp_conf_xfail *xfail) {
    const bp_conf_xfail_entry *expected = bp_conf_xfail_match(xfail, c->full_name);
    c->xfail_reason = expected ? expected->reason : NULL;
    if (!c->message)
        c->message = strdup("");
    if (c->failed_runs > 0) {
        if (repeat > 1) {
            bp_conf_strbuf sb = {0};
            bp_conf_strbuf_printf(&sb, "failed in %u of %u runs: %s", c->failed_runs, repeat,
                                  c->message ? c->message : "");
            char *message = bp_conf_strbuf_take(&sb);
            if (message) {
                free(c->message);
                c->message = message;
            }
        }
        c->outcome = expected ? BP_CONF_OUT_XFAIL : BP_CONF_OUT_FAIL;
    } else if (c->skipped_runs > 0) {
        c->outcome = BP_CONF_OUT_SKIP;
    } else {
        c->outcome = expected ? BP_CONF_OUT_XPASS : BP_CONF_OUT_PASS;
    }
}

bool bp_conf_report_is_failure(const bp_conf_case *c, bool strict_xfail) {
    return c->outcome == BP_CONF_OUT_FAIL || (strict_xfail && c->outcome == BP_CONF_OUT_XPASS);
}

/* Prints every line of `text` after the first, indented under the test's line. */
static void print_rest(FILE *out, const char *text, bool from_first) {
    const char *line = text;
    if (!from_first) {
        line = strchr(text, '\n');
        if (!line)
            return;
        line++;
    }
    while (*line) {
        size_t n = strcspn(line, "\n");
        fprintf(out, "      %.*s\n", (int)n, line);
        line += n;
        if (*line)
            line++;
    }
}

void bp_conf_report_line(FILE *out, const bp_conf_case *c, bool verbose) {
    const char *message = c->message ? c->message : "";
    int first = (int)strcspn(message, "\n");
    switch (c->outcome) {
    case BP_CONF_OUT_PASS:
        fprintf(out, "PASS  %s  (%.0f ms)\n", c->full_name, c->ms);
        if (verbose)
            print_rest(out, message, true);
        break;
    case BP_CONF_OUT_FAIL:
        fprintf(out, "FAIL  %s: %.*s\n", c->full_name, first, message);
        print_rest(out, message, false);
        break;
    case BP_CONF_OUT_SKIP:
        fprintf(out, "SKIP  %s: %.*s\n", c->full_name, first, message);
        break;
    case BP_CONF_OUT_XFAIL:
        fprintf(out, "XFAIL %s: %s\n", c->full_name, c->xfail_reason);
        if (verbose)
            print_rest(out, message, true);
        break;
    case BP_CONF_OUT_XPASS:
        fprintf(out, "XPASS %s: %s\n", c->full_name, c->xfail_reason);
        break;
    }
    fflush(out);
}

static void print_memory(FILE *out, uint64_t bytes) {
    if (bytes >= ((uint64_t)1 << 30))
        fprintf(out, "%.1f GiB", (double)bytes / (double)((uint64_t)1 << 30));
    else
        fprintf(out, "%.1f MiB", (double)bytes / (double)((uint64_t)1 << 20));
}

void bp_conf_report_header(FILE *out, const bp_conf_header *h, const bp_conf_options *o,
                           const bp_conf_plan *plan, size_t n_xfail) {
    fprintf(out, "bp-conformance on %s: %s\n", h->name,
            h->description[0] ? h->description : "(no description)");
    fprintf(out, "  backend       %s %s (%s)\n", h->backend_name, h->backend_version,
            h->plugin_path[0] ? h->plugin_path : "built in");
    fputs("  memory        ", out);
    print_memory(out, h->total_memory);
    fprintf(out, "\n  capabilities  %s\n", h->capabilities[0] ? h->capabilities : "(none)");
    fprintf(out, "  dtypes        %s\n", h->dtypes[0] ? h->dtypes : "(none)");
    fprintf(out, "  run           %zu test%s in %zu group%s, seed %" PRIu64 ", repeat %u, level %s",
            plan->n_cases, plural(plan->n_cases), plan->n_groups, plural(plan->n_groups), o->seed,
            o->repeat, bp_conf_level_name(o->level));
    if (o->timeout_s)
        fprintf(out, ", timeout %d s", o->timeout_s);
    if (o->xfail)
        fprintf(out, ", %zu expected failures from %s%s", n_xfail, o->xfail,
                o->strict_xfail ? " (strict)" : "");
    fputs("\n\n", out);
    fflush(out);
}

void bp_conf_report_totals(const bp_conf_plan *plan, bp_conf_totals *t) {
    *t = (bp_conf_totals){0};
    for (size_t i = 0; i < plan->n_cases; i++) {
        switch (plan->cases[i].outcome) {
        case BP_CONF_OUT_PASS: t->passed++; break;
        case BP_CONF_OUT_FAIL: t->failed++; break;
        case BP_CONF_OUT_SKIP: t->skipped++; break;
        case BP_CONF_OUT_XFAIL: t->xfail++; break;
        case BP_CONF_OUT_XPASS: t->xpass++; break;
        }
    }
}

static size_t group_failures(const bp_conf_plan_group *g, bool strict_xfail) {
    size_t n = 0;
    for (size_t i = 0; i < g->n_cases; i++)
        n += bp_conf_report_is_failure(&g->cases[i], strict_xfail);
    return n;
}

void bp_conf_report_summary(FILE *out, const bp_conf_plan *plan, const bp_conf_totals *t,
                            bool strict_xfail, double seconds) {
    fprintf(out, "\n%zu passed, %zu failed, %zu skipped, %zu xfail, %zu xpass in %.1f s\n",
            t->passed, t->failed, t->skipped, t->xfail, t->xpass, seconds);
    const char *sep = "failures by group: ";
    for (size_t g = 0; g < plan->n_groups; g++) {
        size_t n = group_failures(&plan->groups[g], strict_xfail);
        if (n == 0)
            continue;
        fprintf(out, "%s%s %zu", sep, plan->groups[g].group->name, n);
        sep = ", ";
    }
    if (sep[0] == ',')
        fputc('\n', out);
    if (strict_xfail && t->xpass > 0)
        fprintf(out, "%zu unexpected pass%s fail%s the run (--strict-xfail)\n", t->xpass,
                t->xpass == 1 ? "" : "es", t->xpass == 1 ? "s" : "");
    fflush(out);
}

void bp_conf_report_list(FILE *out, const bp_conf_plan *plan, bp_conf_level level) {
    for (size_t g = 0; g < plan->n_groups; g++) {
        const bp_conf_plan_group *pg = &plan->groups[g];
        fprintf(out, "%s%s (%zu test%s): %s\n", g ? "\n" : "", pg->group->name, pg->n_cases,
                plural(pg->n_cases), pg->group->summary ? pg->group->summary : "");
        for (size_t i = 0; i < pg->n_cases; i++)
            fprintf(out, "%s  " EM_DASH " %s\n", pg->cases[i].full_name,
                    pg->cases[i].test->checks ? pg->cases[i].test->checks : "");
    }
    fprintf(out, "\n%zu test%s in %zu group%s, level %s\n", plan->n_cases, plural(plan->n_cases),
            plan->n_groups, plural(plan->n_groups), bp_conf_level_name(level));
    fflush(out);
}
