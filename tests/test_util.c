#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

bp_device *bp_test_cpu(void) {
    bp_device *dev = NULL;
    BP_ASSERT_OK(bp_device_open("cpu", &dev));
    assert_non_null(dev);
    return dev;
}

int bp_test_contains(const char *haystack, const char *needle) {
    return strstr(haystack ? haystack : "", needle ? needle : "") != NULL;
}

void bp_test_fill_random(void *buf, size_t size, uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    unsigned char *p = buf;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

static void apply_env(const char *const *env) {
    for (; env && *env; env++) {
        const char *eq = strchr(*env, '=');
        if (!eq)
            continue;
        char name[256];
        size_t n = (size_t)(eq - *env);
        if (n >= sizeof name)
            continue;
        memcpy(name, *env, n);
        name[n] = '\0';
        if (eq[1] == '\0')
            unsetenv(name);
        else
            setenv(name, eq + 1, 1);
    }
}

static int decode_wait_status(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

int bp_test_run_child(void (*fn)(void *arg), void *arg, const char *const *env) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        apply_env(env);
        fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    return decode_wait_status(status);
}

/* In a cross build, the emulator that runs the target's programs (CMake's
 * CMAKE_CROSSCOMPILING_EMULATOR, e.g. qemu-aarch64; tests/CMakeLists.txt passes its words
 * as BP_TEST_EMULATOR_ARGV). An emulated process cannot exec a program of the target by
 * itself: qemu-user hands execve to the host kernel, which runs only host programs unless
 * binfmt_misc is set up. So the command runs behind the emulator; natively the list is
 * empty. */
static const char *const emulator_argv[] = {BP_TEST_EMULATOR_ARGV NULL};
enum { EMULATOR_WORDS = sizeof emulator_argv / sizeof emulator_argv[0] - 1 };

/* In the child: execs argv behind the emulator words (if any). */
static void exec_command(const char *const *argv) {
    size_t n = 0;
    while (argv[n])
        n++;
    const char **full = calloc(EMULATOR_WORDS + n + 1, sizeof *full);
    if (!full)
        _exit(127);
    memcpy(full, emulator_argv, EMULATOR_WORDS * sizeof *full);
    memcpy(full + EMULATOR_WORDS, argv, (n + 1) * sizeof *full);
    execv(full[0], (char *const *)full);
    _exit(127);
}

int bp_test_run_command(const char *const *argv, const char *const *env, char **out_stdout) {
    int fds[2];
    *out_stdout = NULL;
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        apply_env(env);
        exec_command(argv);
    }
    close(fds[1]);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1024 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(fds[0], buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *out_stdout = buf;
    return decode_wait_status(status);
}

static int capture_saved_fd = -1;
static FILE *capture_file;

void bp_test_capture_begin(void) {
    fflush(stderr);
    capture_file = tmpfile();
    CHILD_CHECK(capture_file != NULL);
    capture_saved_fd = dup(2);
    CHILD_CHECK(capture_saved_fd >= 0 && dup2(fileno(capture_file), 2) == 2);
}

char *bp_test_capture_end(void) {
    fflush(stderr);
    dup2(capture_saved_fd, 2);
    close(capture_saved_fd);
    long size = ftell(capture_file);
    CHILD_CHECK(size >= 0);
    char *text = malloc((size_t)size + 1);
    CHILD_CHECK(text != NULL);
    rewind(capture_file);
    CHILD_CHECK(fread(text, 1, (size_t)size, capture_file) == (size_t)size);
    text[size] = '\0';
    fclose(capture_file);
    return text;
}

bp_memory_stats bp_test_memory_stats(bp_device *dev) {
    bp_memory_stats s;
    memset(&s, 0xff, sizeof s);
    s.struct_size = sizeof s;
    BP_ASSERT_OK(bp_memory_get_stats(dev, &s));
    return s;
}

bp_device *bp_test_clean_cpu(void) {
    bp_device *dev = bp_test_cpu();
    BP_ASSERT_OK(bp_memory_set_limit(dev, 0));
    BP_ASSERT_OK(bp_memory_empty_cache(dev));
    bp_memory_stats s = bp_test_memory_stats(dev);
    assert_int_equal(s.allocated_bytes, 0);
    assert_int_equal(s.reserved_bytes, 0);
    assert_int_equal(s.num_segments, 0);
    return dev;
}

int bp_test_close_hint_scopes(void **state) {
    (void)state;
    while (bp_hints_depth() > 0)
        bp_hints_pop();
    return 0;
}

bp_plugin_info bp_test_plugin_at(int i) {
    bp_plugin_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHILD_CHECK(bp_plugin_get_info(i, &info) == BP_OK);
    return info;
}

bp_plugin_info bp_test_plugin_named(const char *name) {
    for (int i = 0; i < bp_plugin_count(); i++) {
        bp_plugin_info info = bp_test_plugin_at(i);
        if (strcmp(info.name, name) == 0)
            return info;
    }
    fprintf(stderr, "no plugin named '%s' is listed\n", name);
    CHILD_CHECK(0);
    return bp_test_plugin_at(0);
}

bp_test_gate bp_test_gate_open(void) {
    int notify[2], gate[2];
    CHILD_CHECK(pipe(notify) == 0 && pipe(gate) == 0);
    char fd_text[16];
    snprintf(fd_text, sizeof fd_text, "%d", notify[1]);
    CHILD_CHECK(setenv("BP_TEST_NOTIFY_FD", fd_text, 1) == 0);
    snprintf(fd_text, sizeof fd_text, "%d", gate[0]);
    CHILD_CHECK(setenv("BP_TEST_GATE_FD", fd_text, 1) == 0);
    return (bp_test_gate){.notify_read = notify[0], .gate_write = gate[1]};
}

const char *bp_test_sdpa_path_unavailable(const char *path) {
    bool amx = strcmp(path, "amx") == 0, bf16 = amx || strcmp(path, "avx512bf16") == 0;
    if (!bf16 && strcmp(path, "avx512") != 0)
        return NULL;
#if defined(__x86_64__)
    const char *no_amx = "the CPU has no AMX-BF16 (or the kernel refused tile data)";
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
        !__builtin_cpu_supports("fma"))
        return amx ? no_amx : "the CPU lacks AVX-512";
    if (bf16 && !__builtin_cpu_supports("avx512bf16"))
        return amx ? no_amx : "the CPU lacks AVX512-BF16";
    /* arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), as ops/cpu/sdpa.c asks. */
    if (amx && (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16") ||
                syscall(SYS_arch_prctl, 0x1023, 18) != 0))
        return no_amx;
    return NULL;
#else
    return "not an x86-64 CPU";
#endif
}
