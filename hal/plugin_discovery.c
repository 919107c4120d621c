/* Where plugin candidates are found (loader_internal.h): BP_PLUGIN_PATH, the directory
 * beside the running libbackplane, and the install directory, each searched once. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader_internal.h"

#ifndef BP_PLUGIN_INSTALL_DIR
#error "BP_PLUGIN_INSTALL_DIR must be defined by the build"
#endif
#ifndef BP_PLUGIN_DIR_BESIDE_LIBRARY
#error "BP_PLUGIN_DIR_BESIDE_LIBRARY must be defined by the build"
#endif

#define LOG_SRC "loader"


typedef struct dir_set {
    char **dirs; /* real paths of directories already searched */
    int count;
} dir_set;

static bool dir_set_add(dir_set *set, const char *real) {
    for (int k = 0; k < set->count; k++)
        if (strcmp(set->dirs[k], real) == 0)
            return false;
    char **grown = realloc(set->dirs, (size_t)(set->count + 1) * sizeof *grown);
    char *copy = strdup(real);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            set->dirs = grown;
        return true; /* searching twice is harmless: files are de-duplicated */
    }
    set->dirs = grown;
    set->dirs[set->count++] = copy;
    return true;
}

static void dir_set_free(dir_set *set) {
    for (int k = 0; k < set->count; k++)
        free(set->dirs[k]);
    free(set->dirs);
}

static bool is_candidate_name(const char *name) {
    size_t len = strlen(name);
    return len > strlen("libbp_.so") && strncmp(name, "libbp_", 6) == 0 &&
           strcmp(name + len - 3, ".so") == 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Considers every libbp_*.so in `dir`, in name (byte) order. A missing default
 * directory is normal; one the user named is listed. */
static void scan_dir(const char *dir, bool user_named, dir_set *searched, int first) {
    char *real = realpath(dir, NULL);
    if (!real) {
        int err = errno;
        if (!user_named) {
            bp_log(BP_LOG_DEBUG, LOG_SRC, "plugin directory %s does not exist", dir);
            return;
        }
        int i = bp_loader_record_add(dir);
        if (i >= 0) {
            if (err == ENOENT || err == ENOTDIR)
                bp_loader_reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND, "directory does not exist");
            else
                bp_loader_reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND, "cannot access the directory: %s",
                       strerror(err));
        }
        return;
    }
    if (!dir_set_add(searched, real)) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "plugin directory %s already searched", dir);
        free(real);
        return;
    }
    free(real);

    DIR *dp = opendir(dir);
    if (!dp) {
        int err = errno;
        if (user_named) {
            int i = bp_loader_record_add(dir);
            if (i >= 0)
                bp_loader_reject(i, BP_LOG_WARN, BP_ERR_NOT_FOUND, "cannot read the directory: %s",
                       strerror(err));
        } else {
            bp_log(BP_LOG_WARN, LOG_SRC, "cannot read plugin directory %s: %s", dir, strerror(err));
        }
        return;
    }
    bp_log(BP_LOG_DEBUG, LOG_SRC, "searching %s", dir);
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(dp)) != NULL) {
        if (!is_candidate_name(ent->d_name))
            continue;
        if (count == cap) {
            size_t new_cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, new_cap * sizeof *grown);
            if (!grown)
                break;
            names = grown;
            cap = new_cap;
        }
        names[count] = strdup(ent->d_name);
        if (names[count])
            count++;
    }
    closedir(dp);
    if (count)
        qsort(names, count, sizeof *names, compare_names);

    /* Every name is listed, whatever it is: links, directories and FIFOs are skipped
     * with their reason by bp_loader_consider_file, which never opens them. */
    for (size_t k = 0; k < count; k++) {
        size_t len = strlen(dir) + 1 + strlen(names[k]) + 1;
        char *path = malloc(len);
        if (path) {
            snprintf(path, len, "%s/%s", dir, names[k]);
            bp_loader_consider_file(path, first, false);
            free(path);
        }
        free(names[k]);
    }
    free(names);
}

/* One BP_PLUGIN_PATH entry: a directory to search or a plugin file. */
static void consider_path_entry(const char *entry, dir_set *searched, int first) {
    struct stat sb;
    if (stat(entry, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        bp_loader_consider_file(entry, first, false);
        return;
    }
    size_t len = strlen(entry);
    if (len > 3 && strcmp(entry + len - 3, ".so") == 0 && stat(entry, &sb) != 0) {
        bp_loader_consider_file(entry, first, false); /* lists it as "file does not exist" */
        return;
    }
    scan_dir(entry, true, searched, first);
}

/* <directory of the running libbackplane>/BP_PLUGIN_DIR_BESIDE_LIBRARY, or NULL. */
static char *dir_beside_library(void) {
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)&bp_plugin_count, &info) || !info.dli_fname)
        return NULL;
    char *lib = realpath(info.dli_fname, NULL);
    if (!lib)
        return NULL;
    char *slash = strrchr(lib, '/');
    char *dir = NULL;
    if (slash) {
        *slash = '\0';
        size_t len = strlen(lib) + 1 + strlen(BP_PLUGIN_DIR_BESIDE_LIBRARY) + 1;
        dir = malloc(len);
        if (dir)
            snprintf(dir, len, "%s/%s", lib, BP_PLUGIN_DIR_BESIDE_LIBRARY);
    }
    free(lib);
    return dir;
}

void bp_loader_discover(int first) {
    dir_set searched = {NULL, 0};
    const char *env_path = secure_getenv("BP_PLUGIN_PATH");
    if (env_path && *env_path) {
        bp_log(BP_LOG_DEBUG, LOG_SRC, "BP_PLUGIN_PATH=%s", env_path);
        char *copy = strdup(env_path);
        char *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok;
             tok = strtok_r(NULL, ":", &save))
            consider_path_entry(tok, &searched, first);
        free(copy);
    }
    char *beside = dir_beside_library();
    if (beside)
        scan_dir(beside, false, &searched, first);
    else
        bp_log(BP_LOG_DEBUG, LOG_SRC,
               "cannot tell where libbackplane is; skipping the "
               "plugin directory beside it");
    free(beside);
    scan_dir(BP_PLUGIN_INSTALL_DIR, false, &searched, first);
    dir_set_free(&searched);
}
