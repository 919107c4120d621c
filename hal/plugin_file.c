/* Whether a plugin candidate may be opened: what kind of file it is, and whether it can
 * be trusted (loader_internal.h). Nothing here opens the candidate: a FIFO named like
 * a plugin would block the open, and an untrusted file must not run any code. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hal_internal.h"
#include "loader_internal.h"

#define LOG_SRC "loader"


static const char *kind_of(mode_t mode) {
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device file";
    return "not a regular file";
}

/* Appends "<what> is writable by its group", "... by others" and "... is owned by user
 * N" for each problem of `sb` to list (comma-separated). */
static void add_problems(char *list, size_t n, const char *what, const struct stat *sb) {
    uid_t me = geteuid();
    char item[PATH_MAX_REASON];
    const char *problems[3] = {NULL, NULL, NULL};
    char owner[96];
    if (sb->st_mode & S_IWGRP)
        problems[0] = "writable by its group";
    if (sb->st_mode & S_IWOTH)
        problems[1] = "writable by others";
    if (sb->st_uid != 0 && sb->st_uid != me) {
        snprintf(owner, sizeof owner, "owned by user %u (neither root nor %u, who runs this)",
                 (unsigned)sb->st_uid, (unsigned)me);
        problems[2] = owner;
    }
    for (int k = 0; k < 3; k++) {
        if (!problems[k])
            continue;
        size_t used = strlen(list);
        snprintf(item, sizeof item, "%s is %s", what, problems[k]);
        snprintf(list + used, n - used, "%s%s", used ? ", " : "", item);
    }
}

/* The directory part of `path` ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

static void add_dir_problems(char *list, size_t n, const char *path) {
    char dir[PATH_MAX_REASON], what[PATH_MAX_REASON + 32];
    dir_of(path, dir, sizeof dir);
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        size_t used = strlen(list);
        snprintf(list + used, n - used, "%sits directory %s cannot be checked: %s",
                 used ? ", " : "", dir, strerror(errno));
        return;
    }
    snprintf(what, sizeof what, "its directory %s", dir);
    add_problems(list, n, what, &sb);
}

bp_trust_policy bp_trust_policy_read(void) {
    const char *value = secure_getenv("BP_PLUGIN_ALLOW_INSECURE");
    if (!value || !*value || strcmp(value, "0") == 0)
        return BP_TRUST_ENFORCE;
    if (strcmp(value, "1") == 0) {
        bp_log(BP_LOG_WARN, LOG_SRC,
               "BP_PLUGIN_ALLOW_INSECURE=1: plugins that fail the trust checks are loaded "
               "anyway (for development only)");
        return BP_TRUST_ALLOW_INSECURE;
    }
    bp_log(BP_LOG_WARN, LOG_SRC,
           "BP_PLUGIN_ALLOW_INSECURE='%.40s' is neither 0 nor 1; the plugin trust checks stay on",
           value);
    return BP_TRUST_ENFORCE;
}

bp_status bp_plugin_file_check(const char *path, bp_trust_policy policy, char **out_real,
                               char *why, size_t n, char *note, size_t note_n) {
    *out_real = NULL;
    note[0] = '\0';
    struct stat link_sb, sb;
    if (lstat(path, &link_sb) != 0) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            return bp_loader_reason(why, n, BP_ERR_NOT_FOUND, "file does not exist");
        return bp_loader_reason(why, n, BP_ERR_NOT_FOUND, "cannot access the file: %s", strerror(err));
    }
    if (stat(path, &sb) != 0) {
        int err = errno;
        if (err == ELOOP)
            return bp_loader_reason(why, n, BP_ERR_NOT_FOUND, "symbolic link loop: it was not opened");
        if (S_ISLNK(link_sb.st_mode) && (err == ENOENT || err == ENOTDIR))
            return bp_loader_reason(why, n, BP_ERR_NOT_FOUND,
                       "dangling symbolic link: its target does not exist");
        return bp_loader_reason(why, n, BP_ERR_NOT_FOUND, "cannot access the file: %s", strerror(err));
    }
    if (!S_ISREG(sb.st_mode))
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                   "%s, not a plugin library: it was not opened", kind_of(sb.st_mode));
    char *real = realpath(path, NULL);
    if (!real)
        return bp_loader_reason(why, n, BP_ERR_NOT_FOUND, "cannot resolve the path: %s", strerror(errno));

    /* Whoever can write the file, or the directory it is found in (as named, and once
     * links are resolved), can choose the code this process runs. */
    char problems[REASON_LIMIT] = "";
    add_problems(problems, sizeof problems, "the file", &sb);
    add_dir_problems(problems, sizeof problems, path);
    char path_dir[PATH_MAX_REASON], real_dir[PATH_MAX_REASON];
    dir_of(path, path_dir, sizeof path_dir);
    dir_of(real, real_dir, sizeof real_dir);
    char *canonical_path_dir = realpath(path_dir, NULL);
    if (!canonical_path_dir || strcmp(canonical_path_dir, real_dir) != 0)
        add_dir_problems(problems, sizeof problems, real);
    free(canonical_path_dir);
    *out_real = real;
    if (!*problems)
        return BP_OK;
    if (policy == BP_TRUST_ENFORCE)
        return bp_loader_reason(why, n, BP_ERR_INVALID_ARGUMENT,
                   "refused: %s; only root or the user running this may be able to change a "
                   "plugin (BP_PLUGIN_ALLOW_INSECURE=1 loads it anyway, for development)",
                   problems);
    snprintf(note, note_n, "loaded although untrusted (BP_PLUGIN_ALLOW_INSECURE=1): %s",
             problems);
    bp_log(BP_LOG_WARN, LOG_SRC, "%s: %s", path, note);
    return BP_OK;
}
