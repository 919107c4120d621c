/* bp-conformance runner: selecting the tests to run (plan.h). */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *bp_conf_full_name(const bp_conf_group *group, const bp_conf_test *test) {
    size_t n = strlen(group->name) + 1 + strlen(test->name) + 1;
    char *name = malloc(n);
    if (name)
        snprintf(name, n, "%s.%s", group->name, test->name);
    return name;
}

static size_t count_tests(const bp_conf_group *const *groups, size_t n_groups) {
    size_t n = 0;
    for (size_t g = 0; g < n_groups; g++)
        n += groups[g]->n_tests;
    return n;
}

/* Appends the selected tests of `group` to the plan, and the group when it has any. */
static bool select_group(bp_conf_plan *plan, const bp_conf_group *group,
                         const bp_conf_options *options) {
    size_t first = plan->n_cases;
    for (size_t t = 0; t < group->n_tests; t++) {
        char *name = bp_conf_full_name(group, &group->tests[t]);
        if (!name)
            return false;
        if (!bp_conf_options_selects(options, name)) {
            free(name);
            continue;
        }
        plan->cases[plan->n_cases++] = (bp_conf_case){
            .group = group, .test = &group->tests[t], .full_name = name};
    }
    if (plan->n_cases == first)
        return true;
    int timeout = options->timeout_s ? options->timeout_s
                  : group->timeout_s ? group->timeout_s
                                     : BP_CONF_DEFAULT_TIMEOUT_S;
    plan->groups[plan->n_groups++] = (bp_conf_plan_group){
        .group = group, .n_cases = plan->n_cases - first, .timeout_s = timeout};
    return true;
}

bool bp_conf_plan_build(bp_conf_plan *plan, const bp_conf_group *const *groups, size_t n_groups,
                        const bp_conf_options *options) {
    *plan = (bp_conf_plan){0};
    size_t n_tests = count_tests(groups, n_groups);
    /* calloc(0) may return NULL: allocate at least one of each. */
    plan->cases = calloc(n_tests ? n_tests : 1, sizeof *plan->cases);
    plan->groups = calloc(n_groups ? n_groups : 1, sizeof *plan->groups);
    if (!plan->cases || !plan->groups)
        return false;
    for (size_t g = 0; g < n_groups; g++)
        if (!select_group(plan, groups[g], options))
            return false;
    /* The cases array no longer moves: point each group at its slice. */
    size_t next = 0;
    for (size_t g = 0; g < plan->n_groups; g++) {
        plan->groups[g].cases = &plan->cases[next];
        next += plan->groups[g].n_cases;
    }
    return true;
}

void bp_conf_plan_free(bp_conf_plan *plan) {
    for (size_t i = 0; i < plan->n_cases; i++) {
        free(plan->cases[i].full_name);
        free(plan->cases[i].message);
    }
    free(plan->cases);
    free(plan->groups);
    *plan = (bp_conf_plan){0};
}
