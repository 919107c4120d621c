/* bp-info's probe: runs the listing in a forked child, so that a plugin that kills the
 * process while it loads (a crash or an exit in its constructor or init) is reported
 * instead of taking bp-info down; the child is run again without that plugin until a
 * run finishes. */
#ifndef BP_INFO_PROBE_H
#define BP_INFO_PROBE_H

/* Runs body(ctx) in a child whose stdout is kept and copied to ours once a run ends
 * without a plugin dying in it; returns the exit status of that run (1 when it died
 * outside any plugin, or could not be run). Call before anything loads plugins. */
int info_probe_run(int (*body)(void *ctx), void *ctx);

/* In the child: how the plugin at `path` killed an earlier run ("init killed the
 * process: killed by signal 6 (Aborted)"), or NULL when it did not. */
const char *info_probe_death(const char *path);

#endif
