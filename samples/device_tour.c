/* device_tour: opens the default device by name and walks through what the HAL offers:
 * properties, streams with priorities, events with timing, cross-stream ordering, a
 * host function, the caching allocator, copies, memset and guards. `make demo` runs it; BP_DEVICE=NAME or
 * the first argument picks another device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <backplane/backplane.h>

/* What the host function of the tour checks: the downloaded bytes. */
typedef struct host_check {
    const unsigned char *out, *in;
    size_t wrong;
} host_check;

#define CHECK(call)                                                                   \
    do {                                                                              \
        bp_status st_ = (call);                                                       \
        if (st_ != BP_OK) {                                                           \
            fprintf(stderr, "device_tour: %s failed: %s: %s\n", #call, bp_status_str(st_), \
                    bp_last_error());                                                 \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

enum { MIB = 1 << 20, SIZE = 64 * MIB };

/* Runs on a host thread after the consumer's download: plain host code, no backplane
 * calls (bp_stream_launch_host_func says what a host function may do). */
static void count_wrong_bytes(void *arg) {
    host_check *c = arg;
    for (size_t i = 0; i < SIZE; i++)
        c->wrong += c->out[i] != (i < 4096 ? 0x7f : c->in[i]);
}

static void print_props(bp_device *dev) {
    bp_device_props p = {.struct_size = sizeof p};
    CHECK(bp_device_get_props(dev, &p));
    printf("device      %s: %s\n", p.name, p.description);
    printf("backend     %s %s\n", p.backend_name, p.backend_version);
    printf("memory      %.0f MiB total, %.0f MiB free\n", p.total_memory / (double)MIB,
           p.free_memory / (double)MIB);
    printf("streams     priorities %d (low) .. %d (high)%s%s\n", p.stream_priority_least,
           p.stream_priority_greatest, p.capabilities & BP_CAP_ASYNC_STREAMS ? ", async" : "",
           p.capabilities & BP_CAP_TIMED_EVENTS ? ", timed events" : "");
}

static void print_stats(bp_device *dev, const char *when) {
    bp_memory_stats s = {.struct_size = sizeof s};
    CHECK(bp_memory_get_stats(dev, &s));
    printf("allocator   %-22s allocated %6.1f MiB, reserved %6.1f MiB, peak %6.1f MiB, "
           "%llu allocs, %llu cache hits\n", when, s.allocated_bytes / (double)MIB,
           s.reserved_bytes / (double)MIB, s.peak_allocated_bytes / (double)MIB,
           (unsigned long long)s.num_allocs, (unsigned long long)s.cache_hits);
}

int main(int argc, char **argv) {
    bp_device *dev = NULL;
    if (argc > 1)
        CHECK(bp_device_open(argv[1], &dev));
    else
        CHECK(bp_device_default(&dev));
    print_props(dev);

    /* Two streams: a producer at normal priority and a consumer at the highest. */
    bp_device_props p = {.struct_size = sizeof p};
    CHECK(bp_device_get_props(dev, &p));
    bp_stream *producer = NULL, *consumer = NULL;
    CHECK(bp_stream_create(dev, 0, &producer));
    CHECK(bp_stream_create(dev, p.stream_priority_greatest, &consumer));

    unsigned char *host_in = NULL, *host_out = NULL;
    CHECK(bp_host_alloc(dev, SIZE, (void **)&host_in));
    CHECK(bp_host_alloc(dev, SIZE, (void **)&host_out));
    for (size_t i = 0; i < SIZE; i++)
        host_in[i] = (unsigned char)(i * 2654435761u >> 13);

    bool timed = p.capabilities & BP_CAP_TIMED_EVENTS;
    bp_event *start = NULL, *uploaded = NULL, *done = NULL;
    CHECK(bp_event_create(dev, timed ? BP_EVENT_TIMING : 0, &start));
    CHECK(bp_event_create(dev, timed ? BP_EVENT_TIMING : 0, &uploaded));
    CHECK(bp_event_create(dev, timed ? BP_EVENT_TIMING : 0, &done));

    /* Upload on the producer; the consumer waits for it through an event, copies within
     * the device under a stream guard (NULL stream = the guarded one), and downloads. */
    void *a = NULL, *b = NULL;
    CHECK(bp_memory_alloc(dev, SIZE, producer, &a));
    CHECK(bp_event_record(start, producer));
    CHECK(bp_memory_copy_async(a, dev, host_in, NULL, SIZE, producer));
    CHECK(bp_event_record(uploaded, producer));
    CHECK(bp_stream_wait_event(consumer, uploaded));
    {
        bp_status st;
        BP_STREAM_GUARD(consumer, &st);
        CHECK(st);
        CHECK(bp_memory_alloc(dev, SIZE, NULL, &b));
        CHECK(bp_memory_copy_async(b, dev, a, dev, SIZE, NULL));
        CHECK(bp_memory_record_stream(dev, a, consumer));
        CHECK(bp_memory_set_async(dev, b, 0x7f, 4096, NULL));
        CHECK(bp_memory_copy_async(host_out, NULL, b, dev, SIZE, NULL));
        CHECK(bp_event_record(done, consumer));
    }
    printf("enqueued    upload %d MiB on the producer, copy + memset + download on the consumer\n",
           SIZE / MIB);
    printf("query       consumer stream is %s right after enqueueing\n",
           bp_stream_query(consumer) == BP_OK ? "idle" : "busy");
    /* A host function after the download: it runs once the bytes are on the host. */
    host_check check = {host_out, host_in, 0};
    CHECK(bp_stream_launch_host_func(consumer, count_wrong_bytes, &check));
    CHECK(bp_event_synchronize(done));
    CHECK(bp_stream_synchronize(consumer));

    size_t wrong = check.wrong;
    printf("verified    %zu of %d bytes as expected (by a host function on the consumer)\n",
           (size_t)SIZE - wrong, SIZE);
    if (timed) {
        float up_ms = 0, total_ms = 0, warm_ms = 0;
        CHECK(bp_event_elapsed_ms(start, uploaded, &up_ms));
        CHECK(bp_event_elapsed_ms(start, done, &total_ms));
        /* The first upload also paid for the pages of fresh memory; time one more into
         * the same, now resident, block. */
        CHECK(bp_event_record(start, producer));
        CHECK(bp_memory_copy_async(a, dev, host_in, NULL, SIZE, producer));
        CHECK(bp_event_record(uploaded, producer));
        CHECK(bp_event_synchronize(uploaded));
        CHECK(bp_event_elapsed_ms(start, uploaded, &warm_ms));
        printf("timing      upload %.2f ms (%.1f GB/s; first touch of fresh memory), again "
               "%.2f ms (%.1f GB/s), whole pipeline %.2f ms\n", up_ms, SIZE / (up_ms * 1e6),
               warm_ms, SIZE / (warm_ms * 1e6), total_ms);
    }

    print_stats(dev, "with 2 blocks live:");
    CHECK(bp_memory_free(dev, a));
    CHECK(bp_memory_free(dev, b));
    void *again = NULL;
    CHECK(bp_memory_alloc(dev, SIZE, consumer, &again));
    print_stats(dev, "after free + realloc:");
    CHECK(bp_memory_free(dev, again));
    CHECK(bp_device_synchronize(dev));
    CHECK(bp_memory_empty_cache(dev));
    print_stats(dev, "after empty_cache:");

    CHECK(bp_event_destroy(start));
    CHECK(bp_event_destroy(uploaded));
    CHECK(bp_event_destroy(done));
    CHECK(bp_stream_destroy(producer));
    CHECK(bp_stream_destroy(consumer));
    CHECK(bp_host_free(dev, host_in));
    CHECK(bp_host_free(dev, host_out));
    printf("result      %s\n", wrong ? "FAILED" : "ok");
    return wrong ? 1 : 0;
}
