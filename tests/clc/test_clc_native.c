/* The ahead-of-time Intel GPU binaries embedded in backends/clc (clc_native.c,
 * generated with ocloc when the build found it: cmake/native.cmake): each is a zebin
 * (an ELF64 object for EM_INTELGT) with the code of every kernel of the SPIR-V module
 * it was compiled from; each family has a binary of every SPIR-V module it can run;
 * and clc_native_find picks by family, with NULL for a family there is none of. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "clc_signatures.h"

#define EM_INTELGT 205

static bool have_natives(void) {
    if (clc_native_module_count > 0)
        return true;
    print_message("skipped: this build embeds no ahead-of-time binaries (no ocloc, or "
                  "BP_CLC_NATIVE is OFF: see the configure output)\n");
    return false;
}

static uint64_t read_le(const unsigned char *p, size_t bytes) {
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Whether ELF64 little-endian image b has a section named `name`; false also when the
 * headers do not fit the image. */
static bool elf_has_section(const unsigned char *b, size_t size, const char *name) {
    if (size < 64)
        return false;
    uint64_t shoff = read_le(b + 40, 8), shentsize = read_le(b + 58, 2),
             shnum = read_le(b + 60, 2), shstrndx = read_le(b + 62, 2);
    if (shentsize < 64 || shstrndx >= shnum || shoff > size || shnum * shentsize > size - shoff)
        return false;
    const unsigned char *strtab = b + shoff + shstrndx * shentsize;
    uint64_t str_off = read_le(strtab + 24, 8), str_size = read_le(strtab + 32, 8);
    if (str_off > size || str_size > size - str_off)
        return false;
    size_t len = strlen(name);
    for (uint64_t i = 0; i < shnum; i++) {
        uint64_t at = read_le(b + shoff + i * shentsize, 4);
        if (at < str_size && str_size - at > len && memcmp(b + str_off + at, name, len + 1) == 0)
            return true;
    }
    return false;
}

static const char *native_name(const clc_native_module *m, char *buf, size_t size) {
    snprintf(buf, size, "%s: %s variant %d%s", m->family, clc_programs[m->program].name,
             m->variant, m->fp64 ? " fp64" : "");
    return buf;
}

static void test_natives_are_zebin_with_their_kernels(void **state) {
    (void)state;
    if (!have_natives())
        return;
    size_t total = 0;
    for (size_t i = 0; i < clc_native_module_count; i++) {
        const clc_native_module *m = &clc_native_modules[i];
        char name[96], why[300];
        assert_true((unsigned)m->program < CLC_PROG_COUNT);
        native_name(m, name, sizeof name);
        assert_non_null(m->family);
        assert_non_null(m->binary);
        const unsigned char *b = m->binary;
        if (m->size < 64 || memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2 || b[5] != 1)
            fail_msg("%s: %zu bytes, not a little-endian ELF64 image", name, m->size);
        if (read_le(b + 18, 2) != EM_INTELGT)
            fail_msg("%s: ELF machine %u, not Intel GT (%d)", name, (unsigned)read_le(b + 18, 2),
                     EM_INTELGT);
        /* the kernels of the SPIR-V module it was compiled from, each its .text.<name> */
        const clc_module *spv = clc_spirv_find(m->program, m->variant, m->fp64);
        if (!spv || spv->fp64 != m->fp64)
            fail_msg("%s: no SPIR-V module it was compiled from", name);
        const spv_module *read = clc_sig_module((size_t)(spv - clc_spirv_modules), why, sizeof why);
        if (!read)
            fail_msg("%s", why);
        for (int k = 0; k < read->nkernels; k++) {
            char section[SPV_NAME_MAX + 8];
            snprintf(section, sizeof section, ".text.%s", read->kernels[k].name);
            if (!elf_has_section(b, m->size, section))
                fail_msg("%s: no section %s", name, section);
        }
        assert_true(read->nkernels > 0);
        total += m->size;
    }
    print_message("%zu binaries, %zu bytes\n", clc_native_module_count, total);
}

