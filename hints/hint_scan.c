/* The pre-pass of hint_scan.h. It tracks only what it needs of JSON: strings (so that
 * brackets and colons inside them are text) and bracket depth; a colon outside strings
 * at depth 1 separates a member of the hint object from its value. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/hints.h>

#include "hint_scan.h"

#define INT_EXACT_MAX 9007199254740992ull /* 2^53: the integers a double holds exactly */
/* Exponents saturate here: 10^15 is beyond any text's length, so past it only the
 * exponent's sign matters. */
#define EXPONENT_CAP 1000000000000000ll

static bool is_space(char c) { return (unsigned char)c <= ' ' && c != '\0'; }

static bp_status add_member(bp_hint_scan *out, size_t value_at) {
    if ((out->members & (out->members - 1)) == 0) { /* 0, 1, 2, 4 ...: grow */
        size_t capacity = out->members > 0 ? 2 * (size_t)out->members : 8;
        size_t *grown = realloc(out->value_at, capacity * sizeof *grown);
        if (grown == NULL) return bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
        out->value_at = grown;
    }
    out->value_at[out->members++] = value_at;
    return BP_OK;
}

bp_status bp_hint_scan_text(const char *json, size_t len, bp_hint_scan *out) {
    out->members = 0;
    out->value_at = NULL;
    int depth = 0;
    size_t key_at = 0; /* where the last string at depth 1 (a key) started */
    for (size_t i = 0; i < len; i++) {
        char c = json[i];
        if (c == '"') {
            size_t start = i;
            for (i++; i < len && json[i] != '"'; i++) {
                if (json[i] != '\\') continue;
                i++; /* the escaped character; strncmp stops at the text's end */
                if (i < len && strncmp(json + i, "u0000", 5) == 0)
                    return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                        "hints: a string at byte %zu contains \\u0000 (a NUL "
                                        "byte), which hint text cannot carry",
                                        start);
            }
            if (depth == 1) key_at = start;
        } else if (c == '{' || c == '[') {
            if (++depth > BP_HINTS_MAX_DEPTH)
                return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                    "hints: the text nests objects and arrays more than %d "
                                    "levels deep (BP_HINTS_MAX_DEPTH), at byte %zu of %zu",
                                    BP_HINTS_MAX_DEPTH, i, len);
        } else if (c == '}' || c == ']') {
            if (depth > 0) depth--;
        } else if (c == ':' && depth == 1) {
            if (out->members == BP_HINTS_MAX_KEYS)
                return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                                    "hints: the hint object has more than %d keys "
                                    "(BP_HINTS_MAX_KEYS): key %d starts at byte %zu of %zu",
                                    BP_HINTS_MAX_KEYS, BP_HINTS_MAX_KEYS + 1, key_at, len);
            size_t value_at = i + 1;
            while (value_at < len && is_space(json[value_at])) value_at++;
            bp_status st = add_member(out, value_at);
            if (st != BP_OK) return st;
        }
    }
    return BP_OK;
}

void bp_hint_scan_free(bp_hint_scan *scan) {
    free(scan->value_at);
    scan->value_at = NULL;
    scan->members = 0;
}

static size_t digits(const char *s) { return strspn(s, "0123456789"); }

bp_hint_integer bp_hint_scan_integer(const char *text, int64_t *out, size_t *out_len) {
    *out_len = strspn(text, "0123456789+-.eE");
    const char *p = text;
    bool negative = *p == '-';
    if (*p == '-' || *p == '+') p++;
    /* The mantissa is the digits of the integer part followed by those of the
     * fraction; the value is mantissa * 10^(exponent - fraction digits). */
    const char *int_digits = p;
    size_t int_len = digits(p);
    p += int_len;
    const char *frac_digits = p;
    size_t frac_len = 0;
    if (*p == '.') {
        frac_digits = ++p;
        frac_len = digits(p);
        p += frac_len;
    }
    long long exponent = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        bool exp_negative = *p == '-';
        if (*p == '-' || *p == '+') p++;
        for (; *p >= '0' && *p <= '9'; p++)
            if (exponent < EXPONENT_CAP) exponent = exponent * 10 + (*p - '0');
        if (exp_negative) exponent = -exponent;
    }
    size_t total = int_len + frac_len;
#define MANTISSA(k) ((k) < int_len ? int_digits[k] : frac_digits[(k) - int_len])
    size_t first = 0, last = total;
    while (first < total && MANTISSA(first) == '0') first++;
    if (first == total) {
        *out = 0;
        return BP_HINT_INTEGER_EXACT;
    }
    while (MANTISSA(last - 1) == '0') last--;
    /* value = mantissa[first, last) * 10^scale */
    long long scale = exponent - (long long)frac_len + (long long)(total - last);
    if (scale < 0) return BP_HINT_INTEGER_FRACTION;
    if ((long long)(last - first) + scale > 16) return BP_HINT_INTEGER_HUGE; /* >= 10^16 */
    uint64_t value = 0;
    for (size_t k = first; k < last; k++) value = value * 10 + (uint64_t)(MANTISSA(k) - '0');
    for (long long k = 0; k < scale; k++) value *= 10;
#undef MANTISSA
    if (value > INT_EXACT_MAX) return BP_HINT_INTEGER_HUGE;
    *out = negative ? -(int64_t)value : (int64_t)value;
    return BP_HINT_INTEGER_EXACT;
}
