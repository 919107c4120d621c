/* Context hints: parsing, validation and its messages, per-thread nested scopes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static bp_hint_values effective(void) {
    bp_hint_values v;
    memset(&v, 0xab, sizeof v); /* the call must write every field */
    v.struct_size = sizeof v;
    BP_ASSERT_OK(bp_hints_effective(&v));
    return v;
}

static bp_hint_entry entry(int index) {
    bp_hint_entry e = {.struct_size = sizeof e};
    BP_ASSERT_OK(bp_hints_entry(index, &e));
    return e;
}

static void assert_unset(const bp_hint_values *v) {
    assert_int_equal(v->order, BP_ORDER_UNSET);
    assert_int_equal(v->has_group_id, 0);
    assert_int_equal(v->has_max_parallel, 0);
    assert_int_equal(v->has_mem_budget, 0);
}

/* The push fails with `needle` in the message and leaves the scopes as they were. */
static void push_fails(const char *json, const char *needle) {
    int depth = bp_hints_depth();
    BP_ASSERT_ERR(bp_hints_push(json), BP_ERR_INVALID_ARGUMENT, needle);
    assert_int_equal(bp_hints_depth(), depth);
    BP_ASSERT_ERR(bp_hints_validate(json), BP_ERR_INVALID_ARGUMENT, needle);
}

static void test_null_and_empty_text_mean_no_hints(void **state) {
    (void)state;
    const char *texts[] = {NULL, "", "  \n\t ", "{}", " { } "};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        BP_ASSERT_OK(bp_hints_validate(texts[i]));
        BP_ASSERT_OK(bp_hints_push(texts[i]));
        assert_int_equal(bp_hints_depth(), 1);
        assert_int_equal(bp_hints_count(), 0);
        bp_hint_values v = effective();
        assert_unset(&v);
        BP_ASSERT_OK(bp_hints_pop());
    }
    assert_int_equal(bp_hints_depth(), 0);
    bp_hint_values v = effective();
    assert_unset(&v);
    assert_int_equal(bp_hints_count(), 0);
}

static void test_every_key(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_hints_push(
        "{\"order\": \"auto\", \"group_id\": -7, \"max_parallel\": 4, \"mem_budget_mb\": 512.5}"));
    bp_hint_values v = effective();
    assert_int_equal(v.struct_size, sizeof v);
    assert_int_equal(v.order, BP_ORDER_AUTO);
    assert_int_equal(v.has_group_id, 1);
    assert_int_equal(v.group_id, -7);
    assert_int_equal(v.has_max_parallel, 1);
    assert_int_equal(v.max_parallel, 4);
    assert_int_equal(v.has_mem_budget, 1);
    assert_true(v.mem_budget_mb == 512.5);

    assert_int_equal(bp_hints_count(), 4);
    const char *keys[] = {"order", "group_id", "max_parallel", "mem_budget_mb"};
    const char *values[] = {"\"auto\"", "-7", "4", "512.5"};
    for (int i = 0; i < 4; i++) {
        bp_hint_entry e = entry(i);
        assert_string_equal(e.key, keys[i]);
        assert_string_equal(e.value, values[i]);
        assert_int_equal(e.scope_depth, 1);
        assert_int_equal(e.known, 1);
        assert_int_equal(e.disposition, BP_HINT_PENDING);
        assert_string_equal(e.reason, "");
    }
    BP_ASSERT_OK(bp_hints_pop());

    const struct {
        const char *text;
        bp_schedule_order order;
    } orders[] = {{"{\"order\":\"bfs\"}", BP_ORDER_BFS},
                  {"{\"order\":\"dfs\"}", BP_ORDER_DFS},
                  {"{\"order\":\"strict\"}", BP_ORDER_STRICT},
                  {"{\"order\":\"auto\"}", BP_ORDER_AUTO}};
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        BP_ASSERT_OK(bp_hints_push(orders[i].text));
        assert_int_equal(effective().order, orders[i].order);
        BP_ASSERT_OK(bp_hints_pop());
    }

    /* Integers may be written as any integral JSON number; the budget may be 0. */
    BP_ASSERT_OK(bp_hints_push("{\"group_id\": 1e3, \"max_parallel\": 2.0, \"mem_budget_mb\": 0}"));
    v = effective();
    assert_int_equal(v.group_id, 1000);
    assert_int_equal(v.max_parallel, 2);
    assert_int_equal(v.has_mem_budget, 1);
    assert_true(v.mem_budget_mb == 0.0);
    BP_ASSERT_OK(bp_hints_pop());
    BP_ASSERT_OK(bp_hints_validate("{\"group_id\": 9007199254740992}"));

    assert_string_equal(bp_schedule_order_name(BP_ORDER_UNSET), "unset");
    assert_string_equal(bp_schedule_order_name(BP_ORDER_BFS), "bfs");
    assert_string_equal(bp_schedule_order_name(BP_ORDER_DFS), "dfs");
    assert_string_equal(bp_schedule_order_name(BP_ORDER_STRICT), "strict");
    assert_string_equal(bp_schedule_order_name(BP_ORDER_AUTO), "auto");
    assert_string_equal(bp_schedule_order_name((bp_schedule_order)99), "?");
}

