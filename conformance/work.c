/* Shared device work of the conformance groups (work.h). */
#include "work.h"

#include "conformance.h"

bp_status bp_conf_slow_fill(bp_stream *stream, void *dst, size_t bytes, int value, int rounds) {
    bp_device *dev = bp_stream_device(stream);
    if (!dev || bytes > BP_CONF_SLOW_FILL_MAX)
        return BP_ERR_INVALID_ARGUMENT;
    void *a = NULL, *b = NULL;
    bp_status st = bp_memory_alloc(dev, BP_CONF_SLOW_FILL_MAX, stream, &a);
    if (st == BP_OK)
        st = bp_memory_alloc(dev, BP_CONF_SLOW_FILL_MAX, stream, &b);
    if (st == BP_OK)
        st = bp_memory_set_async(dev, a, value, BP_CONF_SLOW_FILL_MAX, stream);
    for (int i = 0; i < rounds && st == BP_OK; i++) {
        void *from = i % 2 ? b : a, *to = i % 2 ? a : b;
        st = bp_memory_copy_async(to, dev, from, dev, BP_CONF_SLOW_FILL_MAX, stream);
    }
    void *last = rounds > 0 && rounds % 2 ? b : a;
    if (st == BP_OK && bytes)
        st = bp_memory_copy_async(dst, dev, last, dev, bytes, stream);
    /* Stream-ordered frees: the allocator reuses them only after this work. */
    if (a)
        bp_memory_free(dev, a);
    if (b)
        bp_memory_free(dev, b);
    return st;
}

bp_status bp_conf_download(bp_stream *stream, const void *src, size_t bytes, void *host) {
    bp_status st = bp_memory_copy_async(host, NULL, src, bp_stream_device(stream), bytes, stream);
    return st == BP_OK ? bp_stream_synchronize(stream) : st;
}

bp_status bp_conf_upload(bp_stream *stream, void *dst, const void *host, size_t bytes) {
    bp_status st = bp_memory_copy_async(dst, bp_stream_device(stream), host, NULL, bytes, stream);
    return st == BP_OK ? bp_stream_synchronize(stream) : st;
}

bool bp_conf_all_bytes(const void *p, size_t n, int value, size_t *first_bad) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)value) {
            if (first_bad)
                *first_bad = i;
            return false;
        }
    return true;
}

void bp_conf_random_bytes(void *p, size_t n, uint64_t seed) {
    unsigned char *c = p;
    uint64_t state = seed;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)(bp_conf_rand(&state) >> 56);
    if (n > 1 && c[0] == c[1])
        c[1] = (unsigned char)(c[0] + 1);
}
