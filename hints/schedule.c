/* The scheduling policies that order a recorded region.
 *
 * Dependencies come from the byte extents each node reads and writes in each storage
 * (read after write, write after read, write after write). Nodes split into chains: a
 * node continues the chain of its predecessors when they all lie in one chain, else it
 * starts a new one (a region's slices become one chain each; a node joining several
 * slices starts its own). A schedule of width k runs the chains k at a time: chains
 * [0, k) in level order (topological depth, then program order), then [k, 2k) ...;
 * every chain depends only on chains created before it, so this is a valid order.
 *   bfs         width = all chains (pure level order), over min(max_parallel, chains)
 *               streams (default max_parallel 4);
 *   strict, dfs program order on the region's stream;
 *   auto        the largest width whose predicted peak fits mem_budget_mb (the
 *               widest when no budget is given).
 * The predicted peak simulates the executor: deferred storage is allocated (rounded
 * as the allocator does, to 512 bytes) at its first use and, unless the user holds
 * it, freed after its last. */
#include <stdlib.h>
#include <string.h>

#include "region_internal.h"

#define DEFAULT_MAX_PARALLEL 4
#define ALLOC_ROUND ((uint64_t)512)

/* True when two views of one storage with the same dtype and strides provably share no
 * element (narrows of one tensor, e.g. the slices of an output): the offset between
 * them decomposes into whole steps along the dims, the box spanning both maps to
 * memory one-to-one (nested strides), and along some dim the second starts after the
 * first ends. False when unsure. */
