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
 * fails the test otherwise, or when the work is not done after BP_CONF_POLL_LIMIT_S.
 * `what` names the object in the messages. */
#define BP_CONF_POLL_LIMIT_S 30
void bp_conf_poll_until_done(bp_status (*query)(void *object), void *object, const char *what);

#endif
