/* In-order work queue with one worker thread (see cpu_queue.h). */
#include "cpu_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_INITIAL_CAPACITY 64 /* power of two */

typedef struct cpu_task {
    cpu_task_fn fn;
    _Alignas(max_align_t) unsigned char payload[CPU_QUEUE_PAYLOAD_MAX];
} cpu_task;

struct cpu_queue {
    atomic_uint refs;
    pthread_mutex_t lock;
    pthread_cond_t work_cond; /* worker waits here for tasks or stop */
    pthread_cond_t done_cond; /* waiters for a ticket wait here for `completed` */
    cpu_task *ring;
    size_t capacity; /* power of two */
    size_t head;     /* index of the next task to run */
    size_t count;    /* tasks in the ring */
    uint64_t submitted; /* = the last ticket handed out */
    uint64_t completed; /* tickets 1..completed have finished */
    int waiters;
    bool worker_sleeping;
    bool stopping;
    cpu_thread_setup setup;
    pthread_t thread;
};

static void *queue_worker(void *arg) {
    cpu_queue *q = arg;
    cpu_thread_setup_run(&q->setup);
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (q->count == 0 && !q->stopping) {
            q->worker_sleeping = true;
            pthread_cond_wait(&q->work_cond, &q->lock);
            q->worker_sleeping = false;
        }
        if (q->count == 0)
            break; /* stopping, and drained */
        /* Copied out so the ring may grow or wrap while the task runs unlocked. */
        cpu_task task = q->ring[q->head];
        q->head = (q->head + 1) & (q->capacity - 1);
        q->count--;
        pthread_mutex_unlock(&q->lock);

        task.fn(task.payload);

        pthread_mutex_lock(&q->lock);
        q->completed++;
        if (q->waiters > 0)
            pthread_cond_broadcast(&q->done_cond);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

int cpu_queue_create(const char *thread_name, const cpu_thread_setup *setup,
                     cpu_queue **out_queue) {
    cpu_queue *q = calloc(1, sizeof *q);
    if (!q)
        return ENOMEM;
    q->ring = malloc(QUEUE_INITIAL_CAPACITY * sizeof *q->ring);
    if (!q->ring) {
        free(q);
        return ENOMEM;
    }
    q->capacity = QUEUE_INITIAL_CAPACITY;
    atomic_init(&q->refs, 1u);
    if (setup)
        q->setup = *setup;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->work_cond, NULL);
    pthread_cond_init(&q->done_cond, NULL);

    int err = cpu_thread_create(&q->thread, thread_name ? thread_name : "bp-cpu", setup,
                                queue_worker, q);
    if (err != 0) {
        pthread_cond_destroy(&q->done_cond);
        pthread_cond_destroy(&q->work_cond);
        pthread_mutex_destroy(&q->lock);
        free(q->ring);
        free(q);
        return err;
    }
    *out_queue = q;
    return 0;
}

void cpu_queue_destroy(cpu_queue *q) {
    pthread_mutex_lock(&q->lock);
    q->stopping = true;
    pthread_cond_signal(&q->work_cond);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    cpu_queue_release(q);
}

void cpu_queue_retain(cpu_queue *q) {
    atomic_fetch_add_explicit(&q->refs, 1u, memory_order_relaxed);
}

void cpu_queue_release(cpu_queue *q) {
    if (atomic_fetch_sub_explicit(&q->refs, 1u, memory_order_acq_rel) != 1)
        return;
    pthread_cond_destroy(&q->done_cond);
    pthread_cond_destroy(&q->work_cond);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}

/* Doubles the ring, unwrapping it so that the next task to run is at index 0.
 * Call with the lock held and the ring full. */
static int queue_grow(cpu_queue *q) {
    if (q->capacity > SIZE_MAX / 2 / sizeof *q->ring)
        return ENOMEM;
    size_t new_capacity = q->capacity * 2;
    cpu_task *ring = malloc(new_capacity * sizeof *ring);
    if (!ring)
        return ENOMEM;
    size_t first = q->capacity - q->head; /* tasks from head to the end of the array */
    if (first > q->count)
        first = q->count;
    memcpy(ring, q->ring + q->head, first * sizeof *ring);
    memcpy(ring + first, q->ring, (q->count - first) * sizeof *ring);
    free(q->ring);
    q->ring = ring;
    q->capacity = new_capacity;
    q->head = 0;
    return 0;
}

int cpu_queue_submit(cpu_queue *q, cpu_task_fn fn, const void *payload, size_t size,
                     uint64_t *out_ticket) {
    if (size > CPU_QUEUE_PAYLOAD_MAX || (size > 0 && !payload) || !fn)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    if (q->count == q->capacity) {
        int err = queue_grow(q);
        if (err != 0) {
            pthread_mutex_unlock(&q->lock);
            return err;
        }
    }
    cpu_task *task = &q->ring[(q->head + q->count) & (q->capacity - 1)];
    task->fn = fn;
    if (size > 0)
        memcpy(task->payload, payload, size);
    q->count++;
    q->submitted++;
    if (out_ticket)
        *out_ticket = q->submitted;
    /* A busy worker finds the task when it comes back for the next one. */
    if (q->worker_sleeping)
        pthread_cond_signal(&q->work_cond);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

typedef struct wait_task {
    cpu_queue *other;
    uint64_t ticket;
} wait_task;

static void wait_task_run(void *payload) {
    wait_task t;
    memcpy(&t, payload, sizeof t);
    cpu_queue_wait(t.other, t.ticket);
    cpu_queue_release(t.other);
}

int cpu_queue_submit_wait(cpu_queue *q, cpu_queue *other, uint64_t ticket) {
    if (other == q || cpu_queue_done(other, ticket)) {
        cpu_queue_release(other);
        return 0;
    }
    wait_task t = {other, ticket};
    int err = cpu_queue_submit(q, wait_task_run, &t, sizeof t, NULL);
    if (err != 0)
        cpu_queue_release(other);
    return err;
}

uint64_t cpu_queue_last_ticket(cpu_queue *q) {
    pthread_mutex_lock(&q->lock);
    uint64_t ticket = q->submitted;
    pthread_mutex_unlock(&q->lock);
    return ticket;
}

bool cpu_queue_done(cpu_queue *q, uint64_t ticket) {
    pthread_mutex_lock(&q->lock);
    bool done = q->completed >= ticket;
    pthread_mutex_unlock(&q->lock);
    return done;
}

void cpu_queue_wait(cpu_queue *q, uint64_t ticket) {
    pthread_mutex_lock(&q->lock);
    q->waiters++;
    while (q->completed < ticket)
        pthread_cond_wait(&q->done_cond, &q->lock);
    q->waiters--;
    pthread_mutex_unlock(&q->lock);
}

void cpu_queue_synchronize(cpu_queue *q) {
    cpu_queue_wait(q, cpu_queue_last_ticket(q));
}

bool cpu_queue_idle(cpu_queue *q) {
    pthread_mutex_lock(&q->lock);
    bool idle = q->completed == q->submitted;
    pthread_mutex_unlock(&q->lock);
    return idle;
}
