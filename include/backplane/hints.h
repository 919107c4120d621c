/* backplane: context hints: JSON key/values that tell a backend what the user values
 * (speed or memory), in per-thread scopes that nest. docs/hints.md has the keys and
 * their meaning. Regions, which read these hints to schedule recorded work, come with
 * <backplane/region.h>. */
#ifndef BACKPLANE_HINTS_H
#define BACKPLANE_HINTS_H

#include <stdint.h>
#include <backplane/export.h>
#include <backplane/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Limits of hint text, checked before anything is parsed or pushed: one text has at
 *  most BP_HINTS_MAX_KEYS keys, and so have a thread's open scopes together; objects
 *  and arrays nest at most BP_HINTS_MAX_DEPTH levels (the hint object is level 1).
 *  Beyond either, bp_hints_push and bp_hints_validate fail with
 *  BP_ERR_INVALID_ARGUMENT naming the limit. */
#define BP_HINTS_MAX_KEYS 4096
#define BP_HINTS_MAX_DEPTH 32

/** The order a recorded region's independent chains run in (hint key `order`). */
typedef enum bp_schedule_order {
    BP_ORDER_UNSET = 0, /**< no hint: the executor's default (bfs) */
    BP_ORDER_BFS,       /**< level order: every chain's first op, then every second op ... */
    BP_ORDER_DFS,       /**< program order: each chain finishes before the next starts */
    BP_ORDER_STRICT,    /**< program order, as dfs; the Gaudi bridge's `schedule_policy` */
    BP_ORDER_AUTO,      /**< the fastest schedule that fits `mem_budget_mb` */
} bp_schedule_order;

/** The hint name of an order ("bfs", "dfs", "strict", "auto"; "unset" for
 *  BP_ORDER_UNSET, "?" for a value out of range). Never NULL; thread-safe. */
BP_API const char *bp_schedule_order_name(bp_schedule_order order);

/** The effective values of the known keys. Set struct_size = sizeof(bp_hint_values)
 *  before passing it in; fields are only appended in later versions. */
typedef struct bp_hint_values {
    uint32_t struct_size;
    bp_schedule_order order;  /**< `order` or `schedule_policy`; BP_ORDER_UNSET if none */
    int has_group_id;         /**< 1 when `group_id` is set */
    int64_t group_id;         /**< `group_id` (an integer, |value| <= 2^53) */
    int has_max_parallel;     /**< 1 when `max_parallel` is set */
    int max_parallel;         /**< `max_parallel` (>= 1): the bfs width in streams */
    int has_mem_budget;       /**< 1 when `mem_budget_mb` is set */
    double mem_budget_mb;     /**< `mem_budget_mb` (>= 0, finite): the auto budget */
} bp_hint_values;

/** What became of one hint. Scopes report BP_HINT_PENDING for the keys backplane knows
 *  (a region decides them when it runs) and BP_HINT_IGNORED ("unknown key") for the
 *  rest; a region report says HONOURED or IGNORED with the backend's reason. */
typedef enum bp_hint_disposition {
    BP_HINT_PENDING = 0,
    BP_HINT_HONOURED,
    BP_HINT_IGNORED,
} bp_hint_disposition;

/** One key in effect. Set struct_size = sizeof(bp_hint_entry) before passing it in.
 *  The strings belong to the innermost scope open at the time of the call: they stay
 *  valid until that scope is popped, on the calling thread only. */
typedef struct bp_hint_entry {
    uint32_t struct_size;
    const char *key;                 /**< the key as written ("order") */
    const char *value;               /**< the value as compact JSON text ("\"strict\"", "4") */
    int scope_depth;                 /**< the scope that set it: 1 = outermost */
    int known;                       /**< 1 for a key backplane understands */
    bp_hint_disposition disposition; /**< see bp_hint_disposition */
    const char *reason;              /**< why (for IGNORED, e.g. "unknown key"); "" if none */
} bp_hint_entry;

