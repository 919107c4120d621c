/* bp-info: what backplane sees on this machine: every plugin candidate (loaded,
 * built-in or skipped, with the reason) and every device with its properties.
 *
 *   bp-info [--json] [--help]
 *
 * Plugins are probed in a child process (info_probe.h): one that crashes or exits while
 * it loads is listed as skipped with how it ended the process, and the others are
 * still listed.
 *
 * Exit status: 0 when the registry came up, even if some plugins were skipped (that is
 * what this tool reports); 1 when the registry itself failed (no built-in cpu backend,
 * or its device list cannot be read) or the probe died outside any plugin; 2 for a bad
 * command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/backplane.h>
#include <cJSON.h>

#include "info_probe.h"

#define MIB (1024.0 * 1024.0)

static void usage(FILE *out) {
    fprintf(out, "Usage: bp-info [--json] [--help]\n"
                 "Lists the backplane plugins (loaded, built-in and skipped, with the reason)\n"
                 "and the devices they provide.\n"
                 "  --json   print one JSON object instead of tables\n"
                 "  --help   print this help\n"
                 "Environment: BP_PLUGIN_PATH, BP_PLUGINS, BP_AUTOLOAD=0, BP_LOG=debug.\n");
}

static const char *state_word(bp_plugin_state state) {
    switch (state) {
    case BP_PLUGIN_LOADED:
        return "loaded";
    case BP_PLUGIN_BUILTIN:
        return "built-in";
    case BP_PLUGIN_SKIPPED:
        return "skipped";
    }
    return "unknown";
}

/* The loader's reason, or how the plugin ended an earlier probe process. */
static const char *reason_of(const bp_plugin_info *p) {
    const char *death = p->state == BP_PLUGIN_SKIPPED ? info_probe_death(p->path) : NULL;
    return death ? death : p->reason;
}

/* Calls word(name, ctx) for each capability, then for unknown bits as hex. */
static void each_capability(uint32_t caps, void (*word)(const char *, void *), void *ctx) {
    uint32_t unknown = 0;
    for (uint32_t bit = 1; bit; bit <<= 1) {
        const char *name = caps & bit ? bp_capability_name(bit) : NULL;
        if (name)
            word(name, ctx);
        else
            unknown |= caps & bit;
    }
    if (unknown) {
        char hex[16];
        snprintf(hex, sizeof hex, "0x%x", unknown);
        word(hex, ctx);
    }
}

static void each_dtype(uint32_t dtypes, void (*word)(const char *, void *), void *ctx) {
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++)
        if (dtypes & BP_DTYPE_BIT(dt))
            word(bp_dtype_name((bp_dtype)dt), ctx);
}

static void print_word(const char *word, void *ctx) { printf(" %s", word); }

static void add_word(const char *word, void *ctx) {
    cJSON_AddItemToArray((cJSON *)ctx, cJSON_CreateString(word));
}

typedef struct device_entry {
    bp_status status; /* of reading the properties */
    char error[256];
    bp_device_props props;
} device_entry;

