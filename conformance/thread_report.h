/* What a worker thread of a test saw. cmocka assertions work only on the thread that
 * runs the test, so a worker records its first failure here, with the file and line
 * of the test's code that saw it, and the test fails with it, at that line, after
 * joining (bp_conf_report_check).
 *
 * The functions that record or check are macros of the names documented below over
 * functions with "_at", which take the caller's __FILE__ and __LINE__ first. */
#ifndef BP_CONF_THREAD_REPORT_H
#define BP_CONF_THREAD_REPORT_H

#include <stdbool.h>

#include <backplane/backplane.h>

typedef struct bp_conf_report {
    char failure[320]; /* the first failure, "" while none */
    const char *file;  /* where the test's code recorded it */
    int line;
} bp_conf_report;

/* Records a printf-style failure unless one is already recorded (the first one is the
 * cause; later ones are usually its consequences). Thread-safe for distinct reports. */
#define bp_conf_report_fail(report, ...) \
    bp_conf_report_fail_at(__FILE__, __LINE__, report, __VA_ARGS__)
void bp_conf_report_fail_at(const char *file, int line, bp_conf_report *report, const char *fmt,
                            ...) __attribute__((format(printf, 4, 5)));

/* Records a failure naming `expr` and bp_last_error() unless `st` is BP_OK; returns
 * whether it was. */
#define bp_conf_report_ok(...) bp_conf_report_ok_at(__FILE__, __LINE__, __VA_ARGS__)
bool bp_conf_report_ok_at(const char *file, int line, bp_conf_report *report, bp_status st,
                          const char *expr);

/* Records `expr` on the worker's report when it does not return BP_OK; evaluates to
 * true when it did, so a worker can stop a sequence at the first failure. */
#define BP_CONF_REPORT_OK(report, expr) bp_conf_report_ok((report), (expr), #expr)

/* On the test's thread, after joining: fails the test with the recorded failure, if
 * any, prefixed by `who` ("thread 3"), at the line that recorded it. */
#define bp_conf_report_check(...) bp_conf_report_check_at(__FILE__, __LINE__, __VA_ARGS__)
void bp_conf_report_check_at(const char *file, int line, const bp_conf_report *report,
                             const char *who);

#endif
