/* The arm plugin's matmul and sdpa kernels (backends/arm/kernels) at every SVE vector
 * length the CPU runs (aarch64 builds only; under qemu-user in the cross build, whose
 * "max" CPU runs every length from 128 to 2048 bits): a vector-length-agnostic kernel
 * must give results within the suite's bounds at each. One forked child per length
 * (BP_ARM_SVE_BITS sets the backend's threads' length; BP_BLAS=0 so f32 runs the
 * plugin's own kernel), on shapes that reach every edge of the kernels' blocking: K
 * panels and their tails, partial output tiles, batch broadcast and transposes
 * (matmul); head dims above one score chunk and one output pass, partial query and key
 * blocks, masks, softcap and ALiBi together (sdpa). On a CPU without SVE, one child
 * runs the NEON kernels. The float64 references and bounds are the conformance
 * suite's (conformance/op_reference.h, tolerances.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <asm/hwcap.h>
#include <linux/prctl.h>

#include "op_check.h"
#include "test_util.h"

#define PLUGIN_PATH "BP_PLUGIN_PATH=" BP_ARM_PLUGIN_DIR

/* Fails the child, naming the case, unless every element of t is within its bound. */
static void check_close(const char *what, bp_tensor *t, bp_ref_result want, int64_t n) {
    double *got = bp_test_tensor_values(t);
    CHILD_CHECK(got != NULL);
    int64_t off = bp_test_count_out_of_bounds(got, want, n, bp_tensor_dtype(t));
    if (off != 0)
        fprintf(stderr, "%s %s: %lld of %lld elements out of bounds\n", what,
                bp_dtype_name(bp_tensor_dtype(t)), (long long)off, (long long)n);
    CHILD_CHECK(off == 0);
    free(got);
}

static void matmul_case(bp_device *dev, bp_dtype dt, bp_ref_shape sa, bp_ref_shape sb, int ta,
                        int tb, uint64_t seed) {
    double *va, *vb;
    bp_tensor *a = bp_test_random_tensor(dev, dt, sa.ndim, sa.d, seed, -1, 1, &va);
    bp_tensor *b = bp_test_random_tensor(dev, dt, sb.ndim, sb.d, seed + 1, -1, 1, &vb);
    bp_tensor *out = NULL;
    CHILD_CHECK(a && b && bp_matmul(a, b, ta, tb, &out) == BP_OK);
    bp_ref_result want = bp_ref_matmul(va, sa, vb, sb, ta, tb);
    check_close("matmul", out, want, bp_ref_numel(bp_ref_matmul_shape(sa, sb, ta, tb)));
    bp_ref_free(&want);
    free(va);
    free(vb);
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(out);
}

static void sdpa_case(bp_device *dev, bp_dtype dt, bp_ref_sdpa_dims n, bp_sdpa_attrs attrs,
                      bool alibi, uint64_t seed) {
    const int64_t qs[4] = {n.b, n.h, n.sq, n.d}, ks[4] = {n.b, n.hkv, n.sk, n.d};
    double *vq, *vk, *vv, *slopes_v = NULL;
    bp_tensor *q = bp_test_random_tensor(dev, dt, 4, qs, seed, -2, 2, &vq);
    bp_tensor *k = bp_test_random_tensor(dev, dt, 4, ks, seed + 1, -2, 2, &vk);
    bp_tensor *v = bp_test_random_tensor(dev, dt, 4, ks, seed + 2, -1, 1, &vv);
    bp_tensor *slopes = alibi ? bp_test_alibi_slopes(dev, n.h, &slopes_v) : NULL;
    bp_tensor *out = NULL;
    CHILD_CHECK(q && k && v && bp_sdpa(q, k, v, slopes, &attrs, &out) == BP_OK);
    bp_ref_result want = bp_ref_sdpa(n, &attrs, bp_ref_view4_contiguous(vq, n.h, n.sq, n.d),
                                     bp_ref_view4_contiguous(vk, n.hkv, n.sk, n.d),
                                     bp_ref_view4_contiguous(vv, n.hkv, n.sk, n.d), slopes_v, dt);
    check_close("sdpa", out, want, n.b * n.h * n.sq * n.d);
    bp_ref_free(&want);
    free(vq);
    free(vk);
    free(vv);
    free(slopes_v);
    bp_tensor_release(q);
    bp_tensor_release(k);
    bp_tensor_release(v);
    bp_tensor_release(slopes);
    bp_tensor_release(out);
}

static void child_kernels(void *arg) {
    (void)arg;
    bp_device *dev = NULL;
    CHILD_CHECK(bp_device_open("arm:0", &dev) == BP_OK);
    for (int i = 0; i < 3; i++) {
        bp_dtype dt = bp_test_float_dtypes[i];
        /* K above both K panels (96 f32, 128 bf16) with a tail; M and N past one output
         * tile (32 x 64) with partial tiles. */
        matmul_case(dev, dt, (bp_ref_shape){2, {70, 203}}, (bp_ref_shape){2, {203, 131}}, 0, 0,
                    10);
        /* Both transposed (strided panels), b's batch broadcast over a's. */
        matmul_case(dev, dt, (bp_ref_shape){3, {2, 45, 37}}, (bp_ref_shape){3, {1, 29, 45}}, 1,
                    1, 20);
        /* Head dim 200: four score chunks of 64, two output passes of 128. */
        sdpa_case(dev, dt, (bp_ref_sdpa_dims){1, 4, 2, 70, 75, 200},
                  (bp_sdpa_attrs){.causal = 1, .window = 50, .softcap = 3.0f}, true, 30);
        /* Partial query and key blocks, no attributes. */
        sdpa_case(dev, dt, (bp_ref_sdpa_dims){2, 2, 1, 33, 100, 72}, (bp_sdpa_attrs){0}, false,
                  40);
    }
}

/* The SVE length in bits a thread gets when it asks for `bits`. */
static void *try_length(void *arg) {
    unsigned *bits = arg;
    prctl(PR_SVE_SET_VL, *bits / 8u, 0, 0, 0);
    *bits = (unsigned)(prctl(PR_SVE_GET_VL, 0, 0, 0, 0) & PR_SVE_VL_LEN_MASK) * 8u;
    return NULL;
}

static bool cpu_runs_length(unsigned bits) {
    unsigned got = bits;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, try_length, &got), 0);
    pthread_join(t, NULL);
    return got == bits;
}

static void test_every_vector_length(void **state) {
    (void)state;
    if (!(getauxval(AT_HWCAP) & HWCAP_SVE)) {
        const char *env[] = {PLUGIN_PATH, "BP_BLAS=0", NULL};
        assert_int_equal(bp_test_run_child(child_kernels, NULL, env), 0);
        print_message("no SVE: the NEON kernels ran\n");
        return;
    }
    int lengths = 0;
    for (unsigned bits = 128; bits <= 2048; bits *= 2) {
        if (!cpu_runs_length(bits))
            continue;
        char var[32];
        snprintf(var, sizeof var, "BP_ARM_SVE_BITS=%u", bits);
        const char *env[] = {PLUGIN_PATH, "BP_BLAS=0", var, NULL};
        print_message("SVE at %u bits\n", bits);
        assert_int_equal(bp_test_run_child(child_kernels, NULL, env), 0);
        lengths++;
    }
    assert_true(lengths > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_vector_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
