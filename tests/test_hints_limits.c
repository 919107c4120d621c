/* Context hints against hostile text: many keys (duplicates found by hashing, a cap),
 * deep nesting (a cap), integers a double cannot hold exactly, embedded NULs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* The push fails with `needle` in the message and leaves the scopes as they were. */
static void push_fails(const char *json, const char *needle) {
    int depth = bp_hints_depth();
    BP_ASSERT_ERR(bp_hints_push(json), BP_ERR_INVALID_ARGUMENT, needle);
    assert_int_equal(bp_hints_depth(), depth);
    BP_ASSERT_ERR(bp_hints_validate(json), BP_ERR_INVALID_ARGUMENT, needle);
}

/* {"<prefix>0": 0, "<prefix>1": 1, ...} with `count` keys; the key at `dup_at` (when
 * >= 0) repeats key 0. Caller frees. */
static char *many_keys(const char *prefix, int count, int dup_at) {
    size_t size = 16 + (size_t)count * (strlen(prefix) + 32);
    char *text = malloc(size);
    assert_non_null(text);
    size_t n = (size_t)snprintf(text, size, "{");
    for (int i = 0; i < count; i++)
        n += (size_t)snprintf(text + n, size - n, "%s\"%s%d\": %d", i > 0 ? ", " : "", prefix,
                              i == dup_at ? 0 : i, i);
    snprintf(text + n, size - n, "}");
    return text;
}

/* `depth` nested arrays as the value of one key: the hint object is level 1. */
static char *nested(int depth) {
    char *text = malloc((size_t)depth * 2 + 16);
    assert_non_null(text);
    size_t n = (size_t)sprintf(text, "{\"x\": ");
    for (int i = 1; i < depth; i++) text[n++] = '[';
    for (int i = 1; i < depth; i++) text[n++] = ']';
    strcpy(text + n, "}");
    return text;
}

static void test_key_limit_and_duplicates_among_many(void **state) {
    (void)state;
    char *text = many_keys("k", BP_HINTS_MAX_KEYS, -1);
    BP_ASSERT_OK(bp_hints_validate(text));
    BP_ASSERT_OK(bp_hints_push(text));
    assert_int_equal(bp_hints_count(), BP_HINTS_MAX_KEYS);
    bp_hint_entry e = {.struct_size = sizeof e};
    BP_ASSERT_OK(bp_hints_entry(BP_HINTS_MAX_KEYS - 1, &e));
    assert_string_equal(e.key, "k4095");
    assert_string_equal(e.value, "4095");
    BP_ASSERT_OK(bp_hints_pop());
    free(text);

    /* The last key repeats the first: found however far apart they are. */
    text = many_keys("k", BP_HINTS_MAX_KEYS, BP_HINTS_MAX_KEYS - 1);
    push_fails(text, "hints: key 'k0' appears more than once");
    free(text);

    text = many_keys("k", BP_HINTS_MAX_KEYS + 1, -1);
    push_fails(text, "hints: the hint object has more than 4096 keys");
    free(text);
    /* The 100k keys: refused by the cap, named as such. */
    text = many_keys("k", 100000, -1);
    push_fails(text, "more than 4096 keys");
    free(text);
}

/* Scopes merge by hashing too; the keys in effect across scopes have the same cap. */
static void test_key_limit_across_scopes(void **state) {
    (void)state;
    char *outer = many_keys("k", BP_HINTS_MAX_KEYS - 10, -1);
    BP_ASSERT_OK(bp_hints_push(outer));
    /* Overriding keys keep the count. */
    char *same = many_keys("k", BP_HINTS_MAX_KEYS - 10, -1);
    BP_ASSERT_OK(bp_hints_push(same));
    assert_int_equal(bp_hints_count(), BP_HINTS_MAX_KEYS - 10);
    bp_hint_entry e = {.struct_size = sizeof e};
    BP_ASSERT_OK(bp_hints_entry(0, &e));
    assert_string_equal(e.key, "k0");
    assert_int_equal(e.scope_depth, 2);
    BP_ASSERT_OK(bp_hints_pop());
    /* Ten new keys fit exactly; eleven do not. */
    char *ten = many_keys("n", 10, -1), *eleven = many_keys("n", 11, -1);
    BP_ASSERT_OK(bp_hints_push(ten));
    assert_int_equal(bp_hints_count(), BP_HINTS_MAX_KEYS);
    BP_ASSERT_OK(bp_hints_pop());
    BP_ASSERT_ERR(bp_hints_push(eleven), BP_ERR_INVALID_ARGUMENT,
                  "hints: 4097 keys would be in effect");
    assert_int_equal(bp_hints_depth(), 1);
    assert_int_equal(bp_hints_count(), BP_HINTS_MAX_KEYS - 10);
    /* bp_hints_validate checks one text alone, not the scopes. */
    BP_ASSERT_OK(bp_hints_validate(eleven));
    BP_ASSERT_OK(bp_hints_pop());
    free(outer);
    free(same);
    free(ten);
    free(eleven);
}

