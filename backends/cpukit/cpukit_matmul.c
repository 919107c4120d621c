/* The geometry of a matmul call (cpukit_matmul.h). */
#include "cpukit_matmul.h"

#include <limits.h>
#include <backplane/op_attrs.h>

#include "cpukit_blas.h"

bool cpukit_mm_geometry_of(const bp_kernel_call *call, cpukit_mm_geometry *g) {
    const bp_tensor_desc *a = call->inputs[0], *b = call->inputs[1], *c = call->outputs[0];
    const bp_matmul_attrs *attrs = call->attrs;
    int ta = attrs && attrs->trans_a, tb = attrs && attrs->trans_b;
    *g = (cpukit_mm_geometry){.nbatch = c->ndim - 2, .items = 1};
    g->m = c->shape[c->ndim - 2];
    g->n = c->shape[c->ndim - 1];
    g->k = a->shape[a->ndim - (ta ? 2 : 1)];
    g->sam = a->strides[a->ndim - (ta ? 1 : 2)];
    g->sak = a->strides[a->ndim - (ta ? 2 : 1)];
    g->sbk = b->strides[b->ndim - (tb ? 1 : 2)];
    g->sbn = b->strides[b->ndim - (tb ? 2 : 1)];
    g->scm = c->strides[c->ndim - 2];
    g->scn = c->strides[c->ndim - 1];
    for (int d = 0; d < g->nbatch; d++) {
        int da = d - (c->ndim - a->ndim), db = d - (c->ndim - b->ndim);
        g->bshape[d] = c->shape[d];
        g->bsa[d] = da >= 0 && a->shape[da] != 1 ? a->strides[da] : 0;
        g->bsb[d] = db >= 0 && b->shape[db] != 1 ? b->strides[db] : 0;
        g->bsc[d] = c->strides[d];
        g->items *= c->shape[d];
    }
    return g->items > 0 && g->m > 0 && g->n > 0;
}

void cpukit_mm_item_offsets(const cpukit_mm_geometry *g, int64_t t, size_t esize, size_t *oa,
                            size_t *ob, size_t *oc) {
    int64_t ea = 0, eb = 0, ec = 0;
    for (int d = g->nbatch - 1; d >= 0; d--) {
        int64_t i = t % g->bshape[d];
        t /= g->bshape[d];
        ea += i * g->bsa[d];
        eb += i * g->bsb[d];
        ec += i * g->bsc[d];
    }
    *oa = (size_t)ea * esize;
    *ob = (size_t)eb * esize;
    *oc = (size_t)ec * esize;
}

cpukit_blas_view cpukit_blas_view_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    cpukit_blas_view v = {.ok = false};
    int64_t ld;
    if (cs == 1 && (rows <= 1 || rs >= cols)) {
        v.trans = CPUKIT_CBLAS_NO_TRANS;
        ld = rows <= 1 ? cols : rs;
    } else if (rs == 1 && (cols <= 1 || cs >= rows)) {
        v.trans = CPUKIT_CBLAS_TRANS;
        ld = cols <= 1 ? rows : cs;
    } else {
        return v;
    }
    if (ld < 1)
        ld = 1;
    v.ok = ld <= INT_MAX;
    v.ld = (int)ld;
    return v;
}

int cpukit_blas_flipped(int trans) {
    return trans == CPUKIT_CBLAS_NO_TRANS ? CPUKIT_CBLAS_TRANS : CPUKIT_CBLAS_NO_TRANS;
}
