/* The dispatcher: op ids, kernel registration and priorities, the call record a kernel
 * receives, missing-kernel errors, the CPU fallback, and the BP_TRACE_OPS and
 * BP_PROFILE outputs (written at exit, so produced by children that exit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cJSON.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"
#include "op_check.h"

/* ---- kernels ---- */

static atomic_int count_a, count_b, count_c;

static bp_status count_kernel(const bp_kernel_call *call) {
    atomic_fetch_add((atomic_int *)call->kernel_data, 1);
    return BP_OK;
}

typedef struct test_attrs {
    int32_t mode;
    float gain;
} test_attrs;

/* What the capturing kernel saw: copies, since the record lives only during the call. */
static struct {
    bp_kernel_call call;
    char op_name[32];
    bp_tensor_desc descs[4];
    test_attrs attrs;
    bool had_attrs;
} seen;

static bp_status capture_kernel(const bp_kernel_call *call) {
    seen.call = *call;
    snprintf(seen.op_name, sizeof seen.op_name, "%s", call->op_name);
    for (int i = 0; i < call->n_inputs + call->n_outputs && i < 4; i++)
        seen.descs[i] = i < call->n_inputs ? *call->inputs[i] : *call->outputs[i - call->n_inputs];
    seen.had_attrs = call->attrs != NULL;
    if (call->attrs)
        seen.attrs = *(const test_attrs *)call->attrs;
    return BP_OK;
}

static bp_tensor *cpu_tensor(bp_dtype dtype, int ndim, const int64_t *shape) {
    bp_tensor *t = NULL;
    BP_ASSERT_OK(bp_tensor_empty(bp_test_cpu(), dtype, ndim, shape, &t));
    return t;
}

/* Dispatches `op` on the cpu with one input and one output of `dtype`. */
static bp_status dispatch_simple(bp_op_id op, bp_dtype dtype) {
    const int64_t shape[1] = {4};
    bp_tensor *in = cpu_tensor(dtype, 1, shape), *out = cpu_tensor(dtype, 1, shape);
    const bp_tensor_desc *ins[1] = {bp_tensor_kernel_desc(in)};
    const bp_tensor_desc *outs[1] = {bp_tensor_kernel_desc(out)};
    bp_op_call call = {.kernel = {.op = op, .dtype = dtype, .n_inputs = 1, .n_outputs = 1,
                                  .inputs = ins, .outputs = outs},
                       .device = bp_test_cpu()};
    bp_status st = bp_dispatch(&call);
    bp_tensor_release(in);
    bp_tensor_release(out);
    return st;
}

/* ---- files ---- */

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

static void temp_path(char *buf, size_t size, const char *suffix) {
    snprintf(buf, size, "/tmp/bp_test_dispatcher_%ld_%s", (long)getpid(), suffix);
    unlink(buf);
}

/* Sends this process's stderr to `path` until stderr_restore. */
static int stderr_to(const char *path) {
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    return saved;
}

