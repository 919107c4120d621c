/* Failures seen on worker threads, checked on the test's thread (thread_report.h). */
#include "thread_report.h"

#include <stdio.h>

#include "conformance.h"
#include "expect.h"

void bp_conf_report_fail_at(const char *file, int line, bp_conf_report *report, const char *fmt,
                            ...) {
    if (report->failure[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report->failure, sizeof report->failure, fmt, ap);
    va_end(ap);
    if (!report->failure[0]) /* an empty message must still count as a failure */
        snprintf(report->failure, sizeof report->failure, "(failure without a message)");
    report->file = file;
    report->line = line;
}

bool bp_conf_report_ok_at(const char *file, int line, bp_conf_report *report, bp_status st,
                          const char *expr) {
    if (st == BP_OK)
        return true;
    bp_conf_report_fail_at(file, line, report, "%s returned %s: %s", expr, bp_status_str(st),
                           bp_last_error());
    return false;
}

void bp_conf_report_check_at(const char *file, int line, const bp_conf_report *report,
                             const char *who) {
    if (report->failure[0])
        bp_conf_fail_at(report->file ? report->file : file, report->file ? report->line : line,
                        "%s: %s", who, report->failure);
}
