/* BP_PROFILE=trace.json: one Chrome trace event per kernel launch, for Perfetto or
 * chrome://tracing (a JSON array of "X" events; tid is a stream, named by metadata).
 *
 * On a device with BP_CAP_TIMED_EVENTS the event is the device time: two timing
 * events from a per-device pool are recorded around the kernel on its stream. They are
 * resolved lazily, when the bounded buffer of launches fills and at exit: the pending
 * end events are waited for, then one anchor event per device is recorded and waited
 * for, and the host clock read right after it places the device's events on the host
 * timeline (ts = anchor's host time - elapsed(start, anchor)). Elsewhere the event is
 * the host time of the launch call. Every resolved batch is appended to the file at
 * once, so memory stays bounded on long runs and a crashed run leaves a file Perfetto
 * still opens (the closing bracket is optional in the format). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dispatcher_internal.h"

#define PROFILE_CAPACITY 4096 /* launches kept before a resolve (which waits for them) */
#define SHAPES_MAX 192

typedef struct prof_device {
    bp_device *device;
    bool timed;
    bp_event **free_events; /* the pool of timing events */
    int n_free, cap_free;
    bp_event *anchor;       /* during a resolve */
    double anchor_us;
} prof_device;

typedef struct prof_stream {
    const bp_stream *stream;
    const bp_device *device;
    bool is_default;
} prof_stream;

typedef struct prof_record {
    const char *op;          /* the op record's name: lives as long as the process */
    prof_device *device;
    bp_dtype dtype;
    int stream_id;
    double host_us, launch_us;
    bp_event *start, *end;   /* NULL: host timing */
    char shapes[SHAPES_MAX]; /* JSON text */
} prof_record;

static bool profile_on;
static bool profile_closed;
static pid_t profile_pid;
static double profile_t0_us;
static FILE *profile_file;
static char *profile_path;
static bool profile_first_event = true;
static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER;

static prof_device profile_devices[BP_MAX_DEVICES];
static int profile_device_count;
static prof_stream *profile_streams;
static int profile_stream_count, profile_stream_cap;
static prof_record *profile_records;
static int profile_record_count;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

bool bp_profile_enabled(void) { return profile_on; }

/* ---- per-device event pools and stream ids (profile_lock held) ---- */

static prof_device *device_entry(bp_device *device) {
    for (int i = 0; i < profile_device_count; i++)
        if (profile_devices[i].device == device)
            return &profile_devices[i];
    if (profile_device_count == BP_MAX_DEVICES)
        return NULL;
    prof_device *d = &profile_devices[profile_device_count++];
    *d = (prof_device){.device = device,
                       .timed = (device->props.capabilities & BP_CAP_TIMED_EVENTS) != 0};
    return d;
}

static bp_event *take_event(prof_device *d) {
    if (d->n_free > 0)
        return d->free_events[--d->n_free];
    bp_event *ev = NULL;
    if (bp_event_create(d->device, BP_EVENT_TIMING, &ev) != BP_OK) {
        bp_log(BP_LOG_WARN, "profile", "BP_PROFILE: no timing event on %s (%s); timing its "
               "launches on the host", d->device->name, bp_last_error());
        d->timed = false;
        return NULL;
    }
    return ev;
}

static void give_event(prof_device *d, bp_event *ev) {
    if (!ev)
        return;
    if (d->n_free == d->cap_free) {
        int cap = d->cap_free ? 2 * d->cap_free : 64;
        bp_event **grown = realloc(d->free_events, (size_t)cap * sizeof *grown);
        if (!grown) {
            bp_event_destroy(ev);
            return;
        }
        d->free_events = grown;
        d->cap_free = cap;
    }
    d->free_events[d->n_free++] = ev;
}

static int stream_id(const bp_stream *stream, const bp_device *device) {
    for (int i = 0; i < profile_stream_count; i++)
        if (profile_streams[i].stream == stream)
            return i;
    if (profile_stream_count == profile_stream_cap) {
        int cap = profile_stream_cap ? 2 * profile_stream_cap : 16;
        prof_stream *grown = realloc(profile_streams, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        profile_streams = grown;
        profile_stream_cap = cap;
    }
    profile_streams[profile_stream_count] =
        (prof_stream){.stream = stream, .device = device, .is_default = stream->is_default};
    return profile_stream_count++;
}

/* ---- writing ---- */

/* `s` as a JSON string literal (quoted, escaped) in buf. */
static const char *json_string(const char *s, char *buf, size_t size) {
    size_t used = 0;
    buf[used++] = '"';
    for (; *s && used + 8 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[used++] = '\\';
            buf[used++] = (char)c;
        } else if (c < 0x20) {
            used += (size_t)snprintf(buf + used, size - used, "\\u%04x", c);
        } else {
            buf[used++] = (char)c;
        }
    }
    buf[used++] = '"';
    buf[used] = '\0';
    return buf;
}

