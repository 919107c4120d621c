/* Checks of device memory for the test's own thread: each reads the memory back
 * through a stream and fails the running test (cmocka) naming the first wrong byte.
 * Worker threads must not call these; they use thread_report.h instead.
 *
 * Every helper here that can fail the test is a macro of the name documented below
 * over a function of that name with "_at", which takes the caller's __FILE__ and
 * __LINE__ first: a failure is reported at the test's own line, not at one in
 * expect.c. */
#ifndef BP_CONF_EXPECT_H
#define BP_CONF_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <backplane/backplane.h>

#include "late.h"

/* The caller's location, for the "_at" functions. */
#define BP_CONF_HERE __FILE__, __LINE__

/* Allocates `size` bytes of bp_conf.device memory for `stream`; fails the test on error. */
#define bp_conf_alloc(...) bp_conf_alloc_at(BP_CONF_HERE, __VA_ARGS__)
void *bp_conf_alloc_at(const char *file, int line, size_t size, bp_stream *stream);

/* Creates a stream on bp_conf.device with priority 0; fails the test on error. */
#define bp_conf_stream() bp_conf_stream_at(BP_CONF_HERE)
bp_stream *bp_conf_stream_at(const char *file, int line);

/* Allocates `n` bytes of host memory (malloc; the caller frees); fails the test when
 * there are none. */
#define bp_conf_host_buffer(...) bp_conf_host_buffer_at(BP_CONF_HERE, __VA_ARGS__)
void *bp_conf_host_buffer_at(const char *file, int line, size_t n);

/* Allocates `n` bytes of device memory for `stream` that hold `value` for good: copied
 * from host memory on `stream` (not set with memset, so that a memset defect fails
 * memory.memset rather than every test that needs a filled buffer), which is then
 * synchronized. Fails the test on error. */
#define bp_conf_filled_buffer(...) bp_conf_filled_buffer_at(BP_CONF_HERE, __VA_ARGS__)
void *bp_conf_filled_buffer_at(const char *file, int line, bp_stream *stream, size_t n,
                               int value);

/* Another device of the type under test (the one with the lowest other index), or
 * NULL when the device is the only one of its type. */
bp_device *bp_conf_second_device(void);

/* A buffer that a writer stream overwrites late (late.h): the checks that "the work is
 * done" (a synchronize, a query, an event) makes the data final read it through a
 * stream that is not ordered after the writer, which sees old_value until the write. */
typedef struct bp_conf_overwrite {
    bp_stream *writer;
    void *x;       /* n bytes of device memory, allocated for the writer */
    void *source;  /* n bytes of new_value, what the held write copies */
    size_t n;
    int old_value; /* what x holds before the write */
    int new_value; /* what it holds after */
    bp_conf_late late;
} bp_conf_overwrite;

/* Copies of bp_conf_slow_fill before the write where the device cannot hold it. */
#define BP_CONF_OVERWRITE_FALLBACK_ROUNDS 16

/* Picks old_value and new_value with bp_conf_two_bytes from bp_conf_test_seed(),
 * allocates n bytes on `writer` that hold old_value for good and n that hold new_value
 * (bp_conf_filled_buffer). */
#define bp_conf_overwrite_prepare(...) bp_conf_overwrite_prepare_at(BP_CONF_HERE, __VA_ARGS__)
bp_conf_overwrite bp_conf_overwrite_prepare_at(const char *file, int line, bp_stream *writer,
                                               size_t n);

/* Enqueues on the writer the late write of new_value over x (bp_conf_late_write); once
 * per overwrite, on the overwrite where it will stay (its gate must not move). Then
 * the test either opens the gate itself with bp_conf_overwrite_finish, or starts
 * bp_conf_overwrite_open_later before a blocking call and calls finish after it. */
#define bp_conf_overwrite_start(...) bp_conf_overwrite_start_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_overwrite_start_at(const char *file, int line, bp_conf_overwrite *w);

/* bp_conf_late_open_later of the write. */
void bp_conf_overwrite_open_later(bp_conf_overwrite *w);

/* bp_conf_late_held of the write: x holds old_value for certain until finish. */
bool bp_conf_overwrite_held(const bp_conf_overwrite *w);

/* bp_conf_late_finish of the write: opens the gate; returns whether it was open
 * already. Call it before any check that can end the test. */
bool bp_conf_overwrite_finish(bp_conf_overwrite *w);

/* Reads x through `reader` and fails the test unless it is all new_value
 * (bp_conf_expect_filled; `what` names the read). */
#define bp_conf_expect_overwritten(...) bp_conf_expect_overwritten_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_expect_overwritten_at(const char *file, int line, const bp_conf_overwrite *w,
                                   bp_stream *reader, const char *what);

/* Finishes the write, synchronizes the writer and frees x and source (the writer
 * stays). */
#define bp_conf_overwrite_free(...) bp_conf_overwrite_free_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_overwrite_free_at(const char *file, int line, bp_conf_overwrite *w);

/* Allocates `n` bytes on `stream`, sets them to `value` there, checks them with
 * bp_conf_expect_filled (`what`) and frees them: memset works on the stream. */
#define bp_conf_expect_memset_works(...) \
    bp_conf_expect_memset_works_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_expect_memset_works_at(const char *file, int line, bp_stream *stream, size_t n,
                                    int value, const char *what);

/* The allocator statistics of bp_conf.device now; fails the test on error. */
#define bp_conf_memory_stats() bp_conf_memory_stats_at(BP_CONF_HERE)
bp_memory_stats bp_conf_memory_stats_at(const char *file, int line);

/* Fails the test unless bp_conf.device's allocated_bytes now equals before->allocated_bytes;
 * `when` says when it is read ("after ..."). */
#define bp_conf_expect_allocated_unchanged(...) \
    bp_conf_expect_allocated_unchanged_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_expect_allocated_unchanged_at(const char *file, int line,
                                           const bp_memory_stats *before, const char *when);

/* Downloads device memory [src, src + n) through `stream` (waiting for it) and fails
 * the test unless every byte is `value`. `what` names the buffer in the message. */
#define bp_conf_expect_filled(...) bp_conf_expect_filled_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_expect_filled_at(const char *file, int line, bp_stream *stream, const void *src,
                              size_t n, int value, const char *what);

/* As bp_conf_expect_filled, but the bytes must equal want[0, n). */
#define bp_conf_expect_bytes(...) bp_conf_expect_bytes_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_expect_bytes_at(const char *file, int line, bp_stream *stream, const void *src,
                             const void *want, size_t n, const char *what);

/* Two different non-zero bytes from `rng`: the old and the new contents of a buffer,
 * so that data from before some work can be told from data after it. */
void bp_conf_two_bytes(uint64_t *rng, int *old_value, int *new_value);

/* Polls query(object) (a wrapper of bp_stream_query or bp_event_query) until it
 * returns BP_OK. Every other answer must be BP_ERR_NOT_READY without an error message;
 * fails the test otherwise. Work that never completes is caught by the group's
 * deadline (no clock here: a loaded machine must not fail a correct device). `what`
 * names the object in the messages. */
#define bp_conf_poll_until_done(...) bp_conf_poll_until_done_at(BP_CONF_HERE, __VA_ARGS__)
void bp_conf_poll_until_done_at(const char *file, int line, bp_status (*query)(void *object),
                                void *object, const char *what);

#endif
