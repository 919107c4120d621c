/* bp-startup: the start-up cost of a backplane program, with its plugins present
 * (autoload) and with BP_AUTOLOAD=0.
 *
 *     bp-startup [--runs N] [--json] -- PROGRAM [ARGS...]
 *
 * Runs PROGRAM N times in each mode, the modes interleaved, and prints the median wall
 * time (a monotonic clock around fork, exec and wait) and the median peak resident
 * memory (the kernel's rusage of that child, from wait4) of each mode. A small C
 * parent keeps the child's peak its own: a child forked from a large process (Python)
 * inherits that process's peak. PROGRAM's stdout goes to /dev/null; a run that fails
 * stops the measurement (exit 1). N is 1 to 1000 (default 21). Exit status 2 for a
 * usage error.
 *
 * e.g. build/bin/bp-startup -- build/bin/readme_example: the README's example, which
 * opens only `cpu`; with lazy backends both modes cost about the same. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 1000

typedef struct sample {
    double ms;
    long max_rss_kib;
} sample;

static int usage(const char *why) {
    fprintf(stderr, "bp-startup: %s\nusage: bp-startup [--runs N] [--json] -- PROGRAM [ARGS...]\n",
            why);
    return 2;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One run of argv with BP_AUTOLOAD=0 when `no_autoload`, else without BP_AUTOLOAD. */
static int one_run(char **argv, int no_autoload, sample *out) {
    double start = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        perror("bp-startup: fork");
        return -1;
    }
    if (pid == 0) {
        if (no_autoload ? setenv("BP_AUTOLOAD", "0", 1) : unsetenv("BP_AUTOLOAD"))
            _exit(126);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull < 0 || dup2(devnull, STDOUT_FILENO) < 0)
            _exit(126);
        execvp(argv[0], argv);
        fprintf(stderr, "bp-startup: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            perror("bp-startup: wait4");
            return -1;
        }
    }
    out->ms = now_ms() - start;
    out->max_rss_kib = usage.ru_maxrss;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bp-startup: %s %s (%s)\n", argv[0],
                WIFEXITED(status) ? "exited with a non-zero status" : "died of a signal",
                no_autoload ? "BP_AUTOLOAD=0" : "autoload");
        return -1;
    }
    return 0;
}

static int by_ms(const void *a, const void *b) {
    double x = ((const sample *)a)->ms, y = ((const sample *)b)->ms;
    return (x > y) - (x < y);
}

static int by_rss(const void *a, const void *b) {
    long x = ((const sample *)a)->max_rss_kib, y = ((const sample *)b)->max_rss_kib;
    return (x > y) - (x < y);
}

/* Medians of runs[0..n): sorts a copy for each figure. */
static sample median(const sample *runs, int n) {
    sample sorted[MAX_RUNS];
    memcpy(sorted, runs, (size_t)n * sizeof *runs);
    qsort(sorted, (size_t)n, sizeof *sorted, by_ms);
    sample m = {.ms = n % 2 ? sorted[n / 2].ms : (sorted[n / 2 - 1].ms + sorted[n / 2].ms) / 2};
    qsort(sorted, (size_t)n, sizeof *sorted, by_rss);
    m.max_rss_kib = sorted[n / 2].max_rss_kib;
    return m;
}

int main(int argc, char **argv) {
    int runs = 21, json = 0, i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            char *end = NULL;
            errno = 0;
            long v = strtol(argv[++i], &end, 10);
            if (errno || end == argv[i] || *end || v < 1 || v > MAX_RUNS)
                return usage("--runs takes a whole number from 1 to 1000");
            runs = (int)v;
        } else {
            return usage("unknown option (the program follows --)");
        }
    }
    if (i + 1 >= argc)
        return usage("no program given after --");
    char **program = argv + i + 1;

    static sample samples[2][MAX_RUNS];
    for (int r = 0; r < runs; r++)
        for (int mode = 0; mode < 2; mode++)
            if (one_run(program, mode, &samples[mode][r]) != 0)
                return 1;
    sample m[2] = {median(samples[0], runs), median(samples[1], runs)};
    if (json) {
        printf("{\"program\": \"%s\", \"runs\": %d,\n", program[0], runs);
        printf(" \"autoload\": {\"ms\": %.3f, \"max_rss_kib\": %ld},\n", m[0].ms, m[0].max_rss_kib);
        printf(" \"no_autoload\": {\"ms\": %.3f, \"max_rss_kib\": %ld}}\n", m[1].ms,
               m[1].max_rss_kib);
    } else {
        printf("%-14s %9.2f ms %9.1f MiB  (median of %d)\n", "autoload", m[0].ms,
               m[0].max_rss_kib / 1024.0, runs);
        printf("%-14s %9.2f ms %9.1f MiB  (median of %d)\n", "BP_AUTOLOAD=0", m[1].ms,
               m[1].max_rss_kib / 1024.0, runs);
    }
    return 0;
}
