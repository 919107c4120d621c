/* A set of key strings by open addressing, so that finding duplicate keys in a text and
 * overridden keys between scopes grows with the number of keys, not with its square. */
#ifndef BP_HINTS_KEY_SET_H
#define BP_HINTS_KEY_SET_H

#include <stdbool.h>
#include <stddef.h>

#include "hal_internal.h"

typedef struct bp_key_set {
    size_t mask;        /* slots - 1; slots is a power of two >= 2 * capacity */
    const char **slots; /* borrowed strings; NULL = empty */
} bp_key_set;

/* An empty set for up to `capacity` keys. False when out of memory. */
BP_INTERNAL bool bp_key_set_init(bp_key_set *set, size_t capacity);

/* Adds `key` (the string is borrowed: it must outlive the set). Returns false when an
 * equal key is already in the set. At most `capacity` keys may be added. */
BP_INTERNAL bool bp_key_set_add(bp_key_set *set, const char *key);

/* True when an equal key is in the set. */
BP_INTERNAL bool bp_key_set_has(const bp_key_set *set, const char *key);

BP_INTERNAL void bp_key_set_free(bp_key_set *set);

#endif
