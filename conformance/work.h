/* Device work the groups share: long-running stream work whose end is observable, and
 * byte-level upload/download/check helpers. Errors set bp_last_error(). */
#ifndef BP_CONF_WORK_H
#define BP_CONF_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <backplane/backplane.h>

/* Size of the scratch buffers of bp_conf_slow_fill; `bytes` must not exceed it. */
#define BP_CONF_SLOW_FILL_MAX ((size_t)32 << 20)

/* Enqueues on `stream` work that takes a while (a chain of device-to-device copies of
 * 32 MiB scratch buffers) and whose last step sets dst[0, bytes) to the byte `value`.
 * Until the stream reaches that step, dst keeps its old contents: a reader that is
 * not ordered after the stream sees them. `rounds` copies (at least 1) set the length. */
bp_status bp_conf_slow_fill(bp_stream *stream, void *dst, size_t bytes, int value, int rounds);

/* Copies `bytes` from device pointer `src` to host memory `host` on `stream` and waits
 * for the stream. */
bp_status bp_conf_download(bp_stream *stream, const void *src, size_t bytes, void *host);

/* Copies host memory to device pointer `dst` on `stream` and waits for the stream. */
bp_status bp_conf_upload(bp_stream *stream, void *dst, const void *host, size_t bytes);

/* True when every byte of p[0, n) is `value`; else false with the first other index. */
bool bp_conf_all_bytes(const void *p, size_t n, int value, size_t *first_bad);

/* Fills p[0, n) with pseudo-random bytes from `seed` (never all equal for n > 1). */
void bp_conf_random_bytes(void *p, size_t n, uint64_t seed);

#endif
