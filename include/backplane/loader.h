/* backplane: plugin discovery and the list of loaded and skipped plugins.
 *
 * Plugins are discovered once, on the first API call: found, opened and validated, so
 * that their names and aliases are known; none is initialised then. A plugin's init
 * (and the listing of its devices) runs when it is first needed: a device of its type
 * is opened (or BP_DEVICE names it), a kernel is registered for it, or every device or
 * plugin is listed (bp_device_count, bp_device_get, bp_plugin_count,
 * bp_plugin_get_info, bp-info), which initialises all of them. Opening "cpu" initialises
 * none. They are found in:
 *   1. BP_PLUGIN_PATH: colon-separated directories or plugin files, in order;
 *   2. the directory backplane/plugins beside the libbackplane that is running (the
 *      build tree when run from it, the install tree when installed);
 *   3. the install tree's plugin directory compiled in at build time.
 * In a directory, files named libbp_*.so are candidates, in name order.
 * BP_AUTOLOAD=0 turns discovery off (the built-in cpu backend stays; a value other than
 * 0 or 1 does too, with a warning); BP_PLUGINS=a,b
 * keeps only the plugins of those names, in that order. Of two candidates with one
 * real path the first is used; of two plugins with one name the higher priority
 * wins (the first found on a tie). Names beat aliases: an alias that is another
 * plugin's name, or that two plugins claim, is dropped (noted), never the plugin.
 * A file (or its directory) that someone other than root or this user can change is
 * refused unless BP_PLUGIN_ALLOW_INSECURE=1; links that lead nowhere, directories and
 * FIFOs are listed as skipped and never opened. At most 32 devices per plugin are
 * registered. A candidate that cannot be used is skipped with its reason; it never
 * stops the others. BP_LOG=debug logs every decision; docs/architecture.md ("Plugin
 * ABI and loading") has the rules and what waits for what.
 */
#ifndef BACKPLANE_LOADER_H
#define BACKPLANE_LOADER_H

#include <stdint.h>
#include <backplane/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** State of one plugin candidate. */
typedef enum bp_plugin_state {
    BP_PLUGIN_LOADED = 0,  /**< in use */
    BP_PLUGIN_SKIPPED = 1, /**< not used; `reason` says why */
    BP_PLUGIN_BUILTIN = 2, /**< compiled into libbackplane (cpu) */
} bp_plugin_state;

/** One plugin candidate as seen by the loader. Strings live until process exit. */
typedef struct bp_plugin_info {
    uint32_t struct_size;
    const char *name;    /**< device type, or "" when it could not be read */
    const char *version; /**< backend version, or "" */
    const char *path;    /**< library path, "(built-in)" for cpu */
    uint32_t abi_major;  /**< ABI the plugin was built against (0 when unknown) */
    uint32_t abi_minor;
    int32_t priority;
    bp_plugin_state state;
    bp_status status;    /**< why it was skipped (BP_OK when loaded) */
    const char *reason;  /**< one sentence for skipped plugins, "" otherwise */
    int device_count;    /**< devices it reports */
    const char *unavailable_reason; /**< why it reports zero devices, or "" */
    const char *aliases; /**< the aliases it kept, comma-separated, or "" */
    /** What the loader changed about a plugin it used, one sentence each separated by
     *  "; " (aliases dropped, devices beyond the cap, trust checks overridden), or "" */
    const char *notes;
} bp_plugin_info;

/** Number of candidates seen so far (loaded, built-in and skipped). Waits for plugin
 *  discovery to finish and initialises every plugin found that was not yet. 0 (with
 *  bp_last_error) when called from a plugin's init. */
BP_API int bp_plugin_count(void);

/** Fills `info` (set info->struct_size = sizeof(bp_plugin_info) first) for candidate
 *  `i` in 0..bp_plugin_count()-1, in the order they were considered. */
BP_API bp_status bp_plugin_get_info(int i, bp_plugin_info *info);

/** Loads one plugin library explicitly, after autoload, and initialises it at once
 *  (the plugins autoload found are initialised first). Its devices join the registry.
 *  Errors: BP_ERR_NOT_FOUND (no such file or no entry symbol), BP_ERR_ABI_MISMATCH,
 *  BP_ERR_INVALID_ARGUMENT (not a shared library, bad descriptor, a plugin of the
 *  same name or real path already loaded), or the plugin's init error. Rejected
 *  candidates are also listed by bp_plugin_get_info. Thread-safe. */
BP_API bp_status bp_plugin_load(const char *path);

/** Steps of loading one plugin, as an observer sees them. */
typedef enum bp_plugin_step {
    BP_PLUGIN_STEP_OPEN = 0, /**< about to dlopen the file (its constructors and entry
                                  function run next); the name is not known yet: "" */
    BP_PLUGIN_STEP_INIT = 1, /**< about to run the plugin's init, count its devices
                                  and read their properties: when the plugin is first
                                  needed, which may be long after OPEN */
    BP_PLUGIN_STEP_DONE = 2, /**< the step announced before it has returned */
} bp_plugin_step;

/** Called on the thread that runs the step (the one whose call needed it) before and
 *  after each step of each candidate, with the
 *  plugin's name ("" before it is known) and path. Returning 0 before OPEN or INIT
 *  skips the candidate (listed as declined by the observer); the value is ignored for
 *  DONE. It must not call the backplane API. For tools that must survive a plugin that
 *  kills the process: bp-info probes in a child process and learns from OPEN/INIT
 *  without a DONE which plugin did. */
typedef int (*bp_plugin_observer)(bp_plugin_step step, const char *name, const char *path,
                                  void *ctx);

/** Installs the observer (NULL removes it). Only before plugin discovery has started,
 *  that is before the first call that needs devices or plugins: BP_ERR_INVALID_STATE
 *  after. */
BP_API bp_status bp_plugin_set_observer(bp_plugin_observer observer, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