static void test_schedule_policy_is_a_synonym_of_strict(void **state) {
    (void)state;
    /* The seed's hint, as the Gaudi bridge writes it. */
    BP_ASSERT_OK(bp_hints_push("{\"schedule_policy\": \"strict\", \"group_id\": 0}"));
    bp_hint_values v = effective();
    assert_int_equal(v.order, BP_ORDER_STRICT);
    assert_int_equal(v.has_group_id, 1);
    assert_int_equal(v.group_id, 0);
    bp_hint_entry e = entry(0);
    assert_string_equal(e.key, "schedule_policy");
    assert_int_equal(e.known, 1);
    BP_ASSERT_OK(bp_hints_pop());

    /* Both keys, agreeing: fine, and both are listed. */
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"strict\", \"schedule_policy\": \"strict\"}"));
    assert_int_equal(effective().order, BP_ORDER_STRICT);
    assert_int_equal(bp_hints_count(), 2);
    BP_ASSERT_OK(bp_hints_pop());

    /* Disagreeing: an error naming both. */
    push_fails("{\"order\": \"bfs\", \"schedule_policy\": \"strict\"}",
               "'order' is 'bfs' but 'schedule_policy' is 'strict'");
    push_fails("{\"schedule_policy\": \"strict\", \"order\": \"auto\"}",
               "'order' is 'auto' but 'schedule_policy'");
    /* Other policy values: the error lists what is accepted. */
    push_fails("{\"schedule_policy\": \"bfs\"}",
               "key 'schedule_policy' has unsupported value 'bfs'; accepted: strict");
    push_fails("{\"schedule_policy\": 1}", "key 'schedule_policy' must be a string, got number");
}

static void test_unknown_keys_are_kept_and_reported_ignored(void **state) {
    (void)state;
    const char *text = "{\"stream\": [1, 2], \"order\": \"dfs\", \"slicing\": {\"x\": true, "
                       "\"y\": null}, \"Order\": \"bfs\"}";
    BP_ASSERT_OK(bp_hints_validate(text));
    BP_ASSERT_OK(bp_hints_push(text));
    assert_int_equal(effective().order, BP_ORDER_DFS); /* keys are case-sensitive */
    assert_int_equal(bp_hints_count(), 4);
    const char *keys[] = {"stream", "order", "slicing", "Order"};
    const char *values[] = {"[1,2]", "\"dfs\"", "{\"x\":true,\"y\":null}", "\"bfs\""};
    const int known[] = {0, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        bp_hint_entry e = entry(i);
        assert_string_equal(e.key, keys[i]);
        assert_string_equal(e.value, values[i]);
        assert_int_equal(e.known, known[i]);
        if (known[i]) {
            assert_int_equal(e.disposition, BP_HINT_PENDING);
        } else {
            assert_int_equal(e.disposition, BP_HINT_IGNORED);
            assert_string_equal(e.reason, "unknown key");
        }
    }
    BP_ASSERT_OK(bp_hints_pop());
}

