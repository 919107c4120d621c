/* Timing helpers shared by the bp-bench modes and bp-cuda-launch-floor (bench.h). */
#include <stdlib.h>
#include <time.h>

#include "bench.h"

double bp_bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double bp_bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bp_bench_sort(double *values, int n) {
    qsort(values, (size_t)n, sizeof *values, cmp_double);
}

double bp_bench_median(double *values, int n) {
    bp_bench_sort(values, n);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}
