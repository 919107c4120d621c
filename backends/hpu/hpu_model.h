/* hpu: the modelled time.
 *
 * Each op becomes an hpu_work: the engine it occupies, its compute time (flops over the
 * engine's rate, or bytes over the host link for a host copy) and its HBM time (bytes
 * over the HBM bandwidth). A timeline places work on the engines, which are busy one
 * op at a time, and on HBM, which all engines share:
 *     start     = max(ready, engine free)
 *     mem_start = max(start, hbm free)
 *     end       = max(start + compute, mem_start + mem) + overhead
 *     hbm free  = mem_start + mem;  engine free = end
 * The device's hpu_model adds the host's modelled clock. Nothing here locks: the caller
 * holds the device's model mutex. Times are microseconds. */
#ifndef BP_HPU_MODEL_H
#define BP_HPU_MODEL_H

#include <backplane/plugin.h>

#include <stdbool.h>
#include <stddef.h>

#include "hpu_params.h"

typedef struct hpu_work {
    hpu_engine engine;
    double compute_us;
    double mem_us;
    double flops, bytes; /* what the times came from */
} hpu_work;

typedef struct hpu_timeline {
    double engine_free_us[HPU_ENGINE_COUNT];
    double hbm_free_us;
} hpu_timeline;

typedef struct hpu_model {
    hpu_timeline timeline;
    double host_us; /* the host's modelled clock */
} hpu_model;

/** The cost of one kernel call of the op `cost` describes. */
hpu_work hpu_work_kernel(const hpu_params *p, const hpu_op_cost *cost, const bp_kernel_call *call);

/** A copy of `size` bytes: host copies at the host link rate, device copies by HBM. */
hpu_work hpu_work_copy(const hpu_params *p, bp_copy_kind kind, size_t size);

/** A memset of `size` bytes. */
hpu_work hpu_work_memset(const hpu_params *p, size_t size);

/** Places `w` (ready at `ready_us`) on the timeline; returns its end, its start in
 *  *out_start_us when not NULL. */
double hpu_timeline_place(hpu_timeline *tl, const hpu_work *w, double ready_us,
                          double overhead_us, double *out_start_us);

/** An eager op on a stream whose modelled work is done at `stream_ready_us`: a kernel
 *  launch (`launch`) first costs the host eager_launch_us. Returns the op's end. */
double hpu_model_eager(hpu_model *m, const hpu_params *p, const hpu_work *w,
                       double stream_ready_us, bool launch);

/** The host waited for something done at `ts_us`. */
void hpu_model_host_waited(hpu_model *m, double ts_us);

/** The modelled time of a record now on a stream done at `stream_ready_us`. */
double hpu_model_record_ts(const hpu_model *m, double stream_ready_us);

#endif