static void test_malformed_json_gives_offset_and_excerpt(void **state) {
    (void)state;
    /* The offset is where the parser gave up: the unquoted bfs at byte 10. */
    push_fails("{\"order\": bfs}",
               "malformed JSON at byte 10 of 14: after '{\"order\": ', at 'bfs}'");
    push_fails("{\"order\" \"dfs\"}", "malformed JSON at byte 9 of 15: after '{\"order\" ', at");
    push_fails("{} trailing", "malformed JSON at byte 3 of 11: after '{} ', at 'trailing'");
    /* Quotes of the user's text show as '?' inside the message's own quotes. */
    push_fails("{'order': 'dfs'}", "malformed JSON at byte 2 of 16: after '{?', at 'order?: ?dfs?}'");
    /* cJSON notices some errors only at the end of the text. */
    push_fails("{\"order\": \"dfs\",}",
               "malformed JSON at byte 17 of 17 (the end of the text: incomplete?), after "
               "'{\"order\": \"dfs\",}'");
    push_fails("{\"order\": \"dfs\"", "(the end of the text: incomplete?)");
    push_fails("{\"order\": \"df", "malformed JSON at byte");
    push_fails("{", "malformed JSON at byte");
    /* Control bytes, quotes and long text around the offset are tamed. */
    push_fails("{\"a long key that goes on\":\x01\x02 and a very long tail that goes on}",
               "at byte 30 of 64: after '...ey that goes on\":?? ', at 'and a very long tail...'");
}

static void test_top_level_must_be_an_object(void **state) {
    (void)state;
    push_fails("[{\"order\": \"dfs\"}]", "must be a JSON object ({\"order\": \"dfs\"}), got array");
    push_fails("\"dfs\"", "got string");
    push_fails("42", "got number");
    push_fails("null", "got null");
    push_fails("true", "got boolean");
}

static void test_wrong_value_types_name_the_key(void **state) {
    (void)state;
    push_fails("{\"order\": 1}", "key 'order' must be a string, got number 1");
    push_fails("{\"order\": null}", "key 'order' must be a string, got null");
    push_fails("{\"order\": [\"dfs\"]}", "key 'order' must be a string, got array");
    push_fails("{\"group_id\": \"3\"}", "key 'group_id' must be an integer, got string");
    push_fails("{\"group_id\": 1.5}", "key 'group_id' must be an integer, got number 1.5");
    push_fails("{\"max_parallel\": true}", "key 'max_parallel' must be an integer, got boolean");
    push_fails("{\"max_parallel\": 2.5}", "key 'max_parallel' must be an integer, got number 2.5");
    push_fails("{\"mem_budget_mb\": \"512\"}", "key 'mem_budget_mb' must be a number, got string");
    push_fails("{\"mem_budget_mb\": {}}", "key 'mem_budget_mb' must be a number, got object");
    /* The first bad key is the one reported, after valid ones. */
    push_fails("{\"order\": \"dfs\", \"unknown\": 1, \"group_id\": false}",
               "key 'group_id' must be an integer, got boolean");
}

static void test_bad_values(void **state) {
    (void)state;
    push_fails("{\"order\": \"bsf\"}",
               "key 'order' has unknown value 'bsf'; valid: bfs, dfs, strict, auto");
    push_fails("{\"order\": \"BFS\"}", "unknown value 'BFS'"); /* values are case-sensitive */
    push_fails("{\"order\": \"\"}", "unknown value ''");
    push_fails("{\"mem_budget_mb\": -1}", "key 'mem_budget_mb' must be >= 0 (megabytes), got -1");
    push_fails("{\"mem_budget_mb\": -0.25}", "got -0.25");
    push_fails("{\"mem_budget_mb\": 1e999}", "key 'mem_budget_mb' must be a finite number");
    push_fails("{\"max_parallel\": 0}", "key 'max_parallel' must be >= 1");
    push_fails("{\"max_parallel\": -4}", "key 'max_parallel' must be >= 1 (and <= 2147483647), got -4");
    push_fails("{\"max_parallel\": 3e9}", "key 'max_parallel' must be >= 1 (and <= 2147483647)");
    push_fails("{\"group_id\": 1e300}", "key 'group_id' must be an integer of magnitude <= 2^53");
    push_fails("{\"group_id\": 1e999}",
               "key 'group_id' must be an integer of magnitude <= 2^53, got 1e999");
}

