/* bp-stress: the flake check's driver (ctest label "stress", `make stress`).
 *
 *     bp-stress [--name NAME] [--iterations N] [--default-iterations N] [--load N]
 *               [--timeout S] -- COMMAND [ARGS...]
 *
 * Runs COMMAND N times, one run after the other, while busy-loop threads of this
 * process keep every core loaded, so that the test's threads are preempted at
 * arbitrary points. A run that exits non-zero, dies of a signal or outlives the
 * per-run limit is a failure: it is reported with the test's name, the iteration and
 * the run's own output (stdout and stderr, captured in memory). Every iteration runs
 * even after a failure, so the summary gives the failure rate.
 *
 * The iteration count: --iterations N, else the environment variable
 * BP_STRESS_ITERATIONS, else --default-iterations N (ctest passes the CMake cache
 * variable BP_STRESS_ITERATIONS), else 10. Counts are whole decimal numbers from 1 to
 * 1000000, parsed strictly ("", "abc", "-5", "1e3", "0x10", " 5" are errors).
 *
 * Nothing outlives the driver: the load is threads of this process, not processes;
 * each run is the leader of its own process group, which is killed (SIGKILL) when it
 * times out and when the driver gets SIGINT, SIGTERM or SIGHUP; and each run has
 * PR_SET_PDEATHSIG, so it is killed too if the driver itself is killed outright
 * (ctest's own timeout).
 *
 * Exit status: 0 when every iteration passed, 1 when one failed, 2 for a usage or
 * setup error, 128 + the signal when interrupted.
 *
 * It is built from scripts/ by tests/stress.cmake, without sanitizers (it is the
 * harness, not the code under test; a TSan runtime in a process that forks while its
 * load threads spin would only slow it down). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#define MAX_ITERATIONS 1000000ull
#define MAX_LOAD 1024ull
#define MAX_TIMEOUT_S 86400ull
#define DEFAULT_ITERATIONS 10ull
#define DEFAULT_TIMEOUT_S 300ull
/* The output of a failing run is printed in full up to this many bytes (its tail
 * beyond), and in full for the first few failures only. */
#define MAX_PRINTED_OUTPUT (1u << 20)
#define MAX_FAILURES_WITH_OUTPUT 3

static const char *prog = "bp-stress";

static void usage(FILE *out) {
    fprintf(out,
            "usage: %s [--name NAME] [--iterations N] [--default-iterations N] [--load N]\n"
            "                 [--timeout S] -- COMMAND [ARGS...]\n"
            "\n"
            "Runs COMMAND N times while busy threads load every core; reports each failing\n"
            "iteration with its output.\n"
            "\n"
            "  --name NAME               the test's name in reports (default: COMMAND)\n"
            "  --iterations N            runs (1..%llu); beats BP_STRESS_ITERATIONS\n"
            "  --default-iterations N    runs when neither --iterations nor\n"
            "                            BP_STRESS_ITERATIONS is given (default %llu)\n"
            "  --load N                  busy-loop threads (0..%llu; default\n"
            "                            BP_STRESS_LOAD, else the number of online CPUs)\n"
            "  --timeout S               limit of one run in seconds, 0 for none\n"
            "                            (default %llu)\n"
            "\n"
            "Exit status: 0 when every run passed, 1 when one failed, 2 for a usage or\n"
            "setup error, 128 + N when interrupted by signal N.\n",
            prog, MAX_ITERATIONS, DEFAULT_ITERATIONS, MAX_LOAD, DEFAULT_TIMEOUT_S);
}

/* Parses a whole decimal number in [min, max]: digits only, no sign, no spaces, no
 * base prefix, no exponent. Returns 0, or -1 after printing why. */
