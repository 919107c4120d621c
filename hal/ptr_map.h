/* An open-addressing hash map from pointers to pointers (no locking: callers lock). */
#ifndef BP_PTR_MAP_H
#define BP_PTR_MAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bp_ptr_map {
    struct bp_ptr_map_slot *slots; /* capacity entries, key NULL = empty */
    size_t capacity;               /* a power of two, or 0 before the first insert */
    size_t count;
} bp_ptr_map;

/* Inserts or replaces key -> value (key non-NULL). False only when memory runs out. */
bool bp_ptr_map_put(bp_ptr_map *map, const void *key, void *value);
/* The value for key, or NULL. */
void *bp_ptr_map_get(const bp_ptr_map *map, const void *key);
/* Removes key and returns its value, or NULL when absent. */
void *bp_ptr_map_remove(bp_ptr_map *map, const void *key);
/* Frees the table (not the values). */
void bp_ptr_map_clear(bp_ptr_map *map);

#endif
