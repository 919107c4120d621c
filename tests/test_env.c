/* Environment variables the core reads that take a number or a switch (BP_NUM_THREADS,
 * BP_CPU_FALLBACK, BP_BLAS, BP_LOG, BP_CPU_SDPA): a value is taken only when it is
 * exactly one of the accepted ones; anything else gets a warning naming it (escaped)
 * and the safe default. Each case runs in a child, since the core reads each variable once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* Threads of this process named "bp-pool" (the cpu kernels' worker pool). */
static int pool_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    CHILD_CHECK(dir != NULL);
    int count = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* a thread that just ended */
        if (fgets(comm, sizeof comm, f) && strncmp(comm, "bp-pool", 7) == 0) count++;
        fclose(f);
    }
    closedir(dir);
    return count;
}

/* The pool's size without BP_NUM_THREADS: a thread per extra core, at most 63. */
static int default_pool_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 64 ? 63 : cores > 1 ? (int)cores - 1 : 0;
}

typedef struct env_case {
    const char *value;   /* "NAME=value" for the child */
    int threads;         /* BP_NUM_THREADS cases: the pool's size; -1 for the default */
    const char *warning; /* expected in stderr, NULL for none */
} env_case;

/* Checks a child's stderr (`log`, freed here): it holds c->warning, or is empty when
 * that is NULL, and only printable characters and newlines (values are escaped). */
static void check_warning(const env_case *c, char *log) {
    if (c->warning ? !strstr(log, c->warning) : log[0] != '\0')
        fprintf(stderr, "%s: stderr '%s', expected '%s'\n", c->value, log,
                c->warning ? c->warning : "");
    CHILD_CHECK(c->warning ? strstr(log, c->warning) != NULL : log[0] == '\0');
    for (const char *p = log; *p; p++)
        CHILD_CHECK(*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f));
    free(log);
}

/* Starts the pool (any cpu kernel split by bp_parallel_for: a large fill) and checks
 * its size and the warning. */
static void child_num_threads(void *arg) {
    const env_case *c = arg;
    bp_test_capture_begin();
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    int64_t shape[1] = {1 << 20};
    bp_tensor *t = NULL;
    CHILD_CHECK(bp_tensor_empty(cpu, BP_DTYPE_F32, 1, shape, &t) == BP_OK);
    CHILD_CHECK(bp_fill(t, 1.0) == BP_OK);
    CHILD_CHECK(bp_device_synchronize(cpu) == BP_OK);
    bp_tensor_release(t);
    char *log = bp_test_capture_end();
    int expected = c->threads >= 0 ? c->threads : default_pool_threads();
    if (pool_threads() != expected)
        fprintf(stderr, "%s: %d pool threads (expected %d)\n", c->value, pool_threads(),
                expected);
    CHILD_CHECK(pool_threads() == expected);
    check_warning(c, log);
}

static void run_cases(void (*child)(void *), const env_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        /* A developer's BP_LOG must not add lines; a case may still set it. */
        const char *env[] = {"BP_LOG=warn", cases[i].value, NULL};
        bool plain = true;
        for (const char *p = cases[i].value; *p; p++) plain = plain && (unsigned char)*p >= 0x20;
        print_message("%s\n", plain ? cases[i].value : "(a value with control bytes)");
        assert_int_equal(bp_test_run_child(child, (void *)&cases[i], env), 0);
    }
}

static void test_num_threads(void **state) {
    (void)state;
#define BAD_THREADS(v)                                                                     \
    {"BP_NUM_THREADS=" v, -1,                                                              \
     "backplane[parallel] warn: BP_NUM_THREADS='" v "' is not a whole number of threads "  \
     "from 1 to 64; using the cores online"}
    static const env_case cases[] = {
        {"BP_NUM_THREADS=3", 2, NULL},
        {"BP_NUM_THREADS=1", 0, NULL},
        {"BP_NUM_THREADS=", -1, NULL},
        BAD_THREADS("abc"),
        BAD_THREADS("4abc"),
        BAD_THREADS("0"),
        BAD_THREADS("-1"),
        BAD_THREADS("+2"),
        BAD_THREADS(" 2"),
        BAD_THREADS("2 "),
        BAD_THREADS("65"),
        BAD_THREADS("99999999999"),
        BAD_THREADS("18446744073709551619"),
        BAD_THREADS("1e3"),
        BAD_THREADS("0x10"),
    };
#undef BAD_THREADS
    run_cases(child_num_threads, cases, sizeof cases / sizeof cases[0]);
}

/* Loads the library (the dispatcher reads BP_CPU_FALLBACK as it starts) and runs a small
 * f32 matmul (the cpu kernel reads BP_BLAS at its first call). */
static void child_switches(void *arg) {
    const env_case *c = arg;
    bp_test_capture_begin();
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    int64_t shape[2] = {4, 4};
    float ones[16];
    for (int i = 0; i < 16; i++) ones[i] = 1.0f;
    bp_tensor *a = NULL, *out = NULL;
    CHILD_CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 2, shape, ones, &a) == BP_OK);
    CHILD_CHECK(bp_matmul(a, a, 0, 0, &out) == BP_OK);
    float result[16];
    CHILD_CHECK(bp_tensor_to_host(out, result, sizeof result) == BP_OK);
    CHILD_CHECK(result[0] == 4.0f && result[15] == 4.0f);
    bp_tensor_release(a);
    bp_tensor_release(out);
    check_warning(c, bp_test_capture_end());
}

