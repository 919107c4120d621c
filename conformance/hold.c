/* Whether work can be held behind a gate (hold.h): read from the plugin's descriptor,
 * as the library reads it. */
#include "hold.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include <backplane/plugin.h>

#include "conformance.h"

/* The plugin file's stream table has enqueue_host; false when the file cannot be read
 * (the tests that need it then skip rather than hang). */
static bool plugin_has_enqueue_host(const char *path) {
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* the loaded copy, one more reference */
    if (!dl)
        return false;
    bool has = false;
    void *sym = dlsym(dl, BP_PLUGIN_ENTRY_SYMBOL);
    if (sym) {
        bp_plugin_entry_fn entry;
        memcpy(&entry, &sym, sizeof entry); /* POSIX allows it */
        const bp_plugin_descriptor *d = entry();
        const bp_stream_vtable *vt = d ? d->stream : NULL;
        /* enqueue_host arrived in ABI 1.1: an older table ends before it. */
        has = vt && vt->struct_size >= BP_STRUCT_END(bp_stream_vtable, enqueue_host) &&
              vt->enqueue_host;
    }
    dlclose(dl);
    return has;
}

static bool native;
static pthread_once_t native_once = PTHREAD_ONCE_INIT;

static void read_native(void) {
    native = !bp_conf.plugin_path || plugin_has_enqueue_host(bp_conf.plugin_path);
}

/* One device per process: read once, by whichever thread asks first (worker threads
 * ask too, through late.h). */
bool bp_conf_native_host_funcs(void) {
    pthread_once(&native_once, read_native);
    return native;
}
