/* The arm backend's state, shared by its files (not by the kernels: they see
 * arm_kernel.h only). */
#ifndef BP_ARM_INTERNAL_H
#define BP_ARM_INTERNAL_H

#include <backplane/plugin.h>
#include <backplane/plugin_util.h>

#include "arm_kernel.h"
#include "arm_topology.h"
#include "cpukit.h"

#define ARM_NAME "arm"

typedef struct arm_backend arm_backend;

/** One device: a group of cores (arm_topology.h). */
typedef struct arm_device {
    /* First member: open() returns &kit, so call->device and the kit's device are
     * this struct's address. */
    cpukit_device kit;
    arm_backend *backend;
    int index;
    arm_core_group group;
    bool pinned;            /* threads run on `cpus` (the group's cores this process may use) */
    cpu_set_t cpus;
    int threads;            /* the pool's size: the usable cores of the group */
    cpukit_pool *pool;      /* from open to close */
    arm_exec exec;          /* what the kernels get */
} arm_device;

struct arm_backend {
    const bp_host_services *host;
    arm_features features;
    char features_text[128];
    uint32_t sve_bits_set; /* BP_ARM_SVE_BITS for every thread of the backend; 0: left alone */
    uint32_t dtypes;       /* of the registered kernels */
    int ndevices;
    arm_device devices[ARM_TOPO_MAX_DEVICES];
    char unavailable_reason[256]; /* why ndevices is 0 */
    arm_kernel *kernels;   /* the registered kernels (kernel_data points into it) */
    size_t nkernels;
};

/** Makes the devices of `be` from the topology at `sysfs_root` (arm_device.c). */
void arm_devices_init(arm_backend *be, const char *sysfs_root);
/** Starts device `dev`'s pool (at open); BP_OK or an error set with the host. */
bp_status arm_device_start(arm_device *dev);
/** Stops the pool (at close) and frees what arm_devices_init made. */
void arm_device_stop(arm_device *dev);
void arm_devices_fini(arm_backend *be);

/** Lists every family's kernels for be->features and registers them, and the host's
 *  reference kernel for every other (op, dtype) it has one for (arm_kernels.c). */
bp_status arm_kernels_register(arm_backend *be);

#endif
