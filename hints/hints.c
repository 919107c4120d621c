/* Hint text: parsing and validation (cJSON), hint sets and their merging. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hint_scan.h"
#include "hints_internal.h"
#include "key_set.h"

/* |group_id| bound: integers a JSON number (a double) holds exactly. */
#define BP_HINT_INT_EXACT 9007199254740992ll /* 2^53 */

static const char *const order_names[] = {
    [BP_ORDER_UNSET] = "unset", [BP_ORDER_BFS] = "bfs",     [BP_ORDER_DFS] = "dfs",
    [BP_ORDER_STRICT] = "strict", [BP_ORDER_AUTO] = "auto",
};

const char *bp_schedule_order_name(bp_schedule_order order) {
    if ((unsigned)order >= sizeof order_names / sizeof order_names[0]) return "?";
    return order_names[order];
}

static const struct {
    const char *name;
    bp_hint_key kind;
} known_keys[] = {
    {"order", BP_HINT_KEY_ORDER},
    {"schedule_policy", BP_HINT_KEY_SCHEDULE_POLICY},
    {"group_id", BP_HINT_KEY_GROUP_ID},
    {"max_parallel", BP_HINT_KEY_MAX_PARALLEL},
    {"mem_budget_mb", BP_HINT_KEY_MEM_BUDGET_MB},
};

static bp_hint_key key_kind(const char *name) {
    for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
        if (strcmp(known_keys[i].name, name) == 0) return known_keys[i].kind;
    return BP_HINT_KEY_UNKNOWN;
}

/* The name under which an item overrides another across scopes: order and
 * schedule_policy set the same thing. */
static const char *slot_name(const bp_hint_item *item) {
    bool order = item->kind == BP_HINT_KEY_ORDER || item->kind == BP_HINT_KEY_SCHEDULE_POLICY;
    return order ? "order" : item->key;
}

/* Copies user text into buf for a message: at most `max` bytes, control bytes and
 * quotes shown as '?', "..." when cut. */
static const char *printable(const char *s, size_t len, size_t max, char *buf, size_t size) {
    size_t n = 0;
    size_t limit = len < max ? len : max;
    for (size_t i = 0; i < limit && n + 4 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[n++] = (c < 0x20 || c == 0x7f || c == '\'') ? '?' : (char)c;
    }
    if (limit < len && n + 4 <= size) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static const char *key_str(const char *key, char *buf, size_t size) {
    return printable(key, strlen(key), 48, buf, size);
}

static const char *type_name(const cJSON *v) {
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsObject(v)) return "object";
    return "invalid";
}

static bp_status type_error(const char *key, const char *expected, const cJSON *v) {
    if (cJSON_IsNumber(v))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: key '%s' must be %s, got number %.17g", key, expected,
                            v->valuedouble);
    return bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: key '%s' must be %s, got %s", key,
                        expected, type_name(v));
}

static bp_status check_string_value(const char *key, const cJSON *v, const char **out) {
    if (!cJSON_IsString(v) || v->valuestring == NULL) return type_error(key, "a string", v);
    *out = v->valuestring;
    return BP_OK;
}

static bp_status parse_order(const cJSON *v, bp_schedule_order *out) {
    char buf[80];
    const char *s = NULL;
    bp_status st = check_string_value("order", v, &s);
    if (st != BP_OK) return st;
    for (int o = BP_ORDER_BFS; o <= BP_ORDER_AUTO; o++) {
        if (strcmp(s, order_names[o]) == 0) {
            *out = (bp_schedule_order)o;
            return BP_OK;
        }
    }
    return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                        "hints: key 'order' has unknown value '%s'; valid: bfs, dfs, strict, auto",
                        printable(s, strlen(s), 48, buf, sizeof buf));
}

static bp_status parse_schedule_policy(const cJSON *v, bp_schedule_order *out) {
    char buf[80];
    const char *s = NULL;
    bp_status st = check_string_value("schedule_policy", v, &s);
    if (st != BP_OK) return st;
    if (strcmp(s, "strict") == 0) {
        *out = BP_ORDER_STRICT;
        return BP_OK;
    }
    return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                        "hints: key 'schedule_policy' has unsupported value '%s'; accepted: "
                        "strict (use 'order' for bfs, dfs, strict or auto)",
                        printable(s, strlen(s), 48, buf, sizeof buf));
}

/* An integral JSON number in [lo, hi], read exactly from its text (`text`: where the
 * value starts), so that no fraction or magnitude is lost to rounding into a double. */
