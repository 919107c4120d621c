/* hpu: the region compiler.
 *
 * begin() marks the region's streams as capturing into one graph. While they capture,
 * kernel launches, copies, memsets and host functions on them become graph nodes, and
 * event records make "graph events" that complete with the graph. end() list-schedules
 * the nodes on the device's engines (dependencies from overlapping byte ranges of the
 * nodes' arguments, issue in capture order), advances the model, and enqueues one
 * task on the main stream that runs every node in capture order with the host's
 * reference kernels.
 *
 * The hpu_graph_add_* functions are called with the device lock held, for a stream
 * whose `graph` is the graph. */
#ifndef BP_HPU_GRAPH_H
#define BP_HPU_GRAPH_H

#include "hpu_call.h"
#include "hpu_internal.h"

/* ---- completion of a graph, shared with the events recorded in it ---- */

typedef struct hpu_done hpu_done;

typedef enum hpu_done_state {
    HPU_DONE_CAPTURING = 0, /* the graph has not been launched */
    HPU_DONE_LAUNCHED = 1,  /* its work is the ticket below */
    HPU_DONE_ABORTED = 2,   /* discarded: nothing to wait for */
} hpu_done_state;

void hpu_done_retain(hpu_done *done);
void hpu_done_release(hpu_done *done);

/** The state; when launched, the main queue (a new reference) and the ticket of the
 *  graph's task; the modelled end (launched) or the main stream's time at abort. */
hpu_done_state hpu_done_get(hpu_done *done, cpu_queue **out_queue, uint64_t *out_ticket,
                            double *out_end_us);

/* ---- capture (device lock held) ---- */

/** The graph's completion (no new reference). */
hpu_done *hpu_graph_done(hpu_graph *g);

/** A kernel call; takes `call` (freed with the graph) on success. */
bp_status hpu_graph_add_kernel(hpu_graph *g, bp_kernel_call *call, const hpu_work *work);
bp_status hpu_graph_add_copy(hpu_graph *g, void *dst, const void *src, size_t size,
                             const hpu_work *work);
bp_status hpu_graph_add_memset(hpu_graph *g, void *ptr, int value, size_t size,
                               const hpu_work *work);
/** A host function: ordered after every earlier node and before every later one. */
bp_status hpu_graph_add_host_fn(hpu_graph *g, void (*fn)(void *arg), void *arg);
/** An event from outside the graph: the launch waits for `ticket` of `queue` (NULL:
 *  nothing real to wait for) and starts no earlier than `ts_us`. Takes the caller's
 *  reference on `queue`, also on failure. */
bp_status hpu_graph_add_wait(hpu_graph *g, cpu_queue *queue, uint64_t ticket, double ts_us);

#endif
