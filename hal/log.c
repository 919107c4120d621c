/* Logging to stderr, filtered by BP_LOG, and the services table given to backends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal_internal.h"
#include "text.h"

/* A log line's bytes at most, its newline included. */
#define LOG_LINE_MAX 1536

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static bp_log_level log_threshold = BP_LOG_WARN;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static void write_line(bp_log_level level, const char *source, const char *message, bool cut);

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
    /* Not bp_log: the threshold is being read (this runs inside its pthread_once). */
    char message[512];
    int n = snprintf(message, sizeof message, "BP_LOG='%s' is not one of error, warn, info, "
                     "debug; using warn", value);
    write_line(BP_LOG_WARN, "log", message, n < 0 || (size_t)n >= sizeof message);
}

bool bp_log_enabled(bp_log_level level) {
    pthread_once(&log_once, read_log_level);
    return level <= log_threshold;
}

/* One line: the prefix, the message with control bytes escaped (a message, a plugin's
 * in particular, cannot forge lines or drive the terminal) and, however long the
 * message, "..." where it was cut and the newline. */
static void write_line(bp_log_level level, const char *source, const char *message, bool cut) {
    char line[LOG_LINE_MAX];
    const size_t room = sizeof line - 5; /* "...\n" and the NUL */
    char source_text[BP_NAME_MAX + 4];
    int n = snprintf(line, room, "backplane[%s] %s: ",
                     source ? bp_text_from_plugin(source, source_text, sizeof source_text) : "?",
                     level_names[level]);
    size_t len = n < 0 ? 0 : (size_t)n < room ? (size_t)n : room - 1;
    bool escape_cut = false;
    len += bp_text_escape(line + len, room - len, message, strlen(message), &escape_cut);
    if (cut || escape_cut) {
        memcpy(line + len, "...", 3);
        len += 3;
    }
    memcpy(line + len, "\n", 2);
    /* One fputs per line keeps lines from concurrent threads whole. */
    fputs(line, stderr);
}

static void log_v(bp_log_level level, const char *source, const char *fmt, va_list ap) {
    if (level < BP_LOG_ERROR || level > BP_LOG_DEBUG || !bp_log_enabled(level))
        return;
    char message[LOG_LINE_MAX];
    int n = vsnprintf(message, sizeof message, fmt, ap);
    write_line(level, source, message, n < 0 || (size_t)n >= sizeof message);
}

void bp_log(bp_log_level level, const char *source, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_v(level, source, fmt, ap);
    va_end(ap);
}

/* A plugin's format is read only up to BP_PLUGIN_TEXT_MAX bytes: one without its NUL
 * there (or NULL) is not formatted at all, and its message says so instead. */
static bp_status host_set_error(bp_status status, const char *fmt, ...) {
    if (fmt == NULL)
        return bp_set_error(status, "(a plugin's error without a message)");
    if (!bp_text_bounded(fmt))
        return bp_set_error(status, "(a plugin's error message whose format is not "
                            "NUL-terminated within %d bytes)", BP_PLUGIN_TEXT_MAX);
    char message[BP_ERROR_MAX], escaped[BP_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    bool cut = n < 0 || (size_t)n >= sizeof message;
    bool escape_cut = false;
    size_t len = bp_text_escape(escaped, sizeof escaped - 3, message, strlen(message),
                                &escape_cut);
    if (cut || escape_cut)
        memcpy(escaped + len, "...", 4);
    return bp_set_error(status, "%s", escaped);
}

static void host_log(bp_log_level level, const char *source, const char *fmt, ...) {
    if (fmt == NULL || !bp_text_bounded(fmt)) {
        char text[96];
        if (fmt == NULL)
            snprintf(text, sizeof text, "(a message without a format)");
        else
            snprintf(text, sizeof text, "(a message whose format is not NUL-terminated within "
                     "%d bytes)", BP_PLUGIN_TEXT_MAX);
        if (level >= BP_LOG_ERROR && level <= BP_LOG_DEBUG && bp_log_enabled(level))
            write_line(level, source, text, false);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    log_v(level, source, fmt, ap);
    va_end(ap);
}

static bp_host_services host_services;
static pthread_once_t host_services_once = PTHREAD_ONCE_INIT;

static void fill_host_services(void) {
    const bp_hal_client *client = bp_hal_client_get();
    host_services = (bp_host_services){
        .struct_size = sizeof(bp_host_services),
        .abi_major = BP_PLUGIN_ABI_MAJOR,
        .abi_minor = BP_PLUGIN_ABI_MINOR,
        .set_error = host_set_error,
        .log = host_log,
        .register_kernel = client->register_kernel,
        .reference_dtypes = client->reference_dtypes,
        .run_reference_kernel = client->run_reference_kernel,
        .op_count = client->op_count,
        .op_name = client->op_name,
    };
}

const bp_host_services *bp_host_services_table(void) {
    pthread_once(&host_services_once, fill_host_services);
    return &host_services;
}
