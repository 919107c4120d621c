/* Whether the device can hold enqueued work behind a gate (gate.h) without blocking
 * the calling thread. Through the plugin's own enqueue_host it can: a host function is
 * one more task of the stream. Through the library's fallback for a plugin without
 * enqueue_host (bp_stream_launch_host_func) it cannot: a call that hands a stream new
 * work (a copy, a memset, a kernel, a stream wait) blocks until the stream's host
 * functions have run, so a test that enqueues work behind a gate only the test thread
 * opens would wait for itself; and a timing event's timestamp does not count host
 * functions there. */
#ifndef BP_CONF_HOLD_H
#define BP_CONF_HOLD_H

#include <stdbool.h>

/* True when host functions on bp_conf.device's streams go through its backend's own
 * enqueue_host (always for the built-in cpu backend). */
bool bp_conf_native_host_funcs(void);

/* Skips the running test unless bp_conf_native_host_funcs(), with the reason. */
#define BP_CONF_REQUIRE_NATIVE_HOST_FUNCS()                                                  \
    do {                                                                                     \
        if (!bp_conf_native_host_funcs())                                                    \
            BP_CONF_SKIP("the plugin has no enqueue_host: through the library's fallback, "  \
                         "work enqueued behind a host function blocks the calling thread "   \
                         "and timing events do not count host functions, so no work can be " \
                         "held behind a gate");                                              \
    } while (0)

#endif
