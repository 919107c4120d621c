/* Conformance group "memory": device memory through the public API on the device
 * under test. Sizes and alignment of allocations, out-of-memory as an error, memset,
 * copies in every direction at unaligned offsets (every byte of the destination
 * checked, the last included, and the bytes just outside it), overlapping copies
 * within a device (memmove), peer copies between two devices of the type, the
 * allocator's statistics, empty_cache, and host memory.
 *
 * Each test checks one primitive and relies only on those checked before it: bytes
 * are set with host->device copies (alloc_sizes checks the round trip first), never
 * with memset, outside memset's own test, so a memset defect fails memory.memset and
 * not the copy tests.
 *
 * Data is random from the test's seed and buffers start from random backgrounds, so a
 * copy or memset that skips a byte leaves a wrong value behind rather than a zero
 * that happens to match. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "work.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static bp_device_props props_now(void) {
    bp_device_props p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    BP_CONF_OK(bp_device_get_props(bp_conf.device, &p));
    return p;
}

/* Index of the first byte where a and b differ, or n when none. */
static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t n) {
    if (memcmp(a, b, n) == 0) /* the common case, fast also under sanitizers */
        return n;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return i;
    return n;
}

/* dst[i] = ~src[i] for i < n, eight bytes at a time: a byte a copy skips keeps a value
 * that cannot match. */
static void complement_bytes(unsigned char *dst, const unsigned char *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        w = ~w;
        memcpy(dst + i, &w, 8);
    }
    for (; i < n; i++)
        dst[i] = (unsigned char)~src[i];
}

/* Describes index `i` of a buffer of `total` bytes relative to the written range
 * [lo, lo + n). When the check read the buffer back with one device-to-host copy of
 * `total` bytes (0: it did not), a wrong last byte outside the range may be that
 * copy's fault. */
static void describe_position(char *buf, size_t size, size_t i, size_t lo, size_t n,
                              size_t total) {
    if (i == total - 1 && i >= lo + n)
        snprintf(buf, size, "the last byte of the %zu-byte read-back, outside the written range "
                 "(does the device->host copy drop its last byte?)", total);
    else if (i < lo)
        snprintf(buf, size, "%zu byte(s) before the written range (untouched expected)", lo - i);
    else if (i >= lo + n)
        snprintf(buf, size, "%zu byte(s) after the written range (untouched expected)",
                 i - (lo + n) + 1);
    else if (i == lo + n - 1)
        snprintf(buf, size, "the LAST byte of the written range (index %zu of %zu)", i - lo, n);
    else
        snprintf(buf, size, "index %zu of the %zu written", i - lo, n);
}

/* ---- alloc_sizes ---- */

/* Uploads random bytes into a fresh allocation of `n` bytes and reads them back. */
static void round_trip(bp_stream *s, size_t n, uint64_t seed) {
    unsigned char *in = bp_conf_host_buffer(n), *out = bp_conf_host_buffer(n);
    bp_conf_random_bytes(in, n, seed);
    memset(out, 0, n);
    out[n - 1] = (unsigned char)~in[n - 1];
    void *d = bp_conf_alloc(n, s);
    BP_CONF_OK(bp_conf_upload(s, d, in, n));
    BP_CONF_OK(bp_conf_download(s, d, n, out));
    size_t bad = first_difference(in, out, n);
    if (bad < n)
        fail_msg("allocation of %zu bytes: byte %zu reads back as 0x%02x, 0x%02x was written", n,
                 bad, out[bad], in[bad]);
    BP_CONF_OK(bp_memory_free(bp_conf.device, d));
    free(in);
    free(out);
}

static void test_alloc_sizes(void **state) {
    bp_stream *s = bp_conf_stream();
    void *p = (void *)&p;
    BP_CONF_OK(bp_memory_alloc(bp_conf.device, 0, s, &p));
    if (p)
        fail_msg("a 0-byte allocation returned %p, expected NULL", p);
    BP_CONF_OK(bp_memory_free(bp_conf.device, NULL));

    /* Large: 64 MiB, or an eighth of what the device has free when that is less. */
    bp_device_props props = props_now();
    uint64_t room = props.free_memory ? props.free_memory : props.total_memory;
    size_t large = 64 * MIB;
    if (room / 8 < large)
        large = (size_t)(room / 8);
    const size_t sizes[] = {1, 2, 3, 255, 4097, 65537, MIB + 1, large};
    uint64_t seed = bp_conf_test_seed();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i] >= 1)
            round_trip(s, sizes[i], seed + i);
    if (large < 64 * MIB)
        print_message("large allocation capped at %zu bytes (an eighth of %" PRIu64
                      " bytes free)\n", large, room);
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- alignment ---- */

static void test_alignment(void **state) {
    static const size_t sizes[] = {1,   3,   255,      256, 257,     511,         512,
                                   513, 4095, 4097,    65537, MIB - 1, MIB,        MIB + 1,
                                   2 * MIB + 3, 5 * MIB + 7};
    enum { N = sizeof sizes / sizeof sizes[0] };
    bp_stream *s = bp_conf_stream();
    void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = bp_conf_alloc(sizes[i], s);
        if ((uintptr_t)p[i] % 256)
            fail_msg("an allocation of %zu bytes returned %p, not aligned to 256 bytes", sizes[i],
                     p[i]);
        for (size_t j = 0; j < i; j++) {
            uintptr_t a = (uintptr_t)p[i], b = (uintptr_t)p[j];
            if (a < b + sizes[j] && b < a + sizes[i])
                fail_msg("live allocations overlap: %zu bytes at %p and %zu bytes at %p", sizes[i],
                         p[i], sizes[j], p[j]);
        }
    }
    for (size_t i = 0; i < N; i++)
        BP_CONF_OK(bp_memory_free(bp_conf.device, p[i]));
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- out_of_memory_is_error ---- */

