/* Status names and the thread-local last-error message. */
#include <stdio.h>
#include <string.h>

#include "hal_internal.h"

static _Thread_local char tls_last_error[BP_ERROR_MAX];

const char *bp_status_str(bp_status status) {
    switch (status) {
    case BP_OK: return "BP_OK";
    case BP_ERR_INVALID_ARGUMENT: return "BP_ERR_INVALID_ARGUMENT";
    case BP_ERR_NOT_FOUND: return "BP_ERR_NOT_FOUND";
    case BP_ERR_UNSUPPORTED: return "BP_ERR_UNSUPPORTED";
    case BP_ERR_OUT_OF_MEMORY: return "BP_ERR_OUT_OF_MEMORY";
    case BP_ERR_DEVICE_LOST: return "BP_ERR_DEVICE_LOST";
    case BP_ERR_ABI_MISMATCH: return "BP_ERR_ABI_MISMATCH";
    case BP_ERR_NOT_READY: return "BP_ERR_NOT_READY";
    case BP_ERR_INTERNAL: return "BP_ERR_INTERNAL";
    case BP_ERR_BACKEND: return "BP_ERR_BACKEND";
    case BP_ERR_INVALID_STATE: return "BP_ERR_INVALID_STATE";
    }
    return "BP_ERR_UNKNOWN";
}

const char *bp_last_error(void) { return tls_last_error; }

void bp_clear_error(void) { tls_last_error[0] = '\0'; }

bp_status bp_set_error_v(bp_status status, const char *fmt, va_list ap) {
    vsnprintf(tls_last_error, sizeof tls_last_error, fmt, ap);
    bp_log(BP_LOG_DEBUG, "error", "%s: %s", bp_status_str(status), tls_last_error);
    return status;
}

bp_status bp_set_error(bp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bp_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

bp_status bp_error_prefix(bp_status status, const char *context) {
    size_t prefix_len = strnlen(context, BP_ERROR_MAX / 2);
    size_t message_len = strnlen(tls_last_error, BP_ERROR_MAX - 1);
    /* The message keeps its start, which says most; "..." shows where it was cut. */
    bool cut = prefix_len + 2 + message_len > BP_ERROR_MAX - 1;
    if (cut)
        message_len = BP_ERROR_MAX - 1 - prefix_len - 2;
    memmove(tls_last_error + prefix_len + 2, tls_last_error, message_len);
    memcpy(tls_last_error, context, prefix_len);
    memcpy(tls_last_error + prefix_len, ": ", 2);
    tls_last_error[prefix_len + 2 + message_len] = '\0';
    if (cut)
        memcpy(tls_last_error + BP_ERROR_MAX - 4, "...", 3);
    return status;
}
