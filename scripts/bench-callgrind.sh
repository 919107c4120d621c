#!/usr/bin/env bash
# Instructions per cached alloc+free pair of the caching allocator, counted by
# callgrind: unlike nanoseconds, the figure does not move with the load of a shared
# machine. Two runs differ only in the number of timed pairs, so subtracting them
# cancels start-up, warm-up and exit.
#
#   scripts/bench-callgrind.sh [path/to/bp-bench] [extra bp-bench alloc options]
#
# BP_BENCH also names the binary (default: build/bin/bp-bench). Prints one line:
#   instructions per alloc+free: 123.4 (size 4096, 100000 - 10000 pairs)
set -euo pipefail

bench=${BP_BENCH:-build/bin/bp-bench}
if [[ $# -gt 0 && $1 != --* ]]; then
    bench=$1
    shift
fi
long=100000
short=10000

command -v valgrind >/dev/null || { echo "bench-callgrind: valgrind is not installed" >&2; exit 2; }
[[ -x $bench ]] || { echo "bench-callgrind: $bench is not an executable (build first, or pass its path)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Total instructions (Ir) of one run of `bp-bench alloc --iters N`.
instructions() {
    local iters=$1
    shift
    if ! valgrind --tool=callgrind --callgrind-out-file="$tmp/out.$iters" \
        "$bench" alloc --iters "$iters" "$@" >"$tmp/stdout.$iters" 2>"$tmp/log.$iters"; then
        echo "bench-callgrind: the run with --iters $iters failed:" >&2
        cat "$tmp/stdout.$iters" "$tmp/log.$iters" >&2
        exit 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$tmp/out.$iters"
}

ir_long=$(instructions "$long" "$@")
ir_short=$(instructions "$short" "$@")
size=$(awk '/^  size/ { print $2 }' "$tmp/stdout.$long")
awk -v a="$ir_long" -v b="$ir_short" -v long="$long" -v short="$short" -v size="$size" 'BEGIN {
    printf "instructions per alloc+free: %.1f (size %s, %d - %d pairs)\n", (a - b) / (long - short), size, long, short
}'