/** Parses `json` and opens a hint scope on the calling thread with it, on top of the
 *  scopes already open: a key given here overrides the same key of an outer scope
 *  until bp_hints_pop (`order` and `schedule_policy` count as one key). NULL or ""
 *  opens an empty scope (no hints; it still needs its pop).
 *  Errors: BP_ERR_INVALID_ARGUMENT for text that is not a valid hint object, with a
 *  message naming the key, or the byte offset for malformed JSON; for a text beyond
 *  the limits above, or whose keys would put more than BP_HINTS_MAX_KEYS in effect;
 *  for a string holding \u0000 (an embedded NUL cannot be carried); nothing is pushed
 *  then. BP_ERR_OUT_OF_MEMORY. Scopes are per thread: other threads never see them. */
BP_API bp_status bp_hints_push(const char *json);

/** Closes the innermost hint scope of the calling thread and frees it.
 *  Errors: BP_ERR_INVALID_STATE when no scope is open. */
BP_API bp_status bp_hints_pop(void);

/** Number of hint scopes open on the calling thread (0 when none). */
BP_API int bp_hints_depth(void);

/** The merged view of the calling thread's scopes (inner key overriding outer key),
 *  written to *out (out->struct_size must be set; a larger struct from a newer header
 *  gets its extra fields zeroed). With no scope open every field is unset.
 *  Errors: BP_ERR_INVALID_ARGUMENT for NULL or a struct_size below this version's. */
BP_API bp_status bp_hints_effective(bp_hint_values *out);

/** Number of keys in effect on the calling thread, known and unknown (0 when no
 *  scope is open). Entries run from the outermost scope's keys to the innermost's,
 *  each scope's in the order of its text; an overridden key is not listed. */
BP_API int bp_hints_count(void);

/** Entry `index` (0 .. bp_hints_count()-1) of the keys in effect (out->struct_size
 *  must be set). Errors: BP_ERR_INVALID_ARGUMENT for NULL, a struct_size too small or
 *  an index out of range. */
BP_API bp_status bp_hints_entry(int index, bp_hint_entry *out);

/** Checks that `json` is valid hint text, as bp_hints_push would, without opening a
 *  scope (for tools and for checking configuration early). NULL and "" are valid.
 *  Unknown keys are not errors. Errors as bp_hints_push. Thread-safe. */
BP_API bp_status bp_hints_validate(const char *json);

/** Saved state of a scoped hint block (BP_HINTS_SCOPE); treat the fields as private. */
typedef struct bp_hints_scope {
    int depth;  /* bp_hints_depth() after the push */
    int active;
} bp_hints_scope;

/** bp_hints_push(json), remembering the scope in `scope` for bp_hints_scope_end.
 *  On error the scope is left inactive and its end is a no-op. */
BP_API bp_status bp_hints_scope_begin(bp_hints_scope *scope, const char *json);

/** Closes the scope opened by the matching begin, and any scope still open inside it
 *  (so a forgotten inner pop cannot leak into the caller). Idempotent. */
BP_API void bp_hints_scope_end(bp_hints_scope *scope);

/* Scoped form (GCC and Clang): the scope closes when the enclosing block is left, by
 * falling off its end, by return, break or goto, so error paths close it too.
 *
 *     bp_status st;
 *     BP_HINTS_SCOPE("{\"order\":\"strict\",\"group_id\":0}", &st);
 *     if (st != BP_OK) return st;
 *     ... begin and end a region: it runs depth-first ...
 */
#define BP_HINTS_CAT_(a, b) a##b
#define BP_HINTS_CAT(a, b) BP_HINTS_CAT_(a, b)
#define BP_HINTS_SCOPE(json, out_status)                                                     \
    bp_hints_scope BP_HINTS_CAT(bp_hints_scope_, __LINE__)                                  \
        __attribute__((cleanup(bp_hints_scope_end))) = {.depth = 0, .active = 0};           \
    *(out_status) = bp_hints_scope_begin(&BP_HINTS_CAT(bp_hints_scope_, __LINE__), (json))

#ifdef __cplusplus
}
#endif
#endif
