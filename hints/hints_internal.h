/* Internal contract of hints/ for the rest of the core (the region executor). Not
 * installed; backends never see it. A hint set is an immutable-after-build list of
 * keys with their parsed values; scopes and regions hold merged sets. */
#ifndef BP_HINTS_INTERNAL_H
#define BP_HINTS_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <backplane/hints.h>

#include "hal_internal.h"

#define BP_HINT_REASON_MAX 160

/* The keys backplane understands; everything else is BP_HINT_KEY_UNKNOWN. */
typedef enum bp_hint_key {
    BP_HINT_KEY_UNKNOWN = 0,
    BP_HINT_KEY_ORDER,
    BP_HINT_KEY_SCHEDULE_POLICY, /* the Gaudi bridge's synonym of order=strict */
    BP_HINT_KEY_GROUP_ID,
    BP_HINT_KEY_MAX_PARALLEL,
    BP_HINT_KEY_MEM_BUDGET_MB,
} bp_hint_key;

typedef struct bp_hint_item {
    char *key;                 /* owned */
    char *value;               /* owned: compact JSON text of the value */
    bp_hint_key kind;
    int scope_depth;           /* 1 = outermost scope; 0 = a set parsed on its own */
    bp_hint_disposition disposition;
    char reason[BP_HINT_REASON_MAX];
} bp_hint_item;

typedef struct bp_hint_set {
    bp_hint_values values;     /* the known keys' values, struct_size filled */
    int count;
    bp_hint_item *items;       /* count entries, outer scope's first */
} bp_hint_set;

/* Parses hint text into a new set (caller frees with bp_hint_set_free). NULL or ""
 * gives an empty set. Items get scope_depth `depth`, disposition PENDING for known
 * keys and IGNORED "unknown key" for the others. Errors: BP_ERR_INVALID_ARGUMENT with
 * the message bp_hints_push documents ("hints: ..."), BP_ERR_OUT_OF_MEMORY. Thread-safe
 * (see the note on cJSON's error pointer in hints.c). */
BP_INTERNAL bp_status bp_hint_set_parse(const char *json, int depth, bp_hint_set **out_set);

/* A new set: `outer` (may be NULL) with every key that `inner` (may be NULL) gives
 * replaced by inner's (order and schedule_policy replace each other). Outer's items
 * keep their place; inner's follow. Errors: BP_ERR_OUT_OF_MEMORY. */
BP_INTERNAL bp_status bp_hint_set_merge(const bp_hint_set *outer, const bp_hint_set *inner,
                                        bp_hint_set **out_set);

/* Frees a set from parse or merge; NULL is a no-op. */
BP_INTERNAL void bp_hint_set_free(bp_hint_set *set);

/* Copies `set`'s values into *out honouring out->struct_size (see bp_hints_effective);
 * a NULL set gives all-unset values. */
BP_INTERNAL bp_status bp_hint_set_values(const bp_hint_set *set, bp_hint_values *out);

/* Fills *out with item `index` (pointers into `set`); errors as bp_hints_entry. */
BP_INTERNAL bp_status bp_hint_set_entry(const bp_hint_set *set, int index, bp_hint_entry *out);

/* The item whose key is `key` (exact), or NULL. */
BP_INTERNAL bp_hint_item *bp_hint_set_find(bp_hint_set *set, const char *key);

/* Records what became of item `item` in a region: HONOURED or IGNORED, with a reason
 * (printf format; truncated to BP_HINT_REASON_MAX). */
BP_INTERNAL void bp_hint_item_mark(bp_hint_item *item, bp_hint_disposition disposition,
                                   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The calling thread's effective set (the innermost scope's merged set), or NULL when
 * no scope is open. Owned by the scope: valid until it is popped. */
BP_INTERNAL const bp_hint_set *bp_hints_current(void);

/* What a region captures at its begin: the calling thread's scopes merged with the
 * region's own hint text `json` (NULL or "" for none), as a new set the caller owns.
 * The region's own keys get scope_depth bp_hints_depth() + 1. Errors as parse. */
BP_INTERNAL bp_status bp_hints_snapshot(const char *json, bp_hint_set **out_set);

#endif
