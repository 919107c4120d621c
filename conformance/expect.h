/* Checks of device memory for the test's own thread: each reads the memory back
 * through a stream and fails the running test (cmocka) naming the first wrong byte.
 * Worker threads must not call these; they use thread_report.h instead. */
#ifndef BP_CONF_EXPECT_H
#define BP_CONF_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#include <backplane/backplane.h>

/* Allocates `size` bytes of bp_conf.device memory for `stream`; fails the test on error. */
void *bp_conf_alloc(size_t size, bp_stream *stream);

/* Creates a stream on bp_conf.device with priority 0; fails the test on error. */
bp_stream *bp_conf_stream(void);

/* Allocates `n` bytes of host memory (malloc; the caller frees); fails the test when
 * there are none. */
void *bp_conf_host_buffer(size_t n);

/* Allocates `n` bytes of device memory for `stream` that hold `value` for good: set on
 * `stream`, which is then synchronized. Fails the test on error. */
void *bp_conf_filled_buffer(bp_stream *stream, size_t n, int value);

/* A buffer that a writer stream overwrites slowly: the checks that "the work is done"
 * (a synchronize, a query, an event) makes the data final read it through a stream that
 * is not ordered after the writer, which sees old_value until the writer's last step. */
typedef struct bp_conf_overwrite {
    bp_stream *writer;
    void *x;       /* n bytes of device memory, allocated for the writer */
    size_t n;
    int old_value; /* what x holds before the writer's last step */
    int new_value; /* what it holds after */
} bp_conf_overwrite;

/* Picks old_value and new_value with bp_conf_two_bytes from bp_conf_test_seed() and
 * allocates n bytes on `writer` that hold old_value for good (bp_conf_filled_buffer). */
bp_conf_overwrite bp_conf_overwrite_prepare(bp_stream *writer, size_t n);

/* Enqueues on the writer `rounds` of bp_conf_slow_fill whose last step sets x to
 * new_value. */
void bp_conf_overwrite_start(const bp_conf_overwrite *w, int rounds);

/* Reads x through `reader` and fails the test unless it is all new_value
 * (bp_conf_expect_filled; `what` names the read). */
void bp_conf_expect_overwritten(const bp_conf_overwrite *w, bp_stream *reader,
                                const char *what);

/* Synchronizes the writer and frees x (the writer stays). */
void bp_conf_overwrite_free(bp_conf_overwrite *w);

/* Allocates `n` bytes on `stream`, sets them to `value` there, checks them with
 * bp_conf_expect_filled (`what`) and frees them: memset works on the stream. */
void bp_conf_expect_memset_works(bp_stream *stream, size_t n, int value, const char *what);

/* The allocator statistics of bp_conf.device now; fails the test on error. */
bp_memory_stats bp_conf_memory_stats(void);

/* Fails the test unless bp_conf.device's allocated_bytes now equals before->allocated_bytes;
 * `when` says when it is read ("after ..."). */
void bp_conf_expect_allocated_unchanged(const bp_memory_stats *before, const char *when);

/* Downloads device memory [src, src + n) through `stream` (waiting for it) and fails
 * the test unless every byte is `value`. `what` names the buffer in the message. */
void bp_conf_expect_filled(bp_stream *stream, const void *src, size_t n, int value,
                           const char *what);

/* As bp_conf_expect_filled, but the bytes must equal want[0, n). */
void bp_conf_expect_bytes(bp_stream *stream, const void *src, const void *want, size_t n,
                          const char *what);

/* Two different non-zero bytes from `rng`: the old and the new contents of a buffer,
 * so that data from before some work can be told from data after it. */
void bp_conf_two_bytes(uint64_t *rng, int *old_value, int *new_value);

/* Polls query(object) (a wrapper of bp_stream_query or bp_event_query) until it
 * returns BP_OK. Every other answer must be BP_ERR_NOT_READY without an error message;
 * fails the test otherwise. Work that never completes is caught by the group's
 * deadline (no clock here: a loaded machine must not fail a correct device). `what`
 * names the object in the messages. */
void bp_conf_poll_until_done(bp_status (*query)(void *object), void *object, const char *what);

#endif