static void stderr_restore(int saved) {
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static int count_occurrences(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- children: tracing and profiling are read once per process, at start-up ---- */

/* Traced: t_traced on cpu (f32 and i32, the i32 one twice) and on testdev (f32). */
static void trace_child(void *arg) {
    (void)arg;
    CHILD_CHECK(bp_plugin_load(BP_TEST_PLUGIN_DIR "/good/libbp_testdev.so") == BP_OK);
    bp_op_id op;
    static atomic_int calls;
    CHILD_CHECK(bp_op_define("t_traced", 0, &op) == BP_OK);
    CHILD_CHECK(bp_kernel_register("cpu", "t_traced", BP_DTYPE_F32, count_kernel, &calls, 0) == BP_OK);
    CHILD_CHECK(bp_kernel_register("cpu", "t_traced", BP_DTYPE_I32, count_kernel, &calls, 0) == BP_OK);
    CHILD_CHECK(bp_kernel_register("tdev", "t_traced", BP_DTYPE_F32, count_kernel, &calls, 0) == BP_OK);
    CHILD_CHECK(dispatch_simple(op, BP_DTYPE_I32) == BP_OK);
    CHILD_CHECK(dispatch_simple(op, BP_DTYPE_F32) == BP_OK);
    CHILD_CHECK(dispatch_simple(op, BP_DTYPE_I32) == BP_OK);
    bp_device *td = NULL;
    CHILD_CHECK(bp_device_open("testdev:1", &td) == BP_OK);
    const int64_t shape[1] = {2};
    bp_tensor *in = NULL, *out = NULL;
    CHILD_CHECK(bp_tensor_empty(td, BP_DTYPE_F32, 1, shape, &in) == BP_OK);
    CHILD_CHECK(bp_tensor_empty(td, BP_DTYPE_F32, 1, shape, &out) == BP_OK);
    const bp_tensor_desc *ins[1] = {bp_tensor_kernel_desc(in)};
    const bp_tensor_desc *outs[1] = {bp_tensor_kernel_desc(out)};
    bp_op_call call = {.kernel = {.op = op, .dtype = BP_DTYPE_F32, .n_inputs = 1,
                                  .n_outputs = 1, .inputs = ins, .outputs = outs},
                       .device = td};
    CHILD_CHECK(bp_dispatch(&call) == BP_OK);
    /* No kernel: a failed dispatch is not a use. */
    CHILD_CHECK(dispatch_simple(op, BP_DTYPE_BF16) == BP_ERR_UNSUPPORTED);
    CHILD_CHECK(atomic_load(&calls) == 4);
    bp_tensor_release(in);
    bp_tensor_release(out);
    exit(0); /* the trace is written at exit */
}

static void test_trace_file(void **state) {
    (void)state;
    char path[256], env[300];
    temp_path(path, sizeof path, "trace.yaml");
    snprintf(env, sizeof env, "BP_TRACE_OPS=%s", path);
    const char *const child_env[] = {env, NULL};
    assert_int_equal(bp_test_run_child(trace_child, NULL, child_env), 0);

    char *text = read_file(path);
    assert_non_null(text);
    assert_true(strncmp(text, "# backplane selected ops, written by BP_TRACE_OPS\noperators:\n",
                        60) == 0);
    if (!bp_test_contains(text, "  t_traced:\n    cpu: [f32, i32]\n    testdev: [f32]\n"))
        fail_msg("trace file lacks the t_traced block:\n%s", text);
    /* Every line: an op ("  name:") in name order, or a device type entry below it. */
    char prev[64] = "";
    int ops = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        if (line[0] == '#' || strcmp(line, "operators:") == 0)
            continue;
        if (sscanf(line, "  %63[a-z0-9_.]:", name) == 1 && line[2] != ' ') {
            assert_true(strcmp(prev, name) < 0);
            snprintf(prev, sizeof prev, "%s", name);
            ops++;
        } else {
            char type[64], dtypes[128];
            if (sscanf(line, "    %63[a-z0-9_]: [%127[^]]]", type, dtypes) != 2)
                fail_msg("unexpected trace line '%s'", line);
        }
    }
    assert_true(ops >= 1);
    free(text);
    unlink(path);
}

/* BP_TRACE_OPS naming a directory that does not exist: a warning at start, no file. */
static void unwritable_trace_child(void *arg) {
    const char *log = arg;
    int saved = stderr_to(log);
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    stderr_restore(saved);
    exit(0);
}

static void test_trace_unwritable(void **state) {
    (void)state;
    char log[256];
    temp_path(log, sizeof log, "trace.log");
    const char *const env[] = {"BP_TRACE_OPS=/nonexistent-bp-dir/trace.yaml", NULL};
    assert_int_equal(bp_test_run_child(unwritable_trace_child, log, env), 0);
    char *text = read_file(log);
    assert_non_null(text);
    if (!bp_test_contains(text, "BP_TRACE_OPS=/nonexistent-bp-dir/trace.yaml cannot be written") ||
        !bp_test_contains(text, "tracing is off"))
        fail_msg("no warning for the unwritable trace path; stderr was:\n%s", text);
    free(text);
    unlink(log);
    struct stat st;
    assert_int_not_equal(stat("/nonexistent-bp-dir/trace.yaml", &st), 0);
}

enum { PROFILED_CALLS = 5000 }; /* more than the profiler's buffer: resolves mid-run */

static void profile_child(void *arg) {
    (void)arg;
    CHILD_CHECK(bp_plugin_load(BP_TEST_PLUGIN_DIR "/good/libbp_testdev.so") == BP_OK);
    bp_op_id op;
    static atomic_int calls;
    CHILD_CHECK(bp_op_define("t_profiled", 0, &op) == BP_OK);
    CHILD_CHECK(bp_kernel_register("cpu", "t_profiled", BP_DTYPE_F32, count_kernel, &calls, 0) == BP_OK);
    CHILD_CHECK(bp_kernel_register("testdev", "t_profiled", BP_DTYPE_I8, count_kernel, &calls, 0) == BP_OK);
    bp_device *cpu = NULL, *td = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    CHILD_CHECK(bp_device_open("testdev:0", &td) == BP_OK);
    bp_stream *side = NULL;
    CHILD_CHECK(bp_stream_create(cpu, 0, &side) == BP_OK);
    const int64_t a_shape[2] = {2, 3}, b_shape[1] = {5};
    bp_tensor *a = NULL, *b = NULL, *c = NULL;
    CHILD_CHECK(bp_tensor_empty(cpu, BP_DTYPE_F32, 2, a_shape, &a) == BP_OK);
    CHILD_CHECK(bp_tensor_empty(cpu, BP_DTYPE_F32, 1, b_shape, &b) == BP_OK);
    CHILD_CHECK(bp_tensor_empty(td, BP_DTYPE_I8, 1, b_shape, &c) == BP_OK);
    const bp_tensor_desc *ad[1] = {bp_tensor_kernel_desc(a)}, *bd[1] = {bp_tensor_kernel_desc(b)};
    const bp_tensor_desc *cd[1] = {bp_tensor_kernel_desc(c)};
    bp_op_call on_cpu = {.kernel = {.op = op, .dtype = BP_DTYPE_F32, .n_inputs = 1,
                                    .n_outputs = 1, .inputs = ad, .outputs = bd},
                         .device = cpu};
    for (int i = 0; i < PROFILED_CALLS; i++) {
        on_cpu.stream = i % 2 ? side : NULL;
        CHILD_CHECK(bp_dispatch(&on_cpu) == BP_OK);
    }
    bp_op_call on_td = {.kernel = {.op = op, .dtype = BP_DTYPE_I8, .n_inputs = 1,
                                   .n_outputs = 1, .inputs = cd, .outputs = cd},
                        .device = td};
    CHILD_CHECK(bp_dispatch(&on_td) == BP_OK);
    CHILD_CHECK(atomic_load(&calls) == PROFILED_CALLS + 1);
    /* A forked child that dispatches and exits adds nothing to the file. */
    fflush(NULL);
    pid_t pid = fork();
    CHILD_CHECK(pid >= 0);
    if (pid == 0) {
        on_cpu.stream = NULL;
        for (int i = 0; i < 10; i++)
            bp_dispatch(&on_cpu);
        exit(0);
    }
    int status = -1;
    CHILD_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(c);
    exit(0); /* the profile is completed at exit (side stays alive until then) */
}

static const char *json_str(const cJSON *obj, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static void check_shape(const cJSON *shape, const int64_t *want, int ndim) {
    assert_true(cJSON_IsArray(shape));
    assert_int_equal(cJSON_GetArraySize(shape), ndim);
    for (int d = 0; d < ndim; d++)
        assert_int_equal((int64_t)cJSON_GetArrayItem(shape, d)->valuedouble, want[d]);
}

static void test_profile_json(void **state) {
    (void)state;
    char path[256], env[300];
    temp_path(path, sizeof path, "profile.json");
    snprintf(env, sizeof env, "BP_PROFILE=%s", path);
    const char *const child_env[] = {env, NULL};
    assert_int_equal(bp_test_run_child(profile_child, NULL, child_env), 0);

    char *text = read_file(path);
    assert_non_null(text);
    cJSON *events = cJSON_Parse(text);
    if (!cJSON_IsArray(events))
        fail_msg("BP_PROFILE output is not a JSON array: %.200s", text);
    int on_cpu = 0, on_td = 0, thread_names = 0;
    double tids_seen[2] = {-1, -1};
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events) {
        const char *ph = json_str(ev, "ph");
        assert_non_null(ph);
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(ev, "pid")));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(ev, "tid")));
        if (strcmp(ph, "M") == 0) {
            thread_names += strcmp(json_str(ev, "name"), "thread_name") == 0;
            continue;
        }
        assert_string_equal(ph, "X");
        assert_string_equal(json_str(ev, "name"), "t_profiled");
        assert_string_equal(json_str(ev, "cat"), "op");
        const cJSON *ts = cJSON_GetObjectItem(ev, "ts"), *dur = cJSON_GetObjectItem(ev, "dur");
        assert_true(cJSON_IsNumber(ts) && cJSON_IsNumber(dur));
        assert_true(dur->valuedouble >= 0);
        const cJSON *args = cJSON_GetObjectItem(ev, "args");
        assert_true(cJSON_IsObject(args));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(args, "stream")));
        const cJSON *shapes = cJSON_GetObjectItem(args, "shapes");
        assert_true(cJSON_IsArray(shapes));
        assert_int_equal(cJSON_GetArraySize(shapes), 2);
        const char *device = json_str(args, "device");
        assert_non_null(device);
        const int64_t a_shape[2] = {2, 3}, b_shape[1] = {5};
        if (strcmp(device, "cpu:0") == 0) {
            assert_string_equal(json_str(args, "dtype"), "f32");
            check_shape(cJSON_GetArrayItem(shapes, 0), a_shape, 2);
            check_shape(cJSON_GetArrayItem(shapes, 1), b_shape, 1);
            double tid = cJSON_GetObjectItem(ev, "tid")->valuedouble;
            if (tids_seen[0] < 0 || tids_seen[0] == tid)
                tids_seen[0] = tid;
            else
                tids_seen[1] = tid;
            on_cpu++;
        } else {
            assert_string_equal(device, "testdev:0");
            assert_string_equal(json_str(args, "dtype"), "i8");
            check_shape(cJSON_GetArrayItem(shapes, 0), b_shape, 1);
            on_td++;
        }
    }
    assert_int_equal(on_cpu, PROFILED_CALLS);
    assert_int_equal(on_td, 1);
    assert_true(tids_seen[1] >= 0 && tids_seen[0] != tids_seen[1]); /* two cpu streams */
    assert_int_equal(thread_names, 3);
    cJSON_Delete(events);
    free(text);
    unlink(path);
}