static void test_duplicate_keys_are_an_error(void **state) {
    (void)state;
    push_fails("{\"order\": \"bfs\", \"order\": \"dfs\"}", "key 'order' appears more than once");
    push_fails("{\"order\": \"bfs\", \"order\": \"bfs\"}", "key 'order' appears more than once");
    push_fails("{\"a\": 1, \"b\": 2, \"a\": 3}", "key 'a' appears more than once");
    /* Reported before the values are looked at. */
    push_fails("{\"order\": \"a\", \"order\": \"b\"}", "key 'order' appears more than once");
    /* A long key is cut in the message. */
    char text[512];
    char key[201];
    memset(key, 'k', 200);
    key[200] = '\0';
    snprintf(text, sizeof text, "{\"%s\": 1, \"%s\": 2}", key, key);
    push_fails(text, "key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...' appears");
}

static void test_failed_push_keeps_outer_scope(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"dfs\", \"max_parallel\": 2}"));
    push_fails("{\"order\": \"strict\", \"max_parallel\": 0}", "max_parallel");
    assert_int_equal(bp_hints_depth(), 1);
    bp_hint_values v = effective();
    assert_int_equal(v.order, BP_ORDER_DFS);
    assert_int_equal(v.max_parallel, 2);
    assert_int_equal(bp_hints_count(), 2);
    BP_ASSERT_OK(bp_hints_pop());
}

static void test_nesting_overrides_key_by_key_and_pops_in_order(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"bfs\", \"max_parallel\": 8, \"tag\": 1}"));
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"strict\", \"group_id\": 0, \"tag\": \"inner\"}"));
    assert_int_equal(bp_hints_depth(), 2);
    bp_hint_values v = effective();
    assert_int_equal(v.order, BP_ORDER_STRICT);
    assert_int_equal(v.max_parallel, 8); /* from the outer scope */
    assert_int_equal(v.has_group_id, 1);
    assert_int_equal(v.group_id, 0);
    assert_int_equal(v.has_mem_budget, 0);
    /* Outer keys not overridden first, then the inner scope's, in text order. */
    assert_int_equal(bp_hints_count(), 4);
    const char *keys[] = {"max_parallel", "order", "group_id", "tag"};
    const char *values[] = {"8", "\"strict\"", "0", "\"inner\""};
    const int depths[] = {1, 2, 2, 2};
    for (int i = 0; i < 4; i++) {
        bp_hint_entry e = entry(i);
        assert_string_equal(e.key, keys[i]);
        assert_string_equal(e.value, values[i]);
        assert_int_equal(e.scope_depth, depths[i]);
    }

    /* schedule_policy overrides order (and the reverse): they are one key. */
    BP_ASSERT_OK(bp_hints_push("{\"schedule_policy\": \"strict\", \"mem_budget_mb\": 64}"));
    v = effective();
    assert_int_equal(v.order, BP_ORDER_STRICT);
    assert_true(v.mem_budget_mb == 64.0);
    assert_int_equal(bp_hints_count(), 5);
    for (int i = 0; i < bp_hints_count(); i++)
        assert_string_not_equal(entry(i).key, "order");
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"auto\"}"));
    assert_int_equal(effective().order, BP_ORDER_AUTO);
    for (int i = 0; i < bp_hints_count(); i++)
        assert_string_not_equal(entry(i).key, "schedule_policy");
    /* An empty scope changes nothing. */
    BP_ASSERT_OK(bp_hints_push(""));
    assert_int_equal(bp_hints_depth(), 5);
    assert_int_equal(effective().order, BP_ORDER_AUTO);
    assert_int_equal(bp_hints_count(), 5);

    BP_ASSERT_OK(bp_hints_pop());
    BP_ASSERT_OK(bp_hints_pop());
    assert_int_equal(effective().order, BP_ORDER_STRICT);
    BP_ASSERT_OK(bp_hints_pop());
    v = effective();
    assert_int_equal(v.order, BP_ORDER_STRICT);
    assert_int_equal(v.has_mem_budget, 0);
    assert_int_equal(bp_hints_count(), 4);
    BP_ASSERT_OK(bp_hints_pop());
    v = effective();
    assert_int_equal(v.order, BP_ORDER_BFS);
    assert_int_equal(v.max_parallel, 8);
    assert_int_equal(v.has_group_id, 0);
    assert_string_equal(entry(2).value, "1");
    BP_ASSERT_OK(bp_hints_pop());
    assert_int_equal(bp_hints_depth(), 0);
    v = effective();
    assert_unset(&v);
}

