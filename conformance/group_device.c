/* Conformance group "device": how the device under test is listed, named and described,
 * and device-wide synchronization. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "expect.h"
#include "late.h"

static bp_device_props props_of(bp_device *dev) {
    bp_device_props p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    BP_CONF_OK(bp_device_get_props(dev, &p));
    return p;
}

/* [a-z][a-z0-9_]*, the form of backend names. */
static bool valid_type_name(const char *s) {
    if (!s[0] || s[0] < 'a' || s[0] > 'z')
        return false;
    for (const char *c = s + 1; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return false;
    return true;
}

/* ---- enumeration ---- */

static void test_enumeration(void **state) {
    const char *type = bp_conf.props.type;
    int n = bp_device_count();
    if (n < 1)
        fail_msg("bp_device_count() is %d with %s open", n, bp_conf.props.name);
    bool found = false;
    int first = -1, of_type = 0;
    for (int ord = 0; ord < n; ord++) {
        bp_device *dev = NULL;
        BP_CONF_OK(bp_device_get(ord, &dev));
        if (!dev)
            fail_msg("bp_device_get(%d) returned BP_OK and NULL", ord);
        bp_device_props p = props_of(dev);
        char canonical[BP_NAME_MAX * 2];
        snprintf(canonical, sizeof canonical, "%s:%d", p.type, p.index);
        if (strcmp(bp_device_name(dev), p.name) != 0 || strcmp(p.name, canonical) != 0)
            fail_msg("device at ordinal %d: bp_device_name '%s', props.name '%s', type:index "
                     "'%s' differ", ord, bp_device_name(dev), p.name, canonical);
        bp_device *again = NULL;
        BP_CONF_OK(bp_device_open(p.name, &again));
        if (again != dev)
            fail_msg("bp_device_open(\"%s\") gave another device than ordinal %d", p.name, ord);
        found |= dev == bp_conf.device;
        if (strcmp(p.type, type) != 0)
            continue;
        /* The devices of one type sit at consecutive ordinals, indices 0..n-1 in order. */
        if (first < 0)
            first = ord;
        else if (ord != first + of_type)
            fail_msg("devices of type '%s' are not at consecutive ordinals: %s at ordinal %d "
                     "after %d of them from ordinal %d", type, p.name, ord, of_type, first);
        if (p.index != of_type)
            fail_msg("device %d of type '%s' has index %d, expected %d", of_type, type, p.index,
                     of_type);
        of_type++;
    }
    if (!found)
        fail_msg("%s is not among the %d devices of bp_device_get", bp_conf.props.name, n);
    if (bp_conf.props.index >= of_type)
        fail_msg("%s has index %d but its type lists %d device(s)", bp_conf.props.name,
                 bp_conf.props.index, of_type);
    print_message("%d device(s) of type '%s' among %d\n", of_type, type, n);
}

/* ---- properties ---- */

/* Fills a props struct of `size` bytes inside a larger buffer of canaries and checks
 * that nothing past `size` was written. */
static void expect_small_struct_honoured(size_t size, const char *field) {
    unsigned char buf[sizeof(bp_device_props) + 32];
    memset(buf, 0xab, sizeof buf);
    bp_device_props *small = (bp_device_props *)(void *)buf;
    small->struct_size = (uint32_t)size;
    BP_CONF_OK(bp_device_get_props(bp_conf.device, small));
    if (small->struct_size != size)
        fail_msg("bp_device_get_props changed struct_size from %zu to %u", size,
                 small->struct_size);
    for (size_t i = size; i < sizeof buf; i++)
        if (buf[i] != 0xab)
            fail_msg("with struct_size up to %s (%zu bytes), bp_device_get_props wrote byte %zu",
                     field, size, i);
    if (strcmp(small->name, bp_conf.props.name) != 0)
        fail_msg("with a smaller struct_size, name is '%.64s', expected '%s'", small->name,
                 bp_conf.props.name);
}

static void test_properties(void **state) {
    bp_device_props p = props_of(bp_conf.device);
    char canonical[BP_NAME_MAX * 2];
    snprintf(canonical, sizeof canonical, "%s:%d", p.type, p.index);
    if (strcmp(p.name, canonical) != 0 || strcmp(p.name, bp_device_name(bp_conf.device)) != 0)
        fail_msg("name '%s' is not '%s' (type:index) and bp_device_name '%s'", p.name, canonical,
                 bp_device_name(bp_conf.device));
    if (!valid_type_name(p.type))
        fail_msg("type '%s' does not match [a-z][a-z0-9_]*", p.type);
    if (p.index < 0)
        fail_msg("index is %d", p.index);
    if (strcmp(p.backend_name, p.type) != 0)
        fail_msg("backend_name '%s' differs from the type '%s' (a backend's name is its device "
                 "type)", p.backend_name, p.type);
    if (!p.backend_version[0])
        fail_msg("backend_version is empty");
    if (!p.description[0])
        print_message("note: description is empty\n");
    if (p.total_memory == 0)
        fail_msg("total_memory is 0");
    if (!(p.dtypes & BP_DTYPE_BIT(BP_DTYPE_F32)))
        fail_msg("dtypes 0x%x lacks f32", p.dtypes);
    if (p.dtypes >> BP_DTYPE_COUNT)
        fail_msg("dtypes 0x%x has bits of no dtype (there are %d)", p.dtypes, BP_DTYPE_COUNT);
    if (p.stream_priority_least < p.stream_priority_greatest)
        fail_msg("stream_priority_least %d is below stream_priority_greatest %d (least is the "
                 "numerically largest, as in CUDA)", p.stream_priority_least,
                 p.stream_priority_greatest);
    uint32_t unknown = 0;
    for (uint32_t bit = 1; bit; bit <<= 1)
        if ((p.capabilities & bit) && !bp_capability_name(bit))
            unknown |= bit;
    if (unknown)
        print_message("note: capabilities 0x%x include bits this suite does not know\n",
                      p.capabilities);

    /* What does not change between calls does not. */
    bp_device_props q = props_of(bp_conf.device);
    if (strcmp(p.name, q.name) || strcmp(p.type, q.type) || p.index != q.index ||
        strcmp(p.backend_version, q.backend_version) || strcmp(p.description, q.description) ||
        p.total_memory != q.total_memory || p.capabilities != q.capabilities ||
        p.dtypes != q.dtypes || p.stream_priority_least != q.stream_priority_least ||
        p.stream_priority_greatest != q.stream_priority_greatest)
        fail_msg("two calls of bp_device_get_props disagree on a fixed property");

    /* A caller built with an older, smaller struct gets only its fields. */
    expect_small_struct_honoured(offsetof(bp_device_props, backend_name), "index");
    expect_small_struct_honoured(offsetof(bp_device_props, total_memory), "description");
    expect_small_struct_honoured(offsetof(bp_device_props, stream_priority_greatest),
                                 "stream_priority_least");
    print_message("%s: %s, %" PRIu64 " bytes, capabilities 0x%x, dtypes 0x%x\n", p.name,
                  p.description, p.total_memory, p.capabilities, p.dtypes);
}

/* ---- mem_info_free_within_total ---- */

/* free_memory and total_memory come from the backend's mem_info; the ABI says free <=
 * total (plugin.h), idle and with memory in use. */
static void test_mem_info_free_within_total(void **state) {
    const char *type = bp_conf.props.type;
    int checked = 0;
    for (int ord = 0; ord < bp_device_count(); ord++) {
        bp_device *dev = NULL;
        BP_CONF_OK(bp_device_get(ord, &dev));
        if (strcmp(props_of(dev).type, type) != 0)
            continue;
        enum { BLOCK = 1 << 20 };
        void *block = NULL;
        for (int in_use = 0; in_use < 2; in_use++) {
            if (in_use)
                BP_CONF_OK(bp_memory_alloc(dev, BLOCK, NULL, &block));
            bp_device_props p = props_of(dev);
            if (p.free_memory > p.total_memory)
                fail_msg("%s %s: free_memory %" PRIu64 " exceeds total_memory %" PRIu64,
                         bp_device_name(dev), in_use ? "with a 1 MiB block allocated" : "idle",
                         p.free_memory, p.total_memory);
        }
        BP_CONF_OK(bp_memory_free(dev, block));
        checked++;
    }
    print_message("free_memory <= total_memory on %d device(s) of type '%s'\n", checked, type);
}

/* ---- open_by_name_variants ---- */

static void expect_opens_to(const char *name, bp_device *want) {
    bp_device *dev = NULL;
    BP_CONF_OK(bp_device_open(name, &dev));
    if (dev != want)
        fail_msg("bp_device_open(\"%s\") gave %s, expected %s", name,
                 dev ? bp_device_name(dev) : "NULL", bp_device_name(want));
}

static void test_open_by_name_variants(void **state) {
    const char *type = bp_conf.props.type;
    char name[BP_NAME_MAX * 2], upper[BP_NAME_MAX * 2];

    bp_device *zero = NULL;
    snprintf(name, sizeof name, "%s:0", type);
    BP_CONF_OK(bp_device_open(name, &zero));
    expect_opens_to(type, zero); /* "type" means "type:0" */

    snprintf(name, sizeof name, "%s:%d", type, bp_conf.props.index);
    expect_opens_to(name, bp_conf.device);
    for (size_t i = 0; i < sizeof upper && name[i]; i++)
        upper[i] = (char)toupper((unsigned char)name[i]);
    upper[strlen(name)] = '\0';
    expect_opens_to(upper, bp_conf.device);
    /* Mixed case: every other letter upper-cased. */
    for (size_t i = 0; name[i]; i += 2)
        upper[i] = name[i];
    expect_opens_to(upper, bp_conf.device);
    if (bp_conf.device_name)
        expect_opens_to(bp_conf.device_name, bp_conf.device);
}

/* ---- synchronize_idle ---- */

static void test_synchronize_idle(void **state) {
    bp_device *dev = bp_conf.device;
    BP_CONF_OK(bp_device_synchronize(dev));
    BP_CONF_OK(bp_device_synchronize(dev)); /* idle twice */

    /* Late writes (late.h) on a created stream and on the default stream, held on a
     * gate that a thread opens a while later: device synchronize waits for both, so it
     * returns after the gate opened, and then both report idle and their data is final.
     * One that returns early is caught unless the test thread stalls for
     * BP_CONF_LATE_OPEN_MS. */
    enum { N = 1 << 20, FALLBACK_ROUNDS = 8 };
    bp_stream *s = bp_conf_stream(), *def = NULL;
    BP_CONF_OK(bp_stream_default(dev, &def));
    void *a = bp_conf_filled_buffer(s, N, 0x4d), *b = bp_conf_filled_buffer(def, N, 0x3c);
    void *a_src = bp_conf_filled_buffer(s, N, 0x3c), *b_src = bp_conf_filled_buffer(def, N, 0x4d);
    bp_event *done = NULL;
    BP_CONF_OK(bp_event_create(dev, BP_EVENT_DEFAULT, &done));
    bp_conf_late late;
    bp_conf_late_init(&late);
    bp_status st = bp_conf_late_write(&late, s, a, a_src, N, 0x3c, FALLBACK_ROUNDS);
    if (st == BP_OK)
        st = bp_conf_late_write(&late, def, b, b_src, N, 0x4d, FALLBACK_ROUNDS);
    if (st == BP_OK)
        st = bp_event_record(done, s);
    bp_conf_late_open_later(&late);
    if (st == BP_OK)
        st = bp_device_synchronize(dev);
    bool open_at_return = bp_conf_late_finish(&late);
    BP_CONF_OK(st);
    if (!open_at_return)
        fail_msg("bp_device_synchronize returned while a host function still held a stream "
                 "and the default stream");
    bp_status qs = bp_stream_query(s), qd = bp_stream_query(def), qe = bp_event_query(done);
    if (qs != BP_OK || qd != BP_OK || qe != BP_OK)
        fail_msg("after bp_device_synchronize: stream query %s, default stream query %s, event "
                 "query %s; all must be BP_OK", bp_status_str(qs), bp_status_str(qd),
                 bp_status_str(qe));
    bp_conf_expect_filled(s, a, N, 0x3c, "a stream's work after bp_device_synchronize");
    bp_conf_expect_filled(def, b, N, 0x4d, "the default stream's work after bp_device_synchronize");
    BP_CONF_OK(bp_event_destroy(done));
    BP_CONF_OK(bp_memory_free(dev, a));
    BP_CONF_OK(bp_memory_free(dev, b));
    BP_CONF_OK(bp_memory_free(dev, a_src));
    BP_CONF_OK(bp_memory_free(dev, b_src));
    BP_CONF_OK(bp_stream_destroy(s));
    BP_CONF_OK(bp_device_synchronize(dev));
}

static const bp_conf_test device_tests[] = {
    {"enumeration", test_enumeration,
     "the device is listed under its canonical name; a type's devices are contiguous, indices "
     "0..n-1", NULL},
    {"properties", test_properties,
     "properties are consistent (names, memory, f32, priorities) and a smaller struct_size is "
     "honoured", NULL},
    {"mem_info_free_within_total", test_mem_info_free_within_total,
     "mem_info gives free <= total on every device of the type, idle and with a block in use",
     NULL},
    {"open_by_name_variants", test_open_by_name_variants,
     "\"type\" is \"type:0\"; names are case-insensitive", NULL},
    {"synchronize_idle", test_synchronize_idle,
     "bp_device_synchronize works idle and waits for every stream's work", NULL},
};

const bp_conf_group bp_conf_group_device = {
    .name = "device",
    .summary = "device enumeration, properties, names and synchronization",
    .tests = device_tests,
    .n_tests = sizeof device_tests / sizeof device_tests[0],
    .timeout_s = 60,
};
