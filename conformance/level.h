/* bp-conformance: how much a run checks (--level). Shared by the runner, which parses
 * it, and the tests, which read it from bp_conf.level. */
#ifndef BP_CONF_LEVEL_H
#define BP_CONF_LEVEL_H

typedef enum bp_conf_level {
    BP_CONF_LEVEL_QUICK, /* the default: small shapes, the whole suite in seconds */
    BP_CONF_LEVEL_FULL,  /* also the large shapes that reach the backends' tuned paths */
    BP_CONF_LEVEL_COUNT
} bp_conf_level;

/* "quick", "full": the --level values. */
static inline const char *bp_conf_level_name(bp_conf_level level) {
    static const char *const names[BP_CONF_LEVEL_COUNT] = {"quick", "full"};
    return names[level];
}

#endif