static void test_pop_without_push(void **state) {
    (void)state;
    assert_int_equal(bp_hints_depth(), 0);
    BP_ASSERT_ERR(bp_hints_pop(), BP_ERR_INVALID_STATE, "no hint scope is open on this thread");
    BP_ASSERT_OK(bp_hints_push("{}"));
    BP_ASSERT_OK(bp_hints_pop());
    BP_ASSERT_ERR(bp_hints_pop(), BP_ERR_INVALID_STATE, "no hint scope is open");
    /* A failed push opens nothing, so there is nothing to pop either. */
    BP_ASSERT_ERR(bp_hints_push("{"), BP_ERR_INVALID_ARGUMENT, "malformed JSON");
    BP_ASSERT_ERR(bp_hints_pop(), BP_ERR_INVALID_STATE, "no hint scope is open");
}

static void test_argument_errors(void **state) {
    (void)state;
    BP_ASSERT_ERR(bp_hints_effective(NULL), BP_ERR_INVALID_ARGUMENT, "out is NULL");
    bp_hint_values v = {.struct_size = 8};
    BP_ASSERT_ERR(bp_hints_effective(&v), BP_ERR_INVALID_ARGUMENT,
                  "bp_hint_values.struct_size is 8");
    /* A larger struct from a newer header: the fields we do not know read as zero. */
    struct {
        bp_hint_values v;
        unsigned char extra[32];
    } big;
    memset(&big, 0xff, sizeof big);
    big.v.struct_size = sizeof big;
    BP_ASSERT_OK(bp_hints_push("{\"max_parallel\": 3}"));
    BP_ASSERT_OK(bp_hints_effective(&big.v));
    assert_int_equal(big.v.struct_size, sizeof big);
    assert_int_equal(big.v.max_parallel, 3);
    for (size_t i = 0; i < sizeof big.extra; i++) assert_int_equal(big.extra[i], 0);

    bp_hint_entry e = {.struct_size = sizeof e};
    BP_ASSERT_ERR(bp_hints_entry(1, &e), BP_ERR_INVALID_ARGUMENT,
                  "entry index 1 is out of range (1 keys in effect)");
    BP_ASSERT_ERR(bp_hints_entry(-1, &e), BP_ERR_INVALID_ARGUMENT, "out of range");
    BP_ASSERT_ERR(bp_hints_entry(0, NULL), BP_ERR_INVALID_ARGUMENT, "out is NULL");
    e.struct_size = 4;
    BP_ASSERT_ERR(bp_hints_entry(0, &e), BP_ERR_INVALID_ARGUMENT, "bp_hint_entry.struct_size is 4");
    BP_ASSERT_OK(bp_hints_pop());
    e.struct_size = sizeof e;
    BP_ASSERT_ERR(bp_hints_entry(0, &e), BP_ERR_INVALID_ARGUMENT, "(0 keys in effect)");
    BP_ASSERT_ERR(bp_hints_scope_begin(NULL, "{}"), BP_ERR_INVALID_ARGUMENT, "scope is NULL");
}

static bp_status scoped_work(int fail_early, bp_schedule_order *seen) {
    bp_status st;
    BP_HINTS_SCOPE("{\"order\": \"strict\", \"group_id\": 0}", &st);
    if (st != BP_OK) return st;
    *seen = effective().order;
    if (fail_early) return BP_ERR_INTERNAL; /* the scope closes on this path too */
    /* A forgotten inner pop is closed with the scope. */
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"dfs\"}"));
    return BP_OK;
}

static void test_scoped_macro_closes_on_every_path(void **state) {
    (void)state;
    bp_schedule_order seen = BP_ORDER_UNSET;
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"bfs\"}"));
    assert_int_equal(scoped_work(1, &seen), BP_ERR_INTERNAL);
    assert_int_equal(seen, BP_ORDER_STRICT);
    assert_int_equal(bp_hints_depth(), 1);
    assert_int_equal(effective().order, BP_ORDER_BFS);
    seen = BP_ORDER_UNSET;
    BP_ASSERT_OK(scoped_work(0, &seen));
    assert_int_equal(seen, BP_ORDER_STRICT);
    assert_int_equal(bp_hints_depth(), 1);
    assert_int_equal(effective().order, BP_ORDER_BFS);

    /* A failed begin leaves the scope inactive: its end pops nothing. */
    bp_hints_scope scope;
    BP_ASSERT_ERR(bp_hints_scope_begin(&scope, "{\"order\": 3}"), BP_ERR_INVALID_ARGUMENT,
                  "key 'order'");
    bp_hints_scope_end(&scope);
    assert_int_equal(bp_hints_depth(), 1);
    /* End is idempotent, and harmless after a manual pop. */
    BP_ASSERT_OK(bp_hints_scope_begin(&scope, "{}"));
    assert_int_equal(bp_hints_depth(), 2);
    BP_ASSERT_OK(bp_hints_pop());
    bp_hints_scope_end(&scope);
    bp_hints_scope_end(&scope);
    assert_int_equal(bp_hints_depth(), 1);
    BP_ASSERT_OK(bp_hints_pop());
}

