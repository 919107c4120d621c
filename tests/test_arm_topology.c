/* The arm backend's topology reader (backends/arm/arm_topology.c) on fixture trees
 * shaped like /sys/devices/system/cpu (tests/fixtures/arm-sysfs): the devices it derives
 * from real SoC and server layouts, and its fallback on malformed trees. Pure C: built
 * natively and in the aarch64 cross build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arm_topology.h"

#define FIXTURES BP_TEST_SOURCE_DIR "/fixtures/arm-sysfs/"
#define FALLBACK_CPUS 3 /* cores assumed when `online` itself is unusable */

static arm_topology topo; /* large */

static void read_named(const char *name) {
    char root[512];
    snprintf(root, sizeof root, "%s%s", FIXTURES, name);
    arm_topology_read(root, FALLBACK_CPUS, &topo);
}

/* "0-3,7" of a group's bitmap. */
static void cpus_text(const arm_core_group *g, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (int n = 0; n < ARM_TOPO_MAX_CPUS; n++) {
        if (!((g->cpus[n / 64] >> (n % 64)) & 1u))
            continue;
        int last = n;
        while (last + 1 < ARM_TOPO_MAX_CPUS && ((g->cpus[(last + 1) / 64] >> ((last + 1) % 64)) & 1u))
            last++;
        used += (size_t)snprintf(out + used, size - used, used ? ",%d" : "%d", n);
        if (last > n)
            used += (size_t)snprintf(out + used, size - used, "-%d", last);
        n = last;
    }
}

static void expect_group(int index, const char *description, const char *cpus) {
    assert_true(index < topo.ngroups);
    const arm_core_group *g = &topo.groups[index];
    char text[256];
    cpus_text(g, text, sizeof text);
    if (strcmp(g->description, description) != 0 || strcmp(text, cpus) != 0)
        fail_msg("group %d is '%s' on cpus %s; expected '%s' on cpus %s", index, g->description,
                 text, description, cpus);
}

static void expect_no_fallback(void) {
    if (topo.fallback_reason[0])
        fail_msg("unexpected fallback: %s", topo.fallback_reason);
}

/* The fallback reason names the file (its path under the fixture) and what is wrong. */
static void expect_fallback(const char *file, const char *why) {
    if (!strstr(topo.fallback_reason, file) || !strstr(topo.fallback_reason, why))
        fail_msg("fallback reason '%s' does not name '%s' and '%s'", topo.fallback_reason, file,
                 why);
    assert_int_equal(topo.ngroups, 1);
}

/* ---- real layouts ---- */

/* Snapdragon 888: 1x X1 + 3x A78 + 4x A55; the kernel lists one DynamIQ cluster of all
 * eight, so the capacities make the three devices. */
static void test_phone_three_clusters(void **state) {
    read_named("phone-sd888");
    expect_no_fallback();
    assert_int_equal(topo.ngroups, 3);
    expect_group(0, "1x Cortex-X1 @ capacity 1024", "7");
    expect_group(1, "3x Cortex-A78 @ capacity 904", "4-6");
    expect_group(2, "4x Cortex-A55 @ capacity 415", "0-3");
    assert_string_equal(topo.groups[1].core_name, "Cortex-A78");
    assert_int_equal(topo.groups[0].capacity, 1024);
}

/* RK3399: 4x A53 (cpu0-3) + 2x A72 (cpu4-5): the big cluster is arm:0. */
static void test_board_two_clusters(void **state) {
    read_named("board-rk3399");
    expect_no_fallback();
    assert_int_equal(topo.ngroups, 2);
    expect_group(0, "2x Cortex-A72 @ capacity 1024", "4-5");
    expect_group(1, "4x Cortex-A53 @ capacity 485", "0-3");
}

/* Graviton2: 64x Neoverse-N1, each core its own cluster in the kernel's lists: still
 * one device. */
static void test_server_one_cluster(void **state) {
    read_named("server-graviton2");
    expect_no_fallback();
    assert_int_equal(topo.ngroups, 1);
    expect_group(0, "64x Neoverse-N1 @ capacity 1024", "0-63");
    assert_int_equal(topo.groups[0].ncpus, 64);
}

/* A kernel without cpu_capacity (and with core_siblings_list): core types group, the
 * big type first, and the description has no capacity. */
static void test_no_capacity_files(void **state) {
    read_named("board-rk3399-no-capacity");
    expect_no_fallback();
    assert_int_equal(topo.ngroups, 2);
    expect_group(0, "2x Cortex-A72", "4-5");
    expect_group(1, "4x Cortex-A53", "0-3");
}

static void test_no_midr_files(void **state) {
    read_named("no-midr");
    expect_no_fallback();
    assert_int_equal(topo.ngroups, 2);
    expect_group(0, "2 cores @ capacity 1024", "0-1");
    expect_group(1, "2 cores @ capacity 512", "2-3");
}