/* Allocates, uploads random bytes to and reads back a small block: the device still
 * works (through copies only, which copy_sizes_and_offsets checks, not memset). */
static void expect_device_usable(bp_stream *s) {
    unsigned char data[4096];
    bp_conf_random_bytes(data, sizeof data, bp_conf_test_seed());
    void *d = bp_conf_alloc(sizeof data, s);
    BP_CONF_OK(bp_conf_upload(s, d, data, sizeof data));
    bp_conf_expect_bytes(s, d, data, sizeof data, "a block allocated after out-of-memory");
    BP_CONF_OK(bp_memory_free(bp_conf.device, d));
}

static void test_out_of_memory_is_error(void **state) {
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    bp_device_props props = props_now();
    uint64_t total = props.total_memory;
    bool limited = false;
    if (!total) {
        /* No total reported: only a limit can make a request too large. */
        BP_CONF_OK(bp_memory_set_limit(dev, 64 * MIB));
        limited = true;
        total = 64 * MIB;
        print_message("the device reports no total memory; testing under a 64 MiB limit\n");
    }

    /* More than the device has: an error with a message, never a crash. */
    void *p = (void *)&p;
    size_t too_much = total > SIZE_MAX - 4 * MIB ? SIZE_MAX / 2 : (size_t)total + 2 * MIB;
    BP_CONF_ERR(bp_memory_alloc(dev, too_much, s, &p), BP_ERR_OUT_OF_MEMORY);
    if (p)
        fail_msg("a failed allocation left %p in out_ptr, expected NULL", p);
    p = (void *)&p;
    BP_CONF_ERR(bp_memory_alloc(dev, SIZE_MAX / 2, s, &p), BP_ERR_OUT_OF_MEMORY);
    expect_device_usable(s);

    /* As much as the device has: this one reaches the backend's alloc, which may give
     * it (host memory overcommits) or must say BP_ERR_OUT_OF_MEMORY. */
    if (!limited && total >= 4 * MIB) {
        size_t all = (size_t)total & ~(2 * MIB - 1);
        p = NULL;
        bp_clear_error();
        bp_status st = bp_memory_alloc(dev, all, s, &p);
        if (st == BP_OK) {
            print_message("the backend gave all %zu bytes of the device at once\n", all);
            BP_CONF_OK(bp_memory_free(dev, p));
        } else if (st != BP_ERR_OUT_OF_MEMORY) {
            fail_msg("allocating the device's whole memory (%zu bytes) returned %s, expected "
                     "BP_OK or BP_ERR_OUT_OF_MEMORY: %s", all, bp_status_str(st), bp_last_error());
        } else if (!bp_last_error()[0]) {
            fail_msg("allocating %zu bytes returned BP_ERR_OUT_OF_MEMORY without a message", all);
        }
        BP_CONF_OK(bp_memory_empty_cache(dev));
        expect_device_usable(s);
    }
    if (limited)
        BP_CONF_OK(bp_memory_set_limit(dev, 0));
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- copy_sizes_and_offsets ---- */

#define CS_GUARD ((size_t)64)     /* bytes before the largest offset and after the copy */
#define CS_MAX_OFFSET ((size_t)255)
#define CS_MAX_SIZE ((size_t)65537)
#define CS_SPAN (CS_GUARD + CS_MAX_OFFSET + CS_MAX_SIZE + CS_GUARD) /* one copy's room */
#define CS_BYTES (2 * CS_SPAN) /* two halves: a copy within one allocation uses both */

static const size_t copy_offsets[] = {0, 1, 3, 255};
static const size_t copy_sizes[] = {1, 2, 3, 255, 4097, 65537};

enum copy_dir { H2D, D2H, D2D_SAME, D2D_OTHER, N_DIRS };
static const char *const copy_dir_names[N_DIRS] = {
    "host->device", "device->host", "device->device (one allocation)",
    "device->device (two allocations)"};

/* Two device buffers and host buffers, each with a host mirror of what it must hold. */
typedef struct copy_rig {
    bp_stream *s;
    unsigned char *d1, *d2;      /* device */
    unsigned char *m1, *m2;      /* mirrors of d1, d2 */
    unsigned char *src;          /* host source (random) */
    unsigned char *dst, *mdst;   /* host destination and its mirror */
    unsigned char *back;         /* downloads */
} copy_rig;

static void rig_init(copy_rig *r) {
    uint64_t seed = bp_conf_test_seed();
    r->s = bp_conf_stream();
    r->d1 = bp_conf_alloc(CS_BYTES, r->s);
    r->d2 = bp_conf_alloc(CS_BYTES, r->s);
    r->m1 = bp_conf_host_buffer(CS_BYTES);
    r->m2 = bp_conf_host_buffer(CS_BYTES);
    r->src = bp_conf_host_buffer(CS_BYTES);
    r->dst = bp_conf_host_buffer(CS_BYTES);
    r->mdst = bp_conf_host_buffer(CS_BYTES);
    r->back = bp_conf_host_buffer(CS_BYTES);
    bp_conf_random_bytes(r->m1, CS_BYTES, seed ^ 1);
    bp_conf_random_bytes(r->m2, CS_BYTES, seed ^ 2);
    bp_conf_random_bytes(r->src, CS_BYTES, seed ^ 3);
    bp_conf_random_bytes(r->mdst, CS_BYTES, seed ^ 4);
    memcpy(r->dst, r->mdst, CS_BYTES);
    BP_CONF_OK(bp_conf_upload(r->s, r->d1, r->m1, CS_BYTES));
    BP_CONF_OK(bp_conf_upload(r->s, r->d2, r->m2, CS_BYTES));
}

static void rig_free(copy_rig *r) {
    BP_CONF_OK(bp_memory_free(bp_conf.device, r->d1));
    BP_CONF_OK(bp_memory_free(bp_conf.device, r->d2));
    BP_CONF_OK(bp_stream_destroy(r->s));
    free(r->m1);
    free(r->m2);
    free(r->src);
    free(r->dst);
    free(r->mdst);
    free(r->back);
}

/* Fails unless `got` equals `want` over the whole buffer, naming the copy and where
 * the wrong byte lies relative to the range [lo, lo + n) it wrote. */
static void expect_buffer(const unsigned char *got, const unsigned char *want, size_t lo, size_t n,
                          size_t read_back, const char *where, enum copy_dir dir, size_t so,
                          size_t dof) {
    size_t bad = first_difference(got, want, CS_BYTES);
    if (bad == CS_BYTES)
        return;
    char pos[128];
    describe_position(pos, sizeof pos, bad, lo, n, read_back);
    fail_msg("%s copy of %zu bytes, source offset %zu, destination offset %zu: %s byte at %zu is "
             "0x%02x, expected 0x%02x: %s", copy_dir_names[dir], n, so, dof, where, bad, got[bad],
             want[bad], pos);
}

/* Downloads device buffer `d` and checks it against its mirror. */
static void expect_device(copy_rig *r, const unsigned char *d, const unsigned char *m, size_t lo,
                          size_t n, const char *where, enum copy_dir dir, size_t so, size_t dof) {
    /* Pre-set to the complement so that a byte the download skips cannot match. */
    complement_bytes(r->back, m, CS_BYTES);
    BP_CONF_OK(bp_conf_download(r->s, d, CS_BYTES, r->back));
    expect_buffer(r->back, m, lo, n, CS_BYTES, where, dir, so, dof);
}

/* Makes device byte d[at] (mirror m) differ from `avoid`, so that a copy which skips it
 * is seen. Written with a one-byte upload, not a memset: a memset defect must fail
 * memory.memset, not the copy tests. */
static void make_differ(copy_rig *r, unsigned char *d, unsigned char *m, size_t at,
                        unsigned char avoid) {
    if (m[at] != avoid)
        return;
    m[at] = (unsigned char)~avoid;
    BP_CONF_OK(bp_conf_upload(r->s, d + at, m + at, 1));
}

/* Copies n bytes from src to dst (host memory where the device is NULL) on the rig's
 * stream and waits for it; makes the same copy in the host model of the buffers. */
static void copy_and_model(copy_rig *r, void *dst, bp_device *dst_dev, const void *src,
                           bp_device *src_dev, unsigned char *model_dst,
                           const unsigned char *model_src, size_t n) {
    BP_CONF_OK(bp_memory_copy_async(dst, dst_dev, src, src_dev, n, r->s));
    BP_CONF_OK(bp_stream_synchronize(r->s));
    memcpy(model_dst, model_src, n);
}

static void copy_case(copy_rig *r, enum copy_dir dir, size_t so, size_t dof, size_t n) {
    bp_device *dev = bp_conf.device;
    size_t from = CS_GUARD + so, to = CS_GUARD + dof;
    size_t last = n - 1;
    switch (dir) {
    case H2D:
        if (r->src[from + last] == r->m1[to + last])
            r->src[from + last] = (unsigned char)~r->m1[to + last];
        copy_and_model(r, r->d1 + to, dev, r->src + from, NULL, r->m1 + to, r->src + from, n);
        expect_device(r, r->d1, r->m1, to, n, "destination", dir, so, dof);
        break;
    case D2H:
        if (r->mdst[to + last] == r->m1[from + last])
            r->mdst[to + last] = r->dst[to + last] = (unsigned char)~r->m1[from + last];
        copy_and_model(r, r->dst + to, NULL, r->d1 + from, dev, r->mdst + to, r->m1 + from, n);
        expect_buffer(r->dst, r->mdst, to, n, 0, "destination", dir, so, dof);
        break;
    case D2D_SAME:
        /* Source in the first half, destination in the second: no overlap. */
        to += CS_SPAN;
        make_differ(r, r->d1, r->m1, to + last, r->m1[from + last]);
        copy_and_model(r, r->d1 + to, dev, r->d1 + from, dev, r->m1 + to, r->m1 + from, n);
        expect_device(r, r->d1, r->m1, to, n, "destination", dir, so, dof);
        break;
    case D2D_OTHER:
        make_differ(r, r->d2, r->m2, to + last, r->m1[from + last]);
        copy_and_model(r, r->d2 + to, dev, r->d1 + from, dev, r->m2 + to, r->m1 + from, n);
        expect_device(r, r->d2, r->m2, to, n, "destination", dir, so, dof);
        /* The source is unchanged too. */
        expect_device(r, r->d1, r->m1, from, 0, "source (must not change)", dir, so, dof);
        break;
    default:
        break;
    }
}

static void test_copy_sizes_and_offsets(void **state) {
    copy_rig r;
    rig_init(&r);
    enum { NO = sizeof copy_offsets / sizeof copy_offsets[0] };
    for (int dir = 0; dir < N_DIRS; dir++)
        for (size_t k = 0; k < sizeof copy_sizes / sizeof copy_sizes[0]; k++)
            for (size_t a = 0; a < NO; a++)
                for (size_t b = 0; b < NO; b++)
                    copy_case(&r, (enum copy_dir)dir, copy_offsets[a], copy_offsets[b],
                              copy_sizes[k]);
    rig_free(&r);
}

/* ---- overlapping_copies ---- */

/* A copy within one allocation whose ranges overlap is a memmove (memory.h): room for
 * the largest case, its shift on either side and guard bytes around it. */
#define OV_GUARD ((size_t)64)
#define OV_MAX_SHIFT ((size_t)257)
#define OV_MAX_BASE ((size_t)255)
#define OV_MAX_SIZE (2 * MIB + 1)
#define OV_BYTES (OV_GUARD + OV_MAX_SHIFT + OV_MAX_BASE + OV_MAX_SIZE + OV_MAX_SHIFT + OV_GUARD)

/* Copies n bytes within `d` from offset `from` to offset `to` and checks the whole
 * allocation against the host model `want`, where the same memmove is made. */
static void overlap_case(bp_stream *s, unsigned char *d, unsigned char *want, unsigned char *got,
                         size_t from, size_t to, size_t n) {
    BP_CONF_OK(bp_memory_copy_async(d + to, bp_conf.device, d + from, bp_conf.device, n, s));
    memmove(want + to, want + from, n);
    complement_bytes(got, want, OV_BYTES); /* a byte the download skips cannot match */
    BP_CONF_OK(bp_conf_download(s, d, OV_BYTES, got));
    size_t bad = first_difference(got, want, OV_BYTES);
    if (bad == OV_BYTES)
        return;
    char pos[128];
    describe_position(pos, sizeof pos, bad, to, n, OV_BYTES);
    fail_msg("overlapping copy of %zu bytes from offset %zu to offset %zu (%s by %zu): byte %zu "
             "is 0x%02x, expected 0x%02x (a memmove's): %s", n, from, to,
             to > from ? "forward" : to < from ? "backward" : "onto itself",
             to > from ? to - from : from - to, bad, got[bad], want[bad], pos);
}

static void test_overlapping_copies(void **state) {
    static const size_t shifts[] = {1, 3, 255, 257};
    static const size_t sizes[] = {5, 4097, 65537, OV_MAX_SIZE};
    static const size_t bases[] = {0, 1, 255}; /* unaligned starts */
    bp_stream *s = bp_conf_stream();
    unsigned char *d = bp_conf_alloc(OV_BYTES, s);
    unsigned char *want = bp_conf_host_buffer(OV_BYTES), *got = bp_conf_host_buffer(OV_BYTES);
    /* Fresh random contents for each case, taken from a pool at a new offset: after a
     * shift, neighbouring bytes repeat, and a skipped byte could match by chance. */
    unsigned char *pool = bp_conf_host_buffer(2 * OV_BYTES);
    bp_conf_random_bytes(pool, 2 * OV_BYTES, bp_conf_test_seed());
    size_t round = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t j = 0; j < sizeof shifts / sizeof shifts[0]; j++)
            for (int forward = 0; forward < 2; forward++, round++) {
                memcpy(want, pool + round * 4099 % OV_BYTES, OV_BYTES);
                BP_CONF_OK(bp_conf_upload(s, d, want, OV_BYTES));
                size_t lo = OV_GUARD + OV_MAX_SHIFT + bases[round % 3], hi = lo + shifts[j];
                overlap_case(s, d, want, got, forward ? lo : hi, forward ? hi : lo, sizes[k]);
            }
    overlap_case(s, d, want, got, OV_GUARD + 1, OV_GUARD + 1, 65537); /* dst == src */
    BP_CONF_OK(bp_memory_free(bp_conf.device, d));
    BP_CONF_OK(bp_stream_destroy(s));
    free(pool);
    free(want);
    free(got);
}

