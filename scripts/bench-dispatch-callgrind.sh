#!/usr/bin/env bash
# Instructions bp_dispatch adds to a kernel call, counted by callgrind (a figure that
# does not move with the load of a shared machine). Each variant of
# `bp-bench dispatch --only direct|dispatch` runs twice, with two call counts;
# subtracting the runs cancels start-up, warm-up and exit, and subtracting the
# variants leaves what dispatching costs above calling the kernel directly.
#
#   scripts/bench-dispatch-callgrind.sh [path/to/bp-bench] [--annotate]
#
# BP_BENCH also names the binary (default: build/bin/bp-bench). --annotate also prints
# callgrind_annotate's per-line counts of dispatcher/dispatcher.c for the long
# dispatch run (needs a build with debug info, e.g. RelWithDebInfo). Prints:
#   instructions per direct call:  11.0
#   instructions per bp_dispatch:  88.0
#   bp_dispatch overhead:          77.0 instructions per call
#   instructions per op call:      ...  (a whole op: argument checks + dispatch)
#   dispatch share of an op call:  ...  (what the dispatcher adds to each op; goal <= 50)
set -euo pipefail

bench=${BP_BENCH:-build/bin/bp-bench}
annotate=0
for arg in "$@"; do
    case $arg in
        --annotate) annotate=1 ;;
        *) bench=$arg ;;
    esac
done
long=200000
short=20000

command -v valgrind >/dev/null || { echo "bench-dispatch-callgrind: valgrind is not installed" >&2; exit 2; }
[[ -x $bench ]] || { echo "bench-dispatch-callgrind: $bench is not an executable (build first, or pass its path)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Total instructions (Ir) of `bp-bench dispatch --only VARIANT --iters N --repeat 1`.
instructions() {
    local variant=$1 iters=$2 out=$tmp/out.$1.$2
    if ! BP_TRACE_OPS= BP_PROFILE= valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bench" dispatch --only "$variant" --iters "$iters" --repeat 1 \
        >"$tmp/stdout.$variant.$iters" 2>"$tmp/log.$variant.$iters"; then
        echo "bench-dispatch-callgrind: the $variant run with --iters $iters failed:" >&2
        cat "$tmp/stdout.$variant.$iters" "$tmp/log.$variant.$iters" >&2
        exit 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

per_call() { # variant -> instructions per call
    local a b
    a=$(instructions "$1" "$long")
    b=$(instructions "$1" "$short")
    awk -v a="$a" -v b="$b" -v n=$((long - short)) 'BEGIN { printf "%.1f", (a - b) / n }'
}

# Inclusive instructions of one function in a callgrind output file.
inclusive() {
    callgrind_annotate --inclusive=yes --show-percs=no "$1" 2>/dev/null |
        awk -v fn="$2" '$0 ~ (":" fn " ") || $0 ~ (":" fn "$") { gsub(",", "", $1); print $1; exit }'
}

# What the dispatcher adds to a whole op call: bp_dispatch_checked (the ops' entry into
# the dispatcher) with the kernel it calls taken out, per call.
op_dispatch_per_call() {
    instructions op "$long" >/dev/null
    instructions op "$short" >/dev/null
    local dl kl ds ks
    dl=$(inclusive "$tmp/out.op.$long" bp_dispatch_checked)
    kl=$(inclusive "$tmp/out.op.$long" noop_kernel)
    ds=$(inclusive "$tmp/out.op.$short" bp_dispatch_checked)
    ks=$(inclusive "$tmp/out.op.$short" noop_kernel)
    if [[ -z $dl || -z $kl || -z $ds || -z $ks ]]; then
        echo "n/a (no symbols: build with debug info)"
        return
    fi
    awk -v dl="$dl" -v kl="$kl" -v ds="$ds" -v ks="$ks" -v n=$((long - short)) \
        'BEGIN { printf "%.1f", ((dl - kl) - (ds - ks)) / n }'
}

direct=$(per_call direct)
dispatch=$(per_call dispatch)
op_call=$(per_call op)
op_dispatch=$(op_dispatch_per_call)
printf 'instructions per direct call:  %s\n' "$direct"
printf 'instructions per bp_dispatch:  %s\n' "$dispatch"
awk -v a="$dispatch" -v b="$direct" -v l="$long" -v s="$short" 'BEGIN {
    printf "bp_dispatch overhead:          %.1f instructions per call (%d - %d calls)\n", a - b, l, s
}'
printf 'instructions per op call:      %s (bp_scale_out with the no-op kernel: checks + dispatch)\n' "$op_call"
printf 'dispatch share of an op call:  %s instructions (bp_dispatch_checked minus the kernel; goal <= 50)\n' "$op_dispatch"

if ((annotate)); then
    echo
    echo "== callgrind_annotate: bp_dispatch's lines over $long calls (divide by $long)"
    callgrind_annotate --auto=yes --show-percs=no "$tmp/out.dispatch.$long" 2>/dev/null |
        awk '/-- Auto-annotated source: .*dispatcher\/dispatcher.c/ { on = 1 }
             on && /-- Auto-annotated source:/ && !/dispatcher\/dispatcher.c/ { on = 0 }
             on' | grep -E '^ *[0-9,]{7,} ' || echo "(no line counts: build with debug info)"
fi
