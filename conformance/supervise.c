/* bp-conformance runner: children under a time limit (supervise.h). */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* While the parent waits for a child that has closed its pipe to exit. */
#define BP_CONF_REAP_POLL_MS 5

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child's side: never returns. */
static void run_child(int fd, pid_t parent, bp_conf_child_main child_main, void *arg) {
#ifdef __linux__
    /* A child must not outlive a runner killed by CI: it would hold the device. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(1);
    /* Line-buffered, so that what a test prints keeps its order with cmocka's stderr
     * in the captured output. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int status = child_main(fd, arg);
    fflush(NULL);
    /* exit, not _exit: the backend's atexit work and the sanitizers' leak check run
     * in the child as they would in an application. */
    exit(status);
}

/* Passes every complete message buffered so far to on_message. */
static void dispatch(bp_conf_reader *reader, bp_conf_on_message on_message, void *ctx) {
    bp_conf_msg msg;
    char *payload = NULL;
    while (bp_conf_reader_next(reader, &msg, &payload)) {
        on_message(ctx, &msg, payload ? payload : "");
        free(payload);
    }
}

/* Reads the child's messages until the pipe closes (or cannot be read); returns true
 * when the deadline passed first. What the child wrote before the deadline is read. */
static bool read_until_eof(int fd, long long deadline, bp_conf_on_message on_message, void *ctx) {
    bp_conf_reader reader = {0};
    bool timed_out = false;
    for (;;) {
        long n = bp_conf_reader_fill(&reader, fd);
        if (n > 0) {
            dispatch(&reader, on_message, ctx);
            continue;
        }
        if (n == 0 || n == -1)
            break;
        long long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left > 1000000 ? 1000000 : (int)left) < 0 && errno != EINTR)
            break;
    }
    bp_conf_reader_free(&reader);
    return timed_out;
}

static pid_t wait_retry(pid_t pid, int *status, int flags) {
    pid_t rc;
    while ((rc = waitpid(pid, status, flags)) < 0 && errno == EINTR) {
    }
    return rc;
}

/* Waits for the child to exit until the deadline, then kills it; always reaps it. */
static void reap(pid_t pid, long long deadline, bool timed_out, bp_conf_child_end *end) {
    int status = 0;
    while (!timed_out) {
        pid_t rc = wait_retry(pid, &status, WNOHANG);
        if (rc == pid || rc < 0)
            break;
        if (now_ms() >= deadline) {
            timed_out = true;
            break;
        }
        struct timespec pause = {0, BP_CONF_REAP_POLL_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (timed_out) {
        kill(pid, SIGKILL);
        wait_retry(pid, &status, 0);
        *end = (bp_conf_child_end){BP_CONF_CHILD_TIMED_OUT, SIGKILL};
    } else if (WIFSIGNALED(status)) {
        *end = (bp_conf_child_end){BP_CONF_CHILD_SIGNALED, WTERMSIG(status)};
    } else {
        *end = (bp_conf_child_end){BP_CONF_CHILD_EXITED, WEXITSTATUS(status)};
    }
}

bool bp_conf_supervise(bp_conf_child_main child_main, void *arg, int timeout_s,
                       bp_conf_on_message on_message, void *ctx, bp_conf_child_end *end) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return false;
    pid_t parent = getpid();
    /* Unwritten output would be written twice, once by each process. */
    fflush(NULL);
    long long deadline = now_ms() + (long long)timeout_s * 1000;
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(fds[0]);
        close(fds[1]);
        errno = saved;
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        run_child(fds[1], parent, child_main, arg);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    /* A child still running at the deadline is killed; one that has closed its pipe
     * gets the rest of its time to exit. */
    bool timed_out = read_until_eof(fds[0], deadline, on_message, ctx);
    reap(pid, deadline, timed_out, end);
    close(fds[0]);
    return true;
}

void bp_conf_child_end_describe(const bp_conf_child_end *end, int timeout_s, char *out,
                                size_t out_len) {
    switch (end->how) {
    case BP_CONF_CHILD_TIMED_OUT:
        snprintf(out, out_len, "timed out after %d s", timeout_s);
        break;
    case BP_CONF_CHILD_SIGNALED:
        snprintf(out, out_len, "crashed with signal %d (%s)", end->code, strsignal(end->code));
        break;
    case BP_CONF_CHILD_EXITED:
        snprintf(out, out_len, "exited with status %d", end->code);
        break;
    }
}
