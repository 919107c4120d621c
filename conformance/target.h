/* bp-conformance runner: the device under test, opened in a child process. */
#ifndef BP_CONF_TARGET_H
#define BP_CONF_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <backplane/backplane.h>

#include "level.h"

/* What the probe child reports about the device, for the run's header and the JUnit
 * properties. Sent over the pipe as it is, so only arrays, no pointers. */
typedef struct bp_conf_header {
    char name[BP_NAME_MAX];            /* canonical, "cuda:0" */
    char description[128];
    char backend_name[BP_NAME_MAX];
    char backend_version[BP_NAME_MAX];
    char plugin_path[PATH_MAX];        /* "" for a built-in backend */
    uint64_t total_memory;
    char capabilities[256];            /* names, space-separated; "" for none */
    char dtypes[256];                  /* names, space-separated */
} bp_conf_header;

/* Opens the device under test into bp_conf (with the run's seed and level): loads
 * `plugin` first when given (the parent has turned autoload off), opens `device` and
 * reads its properties. On failure returns false with a one-line reason in err. Call
 * only in a child process. */
bool bp_conf_target_open(const char *device, const char *plugin, uint64_t seed,
                         bp_conf_level level, char *err, size_t err_len);

/* Describes the opened target (bp_conf) for the header. */
void bp_conf_target_describe(bp_conf_header *header);

#endif