static bp_status parse_integer(const char *key, const cJSON *v, const char *text, int64_t lo,
                               int64_t hi, const char *range_text, int64_t *out) {
    if (!cJSON_IsNumber(v)) return type_error(key, "an integer", v);
    char buf[64];
    size_t len = 0;
    int64_t value = 0;
    bp_hint_integer kind = bp_hint_scan_integer(text, &value, &len);
    const char *shown = printable(text, len, 40, buf, sizeof buf);
    if (kind == BP_HINT_INTEGER_FRACTION)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: key '%s' must be an integer, got number %s", key, shown);
    if (kind == BP_HINT_INTEGER_HUGE || value < lo || value > hi)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: key '%s' must be %s, got %s", key,
                            range_text, shown);
    *out = value;
    return BP_OK;
}

static bp_status parse_budget(const cJSON *v, double *out) {
    if (!cJSON_IsNumber(v)) return type_error("mem_budget_mb", "a number", v);
    double d = v->valuedouble;
    if (!isfinite(d))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: key 'mem_budget_mb' must be a finite number >= 0, got %g", d);
    if (d < 0)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: key 'mem_budget_mb' must be >= 0 (megabytes), got %.17g", d);
    *out = d;
    return BP_OK;
}

static bp_status malformed(const char *json, size_t len, const char *at) {
    /* cJSON's position is where it gave up: at or just after the bad byte. */
    size_t offset = at != NULL && at >= json && at <= json + len ? (size_t)(at - json) : len;
    if (offset > len) offset = len;
    char before[64], after[64];
    size_t from = offset > 20 ? offset - 20 : 0;
    printable(json + from, offset - from, 20, before + 3, sizeof before - 3);
    memcpy(before, "...", 3);
    const char *before_text = from > 0 ? before : before + 3;
    if (offset >= len)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: malformed JSON at byte %zu of %zu (the end of the text: "
                            "incomplete?), after '%s'",
                            offset, len, before_text);
    return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                        "hints: malformed JSON at byte %zu of %zu: after '%s', at '%s'", offset,
                        len, before_text,
                        printable(json + offset, len - offset, 20, after, sizeof after));
}

static bool blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    return true;
}

void bp_hint_set_free(bp_hint_set *set) {
    if (set == NULL) return;
    for (int i = 0; i < set->count; i++) {
        free(set->items[i].key);
        free(set->items[i].value);
    }
    free(set->items);
    free(set);
}

static bp_hint_set *set_new(int capacity) {
    bp_hint_set *set = calloc(1, sizeof *set);
    if (set == NULL) return NULL;
    set->values.struct_size = sizeof set->values;
    if (capacity > 0) {
        set->items = calloc((size_t)capacity, sizeof *set->items);
        if (set->items == NULL) {
            free(set);
            return NULL;
        }
    }
    return set;
}

static void item_init_disposition(bp_hint_item *item) {
    if (item->kind == BP_HINT_KEY_UNKNOWN) {
        item->disposition = BP_HINT_IGNORED;
        snprintf(item->reason, sizeof item->reason, "unknown key");
    } else {
        item->disposition = BP_HINT_PENDING;
        item->reason[0] = '\0';
    }
}

/* cJSON keeps both members of a duplicated key; the text is ambiguous. Checked before
 * the values, so the message names the duplicate rather than one of its values. */
static bp_status check_duplicates(const cJSON *root, int count) {
    char kbuf[64];
    bp_key_set seen;
    if (!bp_key_set_init(&seen, (size_t)count))
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
    bp_status st = BP_OK;
    for (const cJSON *c = root->child; c != NULL && st == BP_OK; c = c->next) {
        const char *name = c->string != NULL ? c->string : "";
        if (!bp_key_set_add(&seen, name))
            st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: key '%s' appears more than once",
                              key_str(name, kbuf, sizeof kbuf));
    }
    bp_key_set_free(&seen);
    return st;
}

/* Validates every member of the object `root` into *values; `scan` is the pre-pass
 * over `json`, the text root came from (members in the same order). */
