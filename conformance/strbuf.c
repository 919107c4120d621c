/* bp-conformance runner: a growable string (strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(bp_conf_strbuf *sb, size_t extra) {
    if (sb->failed)
        return false;
    if (sb->cap - sb->len > extra)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap - sb->len <= extra)
        cap *= 2;
    char *grown = realloc(sb->data, cap);
    if (!grown) {
        sb->failed = true;
        return false;
    }
    sb->data = grown;
    sb->cap = cap;
    return true;
}

void bp_conf_strbuf_append(bp_conf_strbuf *sb, const char *s, size_t n) {
    if (!reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void bp_conf_strbuf_puts(bp_conf_strbuf *sb, const char *s) {
    bp_conf_strbuf_append(sb, s, strlen(s));
}

void bp_conf_strbuf_printf(bp_conf_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

char *bp_conf_strbuf_take(bp_conf_strbuf *sb) {
    char *s = sb->failed ? NULL : sb->data ? sb->data : strdup("");
    if (sb->failed)
        free(sb->data);
    *sb = (bp_conf_strbuf){0};
    return s;
}

void bp_conf_strbuf_free(bp_conf_strbuf *sb) {
    free(sb->data);
    *sb = (bp_conf_strbuf){0};
}