static void test_switches(void **state) {
    (void)state;
    static const env_case cases[] = {
        {"BP_CPU_FALLBACK=1", 0, NULL},
        {"BP_CPU_FALLBACK=0", 0, NULL},
        {"BP_CPU_FALLBACK=yes", 0,
         "backplane[dispatcher] warn: BP_CPU_FALLBACK='yes' is not 0 or 1; the CPU fallback "
         "stays off\n"},
        {"BP_CPU_FALLBACK=01", 0, "BP_CPU_FALLBACK='01' is not 0 or 1"},
        {"BP_CPU_FALLBACK=1 ", 0, "BP_CPU_FALLBACK='1 ' is not 0 or 1"},
        {"BP_BLAS=0", 0, NULL},
        {"BP_BLAS=1", 0, NULL},
        {"BP_BLAS=off", 0,
         "backplane[matmul] warn: BP_BLAS='off' is not 0 or 1; f32 matmul uses the built-in "
         "kernel\n"},
        {"BP_LOG=verbose", 0,
         "backplane[log] warn: BP_LOG='verbose' is not one of error, warn, info, debug; using "
         "warn\n"},
        /* The value is escaped: it cannot drive the terminal or forge a line. */
        {"BP_LOG=debug\x1b[2J\nbackplane[cpu] error: forged", 0,
         "backplane[log] warn: BP_LOG='debug\\x1b[2J\\nbackplane[cpu] error: forged' is not one "
         "of error"},
        {"BP_LOG=ERROR", 0, NULL},
    };
    run_cases(child_switches, cases, sizeof cases / sizeof cases[0]);
}

/* Runs a small f32 and a small bf16 sdpa of ones, whose outputs are exactly 1 (the cpu
 * kernel reads BP_CPU_SDPA at its first call; the bf16 one runs the bf16 path chosen). */
static void child_sdpa_path(void *arg) {
    const env_case *c = arg;
    bp_test_capture_begin();
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    int64_t shape[4] = {1, 1, 2, 16};
    float ones[32];
    uint16_t bf16_ones[32];
    for (int i = 0; i < 32; i++)
        ones[i] = 1.0f, bf16_ones[i] = 0x3f80;
    bp_tensor *t = NULL, *out = NULL;
    CHILD_CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 4, shape, ones, &t) == BP_OK);
    CHILD_CHECK(bp_sdpa(t, t, t, NULL, NULL, &out) == BP_OK);
    float result[32];
    CHILD_CHECK(bp_tensor_to_host(out, result, sizeof result) == BP_OK);
    CHILD_CHECK(result[0] == 1.0f && result[31] == 1.0f);
    bp_tensor_release(t);
    bp_tensor_release(out);
    CHILD_CHECK(bp_tensor_from_host(cpu, BP_DTYPE_BF16, 4, shape, bf16_ones, &t) == BP_OK);
    CHILD_CHECK(bp_sdpa(t, t, t, NULL, NULL, &out) == BP_OK);
    uint16_t bf16_result[32];
    CHILD_CHECK(bp_tensor_to_host(out, bf16_result, sizeof bf16_result) == BP_OK);
    CHILD_CHECK(bf16_result[0] == 0x3f80 && bf16_result[31] == 0x3f80);
    bp_tensor_release(t);
    bp_tensor_release(out);
    check_warning(c, bp_test_capture_end());
}

/* BP_CPU_SDPA: a name outside the list, or an ISA this CPU lacks (for amx: or tile data
 * Linux refused), is a warning and auto. */
static void test_sdpa_path(void **state) {
    (void)state;
    const char *lacks = "this CPU lacks the instructions; using auto";
    const char *amx_warning = bp_test_sdpa_path_unavailable("amx")
                                  ? "backplane[sdpa] warn: BP_CPU_SDPA=amx: "
                                  : NULL;
    const env_case cases[] = {
        {"BP_CPU_SDPA=auto", 0, NULL},
        {"BP_CPU_SDPA=generic", 0, NULL},
        {"BP_CPU_SDPA=avx512", 0, bp_test_sdpa_path_unavailable("avx512") ? lacks : NULL},
        {"BP_CPU_SDPA=avx512bf16", 0, bp_test_sdpa_path_unavailable("avx512bf16") ? lacks : NULL},
        {"BP_CPU_SDPA=amx", 0, amx_warning},
        {"BP_CPU_SDPA=AVX512", 0,
         "backplane[sdpa] warn: BP_CPU_SDPA='AVX512' is not one of auto, amx, avx512bf16, "
         "avx512, generic; using auto\n"},
        {"BP_CPU_SDPA=amx-bf16", 0, "BP_CPU_SDPA='amx-bf16' is not one of"},
    };
    run_cases(child_sdpa_path, cases, sizeof cases / sizeof cases[0]);
}

int main(void) {
    /* The parent never initialises backplane: every case runs in its own child. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_num_threads),
        cmocka_unit_test(test_switches),
        cmocka_unit_test(test_sdpa_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
