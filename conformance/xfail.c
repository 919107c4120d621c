/* bp-conformance runner: the expected-failures file; the format is described in xfail.h. */
#include "xfail.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Removes surrounding blanks in place; returns the start of what is left. */
static char *trim(char *s) {
    while (is_blank(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int file_error(const char *path, unsigned line, const char *what, const char *text) {
    fprintf(stderr, "bp-conformance: %s:%u: %s: '%s'\n", path, line, what, text);
    return 2;
}

/* Adds the entry of one meaningful line; 0, or 2 after printing why not. */
static int add_entry(bp_conf_xfail *x, const char *path, unsigned line, char *text) {
    size_t glob_len = 0;
    while (text[glob_len] && text[glob_len] != ' ' && text[glob_len] != '\t')
        glob_len++;
    char *reason = trim(text + glob_len);
    if (!reason[0])
        return file_error(path, line, "an expected failure needs a reason after the pattern",
                          text);
    bp_conf_xfail_entry *grown = realloc(x->entries, (x->n_entries + 1) * sizeof *grown);
    if (!grown)
        return file_error(path, line, "out of memory", text);
    x->entries = grown;
    bp_conf_xfail_entry e = {strndup(text, glob_len), strdup(reason), line};
    if (!e.glob || !e.reason) {
        free(e.glob);
        free(e.reason);
        return file_error(path, line, "out of memory", text);
    }
    x->entries[x->n_entries++] = e;
    return 0;
}

int bp_conf_xfail_load(const char *path, bp_conf_xfail *x) {
    *x = (bp_conf_xfail){0};
    if (!path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bp-conformance: cannot read the expected failures '%s': %s\n", path,
                strerror(errno));
        return 2;
    }
    char *buf = NULL;
    size_t cap = 0;
    unsigned line = 0;
    int rc = 0;
    while (rc == 0 && getline(&buf, &cap, f) >= 0) {
        line++;
        char *text = trim(buf);
        if (text[0] && text[0] != '#')
            rc = add_entry(x, path, line, text);
    }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "bp-conformance: cannot read the expected failures '%s': %s\n", path,
                strerror(errno));
        rc = 2;
    }
    free(buf);
    fclose(f);
    return rc;
}

void bp_conf_xfail_free(bp_conf_xfail *x) {
    for (size_t i = 0; i < x->n_entries; i++) {
        free(x->entries[i].glob);
        free(x->entries[i].reason);
    }
    free(x->entries);
    *x = (bp_conf_xfail){0};
}

const bp_conf_xfail_entry *bp_conf_xfail_match(const bp_conf_xfail *x, const char *full_name) {
    for (size_t i = 0; i < x->n_entries; i++)
        if (fnmatch(x->entries[i].glob, full_name, 0) == 0)
            return &x->entries[i];
    return NULL;
}
