/* Core groups from a sysfs-shaped tree (arm_topology.h). */
#include "arm_topology.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAPACITY_MAX 1024 /* the kernel's SCHED_CAPACITY_SCALE */
#define MIDR_ARM 0x41u
/* The MIDR fields that name a core type: implementer [31:24], part number [15:4]. */
#define MIDR_TYPE_MASK 0xff00fff0u

typedef struct core_type {
    uint32_t part;
    const char *name;
    int rank; /* class within a big.LITTLE system: 3 X, 2 big/server, 1 LITTLE */
} core_type;

/* Arm Ltd part numbers (the cores' Technical Reference Manuals, MIDR_EL1). */
static const core_type arm_cores[] = {
    {0xd03, "Cortex-A53", 1},  {0xd04, "Cortex-A35", 1},  {0xd05, "Cortex-A55", 1},
    {0xd07, "Cortex-A57", 2},  {0xd08, "Cortex-A72", 2},  {0xd09, "Cortex-A73", 2},
    {0xd0a, "Cortex-A75", 2},  {0xd0b, "Cortex-A76", 2},  {0xd0c, "Neoverse-N1", 2},
    {0xd0d, "Cortex-A77", 2},  {0xd40, "Neoverse-V1", 2}, {0xd41, "Cortex-A78", 2},
    {0xd44, "Cortex-X1", 3},   {0xd46, "Cortex-A510", 1}, {0xd47, "Cortex-A710", 2},
    {0xd48, "Cortex-X2", 3},   {0xd49, "Neoverse-N2", 2}, {0xd4d, "Cortex-A715", 2},
    {0xd4e, "Cortex-X3", 3},   {0xd4f, "Neoverse-V2", 2},
};

static const core_type *find_core(uint32_t midr) {
    if (midr >> 24 != MIDR_ARM)
        return NULL;
    uint32_t part = (midr >> 4) & 0xfffu;
    for (size_t i = 0; i < sizeof arm_cores / sizeof arm_cores[0]; i++)
        if (arm_cores[i].part == part)
            return &arm_cores[i];
    return NULL;
}

void arm_core_name(uint32_t midr, char *out, size_t out_size) {
    const core_type *core = find_core(midr);
    uint32_t part = (midr >> 4) & 0xfffu, implementer = midr >> 24;
    if (core)
        snprintf(out, out_size, "%s", core->name);
    else if (implementer == MIDR_ARM)
        snprintf(out, out_size, "unknown part 0x%03x", part);
    else
        snprintf(out, out_size, "unknown part 0x%03x (implementer 0x%02x)", part, implementer);
}

static bool bit_get(const uint64_t *cpus, int n) {
    return (cpus[n / 64] >> (n % 64)) & 1u;
}

static void bit_set(uint64_t *cpus, int n) {
    cpus[n / 64] |= (uint64_t)1 << (n % 64);
}

/* A decimal number of at most 9 digits at *p, advancing p; -1 when none. */
static long parse_index(const char **p) {
    const char *s = *p;
    long v = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9' && digits < 10) {
        v = v * 10 + (*s - '0');
        s++;
        digits++;
    }
    if (digits == 0 || digits > 9)
        return -1;
    *p = s;
    return v;
}

bool arm_cpulist_parse(const char *text, uint64_t *cpus) {
    memset(cpus, 0, ARM_TOPO_WORDS * sizeof *cpus);
    const char *p = text;
    for (;;) {
        long first = parse_index(&p), last = first;
        if (first < 0)
            return false;
        if (*p == '-') {
            p++;
            last = parse_index(&p);
            if (last < first)
                return false; /* also no number after '-' */
        }
        if (last >= ARM_TOPO_MAX_CPUS)
            return false;
        for (long n = first; n <= last; n++)
            bit_set(cpus, (int)n);
        if (*p != ',')
            break;
        p++;
    }
    return *p == '\0' || (p[0] == '\n' && p[1] == '\0');
}

/* ---- reading the tree ---- */

typedef enum file_state { FILE_ABSENT, FILE_READ } file_state;

/* Reads <root>/<rel> (at most size - 1 bytes) into buf; the full path goes to `path`. */
static file_state read_text(const char *root, const char *rel, char *path, size_t path_size,
                            char *buf, size_t size) {
    snprintf(path, path_size, "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    if (!f)
        return FILE_ABSENT;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return FILE_READ;
}

/* Shown in a message: the text up to its first newline, at most 24 characters. */
static const char *shown(char *text) {
    text[strcspn(text, "\n")] = '\0';
    if (strlen(text) > 24)
        strcpy(text + 21, "...");
    return text;
}

/* A whole number in `base` (10 or 16) from 1 to max with an optional newline. */
static bool parse_uint(const char *text, unsigned long long max, int base,
                       unsigned long long *out) {
    if (!(base == 16 ? isxdigit((unsigned char)text[0]) : isdigit((unsigned char)text[0])))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, base);
    if (errno != 0 || end == text || v == 0 || v > max)
        return false;
    if (!(*end == '\0' || (end[0] == '\n' && end[1] == '\0')))
        return false;
    *out = v;
    return true;
}