/* ---- peer_copies ---- */

/* Sizes around the units a copy engine or driver may split a copy into. The core does
 * not split copies, nor does any backend we ship (hal/memory.c and backends/cuda,
 * opencl, hpu have no chunked copy), but drivers do: cuMemcpyPeerAsync without peer
 * access stages through host buffers, DMA engines work in pages. So: 1 byte, a 4 KiB
 * page +-1, 1 MiB +-1, 4 MiB + 3 and 64 MiB + 17 (when both devices have room). */
static const size_t peer_sizes[] = {1,       4 * KIB - 1,     4 * KIB + 1, MIB - 1,
                                    MIB + 1, 4 * MIB + 3, 64 * MIB + 17};
/* (source, destination) offsets, unaligned, taken in turn. */
static const size_t peer_offsets[][2] = {{0, 0}, {1, 3}, {255, 1}, {3, 255}};
#define PEER_GUARD ((size_t)64)
#define PEER_MAX_OFFSET ((size_t)255)

/* One side of a peer copy: a device, a stream of it, a buffer on it and its mirror. */
typedef struct peer_side {
    bp_device *dev;
    bp_stream *s;
    unsigned char *d, *m;
    const char *name;
} peer_side;

/* Copies n bytes from `from` to `to` on `s` (a stream of either), after setting the
 * destination range to the complement of the source so that any byte the copy skips
 * is seen, and checks the destination range and PEER_GUARD bytes on each side of it. */