static int parse_count(const char *what, const char *text, unsigned long long min,
                       unsigned long long max, unsigned long long *out) {
    unsigned long long v = 0;
    const char *p = text;
    if (*p == '\0')
        goto bad;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            goto bad;
        unsigned d = (unsigned)(*p - '0');
        if (v > (ULLONG_MAX - d) / 10)
            goto bad;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        goto bad;
    *out = v;
    return 0;
bad:
    fprintf(stderr, "%s: %s='%s': expected a whole number from %llu to %llu\n", prog, what,
            text, min, max);
    return -1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- The load: busy threads until told to stop. ---- */

static atomic_int load_stop;

static void *busy_main(void *arg) {
    (void)arg;
    /* Arithmetic the compiler cannot drop, checked against the flag now and then. */
    volatile uint64_t sink = 0;
    uint64_t x = (uint64_t)(uintptr_t)&arg | 1;
    while (!atomic_load_explicit(&load_stop, memory_order_relaxed)) {
        for (int i = 0; i < 4096; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        sink = x;
    }
    (void)sink;
    return NULL;
}

typedef struct {
    pthread_t *threads;
    unsigned long long count;
} load;

static int load_start(load *l, unsigned long long n) {
    l->count = 0;
    l->threads = NULL;
    if (n == 0)
        return 0;
    l->threads = calloc(n, sizeof *l->threads);
    if (!l->threads) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    for (; l->count < n; l->count++) {
        int rc = pthread_create(&l->threads[l->count], NULL, busy_main, NULL);
        if (rc != 0) {
            fprintf(stderr, "%s: cannot start load thread %llu: %s\n", prog, l->count + 1,
                    strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void load_stop_all(load *l) {
    atomic_store(&load_stop, 1);
    for (unsigned long long i = 0; i < l->count; i++)
        pthread_join(l->threads[i], NULL);
    free(l->threads);
    l->threads = NULL;
    l->count = 0;
}

/* ---- One run. ---- */

enum run_end { RUN_PASSED, RUN_FAILED, RUN_INTERRUPTED, RUN_SETUP_ERROR };

typedef struct {
    char *const *argv;
    int output_fd;         /* memfd: the run's stdout and stderr */
    int signal_fd;         /* SIGCHLD, SIGINT, SIGTERM, SIGHUP */
    sigset_t old_mask;     /* restored in the child before exec */
    unsigned long long timeout_s;
    char reason[128];      /* why it failed */
    int interrupt_signal;  /* the signal that interrupted the driver */
} runner;

/* The child: its own process group, killed with the driver, output to the memfd. Only
 * async-signal-safe calls between fork and exec. */
static void child_exec(runner *r, pid_t driver) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != driver)
        _exit(127); /* the driver died between fork and prctl */
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
        dup2(r->output_fd, STDOUT_FILENO) < 0 || dup2(r->output_fd, STDERR_FILENO) < 0)
        _exit(127);
    close(devnull);
    close(r->output_fd);
    close(r->signal_fd);
    sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
    execvp(r->argv[0], r->argv);
    static const char msg[] = "bp-stress: cannot execute the command\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
}

static void kill_group(pid_t pid) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL); /* in case setpgid had not run yet */
}

static enum run_end run_once(runner *r) {
    if (ftruncate(r->output_fd, 0) != 0 || lseek(r->output_fd, 0, SEEK_SET) != 0) {
        fprintf(stderr, "%s: cannot reset the output buffer: %s\n", prog, strerror(errno));
        return RUN_SETUP_ERROR;
    }
    r->reason[0] = '\0';
    pid_t driver = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
        return RUN_SETUP_ERROR;
    }
    if (pid == 0)
        child_exec(r, driver);
    setpgid(pid, pid); /* also here, so kill(-pid) works whichever runs first */

    double deadline = r->timeout_s ? now_s() + (double)r->timeout_s : 0;
    for (;;) {
        int status;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            /* Grandchildren it left behind go with it. */
            kill(-pid, SIGKILL);
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return RUN_PASSED;
            if (WIFEXITED(status))
                snprintf(r->reason, sizeof r->reason, "exit status %d", WEXITSTATUS(status));
            else if (WIFSIGNALED(status))
                snprintf(r->reason, sizeof r->reason, "killed by signal %d (%s)",
                         WTERMSIG(status), strsignal(WTERMSIG(status)));
            else
                snprintf(r->reason, sizeof r->reason, "wait status 0x%x", (unsigned)status);
            return RUN_FAILED;
        }
        if (got < 0 && errno != EINTR) {
            fprintf(stderr, "%s: waitpid: %s\n", prog, strerror(errno));
            kill_group(pid);
            return RUN_SETUP_ERROR;
        }
        int wait_ms = -1;
        if (deadline) {
            double left = deadline - now_s();
            if (left <= 0) {
                kill_group(pid);
                waitpid(pid, &status, 0);
                snprintf(r->reason, sizeof r->reason,
                         "timed out after %llu s (killed with its process group)",
                         r->timeout_s);
                return RUN_FAILED;
            }
            wait_ms = left > 1000.0 ? 1000000 : (int)(left * 1000.0) + 1;
        }
        struct pollfd pfd = {.fd = r->signal_fd, .events = POLLIN};
        int n = poll(&pfd, 1, wait_ms);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
            kill_group(pid);
            waitpid(pid, &status, 0);
            return RUN_SETUP_ERROR;
        }
        if (n > 0) {
            struct signalfd_siginfo si;
            while (read(r->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo != SIGCHLD) {
                    kill_group(pid);
                    waitpid(pid, &status, 0);
                    r->interrupt_signal = (int)si.ssi_signo;
                    return RUN_INTERRUPTED;
                }
            }
        }
    }
}