typedef struct core_info {
    int cpu;
    uint32_t capacity;
    uint32_t midr;
    int cluster_first; /* first core of its cluster list, -1 without one */
} core_info;

typedef struct reader {
    const char *root;
    arm_topology *out;
    uint64_t online[ARM_TOPO_WORDS];
    core_info cores[ARM_TOPO_MAX_CPUS];
    int ncores;
    char path[512];
    char text[128];
} reader;

static void fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->out->fallback_reason, sizeof r->out->fallback_reason, fmt, ap);
    va_end(ap);
}

static int first_bit(const uint64_t *cpus) {
    for (int n = 0; n < ARM_TOPO_MAX_CPUS; n++)
        if (bit_get(cpus, n))
            return n;
    return -1;
}

typedef bool (*value_parser)(const char *text, uint32_t *out);

static bool parse_capacity(const char *text, uint32_t *out) {
    unsigned long long v;
    if (!parse_uint(text, CAPACITY_MAX, 10, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_midr(const char *text, uint32_t *out) {
    unsigned long long v;
    if (strncmp(text, "0x", 2) != 0 || !parse_uint(text + 2, 0xffffffffull, 16, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Reads `file` of every online core into the uint32_t at field_offset of its core_info.
 * Returns the number of cores that have it; on a malformed file, or one present on some
 * cores only, sets the fallback reason and returns -1. */
static int read_per_core(reader *r, const char *file, const char *expected,
                         value_parser parse, size_t field_offset) {
    int have = 0, first_missing = -1, first_present = -1;
    for (int i = 0; i < r->ncores; i++) {
        core_info *c = &r->cores[i];
        char rel[96];
        snprintf(rel, sizeof rel, "cpu%d/%s", c->cpu, file);
        if (read_text(r->root, rel, r->path, sizeof r->path, r->text, sizeof r->text) ==
            FILE_ABSENT) {
            if (first_missing < 0)
                first_missing = c->cpu;
            continue;
        }
        uint32_t *field = (uint32_t *)((char *)c + field_offset);
        if (!parse(r->text, field)) {
            fail(r, "%s: '%s' is not %s", r->path, shown(r->text), expected);
            return -1;
        }
        if (first_present < 0)
            first_present = c->cpu;
        have++;
    }
    if (have > 0 && first_missing >= 0) {
        fail(r, "%s/cpu%d/%s: missing, while cpu%d has one", r->root, first_missing, file,
             first_present);
        return -1;
    }
    return have;
}

/* The first core of each core's cluster list (cluster_cpus_list, else
 * package_cpus_list, else core_siblings_list); -1 where a core has none. */
static bool read_clusters(reader *r) {
    static const char *const files[] = {"topology/cluster_cpus_list",
                                        "topology/package_cpus_list",
                                        "topology/core_siblings_list"};
    for (int i = 0; i < r->ncores; i++) {
        core_info *c = &r->cores[i];
        c->cluster_first = -1;
        for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
            char rel[96];
            snprintf(rel, sizeof rel, "cpu%d/%s", c->cpu, files[k]);
            if (read_text(r->root, rel, r->path, sizeof r->path, r->text, sizeof r->text) ==
                FILE_ABSENT)
                continue;
            uint64_t cluster[ARM_TOPO_WORDS];
            if (!arm_cpulist_parse(r->text, cluster)) {
                fail(r, "%s: '%s' is not a cpu list", r->path, shown(r->text));
                return false;
            }
            if (!bit_get(cluster, c->cpu)) {
                fail(r, "%s: '%s' does not hold cpu%d itself", r->path, shown(r->text), c->cpu);
                return false;
            }
            c->cluster_first = first_bit(cluster);
            break;
        }
    }
    return true;
}

/* ---- grouping ---- */

static int rank_of(uint32_t midr) {
    const core_type *core = find_core(midr);
    return core ? core->rank : 0;
}

static void describe(arm_core_group *g) {
    char capacity[32] = "";
    if (g->capacity)
        snprintf(capacity, sizeof capacity, " @ capacity %u", g->capacity);
    if (g->midr) {
        arm_core_name(g->midr, g->core_name, sizeof g->core_name);
        snprintf(g->description, sizeof g->description, "%dx %s%s", g->ncpus, g->core_name,
                 capacity);
    } else {
        g->core_name[0] = '\0';
        snprintf(g->description, sizeof g->description, "%d cores%s", g->ncpus, capacity);
    }
}

static int group_cmp(const void *pa, const void *pb) {
    const arm_core_group *a = pa, *b = pb;
    if (a->capacity != b->capacity)
        return a->capacity > b->capacity ? -1 : 1;
    int ra = rank_of(a->midr), rb = rank_of(b->midr);
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return a->first_cpu - b->first_cpu;
}

/* Groups by (capacity, core type), or by cluster when the tree has neither. */
static bool group_cores(reader *r, bool by_cluster) {
    arm_topology *t = r->out;
    int cluster_of[ARM_TOPO_MAX_DEVICES]; /* each group's cluster (by_cluster) */
    t->ngroups = 0;
    for (int i = 0; i < r->ncores; i++) {
        const core_info *c = &r->cores[i];
        int g = 0;
        while (g < t->ngroups &&
               !(by_cluster ? cluster_of[g] == c->cluster_first
                            : t->groups[g].capacity == c->capacity &&
                                  (t->groups[g].midr & MIDR_TYPE_MASK) ==
                                      (c->midr & MIDR_TYPE_MASK)))
            g++;
        if (g == t->ngroups) {
            if (t->ngroups == ARM_TOPO_MAX_DEVICES) {
                fail(r, "%s: more than %d groups of cores", r->root, ARM_TOPO_MAX_DEVICES);
                return false;
            }
            arm_core_group *grp = &t->groups[t->ngroups++];
            memset(grp, 0, sizeof *grp);
            grp->first_cpu = c->cpu;
            grp->capacity = c->capacity;
            grp->midr = c->midr;
            cluster_of[g] = c->cluster_first;
        }
        bit_set(t->groups[g].cpus, c->cpu);
        t->groups[g].ncpus++;
    }
    qsort(t->groups, (size_t)t->ngroups, sizeof t->groups[0], group_cmp);
    for (int g = 0; g < t->ngroups; g++)
        describe(&t->groups[g]);
    return true;
}

/* One group of every core in `cpus`, keeping the fallback reason already set. */
static void fall_back(arm_topology *t, const uint64_t *cpus) {
    t->ngroups = 1;
    arm_core_group *g = &t->groups[0];
    memset(g, 0, sizeof *g);
    memcpy(g->cpus, cpus, sizeof g->cpus);
    g->first_cpu = first_bit(cpus);
    for (int n = 0; n < ARM_TOPO_MAX_CPUS; n++)
        g->ncpus += bit_get(cpus, n);
    describe(g);
}

static bool read_tree(reader *r) {
    if (read_text(r->root, "online", r->path, sizeof r->path, r->text, sizeof r->text) ==
        FILE_ABSENT) {
        fail(r, "%s: missing", r->path);
        return false;
    }
    if (!arm_cpulist_parse(r->text, r->online)) {
        fail(r, "%s: '%s' is not a cpu list", r->path, shown(r->text));
        return false;
    }
    for (int n = 0; n < ARM_TOPO_MAX_CPUS; n++)
        if (bit_get(r->online, n))
            r->cores[r->ncores++] = (core_info){.cpu = n};
    int capacities = read_per_core(r, "cpu_capacity", "a whole number from 1 to 1024",
                                   parse_capacity, offsetof(core_info, capacity));
    if (capacities < 0)
        return false;
    int midrs = read_per_core(r, "regs/identification/midr_el1", "a MIDR value (0x...)",
                              parse_midr, offsetof(core_info, midr));
    if (midrs < 0 || !read_clusters(r))
        return false;
    return group_cores(r, capacities == 0 && midrs == 0);
}

void arm_topology_read(const char *root, int fallback_cpus, arm_topology *out) {
    memset(out, 0, sizeof *out);
    reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(out->fallback_reason, sizeof out->fallback_reason,
                 "out of memory reading %s", root);
    } else {
        r->root = root;
        r->out = out;
        if (read_tree(r)) {
            free(r);
            return;
        }
    }
    /* `online` when it was read, else cores 0..fallback_cpus-1. */
    uint64_t cpus[ARM_TOPO_WORDS] = {0};
    if (r && r->ncores > 0)
        memcpy(cpus, r->online, sizeof cpus);
    else
        for (int n = 0; n < fallback_cpus && n < ARM_TOPO_MAX_CPUS; n++)
            bit_set(cpus, n);
    if (first_bit(cpus) < 0)
        bit_set(cpus, 0);
    free(r);
    fall_back(out, cpus);
}