static void test_nesting_limit(void **state) {
    (void)state;
    char *text = nested(BP_HINTS_MAX_DEPTH);
    BP_ASSERT_OK(bp_hints_validate(text));
    BP_ASSERT_OK(bp_hints_push(text));
    BP_ASSERT_OK(bp_hints_pop());
    free(text);
    text = nested(BP_HINTS_MAX_DEPTH + 1);
    push_fails(text, "hints: the text nests objects and arrays more than 32 levels deep");
    push_fails(text, "at byte 37");
    free(text);
    /* Far beyond cJSON's own limit (1000): the same message, not "malformed JSON". */
    text = nested(5000);
    push_fails(text, "more than 32 levels deep");
    free(text);
    /* Brackets inside strings are text, not nesting. */
    BP_ASSERT_OK(bp_hints_validate("{\"x\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}"));
    BP_ASSERT_OK(bp_hints_validate("{\"x\": \"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}"));
}

static void test_integers_are_exact(void **state) {
    (void)state;
    /* 2^53 + 1 reads as the double 2^53: the text, not the double, decides. */
    push_fails("{\"group_id\": 9007199254740993}",
               "key 'group_id' must be an integer of magnitude <= 2^53, got 9007199254740993");
    push_fails("{\"group_id\": -9007199254740993}", "got -9007199254740993");
    push_fails("{\"group_id\": 90071992547409921}", "magnitude <= 2^53");
    push_fails("{\"group_id\": 1e999}", "magnitude <= 2^53, got 1e999");
    push_fails("{\"group_id\": 123456789012345678901234567890}", "magnitude <= 2^53");
    /* Fractions a double rounds to an integer are still fractions. */
    push_fails("{\"group_id\": 9007199254740991.5}",
               "key 'group_id' must be an integer, got number 9007199254740991.5");
    push_fails("{\"group_id\": 1.0000000000000001}", "must be an integer, got number");
    push_fails("{\"group_id\": 1e-400}", "must be an integer, got number 1e-400");
    push_fails("{\"max_parallel\": 1.99999999999999999}", "key 'max_parallel' must be an integer");
    push_fails("{\"max_parallel\": 2147483648}",
               "must be >= 1 (and <= 2147483647), got 2147483648");
    push_fails("{\"max_parallel\": -0}", "must be >= 1");
    push_fails("{\"max_parallel\": 99999999999999999999999}", "<= 2147483647");

    /* The limits themselves, and integral spellings. */
    struct {
        const char *text;
        int64_t group_id;
    } ok[] = {
        {"{\"group_id\": 9007199254740992}", 9007199254740992LL},
        {"{\"group_id\": -9007199254740992}", -9007199254740992LL},
        {"{\"group_id\": 9007199254740991}", 9007199254740991LL},
        {"{\"group_id\": 1e3}", 1000},
        {"{\"group_id\": 1000e-3}", 1},
        {"{\"group_id\": 0.5e1}", 5},
        {"{\"group_id\": 12.000}", 12},
        {"{\"group_id\": -0}", 0},
        {"{\"group_id\": 0e999999999999999999}", 0},
        {"{\"group_id\": 9.007199254740992E15}", 9007199254740992LL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        BP_ASSERT_OK(bp_hints_push(ok[i].text));
        bp_hint_values v = {.struct_size = sizeof v};
        BP_ASSERT_OK(bp_hints_effective(&v));
        assert_int_equal(v.has_group_id, 1);
        if (v.group_id != ok[i].group_id)
            fail_msg("%s -> %lld", ok[i].text, (long long)v.group_id);
        BP_ASSERT_OK(bp_hints_pop());
    }
    BP_ASSERT_OK(bp_hints_push("{\"max_parallel\": 2147483647}"));
    bp_hint_values v = {.struct_size = sizeof v};
    BP_ASSERT_OK(bp_hints_effective(&v));
    assert_int_equal(v.max_parallel, 2147483647);
    BP_ASSERT_OK(bp_hints_pop());
}

static void test_embedded_nul_is_refused(void **state) {
    (void)state;
    /* cJSON decodes \u0000 into a NUL, which would end the key at "order". */
    push_fails("{\"order\\u0000x\": \"bfs\"}",
               "hints: a string at byte 1 contains \\u0000 (a NUL byte), which hint text "
               "cannot carry");
    push_fails("{\"tag\": \"a\\u0000b\"}", "at byte 8 contains \\u0000");
    push_fails("{\"x\": {\"y\": [\"\\u0000\"]}}", "contains \\u0000");
    /* An escaped backslash followed by u0000 is text, not a NUL. */
    BP_ASSERT_OK(bp_hints_push("{\"tag\": \"\\\\u0000\"}"));
    bp_hint_entry e = {.struct_size = sizeof e};
    BP_ASSERT_OK(bp_hints_entry(0, &e));
    assert_string_equal(e.value, "\"\\\\u0000\"");
    BP_ASSERT_OK(bp_hints_pop());
    /* Other escapes stay valid. */
    BP_ASSERT_OK(bp_hints_validate("{\"tag\": \"\\u0001\\u00e9\\ud83d\\ude00\"}"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_key_limit_and_duplicates_among_many, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_key_limit_across_scopes, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_nesting_limit, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_integers_are_exact, bp_test_close_hint_scopes),
        cmocka_unit_test_teardown(test_embedded_nul_is_refused, bp_test_close_hint_scopes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
