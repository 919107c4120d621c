/* A host services table for tests of plugin pieces linked without libbackplane (the kits,
 * <backplane/plugin_util.h>): set_error and log keep their last message, formatted,
 * and set_error counts its calls. One test file includes it. */
#ifndef TEST_RECORDING_HOST_H
#define TEST_RECORDING_HOST_H

#include <stdarg.h>
#include <stdio.h>
#include <backplane/plugin.h>

static char last_error[1100], last_log[1100];
static int errors_set;

static bp_status record_error(bp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    errors_set++;
    return status;
}

/* last_log: "<level> <source>: <message>". */
static void record_log(bp_log_level level, const char *source, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(last_log, sizeof last_log, "%d %s: ", (int)level, source);
    vsnprintf(last_log + n, sizeof last_log - (size_t)n, fmt, ap);
    va_end(ap);
}

static const bp_host_services recording_host = {
    .struct_size = sizeof(bp_host_services),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .set_error = record_error,
    .log = record_log,
};

#endif
