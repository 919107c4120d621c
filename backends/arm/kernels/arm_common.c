/* The walker and the row iterator of arm_common.h. */
#include "arm_common.h"

void ak_walk_init(ak_walk *w, const bp_tensor_desc *out, int n_in,
                  const bp_tensor_desc *const *in) {
    w->nops = n_in + 1;
    w->base[0] = out->data;
    w->esize[0] = bp_plugin_dtype_size(out->dtype);
    for (int k = 0; k < n_in; k++) {
        w->base[k + 1] = in[k]->data;
        w->esize[k + 1] = bp_plugin_dtype_size(in[k]->dtype);
    }
    int nd = 0;
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1)
            continue; /* index 0 only: contributes no offset */
        int64_t st[AK_MAX_OPS];
        st[0] = out->strides[d];
        for (int k = 0; k < n_in; k++) {
            int di = d - (out->ndim - in[k]->ndim);
            st[k + 1] = di < 0 || in[k]->shape[di] == 1 ? 0 : in[k]->strides[di];
        }
        bool merge = nd > 0;
        for (int k = 0; merge && k < w->nops; k++)
            merge = w->stride[k][nd - 1] == st[k] * out->shape[d];
        if (merge) {
            w->shape[nd - 1] *= out->shape[d];
        } else {
            w->shape[nd] = out->shape[d];
            nd++;
        }
        for (int k = 0; k < w->nops; k++)
            w->stride[k][nd - 1] = st[k];
    }
    if (nd == 0) { /* a single element */
        w->shape[0] = 1;
        for (int k = 0; k < w->nops; k++)
            w->stride[k][0] = 0;
        nd = 1;
    }
    w->ndim = nd;
    ak_walk_seek(w, 0);
}

void ak_walk_seek(ak_walk *w, int64_t index) {
    for (int d = w->ndim - 1; d >= 0; d--) {
        w->pos[d] = w->shape[d] > 0 ? index % w->shape[d] : 0;
        index = w->shape[d] > 0 ? index / w->shape[d] : 0;
    }
}

void ak_walk_next(ak_walk *w, int64_t limit, ak_run *run) {
    int last = w->ndim - 1;
    int64_t left = w->shape[last] - w->pos[last];
    run->n = left < limit ? left : limit;
    for (int k = 0; k < w->nops; k++) {
        int64_t off = 0;
        for (int d = 0; d <= last; d++)
            off += w->pos[d] * w->stride[k][d];
        run->ptr[k] = w->base[k] + off * (int64_t)w->esize[k];
        run->step[k] = w->stride[k][last];
    }
    w->pos[last] += run->n;
    for (int d = last; d > 0 && w->pos[d] == w->shape[d]; d--) {
        w->pos[d] = 0;
        w->pos[d - 1]++;
    }
}

void ak_rows_init(ak_rows *rows, const bp_tensor_desc *in, const bp_tensor_desc *out, int dim) {
    rows->in = *in;
    rows->out = *out;
    if (rows->in.ndim == 0) { /* a scalar is one row of one element */
        rows->in.ndim = 1;
        rows->in.shape[0] = 1;
        rows->in.strides[0] = 0;
        dim = 0;
    }
    if (rows->out.ndim < rows->in.ndim) { /* keepdim off: dim back, with size 1 */
        for (int d = rows->out.ndim; d > dim; d--) {
            rows->out.shape[d] = rows->out.shape[d - 1];
            rows->out.strides[d] = rows->out.strides[d - 1];
        }
        rows->out.ndim++;
        rows->out.shape[dim] = 1;
        rows->out.strides[dim] = 0;
    }
    rows->len = rows->in.shape[dim];
    rows->in_step = rows->in.strides[dim];
    rows->out_step = rows->out.strides[dim];
    rows->in.shape[dim] = 1;
    rows->out.shape[dim] = 1;
    rows->count = bp_plugin_numel(&rows->out);
}

static void row_take(ak_row_iter *it) {
    ak_run run;
    ak_walk_next(&it->w, 1, &run);
    it->out = run.ptr[0];
    it->in = run.ptr[1];
}

void ak_row_iter_init(ak_row_iter *it, const ak_rows *rows, int64_t first) {
    const bp_tensor_desc *in = &rows->in;
    ak_walk_init(&it->w, &rows->out, 1, &in);
    ak_walk_seek(&it->w, first);
    row_take(it);
}

void ak_row_iter_next(ak_row_iter *it) { row_take(it); }