static void peer_case(peer_side *from, peer_side *to, bp_stream *s, size_t n, size_t so,
                      size_t dof) {
    unsigned char *src_m = from->m + PEER_GUARD + so, *dst_m = to->m + PEER_GUARD + dof;
    complement_bytes(dst_m, src_m, n);
    BP_CONF_OK(bp_conf_upload(to->s, to->d + PEER_GUARD + dof, dst_m, n));
    BP_CONF_OK(bp_memory_copy_async(to->d + PEER_GUARD + dof, to->dev,
                                    from->d + PEER_GUARD + so, from->dev, n, s));
    BP_CONF_OK(bp_stream_synchronize(s));
    memcpy(dst_m, src_m, n);
    char what[200];
    snprintf(what, sizeof what, "peer copy of %zu bytes from %s (offset %zu) to %s (offset %zu) "
             "on a stream of %s, read from %zu bytes before the destination to %zu after it",
             n, from->name, so, to->name, dof, bp_stream_device(s) == to->dev ? to->name :
             from->name, PEER_GUARD, PEER_GUARD);
    bp_conf_expect_bytes(to->s, to->d + dof, to->m + dof, PEER_GUARD + n + PEER_GUARD, what);
}

/* Fills p[0, n) with random bytes cheaply for tens of MiB: a random tile of a prime
 * length (so that it lines up with no power-of-two chunk), repeated. */