/* Reads every plugin and device. Returns 0, or 1 when the registry failed. */
static int collect(bp_plugin_info **out_plugins, int *out_plugin_count, device_entry **out_devices,
                   int *out_device_count) {
    int np = bp_plugin_count();
    int nd = bp_device_count();
    bp_plugin_info *plugins = calloc(np > 0 ? (size_t)np : 1, sizeof *plugins);
    device_entry *devices = calloc(nd > 0 ? (size_t)nd : 1, sizeof *devices);
    if (!plugins || !devices) {
        fprintf(stderr, "bp-info: out of memory\n");
        free(plugins);
        free(devices);
        return 1;
    }
    int failed = 0, have_cpu = 0;
    for (int i = 0; i < np; i++) {
        plugins[i].struct_size = sizeof plugins[i];
        if (bp_plugin_get_info(i, &plugins[i]) != BP_OK) {
            fprintf(stderr, "bp-info: cannot read plugin %d: %s\n", i, bp_last_error());
            failed = 1;
            continue;
        }
        have_cpu |= plugins[i].state == BP_PLUGIN_BUILTIN;
    }
    if (!have_cpu) {
        fprintf(stderr, "bp-info: the built-in cpu backend is missing: the registry failed\n");
        failed = 1;
    }
    for (int d = 0; d < nd; d++) {
        device_entry *e = &devices[d];
        bp_device *dev = NULL;
        e->status = bp_device_get(d, &dev);
        if (e->status != BP_OK) {
            snprintf(e->error, sizeof e->error, "%s", bp_last_error());
            fprintf(stderr, "bp-info: cannot get device %d: %s\n", d, e->error);
            failed = 1;
            continue;
        }
        e->props.struct_size = sizeof e->props;
        e->status = bp_device_get_props(dev, &e->props);
        if (e->status != BP_OK) {
            snprintf(e->error, sizeof e->error, "%s", bp_last_error());
            snprintf(e->props.name, sizeof e->props.name, "%s", bp_device_name(dev));
        }
    }
    *out_plugins = plugins;
    *out_plugin_count = np;
    *out_devices = devices;
    *out_device_count = nd;
    return failed;
}

static void print_text(const bp_plugin_info *plugins, int np, const device_entry *devices, int nd) {
    printf("backplane %s\n\nPlugins (%d):\n", bp_version(), np);
    printf("  %-12s %-10s %-5s %-9s %-7s %s\n", "NAME", "VERSION", "ABI", "STATE", "DEVICES",
           "PATH");
    for (int i = 0; i < np; i++) {
        const bp_plugin_info *p = &plugins[i];
        char abi[24] = "-", devs[16] = "-";
        if (p->abi_major)
            snprintf(abi, sizeof abi, "%u.%u", p->abi_major, p->abi_minor);
        if (p->state != BP_PLUGIN_SKIPPED)
            snprintf(devs, sizeof devs, "%d", p->device_count);
        printf("  %-12s %-10s %-5s %-9s %-7s %s\n", *p->name ? p->name : "-",
               *p->version ? p->version : "-", abi, state_word(p->state), devs,
               *p->path ? p->path : "-");
        if (p->state == BP_PLUGIN_SKIPPED)
            printf("      reason: %s: %s\n", bp_status_str(p->status), reason_of(p));
        else if (p->device_count == 0)
            printf("      no devices: %s\n",
                   *p->unavailable_reason ? p->unavailable_reason : "(no reason given)");
        if (*p->aliases)
            printf("      aliases: %s\n", p->aliases);
        if (*p->notes)
            printf("      notes: %s\n", p->notes);
    }

    printf("\nDevices (%d):\n", nd);
    printf("  %-12s %-20s %-22s %-9s %s\n", "NAME", "BACKEND", "MEMORY MiB free/total", "PRIORITY",
           "DESCRIPTION");
    for (int d = 0; d < nd; d++) {
        const device_entry *e = &devices[d];
        if (e->status != BP_OK) {
            printf("  %-12s error: %s: %s\n", *e->props.name ? e->props.name : "?",
                   bp_status_str(e->status), e->error);
            continue;
        }
        const bp_device_props *p = &e->props;
        char backend[2 * BP_NAME_MAX + 2], memory[48], priority[32];
        snprintf(backend, sizeof backend, "%s %s", p->backend_name, p->backend_version);
        snprintf(memory, sizeof memory, "%.0f/%.0f", (double)p->free_memory / MIB,
                 (double)p->total_memory / MIB);
        snprintf(priority, sizeof priority, "%d..%d", p->stream_priority_greatest,
                 p->stream_priority_least);
        printf("  %-12s %-20s %-22s %-9s %s\n", p->name, backend, memory, priority, p->description);
        printf("      capabilities:");
        each_capability(p->capabilities, print_word, NULL);
        puts(p->capabilities ? "" : " none");
        printf("      dtypes:");
        each_dtype(p->dtypes, print_word, NULL);
        puts(p->dtypes ? "" : " none");
        if (*p->features)
            printf("      features: %s\n", p->features);
    }
}

