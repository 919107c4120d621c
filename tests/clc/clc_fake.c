/* A fake host and a recording fake device for backends/clc (clc_fake.h). */
#include "clc_fake.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define FAKE_BASE ((uintptr_t)1 << 32)

void *fake_addr(int alloc, size_t offset) {
    return (void *)(FAKE_BASE + (uintptr_t)alloc * (FAKE_ALLOC_BYTES * 2) + offset);
}

void *fake_handle(int alloc) {
    return (void *)(uintptr_t)(0xa110c000u + (unsigned)alloc);
}

int fake_alloc_of_handle(const void *handle) {
    for (int k = 0; k < FAKE_ALLOCS; k++)
        if (handle == fake_handle(k))
            return k;
    return -1;
}

/* ---- the host ---- */

/* The device whose call is running: set_error records into it. */
static fake_device *current;
static fake_host host;

static bp_status set_error(bp_status status, const char *fmt, ...) {
    if (current) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(current->rec.error, sizeof current->rec.error, fmt, ap);
        va_end(ap);
        current->rec.nerrors++;
        current->rec.error_status = status;
    }
    return status;
}

static void log_message(bp_log_level level, const char *source, const char *fmt, ...) {
    (void)level, (void)source, (void)fmt;
}

static bp_status register_kernel(const char *backend, const char *op, bp_dtype dtype,
                                 bp_kernel_fn fn, void *kernel_data, int32_t priority) {
    (void)priority;
    if (host.nregistered == FAKE_MAX_REGISTERED)
        return BP_ERR_OUT_OF_MEMORY;
    fake_registration *r = &host.registered[host.nregistered++];
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->op, sizeof r->op, "%s", op);
    r->dtype = dtype;
    r->fn = fn;
    r->kernel_data = kernel_data;
    return BP_OK;
}

static uint32_t reference_dtypes(const char *op) {
    (void)op;
    return (1u << BP_DTYPE_COUNT) - 1;
}

/* fill's value conversion (bp_host_fill_bits): every byte of the element is
 * FAKE_FILL_BYTE. */
static bp_status run_reference_kernel(const bp_kernel_call *call) {
    if (call->n_outputs != 1 || fake_dtype_size(call->dtype) == 0)
        return set_error(BP_ERR_UNSUPPORTED, "fake host: no reference kernel for %s",
                         call->op_name);
    memset(call->outputs[0]->data, FAKE_FILL_BYTE, fake_dtype_size(call->dtype));
    return BP_OK;
}

fake_host *fake_host_get(void) {
    if (!host.services.struct_size) {
        host.services.struct_size = sizeof host.services;
        host.services.abi_major = BP_PLUGIN_ABI_MAJOR;
        host.services.abi_minor = BP_PLUGIN_ABI_MINOR;
        host.services.set_error = set_error;
        host.services.log = log_message;
        host.services.register_kernel = register_kernel;
        host.services.reference_dtypes = reference_dtypes;
        host.services.run_reference_kernel = run_reference_kernel;
    }
    return &host;
}

/* ---- the device ---- */

#define DEVICE_OF(c) ((fake_device *)(c))

static bp_status translate(clc_device *c, const void *ptr, size_t size, void **handle,
                           size_t *offset, const char *what) {
    fake_device *dev = DEVICE_OF(c);
    uintptr_t p = (uintptr_t)ptr;
    for (int k = 0; k < FAKE_ALLOCS && !dev->fail_translate; k++) {
        uintptr_t base = (uintptr_t)fake_addr(k, 0);
        if (p >= base && p - base + size <= FAKE_ALLOC_BYTES) {
            *handle = fake_handle(k);
            *offset = p - base;
            return BP_OK;
        }
    }
    *handle = NULL;
    return set_error(BP_ERR_INVALID_ARGUMENT, "fake:%d: %s: %p is not fake device memory",
                     c->index, what, ptr);
}