/* Defining an op before anything else has started the library: the built-in ops must
 * keep their ids (bp_add must still run "add"). */
static void define_first_child(void *arg) {
    (void)arg;
    bp_op_id mine = -1, add = -1;
    CHILD_CHECK(bp_op_define("t_first", 0, &mine) == BP_OK);
    CHILD_CHECK(bp_op_find("add", &add) == BP_OK);
    CHILD_CHECK(mine != add);
    CHILD_CHECK(strcmp(bp_op_name(mine), "t_first") == 0);
    bp_device *cpu = NULL;
    CHILD_CHECK(bp_device_open("cpu", &cpu) == BP_OK);
    const int64_t shape[1] = {2};
    const float v[2] = {1, 2};
    bp_tensor *a = NULL, *out = NULL;
    CHILD_CHECK(bp_tensor_from_host(cpu, BP_DTYPE_F32, 1, shape, v, &a) == BP_OK);
    CHILD_CHECK(bp_add(a, a, &out) == BP_OK);
    float got[2] = {0};
    CHILD_CHECK(bp_tensor_to_host(out, got, sizeof got) == BP_OK);
    CHILD_CHECK(got[0] == 2 && got[1] == 4);
    bp_tensor_release(a);
    bp_tensor_release(out);
}

static void test_define_before_init(void **state) {
    (void)state;
    assert_int_equal(bp_test_run_child(define_first_child, NULL, NULL), 0);
}

