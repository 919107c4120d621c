/* bp-conformance runner: the plan, i.e. the tests that --filter selects, grouped, with
 * what each of them did once run. */
#ifndef BP_CONF_PLAN_H
#define BP_CONF_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "conformance.h"
#include "options.h"
#include "result.h"

/* One selected test and its runs folded together (report.c folds them). */
typedef struct bp_conf_case {
    const bp_conf_group *group;
    const bp_conf_test *test;
    char *full_name;             /* "group.test" */
    unsigned runs;               /* runs recorded so far */
    unsigned failed_runs;
    unsigned skipped_runs;
    double ms;                   /* all runs together */
    bp_conf_failure_kind kind;   /* of the first failed run */
    char *message;               /* first failure, else the last skip reason or output */
    bp_conf_outcome outcome;     /* set once every run is in (report.c) */
    const char *xfail_reason;    /* the matching --xfail entry's reason, or NULL */
} bp_conf_case;

/* The selected tests of one group, in the group's order. */
typedef struct bp_conf_plan_group {
    const bp_conf_group *group;
    bp_conf_case *cases;         /* into bp_conf_plan.cases */
    size_t n_cases;
    int timeout_s;               /* the limit its child runs under */
    double seconds;              /* wall time of all its runs */
} bp_conf_plan_group;

typedef struct bp_conf_plan {
    bp_conf_plan_group *groups;  /* only groups with a selected test */
    size_t n_groups;
    bp_conf_case *cases;         /* every selected test, in run order */
    size_t n_cases;
} bp_conf_plan;

/* The runner's limit for a group without its own. */
#define BP_CONF_DEFAULT_TIMEOUT_S 120

/* Selects the tests of `groups` that the options' filters match. Returns false when out
 * of memory; the plan is freed with bp_conf_plan_free either way. */
bool bp_conf_plan_build(bp_conf_plan *plan, const bp_conf_group *const *groups, size_t n_groups,
                        const bp_conf_options *options);

void bp_conf_plan_free(bp_conf_plan *plan);

/* "group.test" in a new string, or NULL when out of memory. */
char *bp_conf_full_name(const bp_conf_group *group, const bp_conf_test *test);

#endif
