/* Helpers shared by the unit tests. Include after <setjmp.h>, <stdarg.h>, <stddef.h>
 * and <cmocka.h> (cmocka's own requirement). */
#ifndef BP_TEST_UTIL_H
#define BP_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <backplane/backplane.h>

/* bp_conf_gate: holds a stream on a host function until the test opens it, so a test
 * sees work "still running" without depending on timing (shared with bp-conformance). */
#include "gate.h"

/* Asserts that `expr` returns BP_OK; on failure prints the status and bp_last_error(). */
#define BP_ASSERT_OK(expr)                                                                 \
    do {                                                                                   \
        bp_status bp_assert_st_ = (expr);                                                  \
        if (bp_assert_st_ != BP_OK)                                                        \
            fail_msg("%s -> %s: %s", #expr, bp_status_str(bp_assert_st_), bp_last_error()); \
    } while (0)

/* Asserts that `expr` returns `status` and that the last error contains `needle`. */
#define BP_ASSERT_ERR(expr, status, needle)                                                \
    do {                                                                                   \
        bp_status bp_assert_st_ = (expr);                                                  \
        if (bp_assert_st_ != (status))                                                     \
            fail_msg("%s -> %s, expected %s (%s)", #expr, bp_status_str(bp_assert_st_),      \
                     bp_status_str(status), bp_last_error());                             \
        if (!bp_test_contains(bp_last_error(), (needle)))                                  \
            fail_msg("%s: message '%s' lacks '%s'", #expr, bp_last_error(), (needle));       \
    } while (0)

/* The cpu device, asserting it opens. */
bp_device *bp_test_cpu(void);

/* The device's allocator statistics (every field poisoned first, so a field the call
 * did not write shows). */
bp_memory_stats bp_test_memory_stats(bp_device *dev);

/* cpu with no limit and an empty cache, checked: every test that counts bytes starts
 * from it. */
bp_device *bp_test_clean_cpu(void);

/* A cmocka teardown: pops the hint scopes a failed test left open. */
int bp_test_close_hint_scopes(void **state);

/* strstr that treats NULL as "". */
int bp_test_contains(const char *haystack, const char *needle);

/* Deterministic pseudo-random bytes (xorshift) for buffers that must not be zeros. */
void bp_test_fill_random(void *buf, size_t size, uint64_t seed);

/* Checks inside a forked child: on failure print the location and _exit(1). */
#define CHILD_CHECK(cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: child check failed: %s (last error: %s)\n", __FILE__,  \
                    __LINE__, #cond, bp_last_error());                                     \
            fflush(stderr);                                                                \
            _exit(1);                                                                      \
        }                                                                                  \
    } while (0)

/* Inside a forked child: the plugin listed at `i` / the listed candidate named `name`
 * (any state); the child fails (CHILD_CHECK) when there is none. */
bp_plugin_info bp_test_plugin_at(int i);
bp_plugin_info bp_test_plugin_named(const char *name);

/* The test plugin "gated" (tests/plugins) writes a byte to BP_TEST_NOTIFY_FD in its init
 * and then blocks until it reads one from BP_TEST_GATE_FD. Inside a forked child: makes
 * both pipes and sets both variables. A test reads one byte from notify_read (gated's
 * init is then provably running, and stays there) and releases it by writing to
 * gate_write. */
typedef struct bp_test_gate {
    int notify_read;
    int gate_write;
} bp_test_gate;
bp_test_gate bp_test_gate_open(void);

/* Runs fn(arg) in a forked child after setting the environment entries "NAME=value"
 * (a NULL-terminated list; "NAME=" unsets). The registry initialises once per
 * process, so tests of environment-dependent loading run in children, and the child
 * inherits the parent's registry: such tests must run before anything in the parent
 * touches devices (list them first in main). Returns the child's exit status (0 =
 * every CHILD_CHECK held), or 128+signal. */
int bp_test_run_child(void (*fn)(void *arg), void *arg, const char *const *env);

/* Runs a command with `env` entries added (as above), capturing stdout into a
 * malloc'ed string (*out_stdout, caller frees). Returns the exit status. */
int bp_test_run_command(const char *const *argv, const char *const *env, char **out_stdout);

/* Inside a forked child: sends what the process writes to stderr into a temporary
 * file until bp_test_capture_end, which returns it (malloc'ed, caller frees). */
void bp_test_capture_begin(void);
char *bp_test_capture_end(void);

/* Why this CPU cannot run the cpu sdpa path named (BP_CPU_SDPA's "avx512", "avx512bf16"
 * or "amx"; for amx, this process asks Linux for the tile data as the library does), or
 * NULL when it can; NULL for any other name. */
const char *bp_test_sdpa_path_unavailable(const char *path);

#endif