/* ---- ops ---- */

static void test_op_define_and_find(void **state) {
    (void)state;
    bp_op_id id = -1, again = -1, found = -1;
    BP_ASSERT_OK(bp_op_define("t_defined", sizeof(test_attrs), &id));
    BP_ASSERT_OK(bp_op_define("t_defined", sizeof(test_attrs), &again));
    assert_int_equal(id, again);
    BP_ASSERT_OK(bp_op_find("t_defined", &found));
    assert_int_equal(id, found);
    assert_string_equal(bp_op_name(id), "t_defined");
    BP_ASSERT_ERR(bp_op_define("t_defined", 4, &again), BP_ERR_INVALID_ARGUMENT,
                  "op 't_defined' is already defined with 8 bytes of attributes, not 4");

    BP_ASSERT_ERR(bp_op_find("t_never_defined", &found), BP_ERR_NOT_FOUND,
                  "unknown op 't_never_defined'");
    BP_ASSERT_OK(bp_op_find("add", &found));
    assert_string_equal(bp_op_name(found), "add");
    assert_null(bp_op_name(-1));
    assert_null(bp_op_name(1 << 20));

    const char *bad[] = {"", "Upper", "has space", "dash-ed", "x23456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        BP_ASSERT_ERR(bp_op_define(bad[i], 0, &id), BP_ERR_INVALID_ARGUMENT, "op names are");
    BP_ASSERT_ERR(bp_op_define(NULL, 0, &id), BP_ERR_INVALID_ARGUMENT, "op names are");
    BP_ASSERT_ERR(bp_op_define("t_ok", 0, NULL), BP_ERR_INVALID_ARGUMENT, "out_op is NULL");
    BP_ASSERT_OK(bp_op_define("t.dotted_9", 0, &id)); /* '.', digits and '_' are allowed */
}

/* ---- registration ---- */

static void test_kernel_priorities(void **state) {
    (void)state;
    bp_op_id op;
    BP_ASSERT_OK(bp_op_define("t_prio", 0, &op));
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_prio", BP_DTYPE_F32, count_kernel, &count_a, 0));
    BP_ASSERT_OK(dispatch_simple(op, BP_DTYPE_F32));
    assert_int_equal(atomic_load(&count_a), 1);

    /* A higher priority replaces it. */
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_prio", BP_DTYPE_F32, count_kernel, &count_b, 5));
    BP_ASSERT_OK(dispatch_simple(op, BP_DTYPE_F32));
    assert_int_equal(atomic_load(&count_a), 1);
    assert_int_equal(atomic_load(&count_b), 1);

    /* The same priority twice is an error; a lower one is ignored. */
    BP_ASSERT_ERR(bp_kernel_register("cpu", "t_prio", BP_DTYPE_F32, count_kernel, &count_c, 5),
                  BP_ERR_INVALID_ARGUMENT,
                  "cpu already has a kernel for op 't_prio' and dtype f32 at priority 5");
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_prio", BP_DTYPE_F32, count_kernel, &count_c, 1));
    BP_ASSERT_OK(dispatch_simple(op, BP_DTYPE_F32));
    assert_int_equal(atomic_load(&count_b), 2);
    assert_int_equal(atomic_load(&count_c), 0);

    /* Priorities are per dtype. */
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_prio", BP_DTYPE_I64, count_kernel, &count_c, -3));
    BP_ASSERT_OK(dispatch_simple(op, BP_DTYPE_I64));
    assert_int_equal(atomic_load(&count_c), 1);
    assert_int_equal(bp_kernel_dtypes(op, bp_test_cpu()),
                     BP_DTYPE_BIT(BP_DTYPE_F32) | BP_DTYPE_BIT(BP_DTYPE_I64));
}

static void test_register_errors(void **state) {
    (void)state;
    bp_op_id op;
    BP_ASSERT_OK(bp_op_define("t_reg", 0, &op));
    BP_ASSERT_ERR(bp_kernel_register("nosuchdev", "t_reg", BP_DTYPE_F32, count_kernel, NULL, 0),
                  BP_ERR_NOT_FOUND, "no loaded backend 'nosuchdev'");
    BP_ASSERT_ERR(bp_kernel_register("cpu", "t_not_an_op", BP_DTYPE_F32, count_kernel, NULL, 0),
                  BP_ERR_NOT_FOUND, "unknown op 't_not_an_op'");
    BP_ASSERT_ERR(bp_kernel_register("cpu", "t_reg", (bp_dtype)BP_DTYPE_COUNT, count_kernel,
                                     NULL, 0),
                  BP_ERR_INVALID_ARGUMENT, "invalid dtype");
    BP_ASSERT_ERR(bp_kernel_register("cpu", "t_reg", BP_DTYPE_F32, NULL, NULL, 0),
                  BP_ERR_INVALID_ARGUMENT, "kernel function is NULL");
    BP_ASSERT_ERR(bp_kernel_register(NULL, "t_reg", BP_DTYPE_F32, count_kernel, NULL, 0),
                  BP_ERR_INVALID_ARGUMENT, "backend name is NULL");
    assert_int_equal(bp_kernel_dtypes(op, bp_test_cpu()), 0);
}

/* ---- dispatch ---- */

static void test_dispatch_call_record(void **state) {
    (void)state;
    bp_op_id op;
    static int kernel_data;
    BP_ASSERT_OK(bp_op_define("t_record", sizeof(test_attrs), &op));
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_record", BP_DTYPE_F32, capture_kernel,
                                    &kernel_data, 0));
    const int64_t shape[2] = {2, 3};
    bp_tensor *a = cpu_tensor(BP_DTYPE_F32, 2, shape), *base = cpu_tensor(BP_DTYPE_F32, 2, shape);
    bp_tensor *t = NULL, *out = cpu_tensor(BP_DTYPE_F32, 2, shape);
    BP_ASSERT_OK(bp_tensor_transpose(base, 0, 1, &t)); /* [3, 2], strides [1, 3] */
    const bp_tensor_desc *inputs[2] = {bp_tensor_kernel_desc(a), bp_tensor_kernel_desc(t)};
    const bp_tensor_desc *outputs[1] = {bp_tensor_kernel_desc(out)};
    test_attrs attrs = {.mode = 7, .gain = 0.5f};
    bp_op_call call = {.kernel = {.op = op, .dtype = BP_DTYPE_F32, .n_inputs = 2,
                                  .n_outputs = 1, .inputs = inputs, .outputs = outputs,
                                  .attrs = &attrs},
                       .device = bp_test_cpu()};
    memset(&seen, 0, sizeof seen);
    BP_ASSERT_OK(bp_dispatch(&call));

    assert_true(seen.call.struct_size >= sizeof(bp_kernel_call));
    assert_int_equal(seen.call.op, op);
    assert_string_equal(seen.op_name, "t_record");
    assert_int_equal(seen.call.dtype, BP_DTYPE_F32);
    assert_non_null(seen.call.device);
    assert_non_null(seen.call.stream);
    assert_ptr_equal(seen.call.kernel_data, &kernel_data);
    assert_int_equal(seen.call.n_inputs, 2);
    assert_int_equal(seen.call.n_outputs, 1);
    assert_true(seen.had_attrs);
    assert_int_equal(seen.attrs.mode, 7);
    assert_true(seen.attrs.gain == 0.5f);
    bp_tensor *all[3] = {a, t, out};
    for (int i = 0; i < 3; i++) {
        const bp_tensor_desc *d = &seen.descs[i];
        assert_ptr_equal(d->data, bp_tensor_data(all[i]));
        assert_int_equal(d->dtype, BP_DTYPE_F32);
        assert_int_equal(d->ndim, bp_tensor_ndim(all[i]));
        for (int k = 0; k < d->ndim; k++) {
            assert_int_equal(d->shape[k], bp_tensor_size(all[i], k));
            assert_int_equal(d->strides[k], bp_tensor_stride(all[i], k));
        }
    }
    assert_int_equal(seen.descs[1].shape[0], 3);
    assert_int_equal(seen.descs[1].strides[0], 1);
    assert_int_equal(seen.descs[1].strides[1], 3);

    /* No attributes: NULL reaches the kernel. An explicit stream reaches it too. */
    bp_stream *side = NULL, *dflt = NULL;
    BP_ASSERT_OK(bp_stream_create(bp_test_cpu(), 0, &side));
    BP_ASSERT_OK(bp_stream_default(bp_test_cpu(), &dflt));
    void *default_handle = seen.call.stream;
    call.kernel.attrs = NULL;
    call.stream = side;
    BP_ASSERT_OK(bp_dispatch(&call));
    assert_false(seen.had_attrs);
    assert_non_null(seen.call.stream);
    assert_ptr_not_equal(seen.call.stream, default_handle);
    BP_ASSERT_OK(bp_stream_destroy(side));

    /* Many tensors, and the current stream resolved by the dispatcher. */
    const bp_tensor_desc *many[12];
    for (int i = 0; i < 12; i++)
        many[i] = bp_tensor_kernel_desc(a);
    call.kernel.n_inputs = 11;
    call.kernel.inputs = many;
    call.stream = NULL;
    BP_ASSERT_OK(bp_dispatch(&call));
    assert_int_equal(seen.call.n_inputs, 11);
    assert_ptr_equal(seen.descs[3].data, bp_tensor_data(a));

    bp_tensor_release(a);
    bp_tensor_release(base);
    bp_tensor_release(t);
    bp_tensor_release(out);
}