static bp_status validate_members(const cJSON *root, const char *json, const bp_hint_scan *scan,
                                  bp_hint_values *values, int *out_count) {
    int count = 0;
    const cJSON *order_item = NULL, *policy_item = NULL;
    bp_schedule_order order = BP_ORDER_UNSET, policy = BP_ORDER_UNSET;
    /* Equal for any text cJSON accepts; checked because value_at is indexed below. */
    if (cJSON_GetArraySize(root) != scan->members)
        return bp_set_error(BP_ERR_INTERNAL, "hints: the pre-pass found %d keys where cJSON "
                            "found %d", scan->members, cJSON_GetArraySize(root));
    bp_status st = check_duplicates(root, scan->members);
    if (st != BP_OK) return st;
    for (const cJSON *c = root->child; c != NULL; c = c->next, count++) {
        const char *name = c->string != NULL ? c->string : "";
        const char *text = json + scan->value_at[count];
        int64_t n = 0;
        double d = 0;
        switch (key_kind(name)) {
        case BP_HINT_KEY_ORDER:
            order_item = c;
            st = parse_order(c, &order);
            break;
        case BP_HINT_KEY_SCHEDULE_POLICY:
            policy_item = c;
            st = parse_schedule_policy(c, &policy);
            break;
        case BP_HINT_KEY_GROUP_ID:
            st = parse_integer("group_id", c, text, -BP_HINT_INT_EXACT, BP_HINT_INT_EXACT,
                               "an integer of magnitude <= 2^53", &n);
            values->has_group_id = 1;
            values->group_id = n;
            break;
        case BP_HINT_KEY_MAX_PARALLEL:
            st = parse_integer("max_parallel", c, text, 1, INT32_MAX, ">= 1 (and <= 2147483647)",
                               &n);
            values->has_max_parallel = 1;
            values->max_parallel = (int)n;
            break;
        case BP_HINT_KEY_MEM_BUDGET_MB:
            st = parse_budget(c, &d);
            values->has_mem_budget = 1;
            values->mem_budget_mb = d;
            break;
        case BP_HINT_KEY_UNKNOWN: break;
        }
        if (st != BP_OK) return st;
    }
    if (order_item != NULL && policy_item != NULL && order != policy)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: 'order' is '%s' but 'schedule_policy' is 'strict'; they set "
                            "the same thing: give one, or make them agree",
                            bp_schedule_order_name(order));
    values->order = order_item != NULL ? order : policy;
    *out_count = count;
    return BP_OK;
}

bp_status bp_hint_set_parse(const char *json, int depth, bp_hint_set **out_set) {
    if (out_set == NULL) return bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: out_set is NULL");
    *out_set = NULL;
    if (json == NULL || blank(json)) {
        *out_set = set_new(0);
        return *out_set != NULL ? BP_OK
                                : bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
    }
    size_t len = strlen(json);
    bp_hint_scan scan;
    bp_status st = bp_hint_scan_text(json, len, &scan);
    if (st != BP_OK) {
        bp_hint_scan_free(&scan);
        return st;
    }
    /* The error position comes back through return_parse_end, not cJSON_GetErrorPtr,
     * whose global another thread may overwrite. (cJSON 1.7 still writes that global
     * on every parse: a benign race between threads parsing at once.) */
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (root == NULL) {
        bp_hint_scan_free(&scan);
        return malformed(json, len, end);
    }

    bp_hint_set *set = NULL;
    bp_hint_values values = {.struct_size = sizeof values};
    int count = 0;
    if (!cJSON_IsObject(root)) {
        st = bp_set_error(BP_ERR_INVALID_ARGUMENT,
                          "hints: the hint text must be a JSON object ({\"order\": \"dfs\"}), "
                          "got %s",
                          type_name(root));
        goto done;
    }
    st = validate_members(root, json, &scan, &values, &count);
    if (st != BP_OK) goto done;
    set = set_new(count);
    if (set == NULL) goto oom;
    set->values = values;
    for (const cJSON *c = root->child; c != NULL; c = c->next) {
        bp_hint_item *item = &set->items[set->count];
        item->key = strdup(c->string != NULL ? c->string : "");
        item->value = cJSON_PrintUnformatted(c);
        if (item->key == NULL || item->value == NULL) {
            /* cJSON allocates with malloc unless hooks were installed; none are. */
            free(item->key);
            free(item->value);
            goto oom;
        }
        set->count++;
        item->kind = key_kind(item->key);
        item->scope_depth = depth;
        item_init_disposition(item);
    }
    *out_set = set;
    set = NULL;
    goto done;
oom:
    st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
done:
    bp_hint_set_free(set);
    bp_hint_scan_free(&scan);
    cJSON_Delete(root);
    return st;
}

static bool item_copy(bp_hint_item *dst, const bp_hint_item *src) {
    *dst = *src;
    dst->key = strdup(src->key);
    dst->value = strdup(src->value);
    if (dst->key == NULL || dst->value == NULL) {
        free(dst->key);
        free(dst->value);
        return false;
    }
    return true;
}

