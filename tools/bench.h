/* bp-bench modes. Each mode lives in its own file and is listed in bp_bench.c. */
#ifndef BP_BENCH_H
#define BP_BENCH_H

#include <stdint.h>
#include <stdio.h>

/* A mode's entry: argv[0] is the mode name, options follow. Returns the exit status:
 * 0 done, 1 the measurement failed, 2 a bad command line. */
typedef int (*bp_bench_run_fn)(int argc, char **argv);
/* Prints the mode's options. */
typedef void (*bp_bench_usage_fn)(FILE *out);

int bp_bench_alloc_run(int argc, char **argv);
void bp_bench_alloc_usage(FILE *out);
int bp_bench_dispatch_run(int argc, char **argv);   /* bench_dispatch.c */
void bp_bench_dispatch_usage(FILE *out);
int bp_bench_launch_run(int argc, char **argv);     /* bench_launch.c */
void bp_bench_launch_usage(FILE *out);
int bp_bench_ops_run(int argc, char **argv);        /* bench_ops.c */
void bp_bench_ops_usage(FILE *out);

/* Parses a positive count with an optional k, m or g suffix (powers of 1024).
 * Returns 0 on success, -1 for anything else (empty, zero, junk, overflow). */
int bp_bench_parse_count(const char *text, uint64_t *out);

/* Timing helpers (bench_util.c). They need nothing of libbackplane, so tools that do not
 * link it (bp-cuda-launch-floor) use them too. */

/* CLOCK_MONOTONIC now, in nanoseconds or in milliseconds. */
double bp_bench_now_ns(void);
double bp_bench_now_ms(void);
/* Sorts values[0..n-1] ascending, in place. */
void bp_bench_sort(double *values, int n);
/* The median of values[0..n-1] (n >= 1), sorting them in place: the middle value, or for
 * an even n the mean of the middle two. After it values[0] is the minimum. */
double bp_bench_median(double *values, int n);

/* Under an emulator (bench_emulation.c): why it looks so, e.g. "this aarch64 program runs
 * on an x86 host (...)", or NULL when the CPU the kernel describes is of the program's own
 * architecture (or nothing is known). Times measured under an emulator mean nothing. */
const char *bp_bench_emulation(void);

#endif