static void random_tiles(unsigned char *p, size_t n, uint64_t seed) {
    const size_t tile = 65521;
    bp_conf_random_bytes(p, n < tile ? n : tile, seed);
    for (size_t at = tile; at < n; at += tile)
        memcpy(p + at, p, n - at < tile ? n - at : tile);
}

/* Room for the largest copy of the test at the largest offset, with guards. */
static size_t peer_span(size_t largest) {
    return PEER_GUARD + PEER_MAX_OFFSET + largest + PEER_GUARD;
}

static void test_peer_copies(void **state) {
    BP_CONF_REQUIRE_CAP(BP_CAP_PEER_COPY);
    bp_device *other = bp_conf_second_device();
    if (!other)
        BP_CONF_SKIP("only one %s device: a peer copy needs two", bp_conf.props.type);
    bp_device_props op = {.struct_size = sizeof op};
    BP_CONF_OK(bp_device_get_props(other, &op));
    if (!(op.capabilities & BP_CAP_PEER_COPY))
        BP_CONF_SKIP("%s does not report BP_CAP_PEER_COPY", bp_device_name(other));

    /* The largest size that leaves each device seven eighths of its free memory. */
    uint64_t room = UINT64_MAX;
    const bp_device_props *props[] = {&bp_conf.props, &op};
    for (int i = 0; i < 2; i++) {
        uint64_t r = props[i]->free_memory ? props[i]->free_memory : props[i]->total_memory;
        if (r && r < room)
            room = r;
    }
    size_t n_sizes = sizeof peer_sizes / sizeof peer_sizes[0];
    while (n_sizes > 1 && peer_span(peer_sizes[n_sizes - 1]) > room / 8)
        n_sizes--;
    if (n_sizes < sizeof peer_sizes / sizeof peer_sizes[0])
        print_message("sizes capped at %zu bytes (an eighth of %" PRIu64 " bytes free)\n",
                      peer_sizes[n_sizes - 1], room);

    size_t span = peer_span(peer_sizes[n_sizes - 1]);
    uint64_t seed = bp_conf_test_seed();
    peer_side a = {.dev = bp_conf.device, .s = bp_conf_stream(), .name = bp_conf.device_name};
    peer_side b = {.dev = other, .name = bp_device_name(other)};
    BP_CONF_OK(bp_stream_create(other, 0, &b.s));
    a.d = bp_conf_alloc(span, a.s);
    BP_CONF_OK(bp_memory_alloc(other, span, b.s, (void **)&b.d));
    a.m = bp_conf_host_buffer(span);
    b.m = bp_conf_host_buffer(span);
    random_tiles(a.m, span, seed ^ 1);
    random_tiles(b.m, span, seed ^ 2);
    BP_CONF_OK(bp_conf_upload(a.s, a.d, a.m, span));
    BP_CONF_OK(bp_conf_upload(b.s, b.d, b.m, span));

    /* Each size both ways; the stream alternates between the source's and the
     * destination's from one case to the next, so each direction runs on both. */
    size_t round = 0;
    for (size_t k = 0; k < n_sizes; k++)
        for (int dir = 0; dir < 2; dir++, round++) {
            peer_side *from = dir ? &b : &a, *to = dir ? &a : &b;
            const size_t *off = peer_offsets[round % 4];
            bool on_dst = (k + dir) % 2;
            peer_case(from, to, on_dst ? to->s : from->s, peer_sizes[k], off[0], off[1]);
        }
    BP_CONF_OK(bp_memory_free(bp_conf.device, a.d));
    BP_CONF_OK(bp_memory_free(other, b.d));
    BP_CONF_OK(bp_stream_destroy(a.s));
    BP_CONF_OK(bp_stream_destroy(b.s));
    free(a.m);
    free(b.m);
}

