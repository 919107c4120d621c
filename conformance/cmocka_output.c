/* bp-conformance runner: cmocka's report of one test as a message (cmocka_output.h). */
#include "cmocka_output.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

#define ERROR_PREFIX "[  ERROR   ] --- "
#define LINE_PREFIX "[   LINE   ] --- "
#define FAIL_MSG_PREFIX "ERROR: "
#define LOCATION_SUFFIX ": error: Failure!"
#define SKIPPED_FRAME "[  SKIPPED ]"

static bool starts_with(const char *s, size_t n, const char *prefix) {
    size_t len = strlen(prefix);
    return n >= len && memcmp(s, prefix, len) == 0;
}

/* cmocka's own lines around a test, dropped from the message. */
static bool is_framing(const char *line, size_t n, bool *skipped) {
    static const char *const frames[] = {
        "[==========]", "[ RUN      ]", "[       OK ]", "[  PASSED  ]", "[  FAILED  ]",
        "[  ERROR   ]",
    };
    if (starts_with(line, n, SKIPPED_FRAME)) {
        *skipped = true;
        return true;
    }
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++)
        if (starts_with(line, n, frames[i]))
            return true;
    /* The closing " 1 FAILED TEST(S)" / " 1 SKIPPED TEST(S)" of the group summary. */
    size_t i = 0;
    while (i < n && line[i] == ' ')
        i++;
    if (i == n || !isdigit((unsigned char)line[i]))
        return false;
    while (i < n && isdigit((unsigned char)line[i]))
        i++;
    const char *rest = line + i;
    size_t rest_n = n - i;
    return (rest_n == strlen(" FAILED TEST(S)") && memcmp(rest, " FAILED TEST(S)", rest_n) == 0) ||
           (rest_n == strlen(" SKIPPED TEST(S)") && memcmp(rest, " SKIPPED TEST(S)", rest_n) == 0);
}

/* "/path/to/group_memory.c:123: error: Failure!" as "group_memory.c:123". */
static void add_location(bp_conf_strbuf *loc, const char *text, size_t n) {
    size_t suffix = strlen(LOCATION_SUFFIX);
    if (n >= suffix && memcmp(text + n - suffix, LOCATION_SUFFIX, suffix) == 0)
        n -= suffix;
    const char *base = text;
    for (size_t i = 0; i < n; i++)
        if (text[i] == '/')
            base = text + i + 1;
    n -= (size_t)(base - text);
    if (loc->len == 0 && n > 0)
        bp_conf_strbuf_append(loc, base, n);
}

static void add_line(bp_conf_strbuf *sb, const char *text, size_t n) {
    if (sb->len > 0)
        bp_conf_strbuf_puts(sb, "\n");
    bp_conf_strbuf_append(sb, text, n);
}

/* The parts of the output, sorted line by line. */
typedef struct parts {
    bp_conf_strbuf failure;  /* the failure text */
    bp_conf_strbuf location; /* where it failed */
    bp_conf_strbuf other;    /* what else was printed */
    bool in_error;           /* inside a multi-line "[  ERROR   ]" block */
} parts;

static void sort_line(parts *p, const char *line, size_t n, bool *skipped) {
    if (starts_with(line, n, ERROR_PREFIX)) {
        line += strlen(ERROR_PREFIX);
        n -= strlen(ERROR_PREFIX);
        p->in_error = true;
        if (!starts_with(line, n, LINE_PREFIX)) {
            if (n > 0)
                add_line(&p->failure, line, n);
            return;
        }
    }
    if (starts_with(line, n, LINE_PREFIX)) {
        add_location(&p->location, line + strlen(LINE_PREFIX), n - strlen(LINE_PREFIX));
        p->in_error = false;
    } else if (is_framing(line, n, skipped)) {
        p->in_error = false;
    } else if (starts_with(line, n, FAIL_MSG_PREFIX)) {
        add_line(&p->failure, line + strlen(FAIL_MSG_PREFIX), n - strlen(FAIL_MSG_PREFIX));
    } else if (n == 0) {
        return;
    } else if (p->in_error) {
        add_line(&p->failure, line, n);
    } else {
        add_line(&p->other, line, n);
    }
}

/* Failure text, its first line carrying the location, then the other output. */
static char *compose(parts *p) {
    bp_conf_strbuf out = {0};
    const char *failure = p->failure.data ? p->failure.data : "";
    size_t first_len = strcspn(failure, "\n");
    if (first_len > 0)
        bp_conf_strbuf_append(&out, failure, first_len);
    if (p->location.len > 0)
        bp_conf_strbuf_printf(&out, first_len > 0 ? " (%s)" : "failed at %s", p->location.data);
    if (failure[first_len])
        bp_conf_strbuf_puts(&out, failure + first_len);
    if (p->other.len > 0) {
        if (out.len > 0)
            bp_conf_strbuf_puts(&out, "\n");
        bp_conf_strbuf_append(&out, p->other.data, p->other.len);
    }
    return bp_conf_strbuf_take(&out);
}

char *bp_conf_cmocka_message(const char *output, bool *skipped) {
    parts p = {0};
    *skipped = false;
    for (const char *line = output; *line;) {
        size_t n = strcspn(line, "\n");
        size_t text_n = n > 0 && line[n - 1] == '\r' ? n - 1 : n;
        sort_line(&p, line, text_n, skipped);
        line += n;
        if (*line == '\n')
            line++;
    }
    char *message = compose(&p);
    bool failed = p.failure.failed || p.location.failed || p.other.failed;
    bp_conf_strbuf_free(&p.failure);
    bp_conf_strbuf_free(&p.location);
    bp_conf_strbuf_free(&p.other);
    if (failed) {
        free(message);
        return NULL;
    }
    return message;
}
