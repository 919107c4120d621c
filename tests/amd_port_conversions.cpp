/* The AMD side of backends/gpu/kernels/gpu_port.h, run on the host (its conversions are
 * __host__ __device__ there), since no AMD GPU runs them here: bf16 rounding against HIP's
 * own hip_bfloat16, and the conversions toward zero against the host's float conversions
 * under FE_TOWARDZERO. Built with hipcc for the host only (tests/amd_port_conversions.sh);
 * prints each mismatch and "ok: ..." at the end; exit 1 on a mismatch. */
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <hip/hip_bfloat16.h>

#include "gpu_port.h"

static_assert(GPU_AMD, "compiled by hipcc for the amd platform");

static int failures = 0;

static uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random() { /* xorshift64* */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545f4914f6cdd1dull;
}

/* The host's conversion toward zero: volatile so that the compiler leaves it to the FPU
 * under the rounding mode set at the time. */
static float rz_float(double d) {
    volatile double in = d;
    std::fesetround(FE_TOWARDZERO);
    volatile float out = (float)in;
    std::fesetround(FE_TONEAREST);
    return out;
}

static float rz_float(long long v) {
    volatile long long in = v;
    std::fesetround(FE_TOWARDZERO);
    volatile float out = (float)in;
    std::fesetround(FE_TONEAREST);
    return out;
}

static bool same_float(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b);
}

static void check_bf16(uint32_t u) {
    const float f = float_of(u);
    const gpu_bf16 got = gpu_f32_to_bf16_rn(f);
    const hip_bfloat16 want(f);
    const float got_f = gpu_to_f32(got), want_f = (float)want;
    if (!same_float(got_f, want_f)) {
        std::printf("bf16 of %a (0x%08x): 0x%04x, hip_bfloat16 0x%04x\n", f, u, got.bits, want.data);
        failures++;
    }
    if (!std::isnan(f) && got_f == 0.0f && f != 0.0f && std::fabs(f) >= 0x1p-126f) {
        std::printf("bf16 of %a (0x%08x) is 0\n", f, u);
        failures++;
    }
}

static void check_double(double d) {
    const float got = gpu_double2float_rz(d), want = rz_float(d);
    if (!same_float(got, want)) {
        std::printf("double2float_rz(%a): %a, want %a\n", d, got, want);
        failures++;
    }
}

static void check_ll(long long v) {
    const float got = gpu_ll2float_rz(v), want = rz_float(v);
    if (!same_float(got, want)) {
        std::printf("ll2float_rz(%lld): %a, want %a\n", v, got, want);
        failures++;
    }
}

int main() {
    int checks = 0;
    /* bf16: every pattern of the top 16 bits with low halves that tie, fall either side of
     * the tie, or are zero; then random patterns. */
    const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (uint32_t hi = 0; hi <= 0xffff; hi++)
        for (uint32_t lo : lows) {
            check_bf16(hi << 16 | lo);
            checks++;
        }
    for (int i = 0; i < 1000000; i++, checks++)
        check_bf16((uint32_t)next_random());

    /* double -> float toward zero: the edges, then random bit patterns and doubles near
     * float values. */
    const double doubles[] = {0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 1.0 / 3, -1.0 / 3,
                              (double)FLT_MAX, -(double)FLT_MAX, (double)FLT_MAX * (1 + 0x1p-30),
                              -(double)FLT_MAX * (1 + 0x1p-30), (double)FLT_MAX * 2, 1e300,
                              -1e300, 0x1p-149, 0x1p-150, 0x1.8p-149, -0x1.8p-149, 1e-300,
                              (double)FLT_MIN * (1 - 0x1p-30), INFINITY, -INFINITY, NAN};
    for (double d : doubles) {
        check_double(d);
        checks++;
    }
    for (int i = 0; i < 1000000; i++, checks++) {
        uint64_t u = next_random();
        double d;
        std::memcpy(&d, &u, 8);
        check_double(d);
        /* a float value plus a small offset either way */
        const float f = float_of((uint32_t)next_random());
        if (std::isfinite(f)) {
            check_double((double)f * (1 + 0x1p-40));
            check_double((double)f * (1 - 0x1p-40));
            check_double((double)f);
            checks += 3;
        }
    }

    /* int64 -> float toward zero */
    const long long ints[] = {0, 1, -1, (1ll << 24) + 1, -(1ll << 24) - 1, (1ll << 25) + 3,
                              INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 1,
                              (long long)0x7fffff8000000000ll, (long long)0x7fffff8000000001ll,
                              -(long long)0x7fffff8000000001ll};
    for (long long v : ints) {
        check_ll(v);
        checks++;
    }
    for (int i = 0; i < 1000000; i++, checks += 2) {
        const uint64_t u = next_random();
        check_ll((long long)u);
        check_ll((long long)u >> (u & 63)); /* small magnitudes too */
    }

    if (failures) {
        std::printf("amd_port_conversions: %d mismatches in %d checks\n", failures, checks);
        return 1;
    }
    std::printf("ok: %d checks of gpu_port.h's AMD conversions (bf16 rounding, double and "
                "int64 to float toward zero)\n",
                checks);
    return 0;
}