static cJSON *plugin_json(const bp_plugin_info *p) {
    cJSON *o = cJSON_CreateObject();
    char abi[24] = "";
    if (p->abi_major)
        snprintf(abi, sizeof abi, "%u.%u", p->abi_major, p->abi_minor);
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "version", p->version);
    cJSON_AddStringToObject(o, "abi", abi);
    cJSON_AddStringToObject(o, "path", p->path);
    cJSON_AddStringToObject(o, "state", state_word(p->state));
    cJSON_AddStringToObject(o, "status", bp_status_str(p->status));
    cJSON_AddStringToObject(o, "reason", reason_of(p));
    cJSON_AddNumberToObject(o, "priority", p->priority);
    cJSON_AddNumberToObject(o, "device_count", p->device_count);
    cJSON_AddStringToObject(o, "unavailable_reason", p->unavailable_reason);
    cJSON_AddStringToObject(o, "aliases", p->aliases);
    cJSON_AddStringToObject(o, "notes", p->notes);
    return o;
}

static cJSON *device_json(const device_entry *e) {
    cJSON *o = cJSON_CreateObject();
    const bp_device_props *p = &e->props;
    cJSON_AddStringToObject(o, "name", p->name);
    if (e->status != BP_OK) {
        cJSON_AddStringToObject(o, "status", bp_status_str(e->status));
        cJSON_AddStringToObject(o, "error", e->error);
        return o;
    }
    cJSON_AddStringToObject(o, "type", p->type);
    cJSON_AddNumberToObject(o, "index", p->index);
    cJSON_AddStringToObject(o, "backend", p->backend_name);
    cJSON_AddStringToObject(o, "backend_version", p->backend_version);
    cJSON_AddStringToObject(o, "description", p->description);
    cJSON_AddStringToObject(o, "features", p->features);
    cJSON_AddNumberToObject(o, "total_memory", (double)p->total_memory);
    cJSON_AddNumberToObject(o, "free_memory", (double)p->free_memory);
    each_capability(p->capabilities, add_word, cJSON_AddArrayToObject(o, "capabilities"));
    each_dtype(p->dtypes, add_word, cJSON_AddArrayToObject(o, "dtypes"));
    cJSON *priority = cJSON_AddObjectToObject(o, "stream_priority");
    cJSON_AddNumberToObject(priority, "least", p->stream_priority_least);
    cJSON_AddNumberToObject(priority, "greatest", p->stream_priority_greatest);
    return o;
}

static int print_json(const bp_plugin_info *plugins, int np, const device_entry *devices, int nd) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", bp_version());
    cJSON *plugin_list = cJSON_AddArrayToObject(root, "plugins");
    for (int i = 0; i < np; i++)
        cJSON_AddItemToArray(plugin_list, plugin_json(&plugins[i]));
    cJSON *device_list = cJSON_AddArrayToObject(root, "devices");
    for (int d = 0; d < nd; d++)
        cJSON_AddItemToArray(device_list, device_json(&devices[d]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "bp-info: out of memory\n");
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

/* The probe's body: collects and prints. ctx points to the --json flag. */
static int list_everything(void *ctx) {
    int json = *(const int *)ctx;
    bp_plugin_info *plugins = NULL;
    device_entry *devices = NULL;
    int np = 0, nd = 0;
    int failed = collect(&plugins, &np, &devices, &nd);
    if (plugins) {
        if (json)
            failed |= print_json(plugins, np, devices, nd);
        else
            print_text(plugins, np, devices, nd);
    }
    free(plugins);
    free(devices);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bp-info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    return info_probe_run(list_everything, &json);
}
