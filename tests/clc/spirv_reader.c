/* A small SPIR-V reader (spirv_reader.h), one pass over the word stream.
 *
 * A module is a 5-word header (magic, version, generator, id bound, schema) and then
 * instructions, each starting with a word holding its length in words (high 16 bits)
 * and its opcode (low 16 bits). The logical layout puts entry points, execution modes
 * and decorations before the types and constants, and those before the functions, so
 * everything a function parameter refers to is known when it is read. */
#include "spirv_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_TYPE_VECTOR = 23,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_CONSTANT = 43,
    OP_FUNCTION = 54,
    OP_FUNCTION_PARAMETER = 55,
    OP_FUNCTION_END = 56,
    OP_DECORATE = 71,
};
enum { MODEL_KERNEL = 6 };
enum { MODE_LOCAL_SIZE = 17 };
enum { DECO_CPACKED = 10, DECO_FUNC_PARAM_ATTR = 38 };
enum { PARAM_ATTR_BYVAL = 2 };
enum { SC_WORKGROUP = 4, SC_CROSS_WORKGROUP = 5, SC_FUNCTION = 7 };

typedef enum id_kind { ID_NONE, ID_SCALAR, ID_VECTOR, ID_ARRAY, ID_STRUCT, ID_POINTER, ID_CONSTANT } id_kind;

/* What the reader keeps of an id. */
typedef struct id_info {
    id_kind kind;
    uint64_t size, align; /* types with a layout (scalars, vectors, arrays, structs) */
    uint32_t storage;     /* pointers: the storage class */
    uint32_t pointee;     /* pointers: the type pointed to */
    uint64_t value;       /* integer constants */
    bool packed;          /* decorated CPacked (a struct without padding) */
    bool byval;           /* decorated FuncParamAttr ByVal (a parameter) */
} id_info;

typedef struct reader {
    const unsigned char *bytes;
    size_t nwords;
    bool swap; /* the module's words are of the other byte order */
    uint32_t bound;
    id_info *ids;
    uint32_t entry_fn[SPV_MAX_KERNELS]; /* each kernel's function id */
    int current;                        /* the kernel whose function is being read, or -1 */
    spv_module *m;
} reader;

static bool fail(reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->m->error, sizeof r->m->error, fmt, ap);
    va_end(ap);
    return false;
}

static uint32_t word(const reader *r, size_t i) {
    uint32_t w;
    memcpy(&w, r->bytes + 4 * i, 4);
    return r->swap ? __builtin_bswap32(w) : w;
}

/* The id at word i, or NULL (with the error) when it is not below the bound. */
static id_info *id_at(reader *r, size_t i) {
    uint32_t id = word(r, i);
    if (id == 0 || id >= r->bound) {
        fail(r, "id %u at word %zu is outside the bound %u", id, i, r->bound);
        return NULL;
    }
    return &r->ids[id];
}

static int kernel_of(const reader *r, uint32_t fn) {
    for (int k = 0; k < r->m->nkernels; k++)
        if (r->entry_fn[k] == fn)
            return k;
    return -1;
}

static bool entry_point(reader *r, size_t at, size_t len) {
    if (len < 4)
        return fail(r, "OpEntryPoint at word %zu is too short", at);
    if (word(r, at + 1) != MODEL_KERNEL)
        return true;
    if (r->m->nkernels == SPV_MAX_KERNELS)
        return fail(r, "more than %d kernels", SPV_MAX_KERNELS);
    spv_kernel *k = &r->m->kernels[r->m->nkernels];
    size_t n = 0;
    bool ended = false;
    for (size_t w = at + 3; w < at + len && !ended; w++) {
        uint32_t chars = word(r, w);
        for (int b = 0; b < 4 && !ended; b++) {
            char c = (char)((chars >> (8 * b)) & 0xffu);
            ended = c == '\0';
            if (!ended && n + 1 < sizeof k->name)
                k->name[n++] = c;
        }
    }
    if (!ended)
        return fail(r, "OpEntryPoint at word %zu: its name has no end", at);
    k->name[n] = '\0';
    r->entry_fn[r->m->nkernels++] = word(r, at + 2);
    return true;
}

static bool execution_mode(reader *r, size_t at, size_t len) {
    if (len < 3)
        return fail(r, "OpExecutionMode at word %zu is too short", at);
    int k = kernel_of(r, word(r, at + 1));
    if (k < 0 || word(r, at + 2) != MODE_LOCAL_SIZE)
        return true;
    if (len < 6)
        return fail(r, "LocalSize at word %zu is too short", at);
    spv_kernel *kern = &r->m->kernels[k];
    kern->has_local_size = true;
    for (int d = 0; d < 3; d++)
        kern->local_size[d] = word(r, at + 3 + d);
    return true;
}

