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
#   instructions per direct call:  5.0
#   instructions per bp_dispatch:  60.0
#   dispatch overhead:             55.0 instructions per call (goal <= 50)
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

direct=$(per_call direct)
dispatch=$(per_call dispatch)
printf 'instructions per direct call:  %s\n' "$direct"
printf 'instructions per bp_dispatch:  %s\n' "$dispatch"
awk -v a="$dispatch" -v b="$direct" -v l="$long" -v s="$short" 'BEGIN {
    printf "dispatch overhead:             %.1f instructions per call (goal <= 50; %d - %d calls)\n", a - b, l, s
}'

if ((annotate)); then
    echo
    echo "== callgrind_annotate: bp_dispatch's lines over $long calls (divide by $long)"
    callgrind_annotate --auto=yes --show-percs=no "$tmp/out.dispatch.$long" 2>/dev/null |
        awk '/-- Auto-annotated source: .*dispatcher\/dispatcher.c/ { on = 1 }
             on && /-- Auto-annotated source:/ && !/dispatcher\/dispatcher.c/ { on = 0 }
             on' | grep -E '^ *[0-9,]{7,} ' || echo "(no line counts: build with debug info)"
fi
