/* Which validated candidates the loader uses, and under which names (loader_internal.h).
 *
 * Duplicates of one name: the highest priority wins, the first found on a tie. Then
 * names beat aliases, decided over all candidates before any plugin is initialised, so
 * that neither discovery order nor a file name that sorts first can take a name: an
 * alias is dropped (noted and logged) when it is the name of the built-in cpu backend,
 * of a loaded backend or of any valid candidate; when a loaded backend has it as an
 * alias; or when another chosen plugin claims it too (then it is dropped from all of
 * them: first-come would let the first file found win). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loader_internal.h"

#define LOG_SRC "loader"

static plugin_record *R(int i) { return bp_loader_record(i); }

/* The validated candidate of [first, end) named `name` with the highest priority, the
 * first found on a tie; -1 when none. */
static int best_of_name(int first, int end, const char *name) {
    int best = -1;
    for (int j = first; j < end; j++) {
        const plugin_record *r = R(j);
        if (r->desc && strcasecmp(r->name, name) == 0 &&
            (best < 0 || r->priority > R(best)->priority))
            best = j;
    }
    return best;
}

static bool contains(const int *list, int n, int value) {
    for (int k = 0; k < n; k++)
        if (list[k] == value)
            return true;
    return false;
}

static int record_of_backend(const bp_backend *backend) {
    for (int j = 0; j < bp_loader_record_count(); j++)
        if (R(j)->backend == backend)
            return j;
    return -1;
}

/* Why a loaded backend stops record i from keeping `alias`, in `why`; false if none. */
static bool taken_by_loaded(const char *alias, char *why, size_t n) {
    bp_registry_lock();
    bp_backend *owner = bp_registry_find_backend(alias, strlen(alias));
    bool by_name = owner && strcasecmp(owner->name, alias) == 0;
    char owner_name[BP_BACKEND_NAME_MAX] = "";
    if (owner)
        snprintf(owner_name, sizeof owner_name, "%s", owner->name);
    bp_registry_unlock();
    if (!owner)
        return false;
    snprintf(why, n, "%s of loaded backend '%s'", by_name ? "it is the name" : "it is an alias",
             owner_name);
    return true;
}

/* Decides record i's aliases; `chosen` (n entries) are the other plugins of the pass,
 * candidates [first, end) the names that beat them. */
static void settle_aliases(int i, int first, int end, const int *chosen, int n) {
    plugin_record *r = R(i);
    for (int a = 0; a < r->alias_count; a++) {
        const char *alias = r->aliases[a];
        char why[256] = "";
        if (strcasecmp(alias, r->name) == 0)
            snprintf(why, sizeof why, "it is the plugin's own name");
        for (int b = 0; b < a && !*why; b++)
            if (strcasecmp(alias, r->aliases[b]) == 0)
                snprintf(why, sizeof why, "it is listed twice");
        if (!*why)
            taken_by_loaded(alias, why, sizeof why);
        for (int j = first; j < end && !*why; j++)
            if (j != i && R(j)->desc && strcasecmp(R(j)->name, alias) == 0)
                snprintf(why, sizeof why, "it is the name of plugin '%s' (%s)", R(j)->name,
                         R(j)->path);
        for (int k = 0; k < n && !*why; k++) {
            const plugin_record *other = R(chosen[k]);
            for (int b = 0; chosen[k] != i && b < other->alias_count && !*why; b++)
                if (strcasecmp(other->aliases[b], alias) == 0)
                    snprintf(why, sizeof why,
                             "plugin '%s' (%s) claims it too, and an alias two plugins claim "
                             "is dropped from both",
                             other->name, other->path);
        }
        r->alias_kept[a] = !*why;
        if (*why)
            bp_loader_note(i, "alias '%s' dropped: %s", alias, why);
    }
}

int bp_loader_choose(int first, int end, int *order) {
    int n = 0;
    const char *selection = secure_getenv("BP_PLUGINS");
    bool selecting = selection && *selection;
    if (selecting) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "BP_PLUGINS=%s", selection);
        char *copy = strdup(selection);
        char *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
             tok = strtok_r(NULL, ",", &save)) {
            tok += strspn(tok, " \t");
            size_t len = strlen(tok);
            while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
                tok[--len] = '\0';
            if (!len || strcasecmp(tok, "cpu") == 0)
                continue; /* the built-in cpu backend is always there */
            int best = best_of_name(first, end, tok);
            if (best < 0) {
                bool listed = false;
                for (int j = end; j < bp_loader_record_count() && !listed; j++)
                    listed = strcasecmp(R(j)->name, tok) == 0;
                int i = listed ? -1 : bp_loader_record_add("");
                if (i >= 0) {
                    R(i)->name = strndup(tok, BP_BACKEND_NAME_MAX + 32);
                    if (!R(i)->name)
                        R(i)->name = "";
                    bp_loader_reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND,
                                     "requested by BP_PLUGINS but no plugin named '%s' was found",
                                     R(i)->name);
                }
            } else if (!contains(order, n, best)) {
                bp_log(BP_LOG_DEBUG, LOG_SRC, "selected '%s' from %s (BP_PLUGINS)", tok,
                       R(best)->path);
                order[n++] = best;
            }
        }
        free(copy);
    } else {
        for (int j = first; j < end; j++) {
            if (R(j)->desc && best_of_name(first, end, R(j)->name) == j) {
                bp_log(BP_LOG_DEBUG, LOG_SRC, "selected '%s' from %s", R(j)->name, R(j)->path);
                order[n++] = j;
            }
        }
    }

    /* Before anyone is rejected below: every valid candidate's name counts. */
    for (int k = 0; k < n; k++)
        settle_aliases(order[k], first, end, order, n);

    for (int j = first; j < end; j++) {
        if (!R(j)->desc || contains(order, n, j))
            continue;
        int best = best_of_name(first, end, R(j)->name);
        if (contains(order, n, best))
            bp_loader_reject(j, BP_LOG_WARN, BP_ERR_INVALID_ARGUMENT,
                             "duplicate of '%s': kept %s (priority %d) over this one (priority %d)",
                             R(j)->name, R(best)->path, (int)R(best)->priority,
                             (int)R(j)->priority);
        else
            bp_loader_reject(j, BP_LOG_INFO, BP_ERR_INVALID_ARGUMENT,
                             "not selected by BP_PLUGINS");
    }
    return n;
}

void bp_loader_settle_explicit(int i) {
    plugin_record *r = R(i);
    bp_registry_lock();
    bp_backend *owner = bp_registry_find_backend(r->name, strlen(r->name));
    bool alias_of_other = owner && strcasecmp(owner->name, r->name) != 0;
    if (alias_of_other)
        bp_registry_drop_alias(owner, r->name);
    bp_registry_unlock();
    if (alias_of_other) {
        int j = record_of_backend(owner);
        if (j >= 0) {
            for (int a = 0; a < R(j)->alias_count; a++)
                if (strcasecmp(R(j)->aliases[a], r->name) == 0)
                    R(j)->alias_kept[a] = false;
            bp_loader_refresh_aliases(j);
            bp_loader_note(j, "alias '%s' dropped: plugin '%s' (%s) was loaded with that name, "
                              "and names beat aliases",
                           r->name, r->name, r->path);
        }
    }
    settle_aliases(i, i, i + 1, NULL, 0);
}