bp_status bp_hint_set_merge(const bp_hint_set *outer, const bp_hint_set *inner,
                            bp_hint_set **out_set) {
    if (out_set == NULL) return bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: out_set is NULL");
    *out_set = NULL;
    int outer_count = outer != NULL ? outer->count : 0;
    int inner_count = inner != NULL ? inner->count : 0;
    bp_key_set replaced;
    if (!bp_key_set_init(&replaced, (size_t)inner_count))
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
    int kept = 0;
    for (int j = 0; j < inner_count; j++) bp_key_set_add(&replaced, slot_name(&inner->items[j]));
    for (int i = 0; i < outer_count; i++)
        kept += !bp_key_set_has(&replaced, slot_name(&outer->items[i]));
    if (kept + inner_count > BP_HINTS_MAX_KEYS) {
        bp_key_set_free(&replaced);
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: %d keys would be in effect with the scopes open on this "
                            "thread (at most %d, BP_HINTS_MAX_KEYS)",
                            kept + inner_count, BP_HINTS_MAX_KEYS);
    }
    bp_hint_set *set = set_new(kept + inner_count);
    if (set == NULL) {
        bp_key_set_free(&replaced);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
    }

    for (int i = 0; i < outer_count; i++) {
        if (bp_key_set_has(&replaced, slot_name(&outer->items[i]))) continue;
        if (!item_copy(&set->items[set->count], &outer->items[i])) goto oom;
        set->count++;
    }
    for (int j = 0; j < inner_count; j++) {
        if (!item_copy(&set->items[set->count], &inner->items[j])) goto oom;
        set->count++;
    }

    bp_hint_values v = {.struct_size = sizeof v};
    if (outer != NULL) v = outer->values;
    if (inner != NULL) {
        const bp_hint_values *in = &inner->values;
        if (in->order != BP_ORDER_UNSET) v.order = in->order;
        if (in->has_group_id) {
            v.has_group_id = 1;
            v.group_id = in->group_id;
        }
        if (in->has_max_parallel) {
            v.has_max_parallel = 1;
            v.max_parallel = in->max_parallel;
        }
        if (in->has_mem_budget) {
            v.has_mem_budget = 1;
            v.mem_budget_mb = in->mem_budget_mb;
        }
    }
    v.struct_size = sizeof v;
    set->values = v;
    bp_key_set_free(&replaced);
    *out_set = set;
    return BP_OK;
oom:
    bp_key_set_free(&replaced);
    bp_hint_set_free(set);
    return bp_set_error(BP_ERR_OUT_OF_MEMORY, "hints: out of memory");
}

bp_status bp_hint_set_values(const bp_hint_set *set, bp_hint_values *out) {
    if (out == NULL) return bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: out is NULL");
    uint32_t size = out->struct_size;
    if (size < sizeof(bp_hint_values))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: bp_hint_values.struct_size is %u, expected at least %zu "
                            "(set it to sizeof(bp_hint_values))",
                            size, sizeof(bp_hint_values));
    /* A newer caller's larger struct: its fields beyond ours read as unset. */
    memset(out, 0, size);
    if (set != NULL) *out = set->values;
    out->struct_size = size;
    return BP_OK;
}

bp_status bp_hint_set_entry(const bp_hint_set *set, int index, bp_hint_entry *out) {
    if (out == NULL) return bp_set_error(BP_ERR_INVALID_ARGUMENT, "hints: out is NULL");
    uint32_t size = out->struct_size;
    if (size < sizeof(bp_hint_entry))
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: bp_hint_entry.struct_size is %u, expected at least %zu "
                            "(set it to sizeof(bp_hint_entry))",
                            size, sizeof(bp_hint_entry));
    int count = set != NULL ? set->count : 0;
    if (index < 0 || index >= count)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT,
                            "hints: entry index %d is out of range (%d keys in effect)", index,
                            count);
    const bp_hint_item *item = &set->items[index];
    memset(out, 0, size);
    out->struct_size = size;
    out->key = item->key;
    out->value = item->value;
    out->scope_depth = item->scope_depth;
    out->known = item->kind != BP_HINT_KEY_UNKNOWN;
    out->disposition = item->disposition;
    out->reason = item->reason;
    return BP_OK;
}

bp_hint_item *bp_hint_set_find(bp_hint_set *set, const char *key) {
    if (set == NULL || key == NULL) return NULL;
    for (int i = 0; i < set->count; i++)
        if (strcmp(set->items[i].key, key) == 0) return &set->items[i];
    return NULL;
}

void bp_hint_item_mark(bp_hint_item *item, bp_hint_disposition disposition, const char *fmt,
                       ...) {
    if (item == NULL) return;
    item->disposition = disposition;
    item->reason[0] = '\0';
    if (fmt != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(item->reason, sizeof item->reason, fmt, ap);
        va_end(ap);
    }
}

bp_status bp_hints_validate(const char *json) {
    bp_hint_set *set = NULL;
    bp_status st = bp_hint_set_parse(json, 0, &set);
    bp_hint_set_free(set);
    return st;
}
