/* The program of the selective-build test (selective_build.sh): traced against the full
 * library, then run against one built with BP_SELECTED_OPS from its trace.
 *
 *   selective_build_prog run       f32 add, mul, sum and matmul; checks the results
 *   selective_build_prog untraced  ops it never ran: must fail with the dispatcher's
 *                                  missing-kernel error (in a selective build)
 *
 * Both print the path of the libbackplane they run against. Exit 0 when as expected. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <backplane/backplane.h>

#define CHECK(expr)                                                                        \
    do {                                                                                   \
        bp_status st_ = (expr);                                                            \
        if (st_ != BP_OK) {                                                                \
            fprintf(stderr, "%s failed: %s: %s\n", #expr, bp_status_str(st_), bp_last_error()); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

static int run(bp_device *cpu) {
    const int64_t shape[2] = {2, 2};
    const float av[4] = {1, 2, 3, 4}, bv[4] = {5, 6, 7, 8};
    bp_tensor *a = NULL, *b = NULL, *sum = NULL, *prod = NULL, *red = NULL, *mm = NULL;
    CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 2, shape, av, &a));
    CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 2, shape, bv, &b));
    CHECK(bp_add(a, b, &sum));
    CHECK(bp_mul(sum, a, &prod));
    CHECK(bp_sum(prod, -1, 0, &red));
    CHECK(bp_matmul(a, b, 0, 0, &mm));
    float got_red[2], got_mm[4];
    CHECK(bp_tensor_to_host(red, got_red, sizeof got_red));
    CHECK(bp_tensor_to_host(mm, got_mm, sizeof got_mm));
    /* (a + b) * a summed over rows: [6+16, 30+48]; a @ b: [[19, 22], [43, 50]]. */
    const float want_red[2] = {22, 78}, want_mm[4] = {19, 22, 43, 50};
    for (int i = 0; i < 4; i++)
        if ((i < 2 && fabsf(got_red[i] - want_red[i]) > 1e-5f) ||
            fabsf(got_mm[i] - want_mm[i]) > 1e-5f) {
            fprintf(stderr, "wrong results\n");
            return 1;
        }
    bp_tensor *all[] = {a, b, sum, prod, red, mm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        bp_tensor_release(all[i]);
    printf("run: ok\n");
    return 0;
}

/* An op that was never traced, and a traced op with a dtype that was not. */
static int untraced(bp_device *cpu) {
    const int64_t shape[1] = {3};
    const float fv[3] = {1, 2, 3};
    const int32_t iv[3] = {1, 2, 3};
    bp_tensor *f = NULL, *i = NULL, *out = NULL;
    CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 1, shape, fv, &f));
    CHECK(bp_tensor_from_host(cpu, BP_DTYPE_I32, 1, shape, iv, &i));
    int rc = 0;
    bp_status st = bp_exp(f, &out);
    printf("exp f32: %s: %s\n", bp_status_str(st), st ? bp_last_error() : "");
    if (st != BP_ERR_UNSUPPORTED || !strstr(bp_last_error(), "no kernel for op 'exp' on cpu:0"))
        rc = 1;
    bp_tensor_release(out);
    out = NULL;
    st = bp_add(i, i, &out);
    printf("add i32: %s: %s\n", bp_status_str(st), st ? bp_last_error() : "");
    if (st != BP_ERR_UNSUPPORTED || !strstr(bp_last_error(), "dtypes with a kernel there: f32"))
        rc = 1;
    bp_tensor_release(out);
    bp_tensor_release(f);
    bp_tensor_release(i);
    return rc;
}

int main(int argc, char **argv) {
    Dl_info info;
    if (dladdr((void *)bp_version, &info) && info.dli_fname)
        printf("library: %s\n", info.dli_fname);
    bp_device *cpu = NULL;
    CHECK(bp_device_open("cpu", &cpu));
    if (argc == 2 && strcmp(argv[1], "run") == 0)
        return run(cpu);
    if (argc == 2 && strcmp(argv[1], "untraced") == 0)
        return untraced(cpu);
    fprintf(stderr, "usage: %s run|untraced\n", argv[0]);
    return 2;
}
