/* Device type names and their slots: the index layers above hal give a device type in
 * their tables (the dispatcher's kernel table). A name keeps its slot for the life of
 * the process, also when its backend was dropped and another plugin takes the name. */
#include <stdio.h>
#include <strings.h>

#include "hal_internal.h"

static pthread_mutex_t type_lock = PTHREAD_MUTEX_INITIALIZER;
static char type_names[BP_MAX_DEVICE_TYPES][BP_BACKEND_NAME_MAX];
static int type_count;

static int find_locked(const char *name) {
    for (int i = 0; i < type_count; i++)
        if (strcasecmp(type_names[i], name) == 0)
            return i;
    return -1;
}

int bp_device_type_slot(const char *type_name) {
    pthread_mutex_lock(&type_lock);
    int slot = find_locked(type_name);
    if (slot < 0 && type_count < BP_MAX_DEVICE_TYPES) {
        snprintf(type_names[type_count], BP_BACKEND_NAME_MAX, "%s", type_name);
        slot = type_count++;
    }
    pthread_mutex_unlock(&type_lock);
    return slot;
}

int bp_device_type_find(const char *type_name) {
    pthread_mutex_lock(&type_lock);
    int slot = find_locked(type_name);
    pthread_mutex_unlock(&type_lock);
    return slot;
}
