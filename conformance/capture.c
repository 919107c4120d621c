/* bp-conformance runner: capturing a test's output (capture.h). */
#include "capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strbuf.h"

/* More than this of one test's output is cut: the message goes through a pipe and into
 * a JUnit file, and the first part is what explains a failure. */
#define BP_CONF_CAPTURE_MAX ((size_t)64 << 10)

static int dup2_retry(int from, int to) {
    int rc;
    while ((rc = dup2(from, to)) < 0 && errno == EINTR) {
    }
    return rc;
}

void bp_conf_capture_init(bp_conf_capture *c, int fd) {
    c->fd = fd;
    c->saved_out = -1;
    c->saved_err = -1;
}

/* Puts the real stdout and stderr back. */
static void restore(bp_conf_capture *c) {
    fflush(stdout);
    fflush(stderr);
    if (c->saved_out >= 0) {
        dup2_retry(c->saved_out, STDOUT_FILENO);
        close(c->saved_out);
    }
    if (c->saved_err >= 0) {
        dup2_retry(c->saved_err, STDERR_FILENO);
        close(c->saved_err);
    }
    c->saved_out = -1;
    c->saved_err = -1;
}

bool bp_conf_capture_begin(bp_conf_capture *c) {
    int fd = c->fd;
    fflush(stdout);
    fflush(stderr);
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        return false;
    c->saved_out = dup(STDOUT_FILENO);
    c->saved_err = dup(STDERR_FILENO);
    if (c->saved_out < 0 || c->saved_err < 0 || dup2_retry(fd, STDOUT_FILENO) < 0 ||
        dup2_retry(fd, STDERR_FILENO) < 0) {
        int saved = errno;
        restore(c);
        errno = saved;
        return false;
    }
    return true;
}

char *bp_conf_capture_read(int fd) {
    const size_t max = BP_CONF_CAPTURE_MAX;
    struct stat st;
    size_t size = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0;
    size_t want = size < max ? size : max;
    bp_conf_strbuf sb = {0};
    char chunk[8192];
    size_t done = 0;
    while (done < want) {
        size_t n = want - done < sizeof chunk ? want - done : sizeof chunk;
        ssize_t got = pread(fd, chunk, n, (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        bp_conf_strbuf_append(&sb, chunk, (size_t)got);
        done += (size_t)got;
    }
    if (size > done)
        bp_conf_strbuf_printf(&sb, "\n... (%zu more bytes of output cut)\n", size - done);
    return bp_conf_strbuf_take(&sb);
}

char *bp_conf_capture_end(bp_conf_capture *c) {
    restore(c);
    return bp_conf_capture_read(c->fd);
}

void bp_conf_capture_close(bp_conf_capture *c) {
    restore(c);
}
