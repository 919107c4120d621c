/* A fake host and a recording fake device for driving backends/clc's op kernels
 * without a runtime: the host collects what clc_register_kernels registers and the
 * messages of set_error; the device's clc_device_ops record every kernel request,
 * launch (with a copy of each argument), fill and copy, and enqueue nothing.
 *
 * Device memory is FAKE_ALLOCS fake allocations: allocation k spans FAKE_ALLOC_BYTES
 * at address fake_addr(k, 0) and its handle is fake_handle(k); translate maps an
 * address inside one to (handle, offset), anything else is an error. */
#ifndef BP_TEST_CLC_FAKE_H
#define BP_TEST_CLC_FAKE_H

#include "clc.h"

#define FAKE_ALLOCS 8
#define FAKE_ALLOC_BYTES ((size_t)1 << 24)
#define FAKE_MAX_REGISTERED 512
#define FAKE_MAX_KERNELS 64
#define FAKE_MAX_LAUNCHES 32
#define FAKE_MAX_ARGS 32
#define FAKE_ARG_BYTES 256
#define FAKE_MAX_MOVES 32

/* A device address in allocation k, `offset` bytes in. */
void *fake_addr(int alloc, size_t offset);
void *fake_handle(int alloc);
/* The allocation whose handle is `handle`, or -1. */
int fake_alloc_of_handle(const void *handle);

/* ---- the host ---- */

typedef struct fake_registration {
    char backend[32];
    char op[32];
    bp_dtype dtype;
    bp_kernel_fn fn;
    void *kernel_data;
} fake_registration;

typedef struct fake_host {
    bp_host_services services;
    int nregistered;
    fake_registration registered[FAKE_MAX_REGISTERED];
} fake_host;

/* The host (one per process: its services are plain functions). */
fake_host *fake_host_get(void);
/* The bits the fake reference fill kernel writes: each byte of the element is this. */
#define FAKE_FILL_BYTE 0x3c

/* ---- the device and what it records ---- */

typedef struct fake_kernel {
    clc_program_id program;
    int variant;
    char name[32];
} fake_kernel;

typedef struct fake_launch {
    int kernel; /* index in fake_record.kernels */
    char what[32];
    int nargs;
    size_t size[FAKE_MAX_ARGS];
    bool local[FAKE_MAX_ARGS]; /* value was NULL */
    unsigned char value[FAKE_MAX_ARGS][FAKE_ARG_BYTES]; /* the first bytes of each value */
    unsigned dims;
    size_t global[3], local_size[3];
} fake_launch;

typedef struct fake_move {
    bool is_fill;
    void *dst, *src; /* handles (src: copies) */
    size_t dst_offset, src_offset, bytes;
    size_t pattern_size;
    uint64_t pattern;
} fake_move;

/* What one op call did. */
typedef struct fake_record {
    int nkernels;
    fake_kernel kernels[FAKE_MAX_KERNELS]; /* get_kernel requests, in order */
    int nlaunches;
    fake_launch launches[FAKE_MAX_LAUNCHES];
    int nmoves;
    fake_move moves[FAKE_MAX_MOVES]; /* fills and copies */
    int nerrors;
    bp_status error_status;
    char error[512]; /* the last set_error message */
} fake_record;

typedef struct fake_device {
    clc_device clc;
    bool fp64;
    bool fail_translate;  /* translate fails (as for a pointer the backend does not know) */
    bool fail_get_kernel; /* get_kernel fails (as for a program that does not build) */
    fake_record rec;
} fake_device;

/* A device as a SPIR-V module needs one: CLC_FIXED_RWG and CLC_FIXED_TS, work-groups of
 * CLC_FIXED_MIN_WG, `local_mem` bytes of local memory. Its stream is the device. */
void fake_device_init(fake_device *dev, bool fp64, uint64_t local_mem);
void fake_record_clear(fake_device *dev);

/* Registers clc's kernels with the fake host (once per process; later calls return
 * the first result) under the backend name "fake". */
bp_status fake_register(void);
/* The registration of (op, dtype), or NULL. */
const fake_registration *fake_find(const char *op, bp_dtype dtype);

/* ---- calls ---- */

/* Bytes of an element of dt, and its name ("f32"). */
size_t fake_dtype_size(bp_dtype dt);
const char *fake_dtype_name(bp_dtype dt);
/* A contiguous (row-major) tensor in allocation `alloc`, `offset` elements in. */
bp_tensor_desc fake_tensor(bp_dtype dt, int alloc, int64_t offset, int ndim,
                           const int64_t *shape);
/* The same tensor with its last two dims swapped (a transposed view). */
bp_tensor_desc fake_transposed(bp_tensor_desc t);

/* Clears the device's record and calls the registered kernel of (op, dtype) on it, as
 * the dispatcher would; BP_ERR_NOT_FOUND when clc registered none. */
bp_status fake_call(fake_device *dev, const char *op, bp_dtype dtype, const void *attrs,
                    size_t attrs_size, int n_in, const bp_tensor_desc *const *ins,
                    const bp_tensor_desc *out);

#endif