static bool decorate(reader *r, size_t at, size_t len) {
    if (len < 3)
        return fail(r, "OpDecorate at word %zu is too short", at);
    id_info *target = id_at(r, at + 1);
    if (!target)
        return false;
    uint32_t deco = word(r, at + 2);
    if (deco == DECO_CPACKED)
        target->packed = true;
    else if (deco == DECO_FUNC_PARAM_ATTR && len >= 4 && word(r, at + 3) == PARAM_ATTR_BYVAL)
        target->byval = true;
    return true;
}

/* A type with a layout: its size and alignment. */
static bool set_layout(id_info *t, id_kind kind, uint64_t size, uint64_t align) {
    t->kind = kind;
    t->size = size;
    t->align = align ? align : 1;
    return true;
}

/* The layout type at word i (a scalar, vector, array or struct), or NULL. */
static const id_info *laid_out(reader *r, size_t i) {
    const id_info *t = id_at(r, i);
    if (t && (t->kind == ID_NONE || t->kind == ID_POINTER || t->kind == ID_CONSTANT)) {
        fail(r, "type %u at word %zu has no layout this reader knows", word(r, i), i);
        return NULL;
    }
    return t;
}

static bool type_struct(reader *r, size_t at, size_t len, id_info *t) {
    uint64_t off = 0, align = 1;
    for (size_t w = at + 2; w < at + len; w++) {
        const id_info *m = laid_out(r, w);
        if (!m)
            return false;
        uint64_t a = t->packed ? 1 : m->align;
        off = (off + a - 1) / a * a + m->size;
        align = a > align ? a : align;
    }
    return set_layout(t, ID_STRUCT, (off + align - 1) / align * align, align);
}

/* Types and constants: result id at word at + 1 (at + 2 for OpConstant). */
static bool type_or_constant(reader *r, uint32_t op, size_t at, size_t len) {
    size_t need = op == OP_TYPE_STRUCT ? 2 : op == OP_CONSTANT || op == OP_TYPE_INT ||
                                                     op == OP_TYPE_VECTOR ||
                                                     op == OP_TYPE_ARRAY ||
                                                     op == OP_TYPE_POINTER
                                                 ? 4
                                                 : 3;
    if (len < need)
        return fail(r, "instruction %u at word %zu is too short", op, at);
    id_info *t = id_at(r, at + (op == OP_CONSTANT ? 2 : 1));
    if (!t)
        return false;
    switch (op) {
    case OP_TYPE_INT:
    case OP_TYPE_FLOAT: {
        uint32_t bits = word(r, at + 2);
        if (bits == 0 || bits % 8 != 0 || bits > 64)
            return fail(r, "a %u-bit scalar type at word %zu", bits, at);
        return set_layout(t, ID_SCALAR, bits / 8, bits / 8);
    }
    case OP_TYPE_VECTOR: {
        const id_info *c = laid_out(r, at + 2);
        if (!c)
            return false;
        uint32_t n = word(r, at + 3);
        uint64_t size = c->size * (n == 3 ? 4 : n); /* OpenCL: a 3-vector is laid out as 4 */
        return set_layout(t, ID_VECTOR, size, size);
    }
    case OP_TYPE_ARRAY: {
        const id_info *e = laid_out(r, at + 2);
        const id_info *n = id_at(r, at + 3);
        if (!e || !n)
            return false;
        if (n->kind != ID_CONSTANT)
            return fail(r, "the length of array %u is not a constant", word(r, at + 1));
        return set_layout(t, ID_ARRAY, e->size * n->value, e->align);
    }
    case OP_TYPE_STRUCT:
        return type_struct(r, at, len, t);
    case OP_TYPE_POINTER:
        t->kind = ID_POINTER;
        t->storage = word(r, at + 2);
        t->pointee = word(r, at + 3);
        return true;
    default: /* OP_CONSTANT: only integer values matter (array lengths) */
        t->kind = ID_CONSTANT;
        t->value = word(r, at + 3) | (len > 4 ? (uint64_t)word(r, at + 4) << 32 : 0);
        return true;
    }
}