static bp_status get_kernel(clc_device *c, clc_program_id id, int variant, const char *name,
                            void **kernel) {
    fake_device *dev = DEVICE_OF(c);
    fake_record *rec = &dev->rec;
    *kernel = NULL;
    if (dev->fail_get_kernel)
        return set_error(BP_ERR_BACKEND, "fake:%d: program %d variant %d does not build",
                         c->index, (int)id, variant);
    if (rec->nkernels == FAKE_MAX_KERNELS)
        return set_error(BP_ERR_OUT_OF_MEMORY, "fake: more than %d kernel requests",
                         FAKE_MAX_KERNELS);
    fake_kernel *k = &rec->kernels[rec->nkernels++];
    k->program = id;
    k->variant = variant;
    snprintf(k->name, sizeof k->name, "%s", name);
    *kernel = (void *)(uintptr_t)rec->nkernels; /* index + 1: never NULL */
    return BP_OK;
}

static bp_status launch(void *stream, void *kernel, const char *what, int nargs,
                        const clc_karg *args, unsigned dims, const size_t *global,
                        const size_t *local) {
    fake_record *rec = &((fake_device *)stream)->rec;
    if (rec->nlaunches == FAKE_MAX_LAUNCHES || nargs > FAKE_MAX_ARGS || dims < 1 || dims > 3)
        return set_error(BP_ERR_INVALID_ARGUMENT, "fake: launch of %s: %d args, %u dims",
                         what, nargs, dims);
    fake_launch *l = &rec->launches[rec->nlaunches++];
    memset(l, 0, sizeof *l);
    l->kernel = (int)(uintptr_t)kernel - 1;
    snprintf(l->what, sizeof l->what, "%s", what);
    l->nargs = nargs;
    for (int i = 0; i < nargs; i++) {
        l->size[i] = args[i].size;
        l->local[i] = args[i].value == NULL;
        if (args[i].value)
            memcpy(l->value[i], args[i].value,
                   args[i].size < FAKE_ARG_BYTES ? args[i].size : FAKE_ARG_BYTES);
    }
    l->dims = dims;
    for (unsigned d = 0; d < dims; d++) {
        l->global[d] = global[d];
        l->local_size[d] = local ? local[d] : 0;
    }
    return BP_OK;
}

static fake_move *next_move(fake_record *rec) {
    if (rec->nmoves == FAKE_MAX_MOVES)
        return NULL;
    fake_move *m = &rec->moves[rec->nmoves++];
    memset(m, 0, sizeof *m);
    return m;
}

static bp_status fill(void *stream, void *handle, size_t offset, const void *pattern,
                      size_t pattern_size, size_t bytes) {
    fake_move *m = next_move(&((fake_device *)stream)->rec);
    if (!m || pattern_size > sizeof m->pattern)
        return set_error(BP_ERR_INVALID_ARGUMENT, "fake: fill: too many, or pattern of %zu",
                         pattern_size);
    m->is_fill = true;
    m->dst = handle;
    m->dst_offset = offset;
    memcpy(&m->pattern, pattern, pattern_size);
    m->pattern_size = pattern_size;
    m->bytes = bytes;
    return BP_OK;
}

static bp_status copy(void *stream, void *dst, size_t dst_offset, void *src, size_t src_offset,
                      size_t bytes) {
    fake_move *m = next_move(&((fake_device *)stream)->rec);
    if (!m)
        return set_error(BP_ERR_INVALID_ARGUMENT, "fake: too many copies");
    m->dst = dst;
    m->dst_offset = dst_offset;
    m->src = src;
    m->src_offset = src_offset;
    m->bytes = bytes;
    return BP_OK;
}

static const clc_device_ops fake_ops = {
    .translate = translate,
    .get_kernel = get_kernel,
    .launch = launch,
    .fill = fill,
    .copy = copy,
};