static void test_dispatch_bad_calls(void **state) {
    (void)state;
    BP_ASSERT_ERR(bp_dispatch(NULL), BP_ERR_INVALID_ARGUMENT, "call is NULL");
    bp_op_call call = {.kernel = {.op = 1 << 20, .dtype = BP_DTYPE_F32}, .device = bp_test_cpu()};
    BP_ASSERT_ERR(bp_dispatch(&call), BP_ERR_INVALID_ARGUMENT, "invalid op id");
    BP_ASSERT_OK(bp_op_find("add", &call.kernel.op));
    call.device = NULL;
    BP_ASSERT_ERR(bp_dispatch(&call), BP_ERR_INVALID_ARGUMENT, "device is NULL");
    call.device = bp_test_cpu();
    call.kernel.dtype = (bp_dtype)-1;
    BP_ASSERT_ERR(bp_dispatch(&call), BP_ERR_INVALID_ARGUMENT, "invalid dtype");
    call.kernel.dtype = BP_DTYPE_F32;
    call.kernel.n_inputs = -1;
    BP_ASSERT_ERR(bp_dispatch(&call), BP_ERR_INVALID_ARGUMENT, "tensor count");
    /* NULL descriptors: an array missing, or one entry of it, named by index. */
    call.kernel.n_inputs = 2;
    call.kernel.n_outputs = 1;
    BP_ASSERT_ERR(bp_dispatch(&call), BP_ERR_INVALID_ARGUMENT, "add: the inputs array is NULL");
    const int64_t shape[1] = {3};
    bp_tensor *a = cpu_tensor(BP_DTYPE_F32, 1, shape);
    const bp_tensor_desc *ins[2] = {bp_tensor_kernel_desc(a), NULL};
    const bp_tensor_desc *outs[1] = {bp_tensor_kernel_desc(a)};
    call.kernel.inputs = ins;
    call.kernel.outputs = outs;
    BP_ASSERT_ERR(bp_dispatch(&call), BP_ERR_INVALID_ARGUMENT,
                  "add: the descriptor of tensor 1 is NULL");
    assert_null(bp_tensor_kernel_desc(NULL));
    bp_tensor_release(a);
}

