/* The key set of key_set.h: linear probing over a table at most half full. The keys
 * come from the user's text, so an adversary can make them collide; the cap on keys
 * (BP_HINTS_MAX_KEYS) bounds that worst case. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "key_set.h"

static uint64_t hash(const char *key) {
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

bool bp_key_set_init(bp_key_set *set, size_t capacity) {
    size_t slots = 8;
    while (slots < 2 * capacity) slots *= 2;
    set->slots = calloc(slots, sizeof *set->slots);
    set->mask = slots - 1;
    return set->slots != NULL;
}

/* The slot holding `key`, or the empty slot where it would go. */
static size_t find(const bp_key_set *set, const char *key) {
    size_t i = (size_t)hash(key) & set->mask;
    while (set->slots[i] != NULL && strcmp(set->slots[i], key) != 0) i = (i + 1) & set->mask;
    return i;
}

bool bp_key_set_add(bp_key_set *set, const char *key) {
    size_t i = find(set, key);
    if (set->slots[i] != NULL) return false;
    set->slots[i] = key;
    return true;
}

bool bp_key_set_has(const bp_key_set *set, const char *key) {
    return set->slots[find(set, key)] != NULL;
}

void bp_key_set_free(bp_key_set *set) {
    free(set->slots);
    set->slots = NULL;
}
