/* Linear probing with backward-shift deletion: no tombstones, so lookups stay short
 * under the alloc/free churn of a caching allocator. */
#include <stdint.h>
#include <stdlib.h>

#include "ptr_map.h"

struct bp_ptr_map_slot {
    const void *key;
    void *value;
};

static size_t slot_of(const bp_ptr_map *map, const void *key) {
    uint64_t h = (uint64_t)(uintptr_t)key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (map->capacity - 1);
}

static bool grow(bp_ptr_map *map) {
    size_t new_capacity = map->capacity ? map->capacity * 2 : 64;
    struct bp_ptr_map_slot *old = map->slots;
    size_t old_capacity = map->capacity;
    map->slots = calloc(new_capacity, sizeof *map->slots);
    if (!map->slots) {
        map->slots = old;
        return false;
    }
    map->capacity = new_capacity;
    map->count = 0;
    for (size_t i = 0; i < old_capacity; i++)
        if (old[i].key)
            bp_ptr_map_put(map, old[i].key, old[i].value);
    free(old);
    return true;
}

bool bp_ptr_map_put(bp_ptr_map *map, const void *key, void *value) {
    if ((map->count + 1) * 4 > map->capacity * 3 && !grow(map))
        return false;
    size_t i = slot_of(map, key);
    while (map->slots[i].key && map->slots[i].key != key)
        i = (i + 1) & (map->capacity - 1);
    if (!map->slots[i].key)
        map->count++;
    map->slots[i].key = key;
    map->slots[i].value = value;
    return true;
}

void *bp_ptr_map_get(const bp_ptr_map *map, const void *key) {
    if (!map->capacity)
        return NULL;
    for (size_t i = slot_of(map, key); map->slots[i].key; i = (i + 1) & (map->capacity - 1))
        if (map->slots[i].key == key)
            return map->slots[i].value;
    return NULL;
}

void *bp_ptr_map_remove(bp_ptr_map *map, const void *key) {
    if (!map->capacity)
        return NULL;
    size_t mask = map->capacity - 1;
    size_t i = slot_of(map, key);
    while (map->slots[i].key && map->slots[i].key != key)
        i = (i + 1) & mask;
    if (!map->slots[i].key)
        return NULL;
    void *value = map->slots[i].value;
    /* Shift later members of the probe run back so no gap breaks a lookup. */
    for (size_t j = (i + 1) & mask; map->slots[j].key; j = (j + 1) & mask) {
        size_t home = slot_of(map, map->slots[j].key);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            map->slots[i] = map->slots[j];
            i = j;
        }
    }
    map->slots[i].key = NULL;
    map->slots[i].value = NULL;
    map->count--;
    return value;
}

void bp_ptr_map_clear(bp_ptr_map *map) {
    free(map->slots);
    map->slots = NULL;
    map->capacity = 0;
    map->count = 0;
}