/* Prints the run's captured output (its tail beyond MAX_PRINTED_OUTPUT bytes). */
static void print_output(runner *r, const char *name, unsigned long long iteration) {
    struct stat st;
    if (fstat(r->output_fd, &st) != 0) {
        printf("(cannot read its output: %s)\n", strerror(errno));
        return;
    }
    off_t start = 0;
    printf("---- output of %s, iteration %llu (%lld bytes) ----\n", name, iteration,
           (long long)st.st_size);
    if (st.st_size > (off_t)MAX_PRINTED_OUTPUT) {
        start = st.st_size - (off_t)MAX_PRINTED_OUTPUT;
        printf("[... the first %lld bytes left out ...]\n", (long long)start);
    }
    fflush(stdout);
    char buf[65536];
    int ended_with_newline = 1;
    for (off_t at = start; at < st.st_size;) {
        ssize_t got = pread(r->output_fd, buf, sizeof buf, at);
        if (got <= 0)
            break;
        fwrite(buf, 1, (size_t)got, stdout);
        ended_with_newline = buf[got - 1] == '\n';
        at += got;
    }
    if (!ended_with_newline)
        putchar('\n');
    printf("---- end of output of %s, iteration %llu ----\n", name, iteration);
}

int main(int argc, char **argv) {
    const char *name = NULL;
    const char *iterations_arg = NULL, *default_iterations_arg = NULL, *load_arg = NULL,
               *timeout_arg = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--name") == 0) {
            slot = &name;
        } else if (strcmp(a, "--iterations") == 0) {
            slot = &iterations_arg;
        } else if (strcmp(a, "--default-iterations") == 0) {
            slot = &default_iterations_arg;
        } else if (strcmp(a, "--load") == 0) {
            slot = &load_arg;
        } else if (strcmp(a, "--timeout") == 0) {
            slot = &timeout_arg;
        } else {
            fprintf(stderr, "%s: unknown argument '%s' (the command goes after '--')\n", prog,
                    a);
            usage(stderr);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, a);
            return 2;
        }
        *slot = argv[++i];
    }
    if (i >= argc) {
        fprintf(stderr, "%s: no command (give it after '--')\n", prog);
        usage(stderr);
        return 2;
    }
    char *const *command = argv + i;
    if (!name || !*name)
        name = command[0];

    unsigned long long iterations = DEFAULT_ITERATIONS, load_threads, timeout_s =
                                                                          DEFAULT_TIMEOUT_S;
    const char *env_iterations = getenv("BP_STRESS_ITERATIONS");
    if (iterations_arg) {
        if (parse_count("--iterations", iterations_arg, 1, MAX_ITERATIONS, &iterations))
            return 2;
    } else if (env_iterations && *env_iterations) {
        if (parse_count("BP_STRESS_ITERATIONS", env_iterations, 1, MAX_ITERATIONS,
                        &iterations))
            return 2;
    } else if (default_iterations_arg) {
        if (parse_count("--default-iterations", default_iterations_arg, 1, MAX_ITERATIONS,
                        &iterations))
            return 2;
    }
    const char *env_load = getenv("BP_STRESS_LOAD");
    if (load_arg) {
        if (parse_count("--load", load_arg, 0, MAX_LOAD, &load_threads))
            return 2;
    } else if (env_load && *env_load) {
        if (parse_count("BP_STRESS_LOAD", env_load, 0, MAX_LOAD, &load_threads))
            return 2;
    } else {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        load_threads = cpus > 0 ? (unsigned long long)cpus : 1;
        if (load_threads > MAX_LOAD)
            load_threads = MAX_LOAD;
    }
    if (timeout_arg && parse_count("--timeout", timeout_arg, 0, MAX_TIMEOUT_S, &timeout_s))
        return 2;

    /* The signals the driver waits for arrive through a signalfd; the mask is set
     * before the load threads start, so they inherit it and never take one. */
    runner r = {.argv = command, .timeout_s = timeout_s};
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &mask, &r.old_mask) != 0) {
        fprintf(stderr, "%s: sigprocmask: %s\n", prog, strerror(errno));
        return 2;
    }
    r.signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    r.output_fd = memfd_create("bp-stress-output", MFD_CLOEXEC);
    if (r.signal_fd < 0 || r.output_fd < 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, r.signal_fd < 0 ? "signalfd" : "memfd_create",
                strerror(errno));
        return 2;
    }

    printf("%s: %s: %llu iterations, %llu load threads, %s%llu s limit per run\n", prog, name,
           iterations, load_threads, timeout_s ? "" : "no ", timeout_s);
    fflush(stdout);
    load l;
    if (load_start(&l, load_threads) != 0) {
        load_stop_all(&l);
        return 2;
    }

    double t0 = now_s(), slowest = 0;
    unsigned long long failed = 0, done = 0;
    char failed_list[256] = "";
    int exit_code = 0;
    for (unsigned long long it = 1; it <= iterations; it++) {
        double start = now_s();
        enum run_end end = run_once(&r);
        double took = now_s() - start;
        if (end == RUN_SETUP_ERROR) {
            exit_code = 2;
            break;
        }
        if (end == RUN_INTERRUPTED) {
            printf("%s: %s: interrupted by signal %d (%s) during iteration %llu of %llu; "
                   "the run was killed\n",
                   prog, name, r.interrupt_signal, strsignal(r.interrupt_signal), it,
                   iterations);
            exit_code = 128 + r.interrupt_signal;
            break;
        }
        done++;
        if (took > slowest)
            slowest = took;
        if (end == RUN_FAILED) {
            failed++;
            printf("%s: FAIL %s, iteration %llu of %llu: %s (%.2f s)\n", prog, name, it,
                   iterations, r.reason, took);
            if (failed <= MAX_FAILURES_WITH_OUTPUT)
                print_output(&r, name, it);
            else
                printf("(output not shown: only the first %d failures show theirs)\n",
                       MAX_FAILURES_WITH_OUTPUT);
            size_t len = strlen(failed_list);
            if (len < sizeof failed_list - 16)
                snprintf(failed_list + len, sizeof failed_list - len, "%s%llu",
                         len ? ", " : "", it);
            else if (failed_list[len - 1] != '.')
                snprintf(failed_list + len, sizeof failed_list - len, ", ...");
            fflush(stdout);
        }
    }
    load_stop_all(&l);

    printf("%s: %s: %llu of %llu iterations run, %llu failed%s%s%s, %.1f s (slowest run "
           "%.2f s)\n",
           prog, name, done, iterations, failed, failed ? " (iterations " : "", failed_list,
           failed ? ")" : "", now_s() - t0, slowest);
    if (exit_code == 0 && failed)
        exit_code = 1;
    return exit_code;
}