static void begin_event(FILE *f) {
    fputs(profile_first_event ? "\n" : ",\n", f);
    profile_first_event = false;
}

static void write_record(FILE *f, const prof_record *r, double ts_us, double dur_us,
                         bool device_time) {
    char name[2 * BP_OP_NAME_MAX + 8], device[2 * BP_NAME_MAX + 8];
    begin_event(f);
    fprintf(f, "{\"name\": %s, \"cat\": \"op\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
               "\"pid\": %ld, \"tid\": %d, \"args\": {\"device\": %s, \"dtype\": \"%s\", "
               "\"shapes\": %s, \"stream\": %d, \"timing\": \"%s\", \"launch_us\": %.3f}}",
            json_string(r->op, name, sizeof name), ts_us - profile_t0_us, dur_us,
            (long)profile_pid, r->stream_id, json_string(r->device->device->name, device,
                                                          sizeof device),
            bp_dtype_name(r->dtype), r->shapes, r->stream_id, device_time ? "device" : "host",
            r->launch_us);
}

/* Waits for an anchor event and returns the host time of its completion. Polling
 * for a while reads the clock closer to that moment than a blocking wait's wake-up. */
static bool wait_anchor(bp_event *anchor, double *out_us) {
    double give_up = now_us() + 1000;
    bp_status st;
    while ((st = bp_event_query(anchor)) == BP_ERR_NOT_READY && now_us() < give_up)
        ;
    if (st == BP_ERR_NOT_READY)
        st = bp_event_synchronize(anchor);
    *out_us = now_us();
    return st == BP_OK;
}

/* Waits for the buffered launches, appends them to the file and empties the buffer. */
static void resolve_locked(void) {
    for (int i = 0; i < profile_record_count; i++)
        if (profile_records[i].end)
            bp_event_synchronize(profile_records[i].end);
    for (int i = 0; i < profile_device_count; i++) {
        prof_device *d = &profile_devices[i];
        d->anchor = NULL;
        bool used = false;
        for (int r = 0; r < profile_record_count && !used; r++)
            used = profile_records[r].device == d && profile_records[r].start;
        bp_stream *stream = NULL;
        if (!used || bp_stream_default(d->device, &stream) != BP_OK)
            continue;
        d->anchor = take_event(d);
        if (d->anchor && (bp_event_record(d->anchor, stream) != BP_OK ||
                          !wait_anchor(d->anchor, &d->anchor_us))) {
            give_event(d, d->anchor);
            d->anchor = NULL;
        }
    }
    for (int i = 0; i < profile_record_count; i++) {
        prof_record *r = &profile_records[i];
        prof_device *d = r->device;
        float dur_ms = 0, back_ms = 0;
        bool device_time = r->start && d->anchor &&
                           bp_event_elapsed_ms(r->start, r->end, &dur_ms) == BP_OK &&
                           bp_event_elapsed_ms(r->start, d->anchor, &back_ms) == BP_OK;
        if (device_time)
            write_record(profile_file, r, d->anchor_us - back_ms * 1e3,
                         dur_ms > 0 ? dur_ms * 1e3 : 0, true);
        else
            write_record(profile_file, r, r->host_us, r->launch_us, false);
        give_event(d, r->start);
        give_event(d, r->end);
    }
    for (int i = 0; i < profile_device_count; i++)
        give_event(&profile_devices[i], profile_devices[i].anchor);
    profile_record_count = 0;
    /* An empty stdio buffer: a forked child's exit cannot write it a second time. */
    fflush(profile_file);
}

static void profile_close(void) {
    if (!profile_on || getpid() != profile_pid)
        return;
    pthread_mutex_lock(&profile_lock);
    profile_closed = true;
    for (int i = 0; i < profile_device_count; i++)
        bp_device_synchronize(profile_devices[i].device);
    resolve_locked();
    FILE *f = profile_file;
    begin_event(f);
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %ld, \"tid\": 0, "
               "\"args\": {\"name\": \"backplane\"}}", (long)profile_pid);
    for (int i = 0; i < profile_stream_count; i++) {
        const prof_stream *s = &profile_streams[i];
        char label[BP_NAME_MAX + 48];
        snprintf(label, sizeof label, "%s stream %d%s", s->device->name, i,
                 s->is_default ? " (default)" : "");
        char quoted[2 * sizeof label + 8];
        begin_event(f);
        fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %ld, \"tid\": %d, "
                   "\"args\": {\"name\": %s}}", (long)profile_pid, i,
                json_string(label, quoted, sizeof quoted));
    }
    fputs("\n]\n", f);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        bp_log(BP_LOG_WARN, "profile", "BP_PROFILE: writing %s failed: %s", profile_path,
               strerror(errno));
    profile_file = NULL;
    pthread_mutex_unlock(&profile_lock);
}

