/* bp-conformance runner: the command line. */
#ifndef BP_CONF_OPTIONS_H
#define BP_CONF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "level.h"

typedef struct bp_conf_options {
    const char *device;   /* --device NAME; NULL when not given */
    const char *plugin;   /* --plugin PATH */
    const char *junit;    /* --junit FILE */
    const char *xfail;    /* --xfail FILE */
    char **filters;       /* --filter globs, split at commas; none: every test */
    size_t n_filters;
    unsigned repeat;      /* --repeat N, >= 1 */
    uint64_t seed;        /* --seed S */
    int timeout_s;        /* --timeout S; 0: each group's own limit, else the default */
    bp_conf_level level;  /* --level quick|full (default quick) */
    bool list;
    bool strict_xfail;
    bool verbose;
    bool help;
} bp_conf_options;

/* Parses argv into `out` (which the caller frees with bp_conf_options_free, also after
 * a failure). Returns 0, or 2 after printing a usage error to stderr. */
int bp_conf_options_parse(int argc, char **argv, bp_conf_options *out);

void bp_conf_options_free(bp_conf_options *options);

/* True when `full_name` ("group.test") matches one of the --filter globs, or when
 * there are none. */
bool bp_conf_options_selects(const bp_conf_options *options, const char *full_name);

/* The --help text. */
void bp_conf_options_usage(FILE *out);

#endif