/* ---- threads ---- */

typedef struct thread_arg {
    const char *text;
    bp_schedule_order expect;
    pthread_barrier_t *barrier;
    int leave_open;
    int ok;
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *arg = p;
    int ok = bp_hints_depth() == 0; /* nothing inherited from the creating thread */
    ok = ok && bp_hints_push(arg->text) == BP_OK;
    pthread_barrier_wait(arg->barrier); /* both threads have pushed */
    for (int i = 0; i < 1000 && ok; i++) {
        bp_hint_values v = {.struct_size = sizeof v};
        ok = bp_hints_effective(&v) == BP_OK && v.order == arg->expect && bp_hints_depth() == 1;
        int n = bp_hints_count();
        ok = ok && bp_hints_push("{\"tag\": 1}") == BP_OK && bp_hints_count() == n + 1 &&
             bp_hints_pop() == BP_OK && bp_hints_count() == n;
    }
    pthread_barrier_wait(arg->barrier);
    if (!arg->leave_open) ok = ok && bp_hints_pop() == BP_OK;
    /* else: the thread exits with its scope open; the key destructor frees it (ASan's
     * leak check would say otherwise). */
    arg->ok = ok;
    return NULL;
}

static void test_scopes_are_per_thread(void **state) {
    (void)state;
    BP_ASSERT_OK(bp_hints_push("{\"order\": \"auto\"}"));
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, 2), 0);
    thread_arg a = {"{\"order\": \"bfs\", \"max_parallel\": 2}", BP_ORDER_BFS, &barrier, 0, 0};
    thread_arg b = {"{\"schedule_policy\": \"strict\"}", BP_ORDER_STRICT, &barrier, 1, 0};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, thread_main, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, thread_main, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&barrier);
    assert_true(a.ok);
    assert_true(b.ok);
    /* This thread still sees only its own scope. */
    assert_int_equal(bp_hints_depth(), 1);
    assert_int_equal(effective().order, BP_ORDER_AUTO);
    assert_int_equal(bp_hints_count(), 1);
    BP_ASSERT_OK(bp_hints_pop());
}

/* ---- fuzz ---- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char *const seeds[] = {
    "{\"order\": \"strict\", \"group_id\": 0}",
    "{\"order\":\"bfs\",\"max_parallel\":4,\"mem_budget_mb\":512.5,\"x\":[1,{\"y\":null}]}",
    "{\"schedule_policy\": \"strict\", \"order\": \"strict\", \"group_id\": -12}",
    "{\"order\": \"auto\", \"mem_budget_mb\": 1e2, \"note\": \"\\u00e9\\n\\\"q\\\"\"}",
    "{\"a\": {\"b\": {\"c\": [true, false, null, 1.5e-3]}}, \"order\": \"dfs\"}",
    "  {\"max_parallel\" : 16 , \"unknown\" : \"\" }  ",
};

/* Any text: either valid, or an INVALID_ARGUMENT that says "hints: ". Valid text also
 * pushes, lists and pops cleanly. */
static void check_text(const char *text) {
    bp_status st = bp_hints_validate(text);
    if (st != BP_OK) {
        if (st != BP_ERR_INVALID_ARGUMENT || strncmp(bp_last_error(), "hints: ", 7) != 0)
            fail_msg("'%s' -> %s: %s", text, bp_status_str(st), bp_last_error());
        return;
    }
    BP_ASSERT_OK(bp_hints_push(text));
    int n = bp_hints_count();
    for (int i = 0; i < n; i++) {
        bp_hint_entry e = entry(i);
        assert_non_null(e.key);
        assert_non_null(e.value);
        assert_true(strlen(e.value) > 0);
    }
    bp_hint_values v = effective();
    assert_true(v.order >= BP_ORDER_UNSET && v.order <= BP_ORDER_AUTO);
    BP_ASSERT_OK(bp_hints_pop());
}

