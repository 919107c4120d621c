/* A linear pre-pass over hint text, before cJSON parses it: the limits of
 * <backplane/hints.h> and embedded NULs, and where each top-level value starts (cJSON
 * keeps numbers only as doubles, which cannot tell 2^53 + 1 from 2^53). */
#ifndef BP_HINTS_HINT_SCAN_H
#define BP_HINTS_HINT_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "hal_internal.h"

typedef struct bp_hint_scan {
    int members;      /* the top-level object's members (0 for any other text) */
    size_t *value_at; /* byte offset of each member's value, in text order */
} bp_hint_scan;

/* Scans the `len` bytes of `json`. Errors (BP_ERR_INVALID_ARGUMENT, "hints: ..." with
 * the byte offset): objects and arrays nested deeper than BP_HINTS_MAX_DEPTH, more than
 * BP_HINTS_MAX_KEYS members, a string with a \u0000 escape. Malformed JSON is not an
 * error here (cJSON reports it); for valid JSON the members are cJSON's children.
 * BP_ERR_OUT_OF_MEMORY. The caller frees *out with bp_hint_scan_free, also on error. */
BP_INTERNAL bp_status bp_hint_scan_text(const char *json, size_t len, bp_hint_scan *out);

BP_INTERNAL void bp_hint_scan_free(bp_hint_scan *scan);

typedef enum bp_hint_integer {
    BP_HINT_INTEGER_EXACT,    /* *out holds the value */
    BP_HINT_INTEGER_FRACTION, /* not an integer (1.5, 1e-400) */
    BP_HINT_INTEGER_HUGE,     /* an integer of magnitude above 2^53 */
} bp_hint_integer;

/* The JSON number at `text` (as cJSON accepted it), read exactly from its decimal
 * digits; *out_len gets the length of the number's text. */
BP_INTERNAL bp_hint_integer bp_hint_scan_integer(const char *text, int64_t *out,
                                                 size_t *out_len);

#endif