static void test_missing_kernel_message(void **state) {
    (void)state;
    bp_op_id op, none;
    BP_ASSERT_OK(bp_op_define("t_partial", 0, &op));
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_partial", BP_DTYPE_I32, count_kernel, &count_a, 0));
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_partial", BP_DTYPE_F32, count_kernel, &count_a, 0));
    bp_status st = dispatch_simple(op, BP_DTYPE_BF16);
    assert_int_equal(st, BP_ERR_UNSUPPORTED);
    const char *msg = bp_last_error();
    const char *want[] = {"'t_partial'", "cpu:0", "'cpu'", "bf16", "f32, i32"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!bp_test_contains(msg, want[i]))
            fail_msg("missing-kernel message '%s' lacks '%s'", msg, want[i]);

    BP_ASSERT_OK(bp_op_define("t_no_kernels", 0, &none));
    BP_ASSERT_ERR(dispatch_simple(none, BP_DTYPE_F32), BP_ERR_UNSUPPORTED,
                  "no kernel for op 't_no_kernels' on cpu:0 (device type 'cpu') with dtype f32; "
                  "dtypes with a kernel there: none");
}

/* Registration and dispatch from several threads at once. */
enum { THREADS = 4, CALLS_PER_THREAD = 2000 };
static bp_op_id threaded_op;
static atomic_int count_threads;

