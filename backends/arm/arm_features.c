/* ISA features and the SVE vector length (arm_features.h). */
#include "arm_features.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <asm/hwcap.h>
#include <linux/prctl.h>

#define SVE_BITS_MIN 128
#define SVE_BITS_MAX 2048

/* The calling thread's SVE vector length in bits; 0 when prctl refuses (no SVE). */
static uint32_t current_sve_bits(void) {
    int vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
    return vl < 0 ? 0 : (uint32_t)(vl & PR_SVE_VL_LEN_MASK) * 8u;
}

void arm_features_detect(arm_features *f) {
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    memset(f, 0, sizeof *f);
    f->asimd = (hw & HWCAP_ASIMD) != 0;
    /* FP16 arithmetic needs both the scalar (fphp) and the vector (asimdhp) forms. */
    f->fp16 = (hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP);
    f->dotprod = (hw & HWCAP_ASIMDDP) != 0;
    f->bf16 = (hw2 & HWCAP2_BF16) != 0;
    f->i8mm = (hw2 & HWCAP2_I8MM) != 0;
    f->sve = (hw & HWCAP_SVE) != 0;
    f->sve2 = f->sve && (hw2 & HWCAP2_SVE2);
    f->sve_bits = f->sve ? current_sve_bits() : 0;
}

void arm_features_format(const arm_features *f, char *out, size_t out_size) {
    const struct {
        bool on;
        const char *word;
    } words[] = {{f->asimd, "asimd"}, {f->fp16, "fp16"}, {f->dotprod, "dotprod"},
                 {f->bf16, "bf16"},   {f->i8mm, "i8mm"}, {f->sve, "sve"},
                 {f->sve2, "sve2"}};
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (words[i].on && used < out_size)
            used += (size_t)snprintf(out + used, out_size - used, "%s%s", used ? " " : "",
                                     words[i].word);
    if (f->sve && used < out_size)
        snprintf(out + used, out_size - used, " sve_bits=%u", (unsigned)f->sve_bits);
}

/* A multiple of 128 from 128 to 2048, in decimal digits only. */
static bool parse_sve_bits(const char *text, uint32_t *out) {
    uint32_t v = 0;
    size_t n = 0;
    for (; text[n] >= '0' && text[n] <= '9' && n < 5; n++)
        v = v * 10 + (uint32_t)(text[n] - '0');
    if (n == 0 || text[n] != '\0' || v < SVE_BITS_MIN || v > SVE_BITS_MAX || v % 128 != 0)
        return false;
    *out = v;
    return true;
}

void arm_sve_bits_apply(uint32_t bits) {
    if (bits)
        prctl(PR_SVE_SET_VL, (unsigned long)(bits / 8u), 0, 0, 0);
}

/* On a scratch thread: the length the CPU gives when asked for `*arg` bits. */
static void *try_sve_bits(void *arg) {
    uint32_t *bits = arg;
    arm_sve_bits_apply(*bits);
    *bits = current_sve_bits();
    return NULL;
}

int arm_sve_bits_choose(const char *text, const arm_features *f, uint32_t *out_bits, char *why,
                        size_t why_size) {
    *out_bits = 0;
    if (!text || !*text)
        return 0;
    uint32_t bits;
    if (!parse_sve_bits(text, &bits)) {
        snprintf(why, why_size,
                 "BP_ARM_SVE_BITS='%.16s' is not a multiple of 128 from 128 to 2048", text);
        return -1;
    }
    if (!f->sve) {
        snprintf(why, why_size, "BP_ARM_SVE_BITS=%u: this CPU has no SVE", (unsigned)bits);
        return -1;
    }
    uint32_t got = bits;
    pthread_t t;
    if (pthread_create(&t, NULL, try_sve_bits, &got) != 0) {
        snprintf(why, why_size, "BP_ARM_SVE_BITS=%u: cannot start a thread to try it",
                 (unsigned)bits);
        return -1;
    }
    pthread_join(t, NULL);
    if (got != bits) {
        snprintf(why, why_size,
                 "BP_ARM_SVE_BITS=%u: this CPU cannot run SVE at %u bits (asked for it, a "
                 "thread gets %u)",
                 (unsigned)bits, (unsigned)bits, (unsigned)got);
        return -1;
    }
    *out_bits = bits;
    return 0;
}
