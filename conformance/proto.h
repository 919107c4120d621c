/* bp-conformance runner: the messages a child sends its parent over a pipe.
 *
 * Each message is a fixed header followed by `len` bytes of payload. Parent and child
 * are one program forked, so the header is sent as the struct itself. A child writes
 * from one thread only (the one that runs the tests), so messages never interleave. */
#ifndef BP_CONF_PROTO_H
#define BP_CONF_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum bp_conf_msg_type {
    BP_CONF_MSG_HEADER = 1,      /* payload: a bp_conf_header (target.h) */
    BP_CONF_MSG_SETUP_ERROR = 2, /* payload: why the device could not be opened */
    BP_CONF_MSG_START = 3,       /* test: the index of the test that starts now */
    BP_CONF_MSG_RESULT = 4,      /* test, status, ms; payload: the message */
} bp_conf_msg_type;

typedef struct bp_conf_msg {
    uint32_t type;    /* bp_conf_msg_type */
    uint32_t test;    /* index of the test within the group's selected tests */
    uint32_t status;  /* bp_conf_status */
    uint32_t len;     /* payload bytes that follow */
    double ms;
} bp_conf_msg;

/* Payloads above this are cut (a test that prints megabytes must not stall the pipe). */
#define BP_CONF_MSG_MAX_PAYLOAD ((size_t)1 << 20)

/* Writes one message to `fd` (retrying on EINTR and short writes); false on error. */
bool bp_conf_msg_send(int fd, bp_conf_msg_type type, uint32_t test, uint32_t status, double ms,
                      const void *payload, size_t len);

/* The parent's side: bytes read so far from a child's pipe. */
typedef struct bp_conf_reader {
    char *buf;
    size_t len;
    size_t cap;
} bp_conf_reader;

/* Reads what `fd` has now (one read). Returns the bytes read, 0 at end of file, or -1
 * on an error other than EINTR/EAGAIN (errno set); EINTR and EAGAIN read as -2. */
long bp_conf_reader_fill(bp_conf_reader *reader, int fd);

/* Takes the next complete message: the header into *msg and a copy of the payload,
 * NUL-terminated, into *payload (the caller frees it; NULL when out of memory). False
 * when no complete message is buffered. */
bool bp_conf_reader_next(bp_conf_reader *reader, bp_conf_msg *msg, char **payload);

void bp_conf_reader_free(bp_conf_reader *reader);

#endif
