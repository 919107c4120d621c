/* backplane: status codes and the thread-local last-error message. */
#ifndef BACKPLANE_STATUS_H
#define BACKPLANE_STATUS_H

#include <backplane/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every fallible backplane call. 0 is success; every other value is an
 *  error whose details are in bp_last_error() on the calling thread. */
typedef enum bp_status {
    BP_OK = 0,
    BP_ERR_INVALID_ARGUMENT = 1, /**< a NULL, malformed or out-of-range argument */
    BP_ERR_NOT_FOUND = 2,        /**< no such device, plugin or symbol */
    BP_ERR_UNSUPPORTED = 3,      /**< the device or backend lacks the capability */
    BP_ERR_OUT_OF_MEMORY = 4,    /**< allocation failed or would exceed the limit */
    BP_ERR_DEVICE_LOST = 5,      /**< the device or its runtime stopped working */
    BP_ERR_ABI_MISMATCH = 6,     /**< a plugin was built against an incompatible ABI */
    BP_ERR_NOT_READY = 7,        /**< asynchronous work has not completed (not a failure) */
    BP_ERR_INTERNAL = 8,         /**< a bug in backplane or a backend */
    BP_ERR_BACKEND = 9,          /**< the vendor runtime reported an error */
    BP_ERR_INVALID_STATE = 10,   /**< the call is not valid in the object's current state */
} bp_status;

/** Short constant name of a status ("BP_ERR_NOT_FOUND"); never NULL. Thread-safe. */
BP_API const char *bp_status_str(bp_status status);

/** One sentence explaining the last failure on this thread, with the values involved
 *  ("unknown device type 'cuda' in 'cuda:1'; types present: cpu, testdev").
 *  Empty string when no call has failed. The pointer stays valid until the next
 *  backplane call on this thread. Successful calls do not clear it. */
BP_API const char *bp_last_error(void);

/** Clears this thread's last-error message. */
BP_API void bp_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
