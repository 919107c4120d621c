/* backplane: devices, named "type[:index]" ("cpu", "cuda:1", "hip:0"). */
#ifndef BACKPLANE_DEVICE_H
#define BACKPLANE_DEVICE_H

#include <stdint.h>
#include <backplane/export.h>
#include <backplane/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A device of a loaded backend. Devices are owned by the process-wide registry and
 *  live until the process exits: they are never closed by the user, and a pointer may
 *  be shared freely between threads. */
typedef struct bp_device bp_device;

/** Capability flags in bp_device_props.capabilities. A test or an application that
 *  needs one checks it instead of guessing from the backend's name. */
enum {
    BP_CAP_ASYNC_STREAMS = 1u << 0, /**< stream work runs asynchronously to the host */
    BP_CAP_TIMED_EVENTS = 1u << 1,  /**< events can measure elapsed time */
    BP_CAP_PEER_COPY = 1u << 2,     /**< direct copies between devices of the backend */
    BP_CAP_REGIONS = 1u << 3,       /**< the backend can take whole recorded regions */
    BP_CAP_PINNED_HOST = 1u << 4,   /**< page-locked host memory for fast transfers */
    /** With BP_CAP_REGIONS: a region the backend takes keeps the schedule's streams (its
     *  chains run as parallel branches on them, as a CUDA graph captured from them
     *  does), so max_parallel limits it; without it the backend schedules the captured
     *  work over its own engines. */
    BP_CAP_REGION_STREAMS = 1u << 5,
    /** With BP_CAP_TIMED_EVENTS: the device is a simulator whose events carry the time
     *  of its performance model, not of a clock (the hpu). Elapsed times then say how
     *  long the modelled hardware would take; they need not follow the host's wall
     *  clock, and a host function holding a stream takes no modelled time. */
    BP_CAP_MODELLED_TIME = 1u << 6,
};

#define BP_NAME_MAX 64

/** What a device is and has. Set struct_size = sizeof(bp_device_props) before the
 *  call; fields beyond a smaller struct_size are not written (older callers). */
typedef struct bp_device_props {
    uint32_t struct_size;
    char name[BP_NAME_MAX];            /**< canonical name, "cuda:1" */
    char type[BP_NAME_MAX];            /**< device type, "cuda" */
    int index;                         /**< index within the type */
    char backend_name[BP_NAME_MAX];    /**< backend (plugin) name */
    char backend_version[BP_NAME_MAX]; /**< backend version string */
    char description[128];             /**< model, "NVIDIA H100 80GB HBM3" */
    uint64_t total_memory;             /**< bytes of device memory */
    uint64_t free_memory;              /**< bytes free now, as the backend reports */
    uint32_t capabilities;             /**< BP_CAP_* bits */
    uint32_t dtypes;                   /**< BP_DTYPE_BIT() of each supported dtype */
    int stream_priority_least;         /**< numerically largest (lowest) priority */
    int stream_priority_greatest;      /**< numerically smallest (highest) priority */
    /** Features the backend reports, space-separated words ("asimd fp16 sve
     *  sve_bits=256" for an arm device); "" when it reports none or predates them. */
    char features[128];
} bp_device_props;

/** Opens the device named by `name`: "type" or "type:index", case-insensitive, where
 *  type is a backend name or one of its aliases ("hip" for "rocm"); "cuda" means
 *  "cuda:0". Discovers plugins on first use, and initialises the backend of that type
 *  (only that one) the first time one of its devices is asked for; "cpu" initialises
 *  no plugin. Thread-safe.
 *  The index is decimal digits (leading zeros allowed) with an optional '-'.
 *  Errors: BP_ERR_INVALID_ARGUMENT for a malformed name ("cpu: 1", "cpu:+1", "cpu:0x1"),
 *  BP_ERR_NOT_FOUND for an unknown type (the message lists the types present) or an
 *  index out of range: negative, beyond int or not below the count ("index 7 is out
 *  of range", with the count). */
BP_API bp_status bp_device_open(const char *name, bp_device **out_device);

/** The process default device: the one named by the environment variable BP_DEVICE
 *  when set, else "cpu". Errors as bp_device_open, naming BP_DEVICE. */
BP_API bp_status bp_device_default(bp_device **out_device);

/** Number of devices of every loaded backend. Initialises every plugin found that was
 *  not yet (waiting for a discovery or an init another thread runs). 0 (with
 *  bp_last_error) when called from a plugin's init. */
BP_API int bp_device_count(void);

/** The device at `ordinal` in 0..bp_device_count()-1, ordered by backend (the built-in
 *  cpu, then plugins in discovery order, then explicit loads) then index, whichever
 *  backend was initialised first. Initialises every plugin found, as bp_device_count. */
BP_API bp_status bp_device_get(int ordinal, bp_device **out_device);

/** The name of one capability bit, as tools print it ("async_streams" for
 *  BP_CAP_ASYNC_STREAMS); NULL unless `capability` is exactly one BP_CAP_* bit this
 *  library knows. */
BP_API const char *bp_capability_name(uint32_t capability);

/** Canonical name of a device ("cuda:1"); the string lives as long as the device. */
BP_API const char *bp_device_name(const bp_device *device);

/** Fills `props` (see bp_device_props for struct_size). free_memory is read now. */
BP_API bp_status bp_device_get_props(bp_device *device, bp_device_props *props);

/** Waits until all work on every stream of the device has completed. */
BP_API bp_status bp_device_synchronize(bp_device *device);

#ifdef __cplusplus
}
#endif
#endif
