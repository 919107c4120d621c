/* A gate: a host function that holds streams until the caller opens it, so that a test
 * can see work "still running" without depending on timing. The unit tests in tests/
 * use it too (tests/test_util.h). Public API only; no cmocka. */
#ifndef BP_CONF_GATE_H
#define BP_CONF_GATE_H

#include <pthread.h>
#include <stdbool.h>

#include <backplane/backplane.h>

/* Initialise with bp_conf_gate_init; the fields are private. */
typedef struct bp_conf_gate {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool open;
    int entered; /* holders whose host function has started: their earlier work is done */
    int left;    /* holders whose host function has returned */
} bp_conf_gate;

/* A closed gate. */
void bp_conf_gate_init(bp_conf_gate *gate);

/* Enqueues on `stream` (NULL: the thread's current stream of its current device) a host
 * function that blocks until the gate opens: later work on the stream waits for it.
 * Returns what bp_stream_launch_host_func returned. A gate may hold many streams. */
bp_status bp_conf_gate_hold(bp_conf_gate *gate, bp_stream *stream);

/* Opens the gate for good: every holder, running or still queued, returns. */
void bp_conf_gate_open(bp_conf_gate *gate);

/* Blocks until `n` holders have started, i.e. the work before each of them completed. */
void bp_conf_gate_wait_entered(bp_conf_gate *gate, int n);

/* Opens the gate, waits until `holders` holders have returned, and frees it. Call it
 * with the number of successful bp_conf_gate_hold calls, so that no host function
 * still uses the gate. */
void bp_conf_gate_destroy(bp_conf_gate *gate, int holders);

/* True once the gate has been opened. */
bool bp_conf_gate_is_open(bp_conf_gate *gate);

/* Sleeps at least `ms` milliseconds (nanosleep never returns early unless a signal
 * interrupts it, and then it sleeps what remains). */
void bp_conf_sleep_ms(unsigned ms);

/* A thread that opens a gate after at least `ms` milliseconds, for a test that
 * blocks in a wait the gate holds back: a correct wait returns only after the opening
 * (bp_conf_gate_is_open then says so for certain), whenever it comes. */
typedef struct bp_conf_gate_opener {
    pthread_t thread;
    bp_conf_gate *gate;
    unsigned ms;
} bp_conf_gate_opener;

/* Starts the opener; false (the gate opened at once) when no thread can be started. */
bool bp_conf_gate_open_later(bp_conf_gate_opener *opener, bp_conf_gate *gate, unsigned ms);

/* Waits for the opener's thread (the gate is open afterwards). */
void bp_conf_gate_opener_join(bp_conf_gate_opener *opener);

/* Host functions that check their own order: the function of the step with index i
 * counts itself wrong unless it is the i-th of its sequence to run. The host functions
 * of one stream run one at a time, so the fields need no lock. */
typedef struct bp_conf_sequence {
    int next;  /* the index of the step expected next */
    int wrong; /* steps that found another value than their index */
} bp_conf_sequence;

typedef struct bp_conf_step {
    bp_conf_sequence *seq;
    int index;
} bp_conf_step;

/* A bp_host_fn: `step` is a bp_conf_step. */
void bp_conf_take_step(void *step);

#endif
