/* Whether the bench runs under an emulator (bench.h): a program of one architecture whose
 * kernel describes a CPU of another. qemu-user (7.2, as CI uses) passes the host's
 * /proc/cpuinfo through unchanged, so an aarch64 program under qemu on an x86-64 host reads
 * x86 lines ("vendor_id", "flags"); on an arm64 kernel the lines are "CPU implementer",
 * "Features". The check needs nothing of libbackplane. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#if defined(__aarch64__)
#define BUILD_ARCH "aarch64"
#define FOREIGN_MARKER "vendor_id" /* an x86 kernel's cpuinfo line */
#define FOREIGN_ARCH "an x86 host"
#elif defined(__x86_64__) || defined(__i386__)
#define BUILD_ARCH "x86"
#define FOREIGN_MARKER "CPU implementer" /* an arm64 kernel's cpuinfo line */
#define FOREIGN_ARCH "an Arm host"
#endif

const char *bp_bench_emulation(void) {
#ifdef FOREIGN_MARKER
    static char why[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return NULL;
    char line[256];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strncmp(line, FOREIGN_MARKER, strlen(FOREIGN_MARKER)) == 0;
    fclose(f);
    if (!found)
        return NULL;
    /* "vendor_id\t: AuthenticAMD\n" is shown as "vendor_id: AuthenticAMD". */
    char shown[128];
    size_t n = 0;
    for (const char *p = line; *p && *p != '\n' && n + 1 < sizeof shown; p++)
        if (*p != '\t')
            shown[n++] = *p;
    shown[n] = '\0';
    snprintf(why, sizeof why,
             "this " BUILD_ARCH " program runs on " FOREIGN_ARCH " (/proc/cpuinfo: '%s'), "
             "under an emulator such as qemu-user",
             shown);
    return why;
#else
    return NULL;
#endif
}