void fake_device_init(fake_device *dev, bool fp64, uint64_t local_mem) {
    memset(dev, 0, sizeof *dev);
    dev->clc.ops = &fake_ops;
    dev->clc.host = &fake_host_get()->services;
    dev->clc.type = "fake";
    dev->clc.index = 0;
    dev->clc.rwg = CLC_FIXED_RWG;
    dev->clc.ts = CLC_FIXED_TS;
    dev->clc.max_wg = CLC_FIXED_MIN_WG;
    dev->clc.local_mem = local_mem;
    dev->fp64 = fp64;
    current = dev;
}

void fake_record_clear(fake_device *dev) {
    memset(&dev->rec, 0, sizeof dev->rec);
    current = dev;
}

static clc_device *stream_device(void *stream) {
    return &((fake_device *)stream)->clc;
}

bp_status fake_register(void) {
    static bool done;
    static bp_status result;
    if (!done) {
        done = true;
        result = clc_register_kernels(&fake_host_get()->services, "fake", stream_device);
    }
    return result;
}

const fake_registration *fake_find(const char *op, bp_dtype dtype) {
    for (int i = 0; i < host.nregistered; i++)
        if (strcmp(host.registered[i].op, op) == 0 && host.registered[i].dtype == dtype)
            return &host.registered[i];
    return NULL;
}

/* ---- calls ---- */

size_t fake_dtype_size(bp_dtype dt) {
    static const size_t sizes[BP_DTYPE_COUNT] = {
        [BP_DTYPE_F32] = 4, [BP_DTYPE_F16] = 2, [BP_DTYPE_BF16] = 2,
        [BP_DTYPE_F64] = 8, [BP_DTYPE_I8] = 1,  [BP_DTYPE_U8] = 1,
        [BP_DTYPE_I32] = 4, [BP_DTYPE_I64] = 8, [BP_DTYPE_BOOL] = 1,
    };
    return (unsigned)dt < BP_DTYPE_COUNT ? sizes[dt] : 0;
}

const char *fake_dtype_name(bp_dtype dt) {
    static const char *const names[BP_DTYPE_COUNT] = {"f32", "f16", "bf16", "f64", "i8",
                                                      "u8",  "i32", "i64",  "bool"};
    return (unsigned)dt < BP_DTYPE_COUNT ? names[dt] : "invalid";
}

bp_tensor_desc fake_tensor(bp_dtype dt, int alloc, int64_t offset, int ndim,
                           const int64_t *shape) {
    bp_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    t.data = fake_addr(alloc, (size_t)offset * fake_dtype_size(dt));
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        stride *= shape[d] > 0 ? shape[d] : 1;
    }
    return t;
}

bp_tensor_desc fake_transposed(bp_tensor_desc t) {
    int a = t.ndim - 2, b = t.ndim - 1;
    int64_t s = t.shape[a], st = t.strides[a];
    t.shape[a] = t.shape[b];
    t.strides[a] = t.strides[b];
    t.shape[b] = s;
    t.strides[b] = st;
    return t;
}

bp_status fake_call(fake_device *dev, const char *op, bp_dtype dtype, const void *attrs,
                    size_t attrs_size, int n_in, const bp_tensor_desc *const *ins,
                    const bp_tensor_desc *out) {
    const fake_registration *reg = fake_find(op, dtype);
    if (!reg)
        return BP_ERR_NOT_FOUND;
    fake_record_clear(dev);
    const bp_tensor_desc *outs[1] = {out};
    bp_kernel_call call = {
        .struct_size = sizeof call,
        .op = -1,
        .op_name = op,
        .dtype = dtype,
        .device = dev,
        .stream = dev,
        .n_inputs = n_in,
        .n_outputs = 1,
        .inputs = ins,
        .outputs = outs,
        .attrs = attrs,
        .kernel_data = reg->kernel_data,
        .attrs_size = attrs ? attrs_size : 0,
    };
    return reg->fn(&call);
}
