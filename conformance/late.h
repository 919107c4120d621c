/* Writes that run late for certain: the way the streams, events, device, guards,
 * allocator and threading groups keep work "still running" while the call under test
 * decides (docs/conformance.md, "Work held behind a gate").
 *
 * Where the device can hold work (hold.h), each write is a device-to-device copy
 * enqueued behind a hold on one gate (gate.h): it cannot run before the gate opens.
 * The test either opens the gate itself (bp_conf_late_finish), after a non-blocking
 * call such as a query or an allocation decided, or has a thread open it a while later
 * (bp_conf_late_open_later) before a blocking call (a synchronize, a download through a
 * stream that waits for the write): when that call returns the gate must be open and
 * the write done. A correct device never fails either way, whatever the load; a device
 * that answers too early is caught for certain by the first kind, and by the second
 * unless the machine stalls the test thread longer than BP_CONF_LATE_OPEN_MS.
 *
 * Without native host functions, work enqueued behind a gate would block the test
 * thread, so each write is the last step of bp_conf_slow_fill instead (the fallback):
 * late only by luck, never wrong. bp_conf_late_held says which it was.
 *
 * Public API only; no cmocka. The struct must outlive every hold: call
 * bp_conf_late_finish before anything that can end the test. */
#ifndef BP_CONF_LATE_H
#define BP_CONF_LATE_H

#include <stdbool.h>
#include <stddef.h>

#include <backplane/backplane.h>

#include "gate.h"

/* How long bp_conf_late_open_later waits before it opens the gate: long against a
 * scheduler's hiccup, short for the suite. */
#define BP_CONF_LATE_OPEN_MS 50

/* Initialise with bp_conf_late_init; the fields are private. */
typedef struct bp_conf_late {
    bool native;   /* writes are held behind the gate (bp_conf_native_host_funcs()) */
    int holders;   /* successful holds on the gate */
    bool finished; /* the gate is open and freed */
    bool opener_started;
    bp_conf_gate gate;
    bp_conf_gate_opener opener;
} bp_conf_late;

void bp_conf_late_init(bp_conf_late *late);

/* Enqueues on `stream` a write over dst[0, bytes) of `src`, device memory of the
 * stream's device that holds the byte `value` throughout (bp_conf_filled_buffer):
 * behind a hold on the gate, or, in the fallback, as the last step of `fallback_rounds`
 * of bp_conf_slow_fill of `value` (src unused). Returns the first failure; the gate
 * holds nothing more after one. */
bp_status bp_conf_late_write(bp_conf_late *late, bp_stream *stream, void *dst, const void *src,
                             size_t bytes, int value, int fallback_rounds);

/* True when the writes so far wait for the gate (not the fallback, and one was held). */
bool bp_conf_late_held(const bp_conf_late *late);

/* True when the gate is open (always when nothing was held): any thread may ask. */
bool bp_conf_late_is_open(bp_conf_late *late);

/* Starts a thread that opens the gate after BP_CONF_LATE_OPEN_MS (at once when no
 * thread can be started; nothing to do in the fallback). At most once. */
void bp_conf_late_open_later(bp_conf_late *late);

/* Opens the gate, waits for the opener's thread and for every hold to return, and
 * frees the gate. Returns whether the gate was already open (true when nothing was
 * held): after a blocking call that must wait for the writes, false means it returned
 * too early. Idempotent (later calls return true). */
bool bp_conf_late_finish(bp_conf_late *late);

#endif
