/* bp-conformance runner: the command line (options.h). Every value is checked here, so
 * the rest of the runner never sees a malformed one; a bad option is a usage error
 * (exit status 2) that names the option and the value. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_DEVICE = 256,
    OPT_PLUGIN,
    OPT_FILTER,
    OPT_LIST,
    OPT_JUNIT,
    OPT_REPEAT,
    OPT_SEED,
    OPT_TIMEOUT,
    OPT_LEVEL,
    OPT_XFAIL,
    OPT_STRICT_XFAIL,
    OPT_VERBOSE,
    OPT_HELP,
};

/* Limits that keep a typo from turning into a run of days. */
#define BP_CONF_MAX_REPEAT 100000u
#define BP_CONF_MAX_TIMEOUT_S 86400

void bp_conf_options_usage(FILE *out) {
    fputs("usage: bp-conformance --device NAME [--plugin PATH] [--filter GLOB]... [--list]\n"
          "                      [--junit FILE] [--repeat N] [--seed S] [--timeout S]\n"
          "                      [--level quick|full]\n"
          "                      [--xfail FILE] [--strict-xfail] [--verbose] [--help]\n"
          "\n"
          "Runs the backplane conformance suite against one device.\n"
          "\n"
          "  --device NAME     the device under test: cpu, cuda:0, ... (required to run)\n"
          "  --plugin PATH     load this plugin library, with autoload off\n"
          "  --filter GLOB     run only tests whose full name group.test matches; may be\n"
          "                    given several times or comma-separated\n"
          "  --list            print the selected tests and what each checks; load nothing\n"
          "  --junit FILE      write a JUnit XML report\n"
          "  --repeat N        run every group N times (default 1)\n"
          "  --seed S          seed of the random data, decimal or 0x hex (default 1)\n"
          "  --timeout S       time limit of each group in seconds (default: the group's\n"
          "                    own, else 120)\n"
          "  --level LEVEL     quick (default): small shapes, fast; full: also the large\n"
          "                    shapes that reach the backends' tuned kernels (minutes)\n"
          "  --xfail FILE      expected failures, lines of 'GLOB reason'\n"
          "  --strict-xfail    an expected failure that passes fails the run\n"
          "  --verbose         also print the output of passing tests\n"
          "  --help            print this help\n"
          "\n"
          "Exit status: 0 when no test failed, 1 when one did, 2 for a usage or setup error.\n",
          out);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "bp-conformance: <message>" and a hint; returns the usage exit status. */
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("bp-conformance: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'bp-conformance --help'.\n", stderr);
    va_end(ap);
    return 2;
}

/* Parses a whole string of digits in `base` (no sign, no spaces) into *out. */
static bool parse_unsigned(const char *s, int base, uint64_t *out) {
    if (!s[0])
        return false;
    for (const char *c = s; *c; c++)
        if (base == 16 ? !isxdigit((unsigned char)*c) : !isdigit((unsigned char)*c))
            return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, base);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (uint64_t)v;
    return true;
}

/* Decimal, or hexadecimal after 0x: a leading zero does not mean octal, since a seed
 * copied from a log ("seed 010") must reproduce that run. */
static bool parse_seed(const char *s, uint64_t *out) {
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return parse_unsigned(s + 2, 16, out);
    return parse_unsigned(s, 10, out);
}

static bool parse_count(const char *s, uint64_t max, uint64_t *out) {
    return parse_unsigned(s, 10, out) && *out >= 1 && *out <= max;
}

static bool parse_level(const char *s, bp_conf_level *out) {
    for (int level = 0; level < BP_CONF_LEVEL_COUNT; level++) {
        if (strcmp(s, bp_conf_level_name((bp_conf_level)level)) == 0) {
            *out = (bp_conf_level)level;
            return true;
        }
    }
    return false;
}

