/* opencl: the disk cache of program binaries (see ocl_cache.h). */
#include "ocl_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "BPOCLBIN1\n"
#define CACHE_MAGIC_LEN 10
#define CACHE_DIR_MAX 1024

/* The directory, resolved once per process: the variables do not change meanwhile,
 * and a refused directory is then logged once, not at every build. */
static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static bool dir_resolved;
static char dir_path[CACHE_DIR_MAX]; /* "" when there is no disk cache */

__attribute__((format(printf, 3, 4))) static void say(ocl_device *dev, bp_log_level level,
                                                      const char *fmt, ...) {
    char msg[2 * CACHE_DIR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dev->backend->host->log(level, OCL_NAME, "%s", msg);
}

/* Whether a directory or file with status `st` can have been written only by the
 * effective user or root; else why not, in `why`. */
static bool trusted(const struct stat *st, char *why, size_t n) {
    uid_t me = geteuid();
    if (st->st_uid != me && st->st_uid != 0)
        snprintf(why, n, "it is owned by uid %u, not by this user (uid %u) or root",
                 (unsigned)st->st_uid, (unsigned)me);
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, n, "it is writable by %s (mode %04o)",
                 st->st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st->st_mode & 07777));
    else
        return true;
    return false;
}

/* Creates the missing directories of absolute `path`, each 0700 (the XDG base
 * directory rule); existing ones are left as they are. */
static bool make_dirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST)
            return false;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST;
}

static void resolve_dir(ocl_device *dev) {
    const char *off = secure_getenv("BP_OPENCL_CACHE");
    if (off && strcmp(off, "0") == 0)
        return;
    const char *dir = secure_getenv("BP_OPENCL_CACHE_DIR");
    const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");
    char path[CACHE_DIR_MAX];
    const char *from;
    int n;
    if (dir && dir[0]) {
        from = "BP_OPENCL_CACHE_DIR";
        n = snprintf(path, sizeof path, "%s", dir);
    } else if (xdg && xdg[0] == '/') {
        from = "XDG_CACHE_HOME";
        n = snprintf(path, sizeof path, "%s/backplane/opencl", xdg);
    } else if (home && home[0] == '/') {
        from = "HOME";
        n = snprintf(path, sizeof path, "%s/.cache/backplane/opencl", home);
    } else {
        say(dev, BP_LOG_DEBUG, "opencl: no kernel cache on disk: none of BP_OPENCL_CACHE_DIR, "
                               "XDG_CACHE_HOME or HOME names a directory");
        return;
    }
    const char *refused = NULL;
    char why[160];
    struct stat st;
    if (n <= 0 || (size_t)n >= sizeof path)
        refused = "the path is too long";
    else if (path[0] != '/')
        refused = "it is not an absolute path";
    else if (!make_dirs(path))
        snprintf(why, sizeof why, "it cannot be created (%s)", strerror(errno)), refused = why;
    else if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        refused = "it is not a directory";
    else if (!trusted(&st, why, sizeof why))
        refused = why;
    if (refused) {
        say(dev, BP_LOG_WARN,
            "opencl: not using %.*s (from %s) as the kernel cache: %s; kernels are built "
            "without the disk cache", CACHE_DIR_MAX, n > 0 ? path : "", from, refused);
        return;
    }
    memcpy(dir_path, path, (size_t)n + 1);
}

const char *ocl_cache_dir(ocl_device *dev) {
    pthread_mutex_lock(&dir_lock);
    if (!dir_resolved) {
        resolve_dir(dev);
        dir_resolved = true;
    }
    pthread_mutex_unlock(&dir_lock);
    return dir_path[0] ? dir_path : NULL;
}

/* The binary after the magic and the size, or NULL when the file is not a valid
 * cache file (junk, cut short). */
static unsigned char *read_binary(FILE *f, size_t *out_size) {
    char magic[CACHE_MAGIC_LEN];
    uint64_t size = 0;
    if (fread(magic, 1, sizeof magic, f) != sizeof magic ||
        memcmp(magic, CACHE_MAGIC, CACHE_MAGIC_LEN) != 0 || fread(&size, sizeof size, 1, f) != 1 ||
        size == 0 || size >= (UINT64_C(1) << 31))
        return NULL;
    unsigned char *bin = malloc((size_t)size);
    if (bin && fread(bin, 1, (size_t)size, f) != (size_t)size) {
        free(bin);
        return NULL;
    }
    *out_size = (size_t)size;
    return bin;
}

unsigned char *ocl_cache_read(ocl_device *dev, const char *path, size_t *out_size) {
    /* No symbolic link, and no wait on a FIFO: only a plain file of ours is read. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            say(dev, BP_LOG_WARN, "opencl:%d: ignoring the cached binary %s: %s; rebuilding it",
                dev->index, path,
                errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        return NULL;
    }
    struct stat st;
    char why[160];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !trusted(&st, why, sizeof why)) {
        say(dev, BP_LOG_WARN, "opencl:%d: ignoring the cached binary %s: %s; rebuilding it",
            dev->index, path, S_ISREG(st.st_mode) ? why : "it is not a regular file");
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return NULL;
    }
    unsigned char *bin = read_binary(f, out_size);
    fclose(f);
    if (!bin)
        say(dev, BP_LOG_DEBUG,
            "opencl:%d: the cached binary %s is not a valid cache file: rebuilding", dev->index,
            path);
    return bin;
}

void ocl_cache_write(ocl_device *dev, const char *path, const unsigned char *bin, size_t size) {
    char tmp[CACHE_DIR_MAX + 256];
    int n = snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    /* mkostemp: a new file (O_EXCL) of mode 0600, under a name no one else uses. */
    int fd = n > 0 && (size_t)n < sizeof tmp ? mkostemp(tmp, O_CLOEXEC) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    bool ok = f != NULL;
    if (f) {
        uint64_t n64 = size;
        ok = fwrite(CACHE_MAGIC, 1, CACHE_MAGIC_LEN, f) == CACHE_MAGIC_LEN &&
             fwrite(&n64, sizeof n64, 1, f) == 1 && fwrite(bin, 1, size, f) == size;
        ok = fclose(f) == 0 && ok;
    }
    if (ok && rename(tmp, path) == 0)
        return;
    if (fd >= 0)
        unlink(tmp);
    say(dev, BP_LOG_DEBUG, "opencl:%d: cannot write the kernel cache file %s", dev->index, path);
}