static void test_fuzz_garbled_text_never_crashes(void **state) {
    (void)state;
    static const char alphabet[] = "{}[]\":,. \\-+eE0123456789truefalsnul\x01\x7f\xc3\xa9"
                                   "orderbfsdstrictautogroup_idmax_parallelmem_budget_mb";
    char buf[512];
    long valid = 0, total = 0;
    /* Every prefix of every seed. */
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t len = strlen(seeds[s]);
        for (size_t cut = 0; cut <= len; cut++) {
            memcpy(buf, seeds[s], cut);
            buf[cut] = '\0';
            check_text(buf);
            total++;
        }
    }
    /* Random mutations: byte flips, insertions, deletions, splices, truncation. */
    for (int iter = 0; iter < 300000; iter++) {
        const char *seed = seeds[rng() % (sizeof seeds / sizeof seeds[0])];
        size_t len = strlen(seed);
        memcpy(buf, seed, len + 1);
        int edits = 1 + (int)(rng() % 4);
        for (int k = 0; k < edits; k++) {
            size_t pos = len > 0 ? rng() % len : 0;
            switch (rng() % 5) {
            case 0: /* replace a byte (never with NUL) */
                if (len > 0) buf[pos] = alphabet[rng() % (sizeof alphabet - 1)];
                break;
            case 1: /* insert a byte */
                if (len + 2 < sizeof buf) {
                    memmove(buf + pos + 1, buf + pos, len - pos + 1);
                    buf[pos] = alphabet[rng() % (sizeof alphabet - 1)];
                    len++;
                }
                break;
            case 2: /* delete a byte */
                if (len > 0) {
                    memmove(buf + pos, buf + pos + 1, len - pos);
                    len--;
                }
                break;
            case 3: /* truncate */
                buf[pos] = '\0';
                len = pos;
                break;
            default: { /* splice in a piece of another seed */
                const char *other = seeds[rng() % (sizeof seeds / sizeof seeds[0])];
                size_t olen = strlen(other);
                size_t from = rng() % olen, n = 1 + rng() % 12;
                if (from + n > olen) n = olen - from;
                if (len + n + 1 < sizeof buf) {
                    memmove(buf + pos + n, buf + pos, len - pos + 1);
                    memcpy(buf + pos, other + from, n);
                    len += n;
                }
            }
            }
        }
        check_text(buf);
        valid += bp_hints_validate(buf) == BP_OK;
        total++;
    }
    /* Random bytes. */
    for (int iter = 0; iter < 100000; iter++) {
        size_t len = rng() % 64;
        for (size_t i = 0; i < len; i++) buf[i] = alphabet[rng() % (sizeof alphabet - 1)];
        buf[len] = '\0';
        check_text(buf);
        total++;
    }
    /* Deep nesting (cJSON stops at 1000 levels) and a very long text. */
    size_t deep = 3000;
    char *big = malloc(2 * deep + 16);
    assert_non_null(big);
    strcpy(big, "{\"x\":");
    size_t n = strlen(big);
    for (size_t i = 0; i < deep; i++) big[n++] = '[';
    for (size_t i = 0; i < deep; i++) big[n++] = ']';
    big[n++] = '}';
    big[n] = '\0';
    check_text(big);
    free(big);
    assert_int_equal(bp_hints_depth(), 0);
    assert_true(valid > 100); /* the mutations do reach the validation of values too */
    print_message("fuzz: %ld texts, %ld mutated ones valid\n", total, valid);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_null_and_empty_text_mean_no_hints, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_every_key, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_schedule_policy_is_a_synonym_of_strict, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_unknown_keys_are_kept_and_reported_ignored, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_malformed_json_gives_offset_and_excerpt, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_top_level_must_be_an_object, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_wrong_value_types_name_the_key, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_bad_values, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_duplicate_keys_are_an_error, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_failed_push_keeps_outer_scope, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_nesting_overrides_key_by_key_and_pops_in_order, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_pop_without_push, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_argument_errors, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_scoped_macro_closes_on_every_path, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_scopes_are_per_thread, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_fuzz_garbled_text_never_crashes, bp_test_close_hint_scopes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
