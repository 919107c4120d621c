/* Internal contract between the loader's files: loader.c (records, validation,
 * activation, public API), plugin_choice.c (which candidates to use, and their
 * aliases), plugin_discovery.c (where candidates are found) and plugin_file.c (whether
 * a candidate file may be opened). Every function here runs under the loader lock. */
#ifndef BP_LOADER_INTERNAL_H
#define BP_LOADER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal_internal.h"

#define REASON_LIMIT 1024    /* longest reason or note kept for a candidate */
#define PATH_MAX_REASON 4096 /* longest path quoted in a reason */

typedef struct plugin_record {
    const char *name; /* strings are copied (bounded) or "" and kept until exit */
    const char *version;
    const char *path;
    const char *reason;
    const char *unavailable_reason;
    const char *aliases_kept; /* comma-separated, set when it is activated */
    char *notes;              /* "; "-separated, grows; NULL when there are none */
    char *real_path;          /* NULL when the path could not be resolved */
    uint32_t abi_major;
    uint32_t abi_minor;
    int32_t priority;
    bp_plugin_state state;
    bp_status status;
    bp_backend *backend; /* its registry entry once chosen (PENDING until its init has
                          * run); NULL for a skipped candidate */
    /* A validated candidate waiting for the duplicate / BP_PLUGINS decision or, once
     * chosen, for its init, with the aliases it asked for (copied) and which of them
     * it keeps. */
    void *dl;
    const bp_plugin_descriptor *desc;
    int alias_count;
    char aliases[BP_MAX_ALIASES][BP_BACKEND_NAME_MAX];
    bool alias_kept[BP_MAX_ALIASES];
} plugin_record;

/* ---- loader.c ---- */

BP_INTERNAL plugin_record *bp_loader_record(int i);
BP_INTERNAL int bp_loader_record_count(void);
/* Appends a record for `path`, state SKIPPED until decided. -1 when out of memory. */
BP_INTERNAL int bp_loader_record_add(const char *path);
/* Marks record i skipped with a reason, unloads its library, logs, returns `status`. */
BP_INTERNAL bp_status bp_loader_reject(int i, bp_log_level level, bp_status status,
                                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Writes a reason into why[n] and returns `status`: the checks' one way to fail. */
BP_INTERNAL bp_status bp_loader_reason(char *why, size_t n, bp_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds a sentence to record i's notes and logs it as a warning. */
BP_INTERNAL void bp_loader_note(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Recomputes record i's aliases_kept from alias_kept[] (the old text stays valid). */
BP_INTERNAL void bp_loader_refresh_aliases(int i);
/* Opens and validates one candidate file, appending its record (see loader.c). */
BP_INTERNAL bp_status bp_loader_consider_file(const char *path, int first, bool explicit_load);

/* ---- plugin_choice.c ---- */

/* Picks which validated candidates of records [first, end) to use, into `order` (the
 * BP_PLUGINS order when set, else discovery order), decides every chosen one's aliases
 * against all candidates and the loaded backends, and rejects the others. Returns how
 * many were chosen. */
BP_INTERNAL int bp_loader_choose(int first, int end, int *order);
/* For an explicit load (record i): drops the aliases that loaded backends hold, and
 * takes its name back from a loaded backend that has it as an alias. */
BP_INTERNAL void bp_loader_settle_explicit(int i);

/* ---- plugin_discovery.c ---- */

/* Considers every candidate of BP_PLUGIN_PATH, the directory beside libbackplane and
 * the install directory; their records start at `first`. */
BP_INTERNAL void bp_loader_discover(int first);

/* ---- plugin_file.c ---- */

typedef enum bp_trust_policy {
    BP_TRUST_ENFORCE = 0,
    BP_TRUST_ALLOW_INSECURE = 1, /* BP_PLUGIN_ALLOW_INSECURE=1 */
} bp_trust_policy;

/* Reads BP_PLUGIN_ALLOW_INSECURE (secure_getenv): exactly "1" turns the refusals into
 * warnings; unset, empty or "0" keeps them; anything else keeps them and warns. */
BP_INTERNAL bp_trust_policy bp_trust_policy_read(void);
/* Whether `path` may be opened: a regular file (following links) that only root or
 * this user can change, in a directory only they can change. BP_OK with its real path
 * in *out_real (malloc'ed), and in `note` what the policy let through (or ""); else
 * the status with one sentence in `why` (and *out_real may be set, to be freed). */
BP_INTERNAL bp_status bp_plugin_file_check(const char *path, bp_trust_policy policy,
                                           char **out_real, char *why, size_t n, char *note,
                                           size_t note_n);

#endif
