/* Device-memory checks that fail the running test (expect.h). Each "_at" function
 * fails at its caller's file and line, which its macro passes. */
#include "expect.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "work.h"

void bp_conf_fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_error("ERROR: ");
    vprint_error(fmt, ap);
    print_error("\n");
    va_end(ap);
    _fail(file, line);
    abort(); /* not reached: _fail leaves the test (cmocka does not declare it noreturn) */
}

/* fail_msg and BP_CONF_OK at the caller's location: `file` and `line` are the
 * parameters of the "_at" function they are used in. */
#define FAIL_AT(...) bp_conf_fail_at(file, line, __VA_ARGS__)
#define OK_AT(expr) BP_CONF_OK_AT(file, line, expr)

void *bp_conf_alloc_at(const char *file, int line, size_t size, bp_stream *stream) {
    void *p = NULL;
    OK_AT(bp_memory_alloc(bp_conf.device, size, stream, &p));
    if (size && !p)
        FAIL_AT("bp_memory_alloc(%zu bytes) returned BP_OK and a NULL pointer", size);
    return p;
}

bp_stream *bp_conf_stream_at(const char *file, int line) {
    bp_stream *s = NULL;
    OK_AT(bp_stream_create(bp_conf.device, 0, &s));
    return s;
}

void *bp_conf_host_buffer_at(const char *file, int line, size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        FAIL_AT("cannot allocate %zu bytes of host memory", n);
    return p;
}

void *bp_conf_filled_buffer_at(const char *file, int line, bp_stream *stream, size_t n,
                               int value) {
    void *x = bp_conf_alloc_at(file, line, n, stream);
    unsigned char *host = bp_conf_host_buffer_at(file, line, n);
    memset(host, value, n);
    bp_status st = bp_conf_upload(stream, x, host, n);
    free(host);
    OK_AT(st);
    return x;
}

bp_device *bp_conf_second_device(void) {
    bp_device *found = NULL;
    int found_index = 0;
    int n = bp_device_count();
    for (int i = 0; i < n; i++) {
        bp_device *d = NULL;
        bp_device_props p = {.struct_size = sizeof p};
        if (bp_device_get(i, &d) != BP_OK || d == bp_conf.device ||
            bp_device_get_props(d, &p) != BP_OK || strcmp(p.type, bp_conf.props.type) != 0)
            continue;
        if (!found || p.index < found_index) {
            found = d;
            found_index = p.index;
        }
    }
    return found;
}

bp_conf_overwrite bp_conf_overwrite_prepare_at(const char *file, int line, bp_stream *writer,
                                               size_t n) {
    bp_conf_overwrite w = {.writer = writer, .n = n};
    uint64_t rng = bp_conf_test_seed();
    bp_conf_two_bytes(&rng, &w.old_value, &w.new_value);
    w.x = bp_conf_filled_buffer_at(file, line, writer, n, w.old_value);
    w.source = bp_conf_filled_buffer_at(file, line, writer, n, w.new_value);
    w.late.finished = true; /* no gate yet: start makes one (a mutex is never copied) */
    return w;
}

void bp_conf_overwrite_start_at(const char *file, int line, bp_conf_overwrite *w) {
    bp_conf_late_init(&w->late);
    bp_status st = bp_conf_late_write(&w->late, w->writer, w->x, w->source, w->n, w->new_value,
                                      BP_CONF_OVERWRITE_FALLBACK_ROUNDS);
    if (st != BP_OK) {
        bp_conf_late_finish(&w->late); /* before the failure leaves the test */
        FAIL_AT("enqueueing the late write returned %s: %s", bp_status_str(st),
                bp_last_error());
    }
}

void bp_conf_overwrite_open_later(bp_conf_overwrite *w) {
    bp_conf_late_open_later(&w->late);
}

bool bp_conf_overwrite_held(const bp_conf_overwrite *w) {
    return bp_conf_late_held(&w->late);
}

bool bp_conf_overwrite_finish(bp_conf_overwrite *w) {
    return bp_conf_late_finish(&w->late);
}