static bool layouts_disjoint(const bp_region_arg *x, const bp_region_arg *y) {
    const bp_region_arg *lo = x->offset <= y->offset ? x : y, *hi = lo == x ? y : x;
    const bp_tensor_desc *a = &lo->desc, *b = &hi->desc;
    int nd = a->ndim;
    if (a->dtype != b->dtype || nd != b->ndim || nd == 0 || nd > BP_MAX_DIMS)
        return false;
    int64_t es = (int64_t)bp_dtype_size(a->dtype);
    if (lo->offset % es || hi->offset % es)
        return false;
    int order[BP_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        if (a->strides[d] != b->strides[d] || a->strides[d] <= 0)
            return false;
        int k = d;
        while (k > 0 && a->strides[order[k - 1]] < a->strides[d]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = d;
    }
    int64_t delta = (hi->offset - lo->offset) / es, idx[BP_MAX_DIMS];
    for (int k = 0; k < nd; k++) {
        int d = order[k];
        idx[d] = delta / a->strides[d];
        delta -= idx[d] * a->strides[d];
    }
    if (delta != 0)
        return false;
    int64_t span = 0;
    for (int k = nd - 1; k >= 0; k--) {
        int d = order[k];
        int64_t range = idx[d] + b->shape[d] > a->shape[d] ? idx[d] + b->shape[d] : a->shape[d];
        if (range > 1 && a->strides[d] <= span)
            return false;
        span += (range - 1) * a->strides[d];
    }
    for (int d = 0; d < nd; d++)
        if (idx[d] >= a->shape[d])
            return true;
    return false;
}

static bool args_conflict(const bp_region_node *a, const bp_region_node *b) {
    int na = a->n_inputs + a->n_outputs, nb = b->n_inputs + b->n_outputs;
    for (int i = 0; i < na; i++) {
        const bp_region_arg *x = &a->args[i];
        bool xw = i >= a->n_inputs;
        for (int j = 0; j < nb; j++) {
            const bp_region_arg *y = &b->args[j];
            bool yw = j >= b->n_inputs;
            if ((xw || yw) && x->storage == y->storage && x->lo < y->hi && y->lo < x->hi &&
                !layouts_disjoint(x, y))
                return true;
        }
    }
    return false;
}

typedef struct plan_ctx {
    bp_region *r;
    int n;
    int *depth;
    int *chain;
    int nchains;
    int *key_group; /* scratch for sorting */
} plan_ctx;

static plan_ctx *sort_ctx; /* qsort has no context argument; plans run one at a time */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

static int cmp_nodes(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    const plan_ctx *c = sort_ctx;
    if (c->key_group[a] != c->key_group[b])
        return c->key_group[a] < c->key_group[b] ? -1 : 1;
    if (c->depth[a] != c->depth[b])
        return c->depth[a] < c->depth[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Order of width k (k >= nchains: pure level order; 0: program order). */
static void make_order(plan_ctx *c, int k, int *order) {
    for (int i = 0; i < c->n; i++)
        order[i] = i;
    if (k == 0)
        return;
    for (int i = 0; i < c->n; i++)
        c->key_group[i] = c->chain[i] / k;
    pthread_mutex_lock(&sort_lock);
    sort_ctx = c;
    qsort(order, (size_t)c->n, sizeof *order, cmp_nodes);
    sort_ctx = NULL;
    pthread_mutex_unlock(&sort_lock);
}

static uint64_t rounded(size_t bytes) { return (bytes + ALLOC_ROUND - 1) & ~(ALLOC_ROUND - 1); }

static bp_status simulate_peak(const bp_region *r, const int *order, uint64_t *out_peak) {
    int ns = r->nstorages;
    int *first = malloc((ns ? (size_t)ns : 1) * sizeof *first);
    int *last = malloc((ns ? (size_t)ns : 1) * sizeof *last);
    if (!first || !last) {
        free(first);
        free(last);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    }
    for (int i = 0; i < ns; i++)
        first[i] = last[i] = -1;
    for (int pos = 0; pos < r->nnodes; pos++) {
        const bp_region_node *node = &r->nodes[order[pos]];
        for (int a = 0; a < node->n_inputs + node->n_outputs; a++) {
            int si = node->args[a].storage;
            if (first[si] < 0)
                first[si] = pos;
            last[si] = pos;
        }
    }
    uint64_t cur = 0, peak = 0;
    for (int pos = 0; pos < r->nnodes; pos++) {
        const bp_region_node *node = &r->nodes[order[pos]];
        int nargs = node->n_inputs + node->n_outputs;
        for (int a = 0; a < nargs; a++) {
            int si = node->args[a].storage;
            if (r->storages[si].deferred && first[si] == pos) {
                cur += rounded(r->storages[si].storage->bytes);
                first[si] = -2; /* counted (a node may name a storage twice) */
            }
        }
        if (cur > peak)
            peak = cur;
        for (int a = 0; a < nargs; a++) {
            int si = node->args[a].storage;
            if (r->storages[si].deferred && !r->storages[si].user_held && last[si] == pos) {
                cur -= rounded(r->storages[si].storage->bytes);
                last[si] = -2;
            }
        }
    }
    for (int i = 0; i < ns; i++)
        if (r->storages[i].deferred && r->storages[i].user_held && first[i] == -1)
            cur += rounded(r->storages[i].storage->bytes);
    if (cur > peak)
        peak = cur;
    free(first);
    free(last);
    *out_peak = peak;
    return BP_OK;
}

void bp_schedule_free(bp_schedule *s, int nnodes) {
    if (s->preds)
        for (int i = 0; i < nnodes; i++)
            free(s->preds[i]);
    free(s->preds);
    free(s->order);
    free(s->stream_of);
    memset(s, 0, sizeof *s);
}

static bp_status build_deps(bp_region *r, bp_schedule *s, plan_ctx *c) {
    int n = r->nnodes;
    int *tmp = malloc((n ? (size_t)n : 1) * sizeof *tmp);
    int *chain_seen = malloc((n ? (size_t)n : 1) * sizeof *chain_seen);
    if (!tmp || !chain_seen) {
        free(tmp);
        free(chain_seen);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    }
    bp_status st = BP_OK;
    for (int j = 0; j < n && st == BP_OK; j++) {
        int np = 0, depth = 0, the_chain = -1, nchain = 0;
        for (int i = 0; i < j; i++)
            if (args_conflict(&r->nodes[i], &r->nodes[j])) {
                tmp[np++] = i;
                if (c->depth[i] + 1 > depth)
                    depth = c->depth[i] + 1;
                if (c->chain[i] != the_chain) {
                    bool seen = false;
                    for (int q = 0; q < nchain; q++)
                        seen |= chain_seen[q] == c->chain[i];
                    if (!seen)
                        chain_seen[nchain++] = c->chain[i];
                    the_chain = c->chain[i];
                }
            }
        c->depth[j] = depth;
        c->chain[j] = nchain == 1 ? chain_seen[0] : c->nchains++;
        s->preds[j] = malloc((size_t)(np + 1) * sizeof(int));
        if (!s->preds[j]) {
            st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
            break;
        }
        memcpy(s->preds[j], tmp, (size_t)np * sizeof(int));
        s->preds[j][np] = -1;
    }
    free(tmp);
    free(chain_seen);
    return st;
}

bp_status bp_schedule_plan(bp_region *r, const bp_hint_values *hv, bp_schedule *s) {
    int n = r->nnodes;
    size_t cnt = n ? (size_t)n : 1;
    memset(s, 0, sizeof *s);
    s->order = malloc(cnt * sizeof *s->order);
    s->stream_of = calloc(cnt, sizeof *s->stream_of);
    s->preds = calloc(cnt, sizeof *s->preds);
    plan_ctx c = {.r = r, .n = n};
    c.depth = calloc(cnt, sizeof *c.depth);
    c.chain = calloc(cnt, sizeof *c.chain);
    c.key_group = calloc(cnt, sizeof *c.key_group);
    int *trial = malloc(cnt * sizeof *trial);
    bp_status st = BP_OK;
    if (!s->order || !s->stream_of || !s->preds || !c.depth || !c.chain || !c.key_group || !trial)
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    if (st == BP_OK)
        st = build_deps(r, s, &c);
    int chains = c.nchains;
    s->chains = chains;
    bp_schedule_order policy = hv->order == BP_ORDER_UNSET ? BP_ORDER_BFS : hv->order;
    s->policy = policy;
    int max_parallel = hv->has_max_parallel ? hv->max_parallel : DEFAULT_MAX_PARALLEL;
    if (max_parallel > BP_REGION_MAX_STREAMS)
        max_parallel = BP_REGION_MAX_STREAMS;
    if (max_parallel < 1)
        max_parallel = 1;
    int width = 1;
    if (st == BP_OK && (policy == BP_ORDER_STRICT || policy == BP_ORDER_DFS)) {
        make_order(&c, 0, s->order);
        st = simulate_peak(r, s->order, &s->predicted_peak);
    } else if (st == BP_OK && policy == BP_ORDER_BFS) {
        width = chains > 0 ? chains : 1;
        make_order(&c, width, s->order);
        st = simulate_peak(r, s->order, &s->predicted_peak);
    } else if (st == BP_OK) { /* auto */
        /* The hint is any finite number >= 0: clamp before converting (a double past
         * 2^64 does not convert to uint64_t). */
        double budget_bytes = hv->mem_budget_mb * 1048576.0;
        uint64_t budget = !hv->has_mem_budget || budget_bytes >= 18446744073709551616.0
                              ? UINT64_MAX
                              : (uint64_t)budget_bytes;
        uint64_t best_peak = UINT64_MAX;
        int best_k = 0;
        bool found = false;
        for (int k = chains > 0 ? chains : 1; k >= 1 && st == BP_OK; k--) {
            uint64_t peak = 0;
            make_order(&c, k, trial);
            st = simulate_peak(r, trial, &peak);
            if (st != BP_OK)
                break;
            if (peak < best_peak) {
                best_peak = peak;
                best_k = k;
            }
            if (peak <= budget) {
                memcpy(s->order, trial, cnt * sizeof *trial);
                s->predicted_peak = peak;
                width = k;
                found = true;
                break;
            }
        }
        if (st == BP_OK && !found)
            st = bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_region_end: order auto: no schedule "
                              "fits mem_budget_mb=%g; the smallest feasible peak is %.3f MB "
                              "(%d chain%s at a time of %d)", hv->mem_budget_mb,
                              (double)best_peak / 1048576.0, best_k, best_k == 1 ? "" : "s",
                              chains);
    }
    s->width = width;
    int nstreams = width < max_parallel ? width : max_parallel;
    if (policy == BP_ORDER_STRICT || policy == BP_ORDER_DFS || nstreams < 1)
        nstreams = 1;
    s->nstreams = nstreams;
    if (st == BP_OK && nstreams > 1)
        for (int j = 0; j < n; j++)
            s->stream_of[j] = (c.chain[j] % width) % nstreams;
    free(c.depth);
    free(c.chain);
    free(c.key_group);
    free(trial);
    return st;
}
