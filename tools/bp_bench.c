/* bp-bench: micro-benchmarks of backplane.
 *
 *   bp-bench <mode> [options] [--json]
 *   bp-bench --help [mode]
 *
 * Exit status: 0 done, 1 the measurement failed, 2 a bad command line (unknown mode
 * or option). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/backplane.h>

#include "bench.h"

static const struct mode {
    const char *name;
    const char *summary;
    bp_bench_run_fn run;
    bp_bench_usage_fn usage;
} modes[] = {
    {"alloc", "cached alloc+free pairs of the caching allocator", bp_bench_alloc_run,
     bp_bench_alloc_usage},
    {"dispatch", "cost of dispatching a no-op kernel over a direct call", bp_bench_dispatch_run,
     bp_bench_dispatch_usage},
    {"launch", "host ns per tiny eager op (add, scale), no synchronize in the loop",
     bp_bench_launch_run, bp_bench_launch_usage},
    {"ops", "FLOP/s of matmul and sdpa (beside OpenBLAS for f32 on cpu)", bp_bench_ops_run,
     bp_bench_ops_usage},
};

#define MODE_COUNT (sizeof modes / sizeof modes[0])

static void usage(FILE *out) {
    fprintf(out, "Usage: bp-bench <mode> [options] [--json]\n"
                 "       bp-bench --help [mode]\n"
                 "Modes:\n");
    for (size_t i = 0; i < MODE_COUNT; i++)
        fprintf(out, "  %-8s %s\n", modes[i].name, modes[i].summary);
    fprintf(out, "Every mode takes --json (one JSON object on stdout) and --help.\n");
}

static const struct mode *find_mode(const char *name) {
    for (size_t i = 0; i < MODE_COUNT; i++)
        if (strcmp(modes[i].name, name) == 0)
            return &modes[i];
    return NULL;
}

static void list_modes(FILE *out) {
    for (size_t i = 0; i < MODE_COUNT; i++)
        fprintf(out, "%s%s", i ? ", " : "", modes[i].name);
}

int bp_bench_parse_count(const char *text, uint64_t *out) {
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift)
        end++;
    if (*end != '\0' || v == 0 || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 || strcmp(first, "help") == 0) {
        const struct mode *m = argc > 2 ? find_mode(argv[2]) : NULL;
        if (m)
            m->usage(stdout);
        else
            usage(stdout);
        return 0;
    }
    if (strcmp(first, "--version") == 0) {
        printf("bp-bench %s\n", bp_version());
        return 0;
    }
    const struct mode *m = find_mode(first);
    if (!m) {
        fprintf(stderr, "bp-bench: unknown mode '%s' (modes: ", first);
        list_modes(stderr);
        fprintf(stderr, "); see bp-bench --help\n");
        return 2;
    }
    return m->run(argc - 1, argv + 1);
}