static spv_param classify(const reader *r, const id_info *type, const id_info *param) {
    spv_param p = {SPV_PARAM_OTHER, 0, 0};
    if (type->kind == ID_POINTER && type->pointee < r->bound)
        p.pointee_size = r->ids[type->pointee].size;
    if (type->kind == ID_SCALAR) {
        p.kind = SPV_PARAM_SCALAR;
        p.size = type->size;
    } else if (type->kind == ID_POINTER && type->storage == SC_CROSS_WORKGROUP) {
        p.kind = SPV_PARAM_GLOBAL;
    } else if (type->kind == ID_POINTER && type->storage == SC_WORKGROUP) {
        p.kind = SPV_PARAM_LOCAL;
    } else if (type->kind == ID_POINTER && type->storage == SC_FUNCTION && param->byval &&
               type->pointee < r->bound && r->ids[type->pointee].kind == ID_STRUCT) {
        p.kind = SPV_PARAM_BYVAL;
        p.size = r->ids[type->pointee].size;
    }
    return p;
}

static bool function_parameter(reader *r, size_t at, size_t len) {
    if (r->current < 0)
        return true;
    if (len < 3)
        return fail(r, "OpFunctionParameter at word %zu is too short", at);
    const id_info *type = id_at(r, at + 1), *param = id_at(r, at + 2);
    if (!type || !param)
        return false;
    spv_kernel *k = &r->m->kernels[r->current];
    if (k->nparams == SPV_MAX_PARAMS)
        return fail(r, "kernel %s has more than %d parameters", k->name, SPV_MAX_PARAMS);
    k->params[k->nparams++] = classify(r, type, param);
    return true;
}

static bool instruction(reader *r, uint32_t op, size_t at, size_t len) {
    switch (op) {
    case OP_ENTRY_POINT: return entry_point(r, at, len);
    case OP_EXECUTION_MODE: return execution_mode(r, at, len);
    case OP_DECORATE: return decorate(r, at, len);
    case OP_TYPE_INT:
    case OP_TYPE_FLOAT:
    case OP_TYPE_VECTOR:
    case OP_TYPE_ARRAY:
    case OP_TYPE_STRUCT:
    case OP_TYPE_POINTER:
    case OP_CONSTANT: return type_or_constant(r, op, at, len);
    case OP_FUNCTION:
        if (len < 5)
            return fail(r, "OpFunction at word %zu is too short", at);
        r->current = kernel_of(r, word(r, at + 2));
        return true;
    case OP_FUNCTION_PARAMETER: return function_parameter(r, at, len);
    case OP_FUNCTION_END: r->current = -1; return true;
    default: return true;
    }
}

bool spv_read(const void *bytes, size_t size, spv_module *m) {
    memset(m, 0, sizeof *m);
    reader r = {.bytes = bytes, .nwords = size / 4, .current = -1, .m = m};
    if (!bytes || size % 4 != 0 || r.nwords < 5)
        return fail(&r, "%zu bytes are not a SPIR-V module (whole words, a 5-word header)",
                    size);
    uint32_t magic = word(&r, 0);
    r.swap = magic == __builtin_bswap32(SPV_MAGIC);
    if (!r.swap && magic != SPV_MAGIC)
        return fail(&r, "magic 0x%08x is not SPIR-V's 0x%08x", magic, SPV_MAGIC);
    m->version = word(&r, 1);
    m->generator = word(&r, 2);
    r.bound = word(&r, 3);
    if (r.bound == 0 || r.bound > (1u << 22))
        return fail(&r, "id bound %u is out of range", r.bound);
    r.ids = calloc(r.bound, sizeof *r.ids);
    if (!r.ids)
        return fail(&r, "out of memory for %u ids", r.bound);
    bool ok = true;
    for (size_t at = 5; at < r.nwords && ok;) {
        uint32_t w = word(&r, at);
        size_t len = w >> 16;
        if (len == 0 || at + len > r.nwords) {
            ok = fail(&r, "the instruction at word %zu (%zu words) runs past the end (%zu)",
                      at, len, r.nwords);
            break;
        }
        ok = instruction(&r, w & 0xffffu, at, len);
        at += len;
    }
    free(r.ids);
    return ok;
}

const spv_kernel *spv_find_kernel(const spv_module *m, const char *name) {
    for (int k = 0; k < m->nkernels; k++)
        if (strcmp(m->kernels[k].name, name) == 0)
            return &m->kernels[k];
    return NULL;
}

const char *spv_param_kind_name(spv_param_kind kind) {
    switch (kind) {
    case SPV_PARAM_GLOBAL: return "global pointer";
    case SPV_PARAM_LOCAL: return "local pointer";
    case SPV_PARAM_BYVAL: return "by-value struct";
    case SPV_PARAM_SCALAR: return "scalar";
    default: return "other";
    }
}
