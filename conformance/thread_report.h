/* What a worker thread of a test saw. cmocka assertions work only on the thread that
 * runs the test, so a worker records its first failure here and the test fails with
 * it after joining (bp_conf_report_check). */
#ifndef BP_CONF_THREAD_REPORT_H
#define BP_CONF_THREAD_REPORT_H

#include <stdbool.h>

#include <backplane/backplane.h>

typedef struct bp_conf_report {
    char failure[320]; /* the first failure, "" while none */
} bp_conf_report;

/* Records a printf-style failure unless one is already recorded (the first one is the
 * cause; later ones are usually its consequences). Thread-safe for distinct reports. */
void bp_conf_report_fail(bp_conf_report *report, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records a failure naming `expr` and bp_last_error() unless `st` is BP_OK; returns
 * whether it was. */
bool bp_conf_report_ok(bp_conf_report *report, bp_status st, const char *expr);

/* Records `expr` on the worker's report when it does not return BP_OK; evaluates to
 * true when it did, so a worker can stop a sequence at the first failure. */
#define BP_CONF_REPORT_OK(report, expr) bp_conf_report_ok((report), (expr), #expr)

/* On the test's thread, after joining: fails the test with the recorded failure, if
 * any, prefixed by `who` ("thread 3"). */
void bp_conf_report_check(const bp_conf_report *report, const char *who);

#endif
