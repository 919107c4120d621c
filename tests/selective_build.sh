#!/usr/bin/env bash
# Tracing-based selective build, end to end (ctest label "slow"):
#  1. run selective_build_prog against the full libbackplane with BP_TRACE_OPS set;
#  2. configure and build a second libbackplane with -DBP_SELECTED_OPS=<that trace>;
#  3. run the program against it (it must work), and its untraced ops (they must fail
#     with the dispatcher's missing-kernel error);
#  4. print both library sizes; the selected one must be smaller.
#
#   selective_build.sh <source dir> <work dir> <program> <full libbackplane.so> [cmake args...]
#
# The work dir keeps the second build between runs, so a re-run rebuilds only what
# changed. BP_JOBS sets the build's parallelism (default: nproc). In a cross build the
# cmake args name the toolchain file, and BP_TEST_EMULATOR (e.g. qemu-aarch64) runs the
# program.
set -euo pipefail

src=$1 work=$2 prog=$3 full_lib=$4
shift 4
mkdir -p "$work"
trace=$work/selected_ops.yaml
log=$work/build.log
sub=$work/build
rm -f "$trace"

# The program must not pick up plugins from the environment or beside either library.
export BP_AUTOLOAD=0 BP_PLUGIN_PATH= BP_PLUGINS= BP_DEVICE=

fail() { echo "selective_build: $*" >&2; exit 1; }
# Unquoted: the emulator's words (none natively).
run_prog() { ${BP_TEST_EMULATOR:-} "$prog" "$@"; }

echo "== 1. trace: BP_TRACE_OPS=$trace $prog run"
BP_TRACE_OPS=$trace run_prog run || fail "the traced run failed"
[[ -s $trace ]] || fail "BP_TRACE_OPS wrote no $trace"
cat "$trace"
grep -q '^    cpu: \[' "$trace" || fail "the trace lists no cpu kernels"

echo "== 2. selective build: -DBP_SELECTED_OPS=$trace (log: $log)"
if ! { cmake -S "$src" -B "$sub" -DBP_SELECTED_OPS="$trace" -DBP_BUILD_TESTS=OFF "$@" &&
       cmake --build "$sub" --target backplane -j "${BP_JOBS:-$(nproc)}"; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    fail "the selective build failed"
fi
sel_lib=$(cd "$sub/lib" && pwd)/libbackplane.so
[[ -f $sel_lib ]] || fail "no $sel_lib after the build"
grep -h "cpu kernels" "$log" || true

echo "== 3. run against the selected library"
out=$(LD_LIBRARY_PATH=$sub/lib run_prog run) || { echo "$out"; fail "the program failed against the selected library"; }
echo "$out"
grep -q "^library: $sub/lib/" <<<"$out" ||
    grep -q "^library: $(cd "$sub/lib" && pwd -P)/" <<<"$out" ||
    fail "the program did not load the selected library (LD_LIBRARY_PATH ignored: an RPATH?)"
out=$(LD_LIBRARY_PATH=$sub/lib run_prog untraced) || { echo "$out"; fail "untraced ops did not fail with the missing-kernel error"; }
echo "$out"

echo "== 4. sizes"
full_size=$(stat -L -c %s "$full_lib")
sel_size=$(stat -L -c %s "$sel_lib")
printf 'full libbackplane.so:     %10d bytes  %s\n' "$full_size" "$full_lib"
printf 'selected libbackplane.so: %10d bytes  %s (%.1f%% of full)\n' "$sel_size" "$sel_lib" \
    "$(awk -v a="$sel_size" -v b="$full_size" 'BEGIN { print 100 * a / b }')"
if command -v size >/dev/null; then
    text() { size -A "$1" | awk '/^\.text/ { print $2 }'; }
    printf '.text: full %d bytes, selected %d bytes\n' "$(text "$full_lib")" "$(text "$sel_lib")"
fi
(( sel_size < full_size )) || fail "the selected library is not smaller than the full one"
echo "selective build: ok"