/* ---- memset ---- */

static void test_memset(void **state) {
    static const unsigned char values[] = {0xA5, 0x00, 0xFF, 0x5A, 0x01, 0x80};
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    unsigned char *d = bp_conf_alloc(CS_BYTES, s);
    unsigned char *want = bp_conf_host_buffer(CS_BYTES), *got = bp_conf_host_buffer(CS_BYTES);
    uint64_t seed = bp_conf_test_seed();
    int round = 0;
    for (size_t k = 0; k < sizeof copy_sizes / sizeof copy_sizes[0]; k++)
        for (size_t a = 0; a < sizeof copy_offsets / sizeof copy_offsets[0]; a++, round++) {
            size_t n = copy_sizes[k], at = CS_GUARD + copy_offsets[a];
            unsigned char value = values[round % (int)sizeof values];
            /* A random background whose bytes at and around the edges differ from the
             * value, so that one byte too few or too many is seen. */
            bp_conf_random_bytes(want, CS_BYTES, seed + (uint64_t)round);
            const size_t edges[] = {at - 1, at, at + n - 1, at + n};
            for (size_t e = 0; e < 4; e++)
                if (want[edges[e]] == value)
                    want[edges[e]] = (unsigned char)~value;
            BP_CONF_OK(bp_conf_upload(s, d, want, CS_BYTES));
            BP_CONF_OK(bp_memory_set_async(dev, d + at, value, n, s));
            memset(want + at, value, n);
            complement_bytes(got, want, CS_BYTES); /* a byte the download skips cannot match */
            BP_CONF_OK(bp_conf_download(s, d, CS_BYTES, got));
            size_t bad = first_difference(got, want, CS_BYTES);
            if (bad < CS_BYTES) {
                char pos[128];
                describe_position(pos, sizeof pos, bad, at, n, CS_BYTES);
                fail_msg("memset of %zu bytes to 0x%02x at offset %zu: byte %zu is 0x%02x, "
                         "expected 0x%02x: %s", n, value, copy_offsets[a], bad, got[bad],
                         want[bad], pos);
            }
        }
    BP_CONF_OK(bp_memory_free(dev, d));
    BP_CONF_OK(bp_stream_destroy(s));
    free(want);
    free(got);
}

/* ---- stats_add_up ---- */

static void expect_consistent(const bp_memory_stats *s, const char *when) {
    if (s->reserved_bytes < s->allocated_bytes)
        fail_msg("%s: reserved_bytes %" PRIu64 " < allocated_bytes %" PRIu64, when,
                 s->reserved_bytes, s->allocated_bytes);
    if (s->peak_allocated_bytes < s->allocated_bytes)
        fail_msg("%s: peak_allocated_bytes %" PRIu64 " < allocated_bytes %" PRIu64, when,
                 s->peak_allocated_bytes, s->allocated_bytes);
    if (s->peak_reserved_bytes < s->reserved_bytes)
        fail_msg("%s: peak_reserved_bytes %" PRIu64 " < reserved_bytes %" PRIu64, when,
                 s->peak_reserved_bytes, s->reserved_bytes);
    if (s->num_backend_frees > s->num_backend_allocs)
        fail_msg("%s: num_backend_frees %" PRIu64 " > num_backend_allocs %" PRIu64, when,
                 s->num_backend_frees, s->num_backend_allocs);
}

