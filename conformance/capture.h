/* bp-conformance runner: capturing what one test prints (cmocka's report included).
 *
 * The child points its stdout and stderr (file descriptors 1 and 2, so output of the
 * backend and of the test's worker threads is caught too) at a temporary file while a
 * test runs, then restores them and reads the file back. The parent creates the file
 * and keeps it open: when the child dies inside a test, what the test printed until
 * then (an abort message, a sanitizer report) is still there for the parent to read. */
#ifndef BP_CONF_CAPTURE_H
#define BP_CONF_CAPTURE_H

#include <stdbool.h>

typedef struct bp_conf_capture {
    int fd;         /* the temporary file, reused by every test; not owned */
    int saved_out;  /* the real stdout and stderr while capturing; -1 otherwise */
    int saved_err;
} bp_conf_capture;

/* Captures into the file open as `fd`. */
void bp_conf_capture_init(bp_conf_capture *capture, int fd);

/* Starts capturing into the emptied file; false with errno set when it cannot (nothing
 * is redirected then). */
bool bp_conf_capture_begin(bp_conf_capture *capture);

/* Stops capturing and returns what was written (the first part of it when huge), or
 * NULL when out of memory. The caller frees it. */
char *bp_conf_capture_end(bp_conf_capture *capture);

/* Stops capturing, if it was. */
void bp_conf_capture_close(bp_conf_capture *capture);

/* What the file open as `fd` holds (the first part of it when huge), or NULL when out
 * of memory. For the parent, after a child died while capturing. */
char *bp_conf_capture_read(int fd);

#endif
