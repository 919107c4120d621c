/* Per-thread hint scopes. Each open scope keeps its merged set (its own keys over the
 * enclosing scope's), built once at push, so every query reads the innermost set
 * without merging, copying or locking. */
#include <pthread.h>
#include <stdlib.h>

#include "hints_internal.h"

typedef struct scope_stack {
    int depth;
    int capacity;
    bp_hint_set **sets; /* sets[i]: the merged view with scopes 1..i+1 open */
} scope_stack;

/* The stack is reached through the thread-local pointer; the pthread key exists only
 * for its destructor, which frees the scopes a thread leaves open when it exits. */
static _Thread_local scope_stack *tls_stack;
static pthread_key_t stack_key;
static pthread_once_t stack_key_once = PTHREAD_ONCE_INIT;
static bool stack_key_ok;

static void stack_free(scope_stack *stack) {
    for (int i = 0; i < stack->depth; i++) bp_hint_set_free(stack->sets[i]);
    free(stack->sets);
    free(stack);
}

static void stack_destructor(void *p) {
    if (tls_stack == p) tls_stack = NULL;
    stack_free(p);
}

static void stack_key_create(void) {
    stack_key_ok = pthread_key_create(&stack_key, stack_destructor) == 0;
}

static bp_status stack_get(scope_stack **out) {
    if (tls_stack != NULL) {
        *out = tls_stack;
        return BP_OK;
    }
    pthread_once(&stack_key_once, stack_key_create);
    if (!stack_key_ok)
        return bp_set_error(BP_ERR_INTERNAL, "bp_hints_push: cannot create the thread key "
                                             "that frees hint scopes at thread exit");
    scope_stack *stack = calloc(1, sizeof *stack);
    if (stack == NULL) return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_hints_push: out of memory");
    if (pthread_setspecific(stack_key, stack) != 0) {
        free(stack);
        return bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_hints_push: out of memory");
    }
    tls_stack = stack;
    *out = stack;
    return BP_OK;
}

/* Frees the stack once no scope is open, so an idle thread holds nothing. */
static void stack_release_if_empty(void) {
    scope_stack *stack = tls_stack;
    if (stack == NULL || stack->depth > 0) return;
    pthread_setspecific(stack_key, NULL);
    tls_stack = NULL;
    stack_free(stack);
}

const bp_hint_set *bp_hints_current(void) {
    scope_stack *stack = tls_stack;
    return stack != NULL && stack->depth > 0 ? stack->sets[stack->depth - 1] : NULL;
}

int bp_hints_depth(void) { return tls_stack != NULL ? tls_stack->depth : 0; }

bp_status bp_hints_snapshot(const char *json, bp_hint_set **out_set) {
    bp_hint_set *own = NULL;
    bp_status st = bp_hint_set_parse(json, bp_hints_depth() + 1, &own);
    if (st != BP_OK) return st;
    st = bp_hint_set_merge(bp_hints_current(), own, out_set);
    bp_hint_set_free(own);
    return st;
}

bp_status bp_hints_push(const char *json) {
    bp_hint_set *own = NULL;
    bp_status st = bp_hint_set_parse(json, bp_hints_depth() + 1, &own);
    if (st != BP_OK) return st;
    const bp_hint_set *outer = bp_hints_current();
    bp_hint_set *merged = own;
    if (outer != NULL) {
        st = bp_hint_set_merge(outer, own, &merged);
        bp_hint_set_free(own);
        if (st != BP_OK) return st;
    }
    scope_stack *stack = NULL;
    st = stack_get(&stack);
    if (st != BP_OK) goto fail;
    if (stack->depth == stack->capacity) {
        int capacity = stack->capacity > 0 ? stack->capacity * 2 : 8;
        bp_hint_set **sets = realloc(stack->sets, (size_t)capacity * sizeof *sets);
        if (sets == NULL) {
            st = bp_set_error(BP_ERR_OUT_OF_MEMORY, "bp_hints_push: out of memory");
            goto fail;
        }
        stack->sets = sets;
        stack->capacity = capacity;
    }
    stack->sets[stack->depth++] = merged;
    return BP_OK;
fail:
    bp_hint_set_free(merged);
    stack_release_if_empty();
    return st;
}

bp_status bp_hints_pop(void) {
    scope_stack *stack = tls_stack;
    if (stack == NULL || stack->depth == 0)
        return bp_set_error(BP_ERR_INVALID_STATE,
                            "bp_hints_pop: no hint scope is open on this thread (a pop without "
                            "its bp_hints_push, or a push that failed)");
    bp_hint_set_free(stack->sets[--stack->depth]);
    stack_release_if_empty();
    return BP_OK;
}

bp_status bp_hints_effective(bp_hint_values *out) {
    return bp_hint_set_values(bp_hints_current(), out);
}

int bp_hints_count(void) {
    const bp_hint_set *set = bp_hints_current();
    return set != NULL ? set->count : 0;
}

bp_status bp_hints_entry(int index, bp_hint_entry *out) {
    return bp_hint_set_entry(bp_hints_current(), index, out);
}

bp_status bp_hints_scope_begin(bp_hints_scope *scope, const char *json) {
    if (scope == NULL)
        return bp_set_error(BP_ERR_INVALID_ARGUMENT, "bp_hints_scope_begin: scope is NULL");
    scope->active = 0;
    scope->depth = 0;
    bp_status st = bp_hints_push(json);
    if (st != BP_OK) return st;
    scope->depth = bp_hints_depth();
    scope->active = 1;
    return BP_OK;
}

void bp_hints_scope_end(bp_hints_scope *scope) {
    if (scope == NULL || !scope->active) return;
    scope->active = 0;
    while (bp_hints_depth() >= scope->depth && bp_hints_depth() > 0) bp_hints_pop();
}