/* ---- the launch ---- */

/* "[[2, 3], [3]]": the shapes of the inputs, then the outputs; cut short (still valid
 * JSON) when they do not fit. */
static void format_shapes(const bp_kernel_call *kc, char *buf) {
    size_t used = 1;
    buf[0] = '[';
    int n = kc->n_inputs + kc->n_outputs;
    for (int i = 0; i < n; i++) {
        const bp_tensor_desc *t = i < kc->n_inputs ? kc->inputs[i]
                                                   : kc->outputs[i - kc->n_inputs];
        char one[BP_KERNEL_MAX_DIMS * 22 + 8];
        size_t len = (size_t)snprintf(one, sizeof one, "%s[", i ? ", " : "");
        for (int d = 0; d < t->ndim && d < BP_KERNEL_MAX_DIMS; d++)
            len += (size_t)snprintf(one + len, sizeof one - len, "%s%lld", d ? ", " : "",
                                    (long long)t->shape[d]);
        one[len++] = ']';
        if (used + len + 2 > SHAPES_MAX)
            break;
        memcpy(buf + used, one, len);
        used += len;
    }
    buf[used++] = ']';
    buf[used] = '\0';
}

bp_status bp_profile_launch(const bp_op_record *op, const bp_kernel_entry *kernel,
                            const bp_kernel_call *kc, const bp_op_call *call, bp_stream *stream) {
    if (!profile_on)
        return kernel->fn(kc);
    bp_event *start = NULL, *end = NULL;
    pthread_mutex_lock(&profile_lock);
    if (profile_closed) {
        pthread_mutex_unlock(&profile_lock);
        return kernel->fn(kc);
    }
    prof_device *d = device_entry(call->device);
    int sid = stream_id(stream, call->device);
    if (d && d->timed && (start = take_event(d)) && !(end = take_event(d))) {
        give_event(d, start);
        start = NULL;
    }
    pthread_mutex_unlock(&profile_lock);

    if (start && bp_event_record(start, stream) != BP_OK) {
        pthread_mutex_lock(&profile_lock);
        give_event(d, start);
        give_event(d, end);
        pthread_mutex_unlock(&profile_lock);
        start = end = NULL;
    }
    double t0 = now_us();
    bp_status st = kernel->fn(kc);
    double t1 = now_us();
    if (st == BP_OK && end && bp_event_record(end, stream) != BP_OK) {
        pthread_mutex_lock(&profile_lock);
        give_event(d, start);
        give_event(d, end);
        pthread_mutex_unlock(&profile_lock);
        start = end = NULL;
    }
    prof_record r = {.op = op->name, .device = d, .dtype = kc->dtype, .stream_id = sid,
                     .host_us = t0, .launch_us = t1 - t0, .start = start, .end = end};
    if (st == BP_OK && d && sid >= 0)
        format_shapes(kc, r.shapes);

    pthread_mutex_lock(&profile_lock);
    if (st != BP_OK || !d || sid < 0 || profile_closed) {
        if (d) {
            give_event(d, start);
            give_event(d, end);
        }
    } else {
        profile_records[profile_record_count++] = r;
        if (profile_record_count == PROFILE_CAPACITY)
            resolve_locked();
    }
    pthread_mutex_unlock(&profile_lock);
    return st;
}

/* A forked child must neither inherit a held lock nor append to its parent's file. */
static void before_fork(void) { pthread_mutex_lock(&profile_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&profile_lock); }
static void after_fork_child(void) {
    profile_closed = true;
    pthread_mutex_unlock(&profile_lock);
}

void bp_profile_init(void) {
    const char *value = secure_getenv("BP_PROFILE");
    if (!value || !*value)
        return;
    profile_path = strdup(value);
    profile_records = malloc(PROFILE_CAPACITY * sizeof *profile_records);
    profile_file = profile_path && profile_records ? fopen(value, "w") : NULL;
    if (!profile_file) {
        bp_log(BP_LOG_WARN, "profile", "BP_PROFILE=%s cannot be written: %s; profiling is off",
               value, strerror(errno));
        free(profile_records);
        free(profile_path);
        profile_records = NULL;
        profile_path = NULL;
        return;
    }
    fputc('[', profile_file);
    fflush(profile_file);
    profile_pid = getpid();
    profile_t0_us = now_us();
    profile_on = true;
    if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0 ||
        atexit(profile_close) != 0) {
        bp_log(BP_LOG_WARN, "profile", "BP_PROFILE: cannot register the writer at exit; "
               "profiling is off");
        profile_on = false;
        return;
    }
    bp_log(BP_LOG_INFO, "profile", "writing kernel launches to %s", value);
}
