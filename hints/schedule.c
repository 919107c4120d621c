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

/* Whether two accesses of one storage conflict: one writes, and their bytes overlap. */
static bool accesses_conflict(const bp_region_arg *x, bool x_writes, const bp_region_arg *y,
                              bool y_writes) {
    return (x_writes || y_writes) && x->lo < y->hi && y->lo < x->hi && !layouts_disjoint(x, y);
}
typedef struct plan_ctx {
    bp_region *r;
    int n;
    int *depth;
    int *chain;
    int nchains;
    int *by_level;  /* nodes by (depth, index) */
    uint64_t *level_keys; /* scratch for making by_level */
    int *group_pos; /* scratch: where each chain group's nodes go */
} plan_ctx;

static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Fills c->by_level: the nodes by (depth, index), each pair one integer key. */
static void level_order(plan_ctx *c) {
    uint64_t *keys = c->level_keys;
    for (int i = 0; i < c->n; i++)
        keys[i] = (uint64_t)(uint32_t)c->depth[i] << 32 | (uint32_t)i;
    qsort(keys, (size_t)c->n, sizeof *keys, cmp_u64);
    for (int i = 0; i < c->n; i++)
        c->by_level[i] = (int)(keys[i] & 0xffffffffu);
}

/* Order of width k (k >= nchains: pure level order; 0: program order): the nodes of
 * chain group chain / k in turn, each group in level order (c->by_level), by a stable
 * counting pass. */
static void make_order(plan_ctx *c, int k, int *order) {
    int n = c->n;
    for (int i = 0; i < n; i++)
        order[i] = i;
    if (k == 0 || n == 0)
        return;
    int groups = (c->nchains + k - 1) / k;
    int *pos = c->group_pos;
    for (int g = 0; g <= groups; g++)
        pos[g] = 0;
    for (int i = 0; i < n; i++)
        pos[c->chain[i] / k + 1]++;
    for (int g = 1; g <= groups; g++)
        pos[g] += pos[g - 1];
    for (int p = 0; p < n; p++) {
        int i = c->by_level[p];
        order[pos[c->chain[i] / k]++] = i;
    }
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

/* The accesses of one storage so far, in program order: node and argument index. */
typedef struct access_list {
    int (*items)[2];
    int n, cap;
} access_list;

static bool access_add(access_list *l, int node, int arg) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        int(*grown)[2] = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return false;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n][0] = node;
    l->items[l->n][1] = arg;
    l->n++;
    return true;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Predecessors of every node, and its depth and chain. Each argument is compared only
 * with the earlier accesses of its own storage, so the cost follows the accesses that
 * share storage rather than the square of the node count. */
static bp_status build_deps(bp_region *r, bp_schedule *s, plan_ctx *c) {
    int n = r->nnodes;
    size_t cnt = n ? (size_t)n : 1;
    int *tmp = malloc(cnt * sizeof *tmp);
    int *chain_seen = malloc(cnt * sizeof *chain_seen);
    int *stamp = malloc(cnt * sizeof *stamp); /* stamp[i] == j: i is already a pred of j */
    access_list *acc = calloc(r->nstorages ? (size_t)r->nstorages : 1, sizeof *acc);
    bp_status st = BP_OK;
    if (!tmp || !chain_seen || !stamp || !acc)
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    for (int i = 0; i < n && st == BP_OK; i++)
        stamp[i] = -1;
    for (int j = 0; j < n && st == BP_OK; j++) {
        const bp_region_node *nj = &r->nodes[j];
        int nargs = nj->n_inputs + nj->n_outputs, np = 0;
        for (int a = 0; a < nargs; a++) {
            const bp_region_arg *x = &nj->args[a];
            const access_list *l = &acc[x->storage];
            for (int k = 0; k < l->n; k++) {
                int i = l->items[k][0];
                const bp_region_node *ni = &r->nodes[i];
                int b = l->items[k][1];
                if (stamp[i] != j &&
                    accesses_conflict(&ni->args[b], b >= ni->n_inputs, x, a >= nj->n_inputs)) {
                    stamp[i] = j;
                    tmp[np++] = i;
                }
            }
        }
        for (int a = 0; a < nargs && st == BP_OK; a++)
            if (!access_add(&acc[nj->args[a].storage], j, a))
                st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
        qsort(tmp, (size_t)np, sizeof *tmp, cmp_int);
        int depth = 0, the_chain = -1, nchain = 0;
        for (int p = 0; p < np; p++) {
            int i = tmp[p];
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
        s->preds[j] = st == BP_OK ? malloc((size_t)(np + 1) * sizeof(int)) : NULL;
        if (!s->preds[j]) {
            if (st == BP_OK)
                st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
            break;
        }
        memcpy(s->preds[j], tmp, (size_t)np * sizeof(int));
        s->preds[j][np] = -1;
    }
    for (int i = 0; acc && i < r->nstorages; i++)
        free(acc[i].items);
    free(acc);
    free(stamp);
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
    c.by_level = calloc(cnt, sizeof *c.by_level);
    c.level_keys = calloc(cnt, sizeof *c.level_keys);
    c.group_pos = calloc(cnt + 1, sizeof *c.group_pos);
    int *trial = malloc(cnt * sizeof *trial);
    bp_status st = BP_OK;
    if (!s->order || !s->stream_of || !s->preds || !c.depth || !c.chain || !c.by_level ||
        !c.level_keys || !c.group_pos || !trial)
        st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_region_end: out of host memory");
    if (st == BP_OK)
        st = build_deps(r, s, &c);
    if (st == BP_OK)
        level_order(&c);
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
    free(c.by_level);
    free(c.level_keys);
    free(c.group_pos);
    free(trial);
    return st;
}
