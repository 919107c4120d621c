/* bp-conformance runner: a growable string. Out of memory is sticky: appends after it
 * do nothing and bp_conf_strbuf_take returns NULL, so callers check once at the end. */
#ifndef BP_CONF_STRBUF_H
#define BP_CONF_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bp_conf_strbuf {
    char *data; /* NUL-terminated once anything was appended */
    size_t len;
    size_t cap;
    bool failed;
} bp_conf_strbuf;

void bp_conf_strbuf_append(bp_conf_strbuf *sb, const char *s, size_t n);
void bp_conf_strbuf_puts(bp_conf_strbuf *sb, const char *s);
void bp_conf_strbuf_printf(bp_conf_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The string, now owned by the caller ("" when nothing was appended), or NULL when an
 * allocation failed; the buffer is empty again either way. */
char *bp_conf_strbuf_take(bp_conf_strbuf *sb);

void bp_conf_strbuf_free(bp_conf_strbuf *sb);

#endif