static void *dispatch_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < CALLS_PER_THREAD; i++)
        if (dispatch_simple(threaded_op, BP_DTYPE_F32) != BP_OK)
            return (void *)1;
    return NULL;
}

static void test_dispatch_threads(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_op_define("t_threads", 0, &threaded_op));
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_threads", BP_DTYPE_F32, count_kernel,
                                    &count_threads, 0));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, dispatch_thread, NULL), 0);
    /* Replacing the kernel while they run: each call uses one of the two. */
    BP_ASSERT_OK(bp_kernel_register("cpu", "t_threads", BP_DTYPE_F32, count_kernel,
                                    &count_threads, 1));
    for (int i = 0; i < THREADS; i++) {
        void *rc = NULL;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    assert_int_equal(atomic_load(&count_threads), THREADS * CALLS_PER_THREAD);
}

/* ---- CPU fallback (testdev registers no kernels) ---- */

static void test_cpu_fallback(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_plugin_load(BP_TEST_PLUGIN_DIR "/good/libbp_testdev.so"));
    bp_device *td = NULL;
    BP_ASSERT_OK(bp_device_open("testdev:0", &td));
    const int64_t shape[2] = {2, 3};
    const float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {10, 20, 30, 40, 50, 60};
    bp_tensor *a = NULL, *b = NULL, *out = NULL;
    BP_ASSERT_OK(bp_tensor_from_host(td, BP_DTYPE_F32, 2, shape, av, &a));
    BP_ASSERT_OK(bp_tensor_from_host(td, BP_DTYPE_F32, 2, shape, bv, &b));

    bp_set_cpu_fallback(false);
    BP_ASSERT_ERR(bp_add(a, b, &out), BP_ERR_UNSUPPORTED,
                  "no kernel for op 'add' on testdev:0 (device type 'testdev') with dtype f32; "
                  "dtypes with a kernel there: none (set BP_CPU_FALLBACK=1");
    assert_null(out);

    char log[256];
    temp_path(log, sizeof log, "fallback.log");
    bp_set_cpu_fallback(true);
    int saved = stderr_to(log);
    bp_status st1 = bp_add(a, b, &out);
    bp_tensor *out2 = NULL;
    bp_status st2 = bp_add(out, a, &out2);
    stderr_restore(saved);
    bp_set_cpu_fallback(false);
    BP_ASSERT_OK(st1);
    BP_ASSERT_OK(st2);
    assert_ptr_equal(bp_tensor_device(out), td);
    float got[6], got2[6];
    BP_ASSERT_OK(bp_tensor_to_host(out, got, sizeof got));
    BP_ASSERT_OK(bp_tensor_to_host(out2, got2, sizeof got2));
    for (int i = 0; i < 6; i++) {
        assert_true(got[i] == av[i] + bv[i]);
        assert_true(got2[i] == 2 * av[i] + bv[i]);
    }
    char *text = read_file(log);
    assert_non_null(text);
    if (count_occurrences(text, "op 'add' has no kernel on testdev:0") != 1)
        fail_msg("expected one fallback warning for 'add', stderr was:\n%s", text);
    free(text);
    unlink(log);
    bp_tensor_release(a);
    bp_tensor_release(b);
    bp_tensor_release(out);
    bp_tensor_release(out2);
}

/* The parent starts the library before its tests (test_define_before_init covers the
 * other order). */
static int start_library(void **state) {
    (void)state;
    bp_device *cpu = NULL;
    return bp_device_open("cpu", &cpu) == BP_OK ? 0 : -1;
}

int main(void) {
    /* Children first: they must initialise the registry themselves. */
    const struct CMUnitTest children[] = {
        cmocka_unit_test(test_trace_file),
        cmocka_unit_test(test_trace_unwritable),
        cmocka_unit_test(test_profile_json),
        cmocka_unit_test(test_define_before_init),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_define_and_find),
        cmocka_unit_test(test_kernel_priorities),
        cmocka_unit_test(test_register_errors),
        cmocka_unit_test(test_dispatch_call_record),
        cmocka_unit_test(test_dispatch_bad_calls),
        cmocka_unit_test(test_missing_kernel_message),
        cmocka_unit_test(test_dispatch_threads),
        cmocka_unit_test(test_cpu_fallback),
    };
    int failed = cmocka_run_group_tests_name("dispatcher (children)", children, NULL, NULL);
    return failed | cmocka_run_group_tests_name("dispatcher", tests, start_library, NULL);
}
