/* bp-conformance runner: the expected-failures file (--xfail FILE).
 *
 * Format, one entry a line:
 *
 *     # comment
 *     GLOB  reason, to the end of the line
 *
 * GLOB is an fnmatch(3) pattern over full test names ("ops.sdpa_*", "events.elapsed_time");
 * it ends at the first blank (space or tab); the reason is the rest of the line with
 * surrounding blanks removed, and must not be empty (a bug without a reason cannot be
 * followed up). Blank lines and lines whose first non-blank character is '#' are
 * ignored. When several entries match a test, the first one counts.
 *
 * A failing test (an assertion, a crash or a timeout) that matches an entry is XFAIL and
 * does not fail the run; a passing one is XPASS, which fails the run only with
 * --strict-xfail. Skipped tests stay skipped. */
#ifndef BP_CONF_XFAIL_H
#define BP_CONF_XFAIL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bp_conf_xfail_entry {
    char *glob;
    char *reason;
    unsigned line;
} bp_conf_xfail_entry;

typedef struct bp_conf_xfail {
    bp_conf_xfail_entry *entries;
    size_t n_entries;
} bp_conf_xfail;

/* Reads `path` into `out` (empty when path is NULL). Returns 0, or 2 after printing an
 * error naming the file and line. `out` is freed with bp_conf_xfail_free either way. */
int bp_conf_xfail_load(const char *path, bp_conf_xfail *out);

void bp_conf_xfail_free(bp_conf_xfail *xfail);

/* The entry whose glob matches `full_name` first, or NULL. */
const bp_conf_xfail_entry *bp_conf_xfail_match(const bp_conf_xfail *xfail, const char *full_name);

#endif