static void test_stats_add_up(void **state) {
    static const size_t sizes[] = {1000, 4096, 64 * KIB, 3 * MIB + 5};
    enum { N = sizeof sizes / sizeof sizes[0] };
    bp_device *dev = bp_conf.device;
    bp_stream *s = bp_conf_stream();
    bp_memory_stats s0 = bp_conf_memory_stats();
    expect_consistent(&s0, "at the start");

    void *zero = NULL;
    BP_CONF_OK(bp_memory_alloc(dev, 0, s, &zero));
    void *p[N];
    uint64_t requested = 0;
    for (size_t i = 0; i < N; i++) {
        p[i] = bp_conf_alloc(sizes[i], s);
        requested += sizes[i];
    }
    bp_memory_stats s1 = bp_conf_memory_stats();
    expect_consistent(&s1, "after the allocations");
    if (s1.allocated_bytes < s0.allocated_bytes + requested)
        fail_msg("allocated_bytes grew by %" PRIu64 " for %" PRIu64 " bytes requested",
                 s1.allocated_bytes - s0.allocated_bytes, requested);
    if (s1.num_allocs - s0.num_allocs != N)
        fail_msg("num_allocs grew by %" PRIu64 " for %d non-zero allocations (and one of 0 "
                 "bytes, which does not count)", s1.num_allocs - s0.num_allocs, (int)N);
    if (s1.peak_allocated_bytes < s0.allocated_bytes + requested)
        fail_msg("peak_allocated_bytes %" PRIu64 " is below what is allocated now",
                 s1.peak_allocated_bytes);

    /* Free the two larger blocks, then reset the peaks. */
    BP_CONF_OK(bp_memory_free(dev, p[3]));
    BP_CONF_OK(bp_memory_free(dev, p[2]));
    bp_memory_stats s2 = bp_conf_memory_stats();
    expect_consistent(&s2, "after two frees");
    if (s2.num_frees - s0.num_frees != 2)
        fail_msg("num_frees grew by %" PRIu64 " after 2 frees", s2.num_frees - s0.num_frees);
    if (s1.allocated_bytes - s2.allocated_bytes < sizes[2] + sizes[3])
        fail_msg("allocated_bytes fell by %" PRIu64 " after freeing %zu bytes",
                 s1.allocated_bytes - s2.allocated_bytes, sizes[2] + sizes[3]);
    if (s2.peak_allocated_bytes < s1.allocated_bytes)
        fail_msg("peak_allocated_bytes %" PRIu64 " forgot the earlier %" PRIu64,
                 s2.peak_allocated_bytes, s1.allocated_bytes);
    BP_CONF_OK(bp_memory_reset_peak(dev));
    bp_memory_stats s3 = bp_conf_memory_stats();
    if (s3.peak_allocated_bytes != s3.allocated_bytes ||
        s3.peak_reserved_bytes != s3.reserved_bytes)
        fail_msg("after reset_peak: peaks %" PRIu64 "/%" PRIu64 ", current %" PRIu64 "/%" PRIu64
                 " (allocated/reserved)", s3.peak_allocated_bytes, s3.peak_reserved_bytes,
                 s3.allocated_bytes, s3.reserved_bytes);

    BP_CONF_OK(bp_memory_free(dev, p[0]));
    BP_CONF_OK(bp_memory_free(dev, p[1]));
    BP_CONF_OK(bp_memory_free(dev, NULL)); /* a no-op: not counted */
    bp_memory_stats s4 = bp_conf_memory_stats();
    expect_consistent(&s4, "after all frees");
    if (s4.allocated_bytes != s0.allocated_bytes)
        fail_msg("allocated_bytes is %" PRIu64 " after freeing everything, %" PRIu64
                 " at the start", s4.allocated_bytes, s0.allocated_bytes);
    if (s4.num_frees - s0.num_frees != N)
        fail_msg("num_frees grew by %" PRIu64 " for %d frees", s4.num_frees - s0.num_frees,
                 (int)N);
    if (s4.num_allocs != s1.num_allocs)
        fail_msg("num_allocs changed from %" PRIu64 " to %" PRIu64 " without allocations",
                 s1.num_allocs, s4.num_allocs);

    /* A caller with an older, smaller struct gets only its fields. */
    struct {
        bp_memory_stats st;
        unsigned char canary[8];
    } old;
    memset(&old, 0xee, sizeof old);
    old.st.struct_size = (uint32_t)offsetof(bp_memory_stats, peak_allocated_bytes);
    BP_CONF_OK(bp_memory_get_stats(dev, &old.st));
    const unsigned char *raw = (const unsigned char *)&old;
    for (size_t i = offsetof(bp_memory_stats, peak_allocated_bytes); i < sizeof old; i++)
        if (raw[i] != 0xee)
            fail_msg("bp_memory_get_stats wrote byte %zu past a struct_size of %u", i,
                     old.st.struct_size);
    BP_CONF_OK(bp_stream_destroy(s));
}

/* ---- empty_cache ---- */

static void test_empty_cache(void **state) {
    static const size_t sizes[] = {1000, 64 * KIB, MIB + 1, 8 * MIB};
    enum { N = sizeof sizes / sizeof sizes[0] };
    bp_device *dev = bp_conf.device;
    bp_stream *s[2] = {bp_conf_stream(), bp_conf_stream()};
    BP_CONF_OK(bp_memory_empty_cache(dev));
    bp_memory_stats s0 = bp_conf_memory_stats();

    /* Blocks on two streams, used, then freed while their work may still run. */
    void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = bp_conf_alloc(sizes[i], s[i % 2]);
        BP_CONF_OK(bp_memory_set_async(dev, p[i], (int)i + 1, sizes[i], s[i % 2]));
    }
    for (size_t i = 0; i < N; i++)
        BP_CONF_OK(bp_memory_free(dev, p[i]));
    bp_memory_stats s1 = bp_conf_memory_stats();
    if (s1.reserved_bytes <= s0.reserved_bytes)
        print_message("reserved_bytes did not grow (%" PRIu64 "): the blocks came from memory "
                      "held before\n", s1.reserved_bytes);

    BP_CONF_OK(bp_memory_empty_cache(dev));
    bp_memory_stats s2 = bp_conf_memory_stats();
    if (s2.reserved_bytes != 0 && s2.reserved_bytes > s0.reserved_bytes)
        fail_msg("after freeing everything, empty_cache left reserved_bytes at %" PRIu64
                 " (%" PRIu64 " at the start)", s2.reserved_bytes, s0.reserved_bytes);
    if (s2.num_segments > s0.num_segments)
        fail_msg("after empty_cache %" PRIu64 " segments are held, %" PRIu64 " at the start",
                 s2.num_segments, s0.num_segments);
    if (s2.allocated_bytes != s0.allocated_bytes)
        fail_msg("allocated_bytes is %" PRIu64 ", %" PRIu64 " at the start", s2.allocated_bytes,
                 s0.allocated_bytes);

    /* Memory is usable again. */
    for (size_t i = 0; i < N; i++) {
        void *q = bp_conf_filled_buffer(s[0], sizes[i], 0x6b); /* uploaded: no memset */
        bp_conf_expect_filled(s[0], q, sizes[i], 0x6b, "a block allocated after empty_cache");
        BP_CONF_OK(bp_memory_free(dev, q));
    }
    BP_CONF_OK(bp_stream_destroy(s[0]));
    BP_CONF_OK(bp_stream_destroy(s[1]));
    BP_CONF_OK(bp_memory_empty_cache(dev));
}

