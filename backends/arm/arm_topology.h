/* The arm backend's devices: groups of cores read from a directory shaped like
 * /sys/devices/system/cpu (pure C, no intrinsics: a native unit test compiles it too).
 *
 * Read per online core (`online` lists them): cpuN/cpu_capacity (the scheduler's
 * relative speed, 1024 for the fastest), cpuN/regs/identification/midr_el1 (the core
 * type), and cpuN/topology/cluster_cpus_list (else package_cpus_list, else
 * core_siblings_list) only to check it and to group cores when neither capacity nor
 * core type is known.
 *
 * A device is a group of online cores with the same capacity and the same core type
 * (a cluster of a big.LITTLE phone; the whole of a server, whose kernel may list many
 * small clusters of equal cores that are still one device). Groups are ordered fastest
 * first: capacity, then the core type's class (X before A7x before A5x), then the first
 * core. Files of the kernel that are absent altogether (no capacity, no MIDR on any core)
 * only leave that part out; a file that one core has and another lacks, or that cannot be
 * parsed, makes the reader fall back to one device of all online cores (or of cores
 * 0..fallback_cpus-1 when `online` itself is unusable), with a warning naming the file. */
#ifndef BP_ARM_TOPOLOGY_H
#define BP_ARM_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARM_TOPO_MAX_CPUS 1024 /* as glibc's cpu_set_t */
#define ARM_TOPO_MAX_DEVICES 16
#define ARM_TOPO_WORDS (ARM_TOPO_MAX_CPUS / 64)

typedef struct arm_core_group {
    uint64_t cpus[ARM_TOPO_WORDS]; /**< bit n: core n */
    int ncpus;
    int first_cpu;
    uint32_t capacity;  /**< 0 when the tree has no cpu_capacity files */
    uint32_t midr;      /**< 0 when the tree has no midr_el1 files */
    char core_name[40]; /**< "Cortex-A78", "unknown part 0xd99", "" without MIDR */
    char description[128]; /**< "4x Cortex-A78 @ capacity 1024" */
} arm_core_group;

typedef struct arm_topology {
    int ngroups; /**< >= 1 */
    arm_core_group groups[ARM_TOPO_MAX_DEVICES];
    /** Why the reader fell back to one group of all cores ("" when it did not): names
     *  the file and what is wrong with it. */
    char fallback_reason[256];
} arm_topology;

/** Reads the tree at `root` (a path like "/sys/devices/system/cpu") into *out. Never
 *  fails: see the top of this file for the fallback. fallback_cpus (>= 1) is the number
 *  of cores to assume when `online` is missing or malformed. */
void arm_topology_read(const char *root, int fallback_cpus, arm_topology *out);

/** Parses a kernel cpu list ("0-3,6,8-11\n") into a bitmap of ARM_TOPO_WORDS words.
 *  False on a syntax error, a reversed range or a core beyond ARM_TOPO_MAX_CPUS. */
bool arm_cpulist_parse(const char *text, uint64_t *cpus);

/** The core name of a MIDR_EL1 value: "Cortex-A78", "Neoverse-N1", or
 *  "unknown part 0x<part>" (with the implementer when it is not Arm's). */
void arm_core_name(uint32_t midr, char *out, size_t out_size);

#endif
