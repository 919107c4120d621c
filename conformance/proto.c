/* bp-conformance runner: messages over the child's pipe (proto.h). */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

bool bp_conf_msg_send(int fd, bp_conf_msg_type type, uint32_t test, uint32_t status, double ms,
                      const void *payload, size_t len) {
    if (len > BP_CONF_MSG_MAX_PAYLOAD)
        len = BP_CONF_MSG_MAX_PAYLOAD;
    bp_conf_msg msg = {(uint32_t)type, test, status, (uint32_t)len, ms};
    return write_all(fd, &msg, sizeof msg) && (len == 0 || write_all(fd, payload, len));
}

long bp_conf_reader_fill(bp_conf_reader *r, int fd) {
    if (r->cap - r->len < 4096) {
        size_t cap = r->cap ? r->cap * 2 : 8192;
        char *grown = realloc(r->buf, cap);
        if (!grown) {
            errno = ENOMEM;
            return -1;
        }
        r->buf = grown;
        r->cap = cap;
    }
    ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? -2 : -1;
    r->len += (size_t)n;
    return (long)n;
}

bool bp_conf_reader_next(bp_conf_reader *r, bp_conf_msg *msg, char **payload) {
    *payload = NULL;
    if (r->len < sizeof *msg)
        return false;
    memcpy(msg, r->buf, sizeof *msg);
    size_t total = sizeof *msg + msg->len;
    if (r->len < total)
        return false;
    *payload = malloc((size_t)msg->len + 1);
    if (*payload) {
        memcpy(*payload, r->buf + sizeof *msg, msg->len);
        (*payload)[msg->len] = '\0';
    }
    memmove(r->buf, r->buf + total, r->len - total);
    r->len -= total;
    return true;
}

void bp_conf_reader_free(bp_conf_reader *r) {
    free(r->buf);
    *r = (bp_conf_reader){0};
}