void bp_conf_expect_overwritten_at(const char *file, int line, const bp_conf_overwrite *w,
                                   bp_stream *reader, const char *what) {
    bp_conf_expect_filled_at(file, line, reader, w->x, w->n, w->new_value, what);
}

void bp_conf_overwrite_free_at(const char *file, int line, bp_conf_overwrite *w) {
    bp_conf_late_finish(&w->late);
    OK_AT(bp_stream_synchronize(w->writer));
    OK_AT(bp_memory_free(bp_conf.device, w->x));
    OK_AT(bp_memory_free(bp_conf.device, w->source));
    w->x = w->source = NULL;
}

void bp_conf_expect_memset_works_at(const char *file, int line, bp_stream *stream, size_t n,
                                    int value, const char *what) {
    void *x = bp_conf_alloc_at(file, line, n, stream);
    OK_AT(bp_memory_set_async(bp_conf.device, x, value, n, stream));
    bp_conf_expect_filled_at(file, line, stream, x, n, value, what);
    OK_AT(bp_memory_free(bp_conf.device, x));
}

bp_memory_stats bp_conf_memory_stats_at(const char *file, int line) {
    bp_memory_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    OK_AT(bp_memory_get_stats(bp_conf.device, &s));
    return s;
}

void bp_conf_expect_allocated_unchanged_at(const char *file, int line,
                                           const bp_memory_stats *before, const char *when) {
    bp_memory_stats now = bp_conf_memory_stats_at(file, line);
    if (now.allocated_bytes != before->allocated_bytes)
        FAIL_AT("allocated_bytes is %llu %s, %llu before", (unsigned long long)now.allocated_bytes,
                when, (unsigned long long)before->allocated_bytes);
}

/* Downloads into a fresh host buffer the caller frees; fails the test on error. */
static unsigned char *download(const char *file, int line, bp_stream *stream, const void *src,
                               size_t n) {
    unsigned char *host = bp_conf_host_buffer_at(file, line, n);
    bp_status st = bp_conf_download(stream, src, n, host);
    if (st != BP_OK) {
        free(host);
        FAIL_AT("downloading %zu bytes returned %s: %s", n, bp_status_str(st), bp_last_error());
    }
    return host;
}

void bp_conf_expect_filled_at(const char *file, int line, bp_stream *stream, const void *src,
                              size_t n, int value, const char *what) {
    unsigned char *host = download(file, line, stream, src, n);
    size_t bad = 0;
    if (!bp_conf_all_bytes(host, n, value, &bad)) {
        unsigned got = host[bad];
        free(host);
        FAIL_AT("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, bad, n, got,
                (unsigned char)value);
    }
    free(host);
}

void bp_conf_expect_bytes_at(const char *file, int line, bp_stream *stream, const void *src,
                             const void *want, size_t n, const char *what) {
    unsigned char *host = download(file, line, stream, src, n);
    const unsigned char *w = want;
    for (size_t i = memcmp(host, w, n) ? 0 : n; i < n; i++) /* memcmp: fast when all match */
        if (host[i] != w[i]) {
            unsigned got = host[i];
            free(host);
            FAIL_AT("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, got, w[i]);
        }
    free(host);
}

void bp_conf_two_bytes(uint64_t *rng, int *old_value, int *new_value) {
    *old_value = (int)(bp_conf_rand(rng) % 255) + 1;
    *new_value = (int)(bp_conf_rand(rng) % 254) + 1;
    if (*new_value >= *old_value)
        (*new_value)++;
}

void bp_conf_poll_until_done_at(const char *file, int line, bp_status (*query)(void *object),
                                void *object, const char *what) {
    const struct timespec pause = {0, 200 * 1000}; /* spares the cores; not for ordering */
    for (;;) {
        bp_clear_error();
        bp_status st = query(object);
        if (st == BP_OK)
            return;
        if (st != BP_ERR_NOT_READY)
            FAIL_AT("%s: query returned %s: %s", what, bp_status_str(st), bp_last_error());
        if (bp_last_error()[0])
            FAIL_AT("%s: query returned BP_ERR_NOT_READY and set the error message '%s' "
                    "(NOT_READY is not a failure)",
                    what, bp_last_error());
        nanosleep(&pause, NULL);
    }
}
