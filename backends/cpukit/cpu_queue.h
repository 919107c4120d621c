/* In-order work queue run by one worker thread: the engine of a cpu stream.
 *
 * A task is a function and a small argument payload copied into the queue, so
 * submitting costs no allocation (the ring buffer grows by doubling, rarely). Tasks
 * run one at a time, in submission order, on the queue's own thread. The queue knows
 * nothing about streams, events or copies: anything that can run as a function on
 * the worker (a memcpy, an event timestamp, an op kernel) is a task.
 *
 * Tickets: the n-th task submitted has ticket n (from 1); ticket 0 is "nothing".
 * Because tasks finish in order, "ticket t is done" is one comparison with the
 * count of finished tasks. That is what makes an event a (queue, ticket) pair.
 *
 * Lifetime: the queue is reference counted. cpu_queue_destroy stops the worker and
 * drops the creator's reference; others (events, tasks on other queues waiting for
 * this one) may keep the queue's memory with cpu_queue_retain/release and still ask
 * about or wait for its tickets, which are all done once it is destroyed.
 *
 * Thread safety: every function may be called from many threads at once, except
 * that cpu_queue_destroy is called once and no task is submitted during or after it.
 * A task must not wait for a later ticket of its own queue (it would wait for
 * itself).
 */
#ifndef BP_CPU_QUEUE_H
#define BP_CPU_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_thread.h"

/** Largest payload a task can carry, in bytes. */
#define CPU_QUEUE_PAYLOAD_MAX 64

/** Runs a task on the worker. `payload` points to the task's copy of the bytes given
 *  to cpu_queue_submit, aligned to max_align_t, valid only during the call. */
typedef void (*cpu_task_fn)(void *payload);

typedef struct cpu_queue cpu_queue;

/** Creates a queue (one reference, the creator's) and starts its worker thread,
 *  named `thread_name` (truncated to 15 characters, the kernel's limit), started as
 *  `setup` says (pinned, with a start function; NULL: neither; the queue keeps a copy
 *  of the struct, not of the CPU set it points to). Returns 0, or an errno value
 *  (ENOMEM, or cpu_thread_create's). Requires _GNU_SOURCE (cpu_set_t). */
int cpu_queue_create(const char *thread_name, const cpu_thread_setup *setup,
                     cpu_queue **out_queue);

/** Lets every submitted task run, stops and joins the worker, and drops the
 *  creator's reference (the memory goes with the last reference). */
void cpu_queue_destroy(cpu_queue *queue);

/** Takes a reference that keeps the queue's memory (not its worker) alive. */
void cpu_queue_retain(cpu_queue *queue);

/** Drops a reference; the last one frees the queue. Safe from any thread, including
 *  another queue's worker. */
void cpu_queue_release(cpu_queue *queue);

/** Appends a task: `fn` will run with a copy of payload[0..size). O(1) under the
 *  queue's lock. Stores the task's ticket in *out_ticket when not NULL. Returns 0,
 *  EINVAL when size exceeds CPU_QUEUE_PAYLOAD_MAX, or ENOMEM when the ring cannot
 *  grow (the task is then not queued). */
int cpu_queue_submit(cpu_queue *queue, cpu_task_fn fn, const void *payload, size_t size,
                     uint64_t *out_ticket);

/** Makes `queue`'s later tasks wait until `ticket` of `other` has finished (a
 *  cross-queue wait: a task that blocks `queue`'s worker meanwhile; `other` has its
 *  own worker, so it progresses). Takes over the caller's reference on `other`: it is
 *  released once waited for, at once when nothing needs waiting (`other` is `queue`,
 *  whose order already holds, or the ticket is done), and on failure. Returns 0 or
 *  cpu_queue_submit's errno value. */
int cpu_queue_submit_wait(cpu_queue *queue, cpu_queue *other, uint64_t ticket);

/** Ticket of the last task submitted so far (0 when none): waiting for it waits for
 *  everything submitted before this call. */
uint64_t cpu_queue_last_ticket(cpu_queue *queue);

/** True when the task with `ticket` (and so every earlier one) has finished. */
bool cpu_queue_done(cpu_queue *queue, uint64_t ticket);

/** Blocks until the task with `ticket` (and every earlier one) has finished. */
void cpu_queue_wait(cpu_queue *queue, uint64_t ticket);

/** Blocks until every task submitted before the call has finished; tasks submitted
 *  meanwhile by other threads are not waited for. */
void cpu_queue_synchronize(cpu_queue *queue);

/** True when every submitted task has finished. Does not block on tasks. */
bool cpu_queue_idle(cpu_queue *queue);

#endif