/* Adds the comma-separated globs of one --filter. */
static int add_filters(bp_conf_options *o, const char *arg) {
    const char *p = arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0)
            return usage_error("--filter '%s': an empty pattern", arg);
        char **grown = realloc(o->filters, (o->n_filters + 1) * sizeof *grown);
        if (!grown)
            return usage_error("out of memory");
        o->filters = grown;
        char *glob = strndup(p, len);
        if (!glob)
            return usage_error("out of memory");
        o->filters[o->n_filters++] = glob;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static int set_value(bp_conf_options *o, int opt, const char *name, const char *arg) {
    uint64_t v = 0;
    switch (opt) {
    case OPT_DEVICE:
        if (!arg[0])
            return usage_error("--device: an empty device name");
        o->device = arg;
        return 0;
    case OPT_PLUGIN:
        if (!arg[0])
            return usage_error("--plugin: an empty path");
        o->plugin = arg;
        return 0;
    case OPT_JUNIT:
        if (!arg[0])
            return usage_error("--junit: an empty path");
        o->junit = arg;
        return 0;
    case OPT_XFAIL:
        if (!arg[0])
            return usage_error("--xfail: an empty path");
        o->xfail = arg;
        return 0;
    case OPT_FILTER:
        return add_filters(o, arg);
    case OPT_REPEAT:
        if (!parse_count(arg, BP_CONF_MAX_REPEAT, &v))
            return usage_error("--repeat '%s': expected a count from 1 to %u", arg,
                               BP_CONF_MAX_REPEAT);
        o->repeat = (unsigned)v;
        return 0;
    case OPT_TIMEOUT:
        if (!parse_count(arg, BP_CONF_MAX_TIMEOUT_S, &v))
            return usage_error("--timeout '%s': expected seconds from 1 to %d", arg,
                               BP_CONF_MAX_TIMEOUT_S);
        o->timeout_s = (int)v;
        return 0;
    case OPT_LEVEL:
        if (!parse_level(arg, &o->level))
            return usage_error("--level '%s': expected quick or full", arg);
        return 0;
    case OPT_SEED:
        if (!parse_seed(arg, &o->seed))
            return usage_error("--seed '%s': expected a 64-bit number, decimal or 0x hex", arg);
        return 0;
    default:
        return usage_error("%s: unhandled option", name);
    }
}

int bp_conf_options_parse(int argc, char **argv, bp_conf_options *o) {
    static const struct option longs[] = {
        {"device", required_argument, NULL, OPT_DEVICE},
        {"plugin", required_argument, NULL, OPT_PLUGIN},
        {"filter", required_argument, NULL, OPT_FILTER},
        {"list", no_argument, NULL, OPT_LIST},
        {"junit", required_argument, NULL, OPT_JUNIT},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"seed", required_argument, NULL, OPT_SEED},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"level", required_argument, NULL, OPT_LEVEL},
        {"xfail", required_argument, NULL, OPT_XFAIL},
        {"strict-xfail", no_argument, NULL, OPT_STRICT_XFAIL},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    *o = (bp_conf_options){.repeat = 1, .seed = 1};
    /* "+": stop at the first non-option instead of permuting argv, so a stray word is
     * reported rather than silently taken out of order. getopt prints its own message
     * for an unknown option or a missing value. */
    opterr = 1;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
        int rc = 0;
        switch (opt) {
        case OPT_LIST: o->list = true; break;
        case OPT_STRICT_XFAIL: o->strict_xfail = true; break;
        case OPT_VERBOSE: o->verbose = true; break;
        case OPT_HELP:
        case 'h': o->help = true; break;
        case '?':
            fputs("Try 'bp-conformance --help'.\n", stderr);
            return 2;
        default:
            rc = set_value(o, opt, argv[optind - 1], optarg);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!o->device && !o->list && !o->help)
        return usage_error("--device NAME is required (or --list)");
    return 0;
}

void bp_conf_options_free(bp_conf_options *o) {
    for (size_t i = 0; i < o->n_filters; i++)
        free(o->filters[i]);
    free(o->filters);
    o->filters = NULL;
    o->n_filters = 0;
}

bool bp_conf_options_selects(const bp_conf_options *o, const char *full_name) {
    if (o->n_filters == 0)
        return true;
    for (size_t i = 0; i < o->n_filters; i++)
        if (fnmatch(o->filters[i], full_name, 0) == 0)
            return true;
    return false;
}
