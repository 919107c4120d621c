/* backplane: one include for applications. Backends include <backplane/plugin.h>. */
#ifndef BACKPLANE_BACKPLANE_H
#define BACKPLANE_BACKPLANE_H

#include <backplane/export.h>
#include <backplane/status.h>
#include <backplane/dtype.h>
#include <backplane/device.h>
#include <backplane/stream.h>
#include <backplane/memory.h>
#include <backplane/guard.h>
#include <backplane/loader.h>
#include <backplane/tensor.h>
#include <backplane/dispatcher.h>
#include <backplane/ops.h>
#include <backplane/hints.h>
#include <backplane/region.h>

#define BP_VERSION_MAJOR 0
#define BP_VERSION_MINOR 1
#define BP_VERSION_PATCH 0
#define BP_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the libbackplane that is running ("0.1.0"). */
BP_API const char *bp_version(void);

#ifdef __cplusplus
}
#endif
#endif