/* A family with any binary has one of every SPIR-V module it can run: every plain
 * module, and the fp64 ones too when it has any fp64 binary. */
static void test_natives_cover_the_spirv_modules(void **state) {
    (void)state;
    if (!have_natives())
        return;
    for (size_t i = 0; i < clc_native_module_count; i++) {
        const char *family = clc_native_modules[i].family;
        bool seen_before = false, fp64 = false;
        for (size_t j = 0; j < clc_native_module_count; j++) {
            seen_before |= j < i && strcmp(clc_native_modules[j].family, family) == 0;
            fp64 |= clc_native_modules[j].fp64 && strcmp(clc_native_modules[j].family, family) == 0;
        }
        if (seen_before)
            continue;
        int count = 0;
        for (size_t s = 0; s < clc_spirv_module_count; s++) {
            const clc_module *spv = &clc_spirv_modules[s];
            if (spv->fp64 && !fp64)
                continue;
            const clc_native_module *n = clc_native_find(spv->program, spv->variant, spv->fp64,
                                                         family);
            if (!n || n->fp64 != spv->fp64)
                fail_msg("%s: no binary of %s variant %d%s", family,
                         clc_programs[spv->program].name, spv->variant, spv->fp64 ? " fp64" : "");
            count++;
        }
        print_message("%s: %d binaries%s\n", family, count, fp64 ? " (fp64 too)" : "");
    }
}

static void test_native_find_picks_by_family(void **state) {
    (void)state;
    if (!have_natives())
        return;
    for (size_t i = 0; i < clc_native_module_count; i++) {
        const clc_native_module *m = &clc_native_modules[i];
        char name[96];
        native_name(m, name, sizeof name);
        /* a device with fp64 gets the fp64 build where there is one, else the plain one */
        const clc_native_module *want = m->fp64 ? m : NULL;
        for (size_t j = 0; j < clc_native_module_count && !want; j++) {
            const clc_native_module *o = &clc_native_modules[j];
            if (o->program == m->program && o->variant == m->variant && o->fp64 &&
                strcmp(o->family, m->family) == 0)
                want = o;
        }
        if (clc_native_find(m->program, m->variant, true, m->family) != (want ? want : m))
            fail_msg("%s: not what clc_native_find picks for a device with fp64", name);
        if (!m->fp64 && clc_native_find(m->program, m->variant, false, m->family) != m)
            fail_msg("%s: not what clc_native_find picks for a device without fp64", name);
        if (m->fp64 && clc_native_find(m->program, m->variant, false, m->family) == m)
            fail_msg("%s: picked for a device without fp64", name);
    }
}

/* A family without binaries, or none named, gets NULL: the backend runs the SPIR-V. */
static void test_native_find_unknown_family(void **state) {
    (void)state;
    for (int p = 0; p < CLC_PROG_COUNT; p++) {
        int variant = clc_programs[p].by_size ? 4 : BP_DTYPE_F32;
        assert_null(clc_native_find((clc_program_id)p, variant, false, "no-such-gpu"));
        assert_null(clc_native_find((clc_program_id)p, variant, true, NULL));
        assert_null(clc_native_find((clc_program_id)p, variant, true, ""));
    }
    for (size_t i = 0; i < clc_native_module_count; i++) {
        const clc_native_module *m = &clc_native_modules[i];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%.*s", (int)strlen(m->family) - 1, m->family);
        assert_null(clc_native_find(m->program, m->variant, m->fp64, prefix));
        assert_null(clc_native_find(m->program, 1000, m->fp64, m->family));
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_natives_are_zebin_with_their_kernels),
        cmocka_unit_test(test_natives_cover_the_spirv_modules),
        cmocka_unit_test(test_native_find_picks_by_family),
        cmocka_unit_test(test_native_find_unknown_family),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
