/* Logging to stderr, filtered by BP_LOG, and the services table given to backends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal_internal.h"
#include "dispatcher_internal.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static bp_log_level log_threshold = BP_LOG_WARN;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static void read_log_level(void) {
    const char *value = getenv("BP_LOG");
    if (!value || !*value)
        return;
    for (int level = BP_LOG_ERROR; level <= BP_LOG_DEBUG; level++) {
        if (strcasecmp(value, level_names[level]) == 0) {
            log_threshold = (bp_log_level)level;
            return;
        }
    }
    fprintf(stderr, "backplane[log] warn: BP_LOG='%s' is not one of error, warn, info, debug; "
                    "using warn\n", value);
}

bool bp_log_enabled(bp_log_level level) {
    pthread_once(&log_once, read_log_level);
    return level <= log_threshold;
}

static void log_v(bp_log_level level, const char *source, const char *fmt, va_list ap) {
    if (level < BP_LOG_ERROR || level > BP_LOG_DEBUG || !bp_log_enabled(level))
        return;
    char line[1536];
    int n = snprintf(line, sizeof line, "backplane[%s] %s: ", source ? source : "?",
                     level_names[level]);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    /* One fputs per line keeps lines from concurrent threads whole. */
    size_t len = strlen(line);
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    fputs(line, stderr);
}

void bp_log(bp_log_level level, const char *source, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_v(level, source, fmt, ap);
    va_end(ap);
}

static bp_status host_set_error(bp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bp_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

static void host_log(bp_log_level level, const char *source, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_v(level, source, fmt, ap);
    va_end(ap);
}

static const bp_host_services host_services = {
    .struct_size = sizeof(bp_host_services),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .set_error = host_set_error,
    .log = host_log,
    .register_kernel = bp_host_register_kernel,
    .reference_dtypes = bp_host_reference_dtypes,
    .run_reference_kernel = bp_host_run_reference_kernel,
};

const bp_host_services *bp_host_services_table(void) { return &host_services; }
