/* The region report: what became of each hint under the core executor, and the copy of
 * the schedule's facts into the caller's bp_region_report. */
#include <stdio.h>
#include <string.h>

#include "region_internal.h"

static void mark(bp_hint_item *item, const bp_schedule *s, const bp_region *r) {
    bool program_order = s->policy == BP_ORDER_STRICT || s->policy == BP_ORDER_DFS;
    const char *backend = r->stream->device->backend->name;
    /* A compiled region either keeps the schedule's streams (a CUDA graph) or is
     * scheduled over the backend's own engines (the hpu simulator). */
    bool own_engines = r->backend_compiled &&
                       !(r->stream->device->props.capabilities & BP_CAP_REGION_STREAMS);
    switch (item->kind) {
    case BP_HINT_KEY_ORDER:
    case BP_HINT_KEY_SCHEDULE_POLICY:
        bp_hint_item_mark(item, BP_HINT_HONOURED, "ran in %s order (%d chain%s, %d at a time)",
                          bp_schedule_order_name(s->policy), s->chains,
                          s->chains == 1 ? "" : "s", s->width);
        break;
    case BP_HINT_KEY_GROUP_ID:
        if (r->backend_compiled)
            bp_hint_item_mark(item, BP_HINT_IGNORED, "given to the %s region compiler, which "
                              "compiles each region as one group", backend);
        else
            bp_hint_item_mark(item, BP_HINT_IGNORED, "the core executor schedules each region "
                              "as one group; group_id is for graph backends");
        break;
    case BP_HINT_KEY_MAX_PARALLEL:
        if (own_engines)
            bp_hint_item_mark(item, BP_HINT_IGNORED, "the %s region compiler schedules the "
                              "captured work over its own engines; streams do not limit it",
                              backend);
        else if (program_order)
            bp_hint_item_mark(item, BP_HINT_IGNORED, "order %s runs on the region's stream only",
                              bp_schedule_order_name(s->policy));
        else
            bp_hint_item_mark(item, BP_HINT_HONOURED, "ran on %d stream%s%s", s->nstreams,
                              s->nstreams == 1 ? "" : "s",
                              r->backend_compiled ? ", as parallel branches of the backend's "
                                                    "compiled region" : "");
        break;
    case BP_HINT_KEY_MEM_BUDGET_MB:
        if (s->policy == BP_ORDER_AUTO)
            bp_hint_item_mark(item, BP_HINT_HONOURED, "picked width %d of %d, predicted peak "
                              "%.3f MB", s->width, s->chains,
                              (double)s->predicted_peak / 1048576.0);
        else
            bp_hint_item_mark(item, BP_HINT_IGNORED, "only order auto uses a memory budget");
        break;
    case BP_HINT_KEY_UNKNOWN:
    default:
        if (item->disposition == BP_HINT_PENDING)
            bp_hint_item_mark(item, BP_HINT_IGNORED, "unknown key");
        break;
    }
}

void bp_region_report_fill(bp_region *r, const bp_schedule *s, bp_region_report *report) {
    bp_hint_set *set = r->hints;
    for (int i = 0; set && i < set->count; i++)
        mark(&set->items[i], s, r);
    if (!report)
        return;
    report->nodes = r->nnodes;
    report->policy = s->policy;
    report->width = s->width;
    report->chains = s->chains;
    report->predicted_peak_bytes = s->predicted_peak;
    int n = set ? set->count : 0;
    if (n > BP_REGION_MAX_HINTS)
        n = BP_REGION_MAX_HINTS;
    report->hint_count = n;
    for (int i = 0; i < n; i++) {
        const bp_hint_item *item = &set->items[i];
        bp_region_hint *h = &report->hints[i];
        snprintf(h->key, sizeof h->key, "%s", item->key);
        h->disposition = item->disposition;
        snprintf(h->reason, sizeof h->reason, "%s", item->reason);
    }
}