static void test_unknown_part(void **state) {
    read_named("unknown-part");
    expect_no_fallback();
    expect_group(0, "4x unknown part 0xd99 @ capacity 1024", "0-3");
}

/* Offline cores (cpu4-6) are in no device. */
static void test_offline_cores(void **state) {
    read_named("phone-offline-cores");
    expect_no_fallback();
    assert_int_equal(topo.ngroups, 2);
    expect_group(0, "1x Cortex-X1 @ capacity 1024", "7");
    expect_group(1, "4x Cortex-A55 @ capacity 415", "0-3");
}

/* ---- malformed trees: one device of all online cores, and why ---- */

static void test_missing_capacity(void **state) {
    read_named("missing-capacity");
    expect_fallback("missing-capacity/cpu5/cpu_capacity", "missing, while cpu0 has one");
    expect_group(0, "6 cores", "0-5");
}

static void test_garbage_capacity(void **state) {
    read_named("garbage-capacity");
    expect_fallback("garbage-capacity/cpu2/cpu_capacity", "'fast' is not a whole number");
    expect_group(0, "6 cores", "0-5");
}

static void test_bad_online_list(void **state) {
    read_named("bad-online");
    expect_fallback("bad-online/online", "'0-3,5-' is not a cpu list");
    expect_group(0, "3 cores", "0-2"); /* FALLBACK_CPUS */
}

static void test_bad_cluster_list(void **state) {
    read_named("bad-cluster-list");
    expect_fallback("bad-cluster-list/cpu4/topology/cluster_cpus_list",
                    "'4-5-6' is not a cpu list");
    expect_group(0, "6 cores", "0-5");
}

static void test_bad_midr(void **state) {
    read_named("bad-midr");
    expect_fallback("bad-midr/cpu1/regs/identification/midr_el1", "'A53' is not a MIDR value");
}

static void test_missing_online(void **state) {
    read_named("missing-online");
    expect_fallback("missing-online/online", "missing");
    expect_group(0, "3 cores", "0-2");
}

static void test_missing_tree(void **state) {
    read_named("does-not-exist");
    expect_fallback("does-not-exist/online", "missing");
    expect_group(0, "3 cores", "0-2");
}

/* ---- the pieces ---- */

static void test_cpulist_parse(void **state) {
    uint64_t cpus[ARM_TOPO_WORDS];
    assert_true(arm_cpulist_parse("0-3,6,8-9\n", cpus));
    assert_int_equal(cpus[0], 0x34fu);
    assert_true(arm_cpulist_parse("1023", cpus));
    assert_int_equal(cpus[ARM_TOPO_WORDS - 1], (uint64_t)1 << 63);
    static const char *const bad[] = {"", "\n", "3-1", "1,", ",1", "1-", "-1", "a", "0-3x",
                                      "1024", "0 1", "1\n\n", "0-99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (arm_cpulist_parse(bad[i], cpus))
            fail_msg("'%s' parsed as a cpu list", bad[i]);
}

static void test_core_names(void **state) {
    static const struct {
        uint32_t midr;
        const char *name;
    } cases[] = {
        {0x410fd034, "Cortex-A53"}, {0x412fd050, "Cortex-A55"}, {0x414fd0b0, "Cortex-A76"},
        {0x410fd0d0, "Cortex-A77"}, {0x411fd410, "Cortex-A78"}, {0x411fd440, "Cortex-X1"},
        {0x410fd480, "Cortex-X2"},  {0x410fd4e0, "Cortex-X3"},  {0x410fd460, "Cortex-A510"},
        {0x410fd470, "Cortex-A710"}, {0x410fd4d0, "Cortex-A715"}, {0x413fd0c1, "Neoverse-N1"},
        {0x410fd490, "Neoverse-N2"}, {0x411fd401, "Neoverse-V1"}, {0x410fd4f0, "Neoverse-V2"},
        {0x410fd990, "unknown part 0xd99"},
        {0x510f8020, "unknown part 0x802 (implementer 0x51)"}, /* Qualcomm Kryo */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        arm_core_name(cases[i].midr, name, sizeof name);
        assert_string_equal(name, cases[i].name);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phone_three_clusters),
        cmocka_unit_test(test_board_two_clusters),
        cmocka_unit_test(test_server_one_cluster),
        cmocka_unit_test(test_no_capacity_files),
        cmocka_unit_test(test_no_midr_files),
        cmocka_unit_test(test_unknown_part),
        cmocka_unit_test(test_offline_cores),
        cmocka_unit_test(test_missing_capacity),
        cmocka_unit_test(test_garbage_capacity),
        cmocka_unit_test(test_bad_online_list),
        cmocka_unit_test(test_bad_cluster_list),
        cmocka_unit_test(test_bad_midr),
        cmocka_unit_test(test_missing_online),
        cmocka_unit_test(test_missing_tree),
        cmocka_unit_test(test_cpulist_parse),
        cmocka_unit_test(test_core_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
