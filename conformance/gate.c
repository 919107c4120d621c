/* A gate that holds streams on a host function (gate.h). */
#include "gate.h"

#include <time.h>

void bp_conf_gate_init(bp_conf_gate *gate) {
    pthread_mutex_init(&gate->lock, NULL);
    pthread_cond_init(&gate->changed, NULL);
    gate->open = false;
    gate->entered = 0;
    gate->left = 0;
}

static void gate_wait(void *arg) {
    bp_conf_gate *gate = arg;
    pthread_mutex_lock(&gate->lock);
    gate->entered++;
    pthread_cond_broadcast(&gate->changed);
    while (!gate->open)
        pthread_cond_wait(&gate->changed, &gate->lock);
    gate->left++;
    pthread_cond_broadcast(&gate->changed);
    pthread_mutex_unlock(&gate->lock);
}

bp_status bp_conf_gate_hold(bp_conf_gate *gate, bp_stream *stream) {
    return bp_stream_launch_host_func(stream, gate_wait, gate);
}

void bp_conf_gate_open(bp_conf_gate *gate) {
    pthread_mutex_lock(&gate->lock);
    gate->open = true;
    pthread_cond_broadcast(&gate->changed);
    pthread_mutex_unlock(&gate->lock);
}

bool bp_conf_gate_is_open(bp_conf_gate *gate) {
    pthread_mutex_lock(&gate->lock);
    bool open = gate->open;
    pthread_mutex_unlock(&gate->lock);
    return open;
}

void bp_conf_sleep_ms(unsigned ms) {
    struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0) /* interrupted: sleep what remains */
        ;
}

static void *opener_main(void *arg) {
    bp_conf_gate_opener *o = arg;
    bp_conf_sleep_ms(o->ms);
    bp_conf_gate_open(o->gate);
    return NULL;
}

bool bp_conf_gate_open_later(bp_conf_gate_opener *opener, bp_conf_gate *gate, unsigned ms) {
    opener->gate = gate;
    opener->ms = ms;
    if (pthread_create(&opener->thread, NULL, opener_main, opener) == 0)
        return true;
    bp_conf_gate_open(gate);
    opener->gate = NULL;
    return false;
}

void bp_conf_gate_opener_join(bp_conf_gate_opener *opener) {
    if (opener->gate)
        pthread_join(opener->thread, NULL);
    opener->gate = NULL;
}

void bp_conf_gate_wait_entered(bp_conf_gate *gate, int n) {
    pthread_mutex_lock(&gate->lock);
    while (gate->entered < n)
        pthread_cond_wait(&gate->changed, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
}

void bp_conf_gate_destroy(bp_conf_gate *gate, int holders) {
    bp_conf_gate_open(gate);
    pthread_mutex_lock(&gate->lock);
    while (gate->left < holders)
        pthread_cond_wait(&gate->changed, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
    pthread_cond_destroy(&gate->changed);
    pthread_mutex_destroy(&gate->lock);
}

void bp_conf_take_step(void *step) {
    bp_conf_step *st = step;
    if (st->seq->next != st->index)
        st->seq->wrong++;
    st->seq->next = st->index + 1;
}
