/* backplane: symbol visibility for the public API. */
#ifndef BACKPLANE_EXPORT_H
#define BACKPLANE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define BP_API __attribute__((visibility("default")))
#else
#define BP_API
#endif

#endif
