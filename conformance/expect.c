/* Device-memory checks that fail the running test (expect.h). */
#include "expect.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "work.h"

void *bp_conf_alloc(size_t size, bp_stream *stream) {
    void *p = NULL;
    BP_CONF_OK(bp_memory_alloc(bp_conf.device, size, stream, &p));
    if (size && !p)
        fail_msg("bp_memory_alloc(%zu bytes) returned BP_OK and a NULL pointer", size);
    return p;
}

bp_stream *bp_conf_stream(void) {
    bp_stream *s = NULL;
    BP_CONF_OK(bp_stream_create(bp_conf.device, 0, &s));
    return s;
}

void *bp_conf_host_buffer(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        fail_msg("cannot allocate %zu bytes of host memory", n);
    return p;
}

void *bp_conf_filled_buffer(bp_stream *stream, size_t n, int value) {
    void *x = bp_conf_alloc(n, stream);
    BP_CONF_OK(bp_memory_set_async(bp_conf.device, x, value, n, stream));
    BP_CONF_OK(bp_stream_synchronize(stream));
    return x;
}

bp_conf_overwrite bp_conf_overwrite_prepare(bp_stream *writer, size_t n) {
    bp_conf_overwrite w = {.writer = writer, .n = n};
    uint64_t rng = bp_conf_test_seed();
    bp_conf_two_bytes(&rng, &w.old_value, &w.new_value);
    w.x = bp_conf_filled_buffer(writer, n, w.old_value);
    return w;
}

void bp_conf_overwrite_start(const bp_conf_overwrite *w, int rounds) {
    BP_CONF_OK(bp_conf_slow_fill(w->writer, w->x, w->n, w->new_value, rounds));
}

void bp_conf_expect_overwritten(const bp_conf_overwrite *w, bp_stream *reader,
                                const char *what) {
    bp_conf_expect_filled(reader, w->x, w->n, w->new_value, what);
}

void bp_conf_overwrite_free(bp_conf_overwrite *w) {
    BP_CONF_OK(bp_stream_synchronize(w->writer));
    BP_CONF_OK(bp_memory_free(bp_conf.device, w->x));
    w->x = NULL;
}

void bp_conf_expect_memset_works(bp_stream *stream, size_t n, int value, const char *what) {
    void *x = bp_conf_alloc(n, stream);
    BP_CONF_OK(bp_memory_set_async(bp_conf.device, x, value, n, stream));
    bp_conf_expect_filled(stream, x, n, value, what);
    BP_CONF_OK(bp_memory_free(bp_conf.device, x));
}

bp_memory_stats bp_conf_memory_stats(void) {
    bp_memory_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    BP_CONF_OK(bp_memory_get_stats(bp_conf.device, &s));
    return s;
}

void bp_conf_expect_allocated_unchanged(const bp_memory_stats *before, const char *when) {
    bp_memory_stats now = bp_conf_memory_stats();
    if (now.allocated_bytes != before->allocated_bytes)
        fail_msg("allocated_bytes is %llu %s, %llu before",
                 (unsigned long long)now.allocated_bytes, when,
                 (unsigned long long)before->allocated_bytes);
}

/* Downloads into a fresh host buffer the caller frees; fails the test on error. */
static unsigned char *download(bp_stream *stream, const void *src, size_t n) {
    unsigned char *host = bp_conf_host_buffer(n);
    bp_status st = bp_conf_download(stream, src, n, host);
    if (st != BP_OK) {
        free(host);
        fail_msg("downloading %zu bytes returned %s: %s", n, bp_status_str(st), bp_last_error());
    }
    return host;
}

void bp_conf_expect_filled(bp_stream *stream, const void *src, size_t n, int value,
                           const char *what) {
    unsigned char *host = download(stream, src, n);
    size_t bad = 0;
    if (!bp_conf_all_bytes(host, n, value, &bad)) {
        unsigned got = host[bad];
        free(host);
        fail_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, bad, n, got,
                 (unsigned char)value);
    }
    free(host);
}

void bp_conf_expect_bytes(bp_stream *stream, const void *src, const void *want, size_t n,
                          const char *what) {
    unsigned char *host = download(stream, src, n);
    const unsigned char *w = want;
    for (size_t i = 0; i < n; i++)
        if (host[i] != w[i]) {
            unsigned got = host[i];
            free(host);
            fail_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, got, w[i]);
        }
    free(host);
}

void bp_conf_two_bytes(uint64_t *rng, int *old_value, int *new_value) {
    *old_value = (int)(bp_conf_rand(rng) % 255) + 1;
    *new_value = (int)(bp_conf_rand(rng) % 254) + 1;
    if (*new_value >= *old_value)
        (*new_value)++;
}

void bp_conf_poll_until_done(bp_status (*query)(void *object), void *object, const char *what) {
    const struct timespec pause = {0, 200 * 1000}; /* spares the cores; not for ordering */
    for (;;) {
        bp_clear_error();
        bp_status st = query(object);
        if (st == BP_OK)
            return;
        if (st != BP_ERR_NOT_READY)
            fail_msg("%s: query returned %s: %s", what, bp_status_str(st), bp_last_error());
        if (bp_last_error()[0])
            fail_msg("%s: query returned BP_ERR_NOT_READY and set the error message '%s' "
                     "(NOT_READY is not a failure)",
                     what, bp_last_error());
        nanosleep(&pause, NULL);
    }
}
