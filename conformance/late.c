/* Writes held behind a gate, or slow in the fallback (late.h). */
#include "late.h"

#include "hold.h"
#include "work.h"

void bp_conf_late_init(bp_conf_late *late) {
    late->native = bp_conf_native_host_funcs();
    late->holders = 0;
    late->finished = false;
    late->opener_started = false;
    bp_conf_gate_init(&late->gate);
}

bp_status bp_conf_late_write(bp_conf_late *late, bp_stream *stream, void *dst, const void *src,
                             size_t bytes, int value, int fallback_rounds) {
    if (!late->native)
        return bp_conf_slow_fill(stream, dst, bytes, value, fallback_rounds);
    bp_status st = bp_conf_gate_hold(&late->gate, stream);
    if (st != BP_OK)
        return st;
    late->holders++;
    bp_device *dev = bp_stream_device(stream);
    return bp_memory_copy_async(dst, dev, src, dev, bytes, stream);
}

bool bp_conf_late_held(const bp_conf_late *late) {
    return late->native && late->holders > 0;
}

bool bp_conf_late_is_open(bp_conf_late *late) {
    return !bp_conf_late_held(late) || late->finished || bp_conf_gate_is_open(&late->gate);
}

void bp_conf_late_open_later(bp_conf_late *late) {
    if (late->native && !late->finished && !late->opener_started)
        late->opener_started =
            bp_conf_gate_open_later(&late->opener, &late->gate, BP_CONF_LATE_OPEN_MS);
}

bool bp_conf_late_finish(bp_conf_late *late) {
    if (late->finished)
        return true;
    bool was_open = bp_conf_late_is_open(late);
    if (late->opener_started)
        bp_conf_gate_opener_join(&late->opener);
    bp_conf_gate_destroy(&late->gate, late->holders);
    late->finished = true;
    return was_open;
}
