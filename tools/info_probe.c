/* bp-info's probe (info_probe.h). The child tells the parent through a plugin observer
 * (bp_plugin_set_observer) which plugin step it enters and leaves, writing each event to
 * a file with write(2), so that what it wrote survives its death; a step entered and
 * never left names the plugin that killed it. */
#define _GNU_SOURCE /* strsignal */

#include "info_probe.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <backplane/backplane.h>

typedef struct death {
    char *path;
    bp_plugin_step step; /* the step it died in: declined at that step next time */
    char how[160];
} death;

/* Filled by the parent between runs; each child inherits it. */
static death *deaths;
static int death_count;
static int events_fd = -1;

const char *info_probe_death(const char *path) {
    for (int k = 0; k < death_count; k++)
        if (strcmp(deaths[k].path, path) == 0)
            return deaths[k].how;
    return NULL;
}

/* Event record: one step byte, then the path and a NUL. */
static int observer(bp_plugin_step step, const char *name, const char *path, void *ctx) {
    for (int k = 0; k < death_count; k++)
        if (deaths[k].step == step && strcmp(deaths[k].path, path) == 0)
            return 0;
    size_t len = strlen(path) + 1;
    char *record = malloc(1 + len);
    if (record) {
        record[0] = (char)step;
        memcpy(record + 1, path, len);
        if (write(events_fd, record, 1 + len) != (ssize_t)(1 + len))
            perror("bp-info: cannot record the probe's progress");
        free(record);
    }
    return 1;
}

/* The path of a step entered and not left in the events file, and that step; NULL
 * when every step was left. */
static char *open_step(FILE *events, bp_plugin_step *out_step) {
    char *open_path = NULL;
    int c;
    rewind(events);
    while ((c = fgetc(events)) != EOF) {
        char *path = NULL;
        size_t cap = 0;
        if (getdelim(&path, &cap, '\0', events) < 0) {
            free(path);
            break;
        }
        free(open_path);
        open_path = NULL;
        if ((bp_plugin_step)c != BP_PLUGIN_STEP_DONE) {
            open_path = path;
            *out_step = (bp_plugin_step)c;
        } else {
            free(path);
        }
    }
    return open_path;
}

static void describe(int status, bp_plugin_step step, char *how, size_t n) {
    const char *what = step == BP_PLUGIN_STEP_OPEN ? "loading the library" : "init";
    if (WIFSIGNALED(status))
        snprintf(how, n, "%s killed the process: killed by signal %d (%s)", what,
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(how, n, "%s ended the process: it exited with status %d", what,
                 WEXITSTATUS(status));
}

static void copy_out(FILE *from) {
    char buf[8192];
    size_t n;
    rewind(from);
    while ((n = fread(buf, 1, sizeof buf, from)) > 0)
        fwrite(buf, 1, n, stdout);
    fflush(stdout);
}

/* One run; returns its wait status in *status, or -1 when it could not run. */
static int run_once(int (*body)(void *), void *ctx, FILE *out, FILE *events, int *status) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        events_fd = fileno(events);
        if (dup2(fileno(out), STDOUT_FILENO) < 0 || bp_plugin_set_observer(observer, NULL) != BP_OK)
            _exit(1);
        int rc = body(ctx);
        fflush(stdout);
        exit(rc);
    }
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

int info_probe_run(int (*body)(void *), void *ctx) {
    for (;;) {
        FILE *out = tmpfile(), *events = tmpfile();
        int status = 0;
        if (!out || !events || run_once(body, ctx, out, events, &status) != 0) {
            fprintf(stderr, "bp-info: cannot run the probe process: %s\n", strerror(errno));
            return 1;
        }
        bp_plugin_step step = BP_PLUGIN_STEP_OPEN;
        char *culprit = open_step(events, &step);
        fclose(events);
        if (!culprit) {
            copy_out(out);
            fclose(out);
            if (WIFEXITED(status))
                return WEXITSTATUS(status);
            fprintf(stderr, "bp-info: the probe process was killed by signal %d (%s) outside "
                            "any plugin's loading\n",
                    WTERMSIG(status), strsignal(WTERMSIG(status)));
            return 1;
        }
        fclose(out);
        death *grown = info_probe_death(culprit)
                           ? NULL
                           : realloc(deaths, (size_t)(death_count + 1) * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "bp-info: plugin %s keeps ending the probe process\n", culprit);
            free(culprit);
            return 1;
        }
        deaths = grown;
        deaths[death_count].path = culprit;
        deaths[death_count].step = step;
        describe(status, step, deaths[death_count].how, sizeof deaths[death_count].how);
        fprintf(stderr, "bp-info: plugin %s: %s; probing again without it\n", culprit,
                deaths[death_count].how);
        death_count++;
    }
}
