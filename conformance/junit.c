/* bp-conformance runner: the JUnit XML report (junit.h). */
#include "junit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* The length of the UTF-8 sequence at s (1 to 4) when it encodes a character XML 1.0
 * allows, else 0. */
static size_t xml_char_len(const unsigned char *s) {
    uint32_t cp;
    size_t len;
    if (s[0] < 0x80) {
        cp = s[0];
        len = 1;
    } else if ((s[0] & 0xe0) == 0xc0) {
        cp = s[0] & 0x1fu;
        len = 2;
    } else if ((s[0] & 0xf0) == 0xe0) {
        cp = s[0] & 0x0fu;
        len = 3;
    } else if ((s[0] & 0xf8) == 0xf0) {
        cp = s[0] & 0x07u;
        len = 4;
    } else {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    static const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len])
        return 0; /* overlong */
    bool allowed = cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
                   (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
    return allowed ? len : 0;
}

/* Writes `s` escaped for XML text, or for an attribute value (where line breaks and
 * tabs are written as references so that parsers keep them). Bytes XML cannot carry
 * (control characters, broken UTF-8) are written as the text \xNN. */
static void put_escaped(FILE *f, const char *text, bool attribute) {
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        switch (*s) {
        case '&': fputs("&amp;", f); s++; continue;
        case '<': fputs("&lt;", f); s++; continue;
        case '>': fputs("&gt;", f); s++; continue;
        case '"': fputs("&quot;", f); s++; continue;
        case '\'': fputs("&apos;", f); s++; continue;
        case '\r': fputs("&#13;", f); s++; continue;
        case '\n':
        case '\t':
            if (attribute) {
                fprintf(f, "&#%d;", *s);
                s++;
                continue;
            }
            break;
        default:
            break;
        }
        size_t len = xml_char_len(s);
        if (len == 0) {
            fprintf(f, "\\x%02X", *s);
            s++;
        } else {
            fwrite(s, 1, len, f);
            s += len;
        }
    }
}

/* The first line of `text`, escaped as an attribute. */
static void put_first_line(FILE *f, const char *text) {
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(text, "\n"), text);
    put_escaped(f, line, true);
}

static void put_property(FILE *f, const char *name, const char *value) {
    fprintf(f, "    <property name=\"%s\" value=\"", name);
    put_escaped(f, value, true);
    fputs("\"/>\n", f);
}

static void put_properties(FILE *f, const bp_conf_options *o, const bp_conf_header *h) {
    char number[32];
    fputs("  <properties>\n", f);
    put_property(f, "device", h->name);
    put_property(f, "description", h->description);
    put_property(f, "backend", h->backend_name);
    put_property(f, "backend_version", h->backend_version);
    put_property(f, "plugin", h->plugin_path[0] ? h->plugin_path : "(built-in)");
    snprintf(number, sizeof number, "%" PRIu64, o->seed);
    put_property(f, "seed", number);
    snprintf(number, sizeof number, "%u", o->repeat);
    put_property(f, "repeat", number);
    put_property(f, "level", bp_conf_level_name(o->level));
    fputs("  </properties>\n", f);
}

static const char *failure_type(const bp_conf_case *c) {
    if (c->outcome == BP_CONF_OUT_XPASS)
        return "xpass";
    switch (c->kind) {
    case BP_CONF_CRASH: return "crash";
    case BP_CONF_TIMEOUT: return "timeout";
    case BP_CONF_FAILURE: break;
    }
    return "failure";
}

static void put_failure(FILE *f, const bp_conf_case *c, const char *message) {
    fprintf(f, "      <failure type=\"%s\" message=\"", failure_type(c));
    put_first_line(f, message);
    fputs("\">", f);
    put_escaped(f, message, false);
    fputs("</failure>\n", f);
}

/* What goes inside <testcase>, by outcome. */
static void put_case_body(FILE *f, const bp_conf_case *c, bool strict_xfail) {
    const char *message = c->message ? c->message : "";
    char xpass[1024];
    switch (c->outcome) {
    case BP_CONF_OUT_PASS:
        break;
    case BP_CONF_OUT_FAIL:
        put_failure(f, c, message);
        break;
    case BP_CONF_OUT_SKIP:
        fputs("      <skipped message=\"", f);
        put_first_line(f, message);
        fputs("\"/>\n", f);
        break;
    case BP_CONF_OUT_XFAIL:
        fputs("      <skipped message=\"expected failure: ", f);
        put_first_line(f, c->xfail_reason);
        fputs("\"/>\n      <system-out>", f);
        put_escaped(f, message, false);
        fputs("</system-out>\n", f);
        break;
    case BP_CONF_OUT_XPASS:
        snprintf(xpass, sizeof xpass, "passed although expected to fail: %s", c->xfail_reason);
        if (strict_xfail) {
            put_failure(f, c, xpass);
        } else {
            fputs("      <system-out>", f);
            put_escaped(f, xpass, false);
            fputs("</system-out>\n", f);
        }
        break;
    }
}

static void put_case(FILE *f, const bp_conf_case *c, bool strict_xfail) {
    fputs("    <testcase classname=\"", f);
    put_escaped(f, c->group->name, true);
    fputs("\" name=\"", f);
    put_escaped(f, c->test->name, true);
    fprintf(f, "\" time=\"%.3f\"", c->ms / 1e3);
    if (c->outcome == BP_CONF_OUT_PASS) {
        fputs("/>\n", f);
        return;
    }
    fputs(">\n", f);
    put_case_body(f, c, strict_xfail);
    fputs("    </testcase>\n", f);
}

typedef struct counts {
    size_t tests, failures, skipped;
} counts;

static counts count_cases(const bp_conf_case *cases, size_t n, bool strict_xfail) {
    counts k = {n, 0, 0};
    for (size_t i = 0; i < n; i++) {
        k.failures += bp_conf_report_is_failure(&cases[i], strict_xfail);
        k.skipped += cases[i].outcome == BP_CONF_OUT_SKIP || cases[i].outcome == BP_CONF_OUT_XFAIL;
    }
    return k;
}

static void put_suite(FILE *f, const bp_conf_plan_group *g, bool strict_xfail) {
    counts k = count_cases(g->cases, g->n_cases, strict_xfail);
    fputs("  <testsuite name=\"", f);
    put_escaped(f, g->group->name, true);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.3f\">\n",
            k.tests, k.failures, k.skipped, g->seconds);
    for (size_t i = 0; i < g->n_cases; i++)
        put_case(f, &g->cases[i], strict_xfail);
    fputs("  </testsuite>\n", f);
}

bool bp_conf_junit_write(const bp_conf_options *o, const bp_conf_plan *plan,
                         const bp_conf_header *h, double seconds) {
    FILE *f = fopen(o->junit, "w");
    if (!f) {
        fprintf(stderr, "bp-conformance: cannot write the JUnit report '%s': %s\n", o->junit,
                strerror(errno));
        return false;
    }
    counts k = count_cases(plan->cases, plan->n_cases, o->strict_xfail);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f,
            "<testsuites name=\"bp-conformance\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
            "skipped=\"%zu\" time=\"%.3f\">\n",
            k.tests, k.failures, k.skipped, seconds);
    put_properties(f, o, h);
    for (size_t g = 0; g < plan->n_groups; g++)
        put_suite(f, &plan->groups[g], o->strict_xfail);
    fputs("</testsuites>\n", f);
    bool ok = !ferror(f);
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok)
        fprintf(stderr, "bp-conformance: cannot write the JUnit report '%s': %s\n", o->junit,
                strerror(saved));
    return ok;
}
