/* Quarantine of destroyed stream and event wrappers.
 *
 * A destroyed handle keeps its memory (with BP_MAGIC_DEAD) for a while, so a late use
 * of it is reported as "destroyed" instead of reading freed memory. The quarantine is
 * bounded: the oldest wrapper is freed when it is full, so detection covers the most
 * recent destructions, which is where such bugs usually are. */
#include <stdlib.h>

#include "hal_internal.h"

#define QUARANTINE_SIZE 256

static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static void *quarantine[QUARANTINE_SIZE];
static size_t quarantine_next;

void bp_handle_retire(void *object) {
    pthread_mutex_lock(&quarantine_lock);
    void *oldest = quarantine[quarantine_next];
    quarantine[quarantine_next] = object;
    quarantine_next = (quarantine_next + 1) % QUARANTINE_SIZE;
    pthread_mutex_unlock(&quarantine_lock);
    free(oldest);
}