/* ---- host_memory ---- */

static void test_host_memory(void **state) {
    static const size_t sizes[] = {1, 4097, MIB + 3};
    bp_device *dev = bp_conf.device;
    bool pinned = bp_conf.props.capabilities & BP_CAP_PINNED_HOST;
    print_message("host memory is %s\n", pinned ? "page-locked (BP_CAP_PINNED_HOST)"
                                                : "ordinary (no BP_CAP_PINNED_HOST)");
    void *z = (void *)&z;
    BP_CONF_OK(bp_host_alloc(dev, 0, &z));
    if (z)
        fail_msg("bp_host_alloc of 0 bytes returned %p, expected NULL", z);
    BP_CONF_OK(bp_host_free(dev, NULL));

    bp_stream *s = bp_conf_stream();
    uint64_t seed = bp_conf_test_seed();
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *in = NULL, *out = NULL;
        BP_CONF_OK(bp_host_alloc(dev, n, (void **)&in));
        BP_CONF_OK(bp_host_alloc(dev, n, (void **)&out));
        if (!in || !out)
            fail_msg("bp_host_alloc of %zu bytes returned BP_OK and NULL", n);
        bp_conf_random_bytes(in, n, seed + k);
        memset(out, 0, n);
        out[n - 1] = (unsigned char)~in[n - 1];
        void *d = bp_conf_alloc(n, s);
        BP_CONF_OK(bp_memory_copy_async(d, dev, in, NULL, n, s));
        BP_CONF_OK(bp_memory_copy_async(out, NULL, d, dev, n, s));
        BP_CONF_OK(bp_stream_synchronize(s));
        size_t bad = first_difference(in, out, n);
        if (bad < n)
            fail_msg("%zu bytes through host memory from bp_host_alloc: byte %zu is 0x%02x, "
                     "expected 0x%02x", n, bad, out[bad], in[bad]);
        BP_CONF_OK(bp_memory_free(dev, d));
        BP_CONF_OK(bp_host_free(dev, in));
        BP_CONF_OK(bp_host_free(dev, out));
    }
    BP_CONF_OK(bp_stream_destroy(s));
}

static const bp_conf_test memory_tests[] = {
    {"alloc_sizes", test_alloc_sizes,
     "sizes 0 (OK, NULL), 1, odd and large allocate and hold what is written", NULL},
    {"alignment", test_alignment, "allocations of many sizes are 256-byte aligned and disjoint",
     NULL},
    {"out_of_memory_is_error", test_out_of_memory_is_error,
     "more than the device has is BP_ERR_OUT_OF_MEMORY with a message; the device works after",
     NULL},
    /* memset before the copy tests that follow it: each checks only its own primitive
     * (the copy tests set bytes with uploads, never memset), and both read back with
     * the host<->device copies that alloc_sizes checked first. */
    {"memset", test_memset, "memset at unaligned offsets and sizes sets exactly its bytes", NULL},
    {"copy_sizes_and_offsets", test_copy_sizes_and_offsets,
     "copies in every direction at unaligned offsets write every byte, the last included, and "
     "nothing outside", NULL},
    {"overlapping_copies", test_overlapping_copies,
     "a copy within one allocation whose ranges overlap (shifts 1, 3, 255, 257 either way) is a "
     "memmove, nothing outside changes", NULL},
    {"peer_copies", test_peer_copies,
     "peer copies both ways, 1 B to 64 MiB + 17 at unaligned offsets, on either device's stream, "
     "write exactly their bytes", NULL},
    {"stats_add_up", test_stats_add_up,
     "allocator statistics grow and shrink with allocations, peaks and counts consistent", NULL},
    {"empty_cache", test_empty_cache,
     "empty_cache after freeing everything returns the reserved memory; memory works after",
     NULL},
    {"host_memory", test_host_memory, "bp_host_alloc memory round-trips through the device",
     NULL},
};

const bp_conf_group bp_conf_group_memory = {
    .name = "memory",
    .summary = "device memory: sizes, alignment, out-of-memory, memset, copies (overlapping, "
               "peer), stats, cache",
    .tests = memory_tests,
    .n_tests = sizeof memory_tests / sizeof memory_tests[0],
    .timeout_s = 60,
};
