#!/usr/bin/env bash
# The layering check (scripts/check-layers.sh) on scratch trees with known faults.
# usage: layering_fixture.sh detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR CC NM
#   detects_violations: four faults, each named, exit 1: hal/log.c includes
#     dispatcher_internal.h; hal/stream.c's object calls bp_region_check_not_recording
#     (dispatcher/region.c's); the cpu kit's backends/cpukit/cpu_queue.c's calls hal's
#     bp_stream_check; the docs' table lacks the row of layer 'test'. Without them: exit
#     0 and the summary, from the object list and from the objects under
#     CMakeFiles/backplane.dir alone.
#   usage_errors: no build directory, a missing one, one without objects, an object list
#     naming a missing object or one outside the build directory, a folder of sources the
#     table lacks: exit 2 and the message each.
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR CC NM" >&2; exit 2; }
case_name="$1" source_dir="$2" scratch="$3" cc="$4" nm="$5"
check="$source_dir/scripts/check-layers.sh"

fail() {
  echo "layering_fixture $case_name: FAILED: $*" >&2
  exit 1
}

# The scratch tree: a copy of the real table and docs/architecture.md; hal/stream.c, hal/log.c,
# dispatcher/region.c (with dispatcher/dispatcher_internal.h) and the kit's
# backends/cpukit/cpu_queue.c; their objects where a build puts them, listed in
# build/layering/backplane-objects.txt as tests/layers.cmake lists them. $1: "faulty" (hal/log.c
# includes dispatcher_internal.h, hal/stream.c calls bp_region_check_not_recording, the
# kit calls hal's bp_stream_check, the docs' table lacks the row of layer 'test') or
# "clean".
make_tree() {
  local src="$scratch/src" build="$scratch/build" file object
  rm -rf "$scratch"
  mkdir -p "$src/scripts" "$src/hal" "$src/dispatcher" "$src/backends/cpukit" "$build/layering"
  cp "$source_dir/scripts/layers.txt" "$src/scripts/"
  mkdir -p "$src/docs"
  if [ "$1" = faulty ]; then
    grep -v '^| `test` |' "$source_dir/docs/architecture.md" >"$src/docs/architecture.md"
  else
    cp "$source_dir/docs/architecture.md" "$src/docs/"
  fi
  printf 'int bp_region_check_not_recording(void);\n' >"$src/dispatcher/dispatcher_internal.h"
  printf '#include "dispatcher_internal.h"\nint bp_region_check_not_recording(void) { return 0; }\n' \
    >"$src/dispatcher/region.c"
  if [ "$1" = faulty ]; then
    printf 'int bp_region_check_not_recording(void);\nint bp_stream_check(void) { return bp_region_check_not_recording(); }\n' \
      >"$src/hal/stream.c"
    printf '#include <stdio.h>\n\n#include "dispatcher_internal.h"\nvoid bp_log(void) { puts("log"); }\n' \
      >"$src/hal/log.c"
    printf 'int bp_stream_check(void);\nint cpu_queue_push(void) { return bp_stream_check(); }\n' \
      >"$src/backends/cpukit/cpu_queue.c"
  else
    printf 'int bp_stream_check(void) { return 0; }\n' >"$src/hal/stream.c"
    printf '#include <stdio.h>\nvoid bp_log(void) { puts("log"); }\n' >"$src/hal/log.c"
    printf 'int cpu_queue_push(void) { return 0; }\n' >"$src/backends/cpukit/cpu_queue.c"
  fi
  for file in hal/stream.c hal/log.c dispatcher/region.c backends/cpukit/cpu_queue.c; do
    case "$file" in
      backends/cpukit/*) object="$build/backends/cpukit/CMakeFiles/bp_cpukit.dir/${file#backends/cpukit/}.o" ;;
      *) object="$build/CMakeFiles/backplane.dir/$file.o" ;;
    esac
    mkdir -p "$(dirname "$object")"
    "$cc" -c -I"$src/dispatcher" -o "$object" "$src/$file" || fail "cannot compile $file with $cc"
    printf '%s\n' "$object" >>"$build/layering/backplane-objects.txt"
  done
}

# Runs the check; sets status and output.
run_check() {
  set +e
  output="$(bash "$check" --source "$scratch/src" --nm "$nm" "$@" 2>&1)"
  status=$?
  set -e
  printf '$ check-layers.sh %s\n%s\n(exit %d)\n' "$*" "$output" "$status"
}

expect() {  # expect <exit status> <text the output must hold>...
  local want="$1" text
  shift
  [ "$status" -eq "$want" ] || fail "exit $status, expected $want"
  for text in "$@"; do
    grep -qF -- "$text" <<<"$output" || fail "the output lacks '$text'"
  done
}

case "$case_name" in
  detects_violations)
    make_tree faulty
    run_check "$scratch/build"
    expect 1 "hal/log.c:3: includes dispatcher_internal.h (dispatcher/, layer 2 'dispatch') from layer 0 'hal'" \
      "hal/stream.c: calls bp_region_check_not_recording (dispatcher/region.c, layer 2 'dispatch') from layer 0 'hal'" \
      "backends/cpukit/cpu_queue.c: calls bp_stream_check (hal/stream.c, layer 0 'hal') from layer 'kit'" \
      "docs/architecture.md:" "the layer table has no row of layer 'test'" \
      "layers: 4 violation(s)"
    make_tree clean
    run_check "$scratch/build"
    expect 0 "layers: 5 files, 4 objects, 0 violations"
    rm "$scratch/build/layering/backplane-objects.txt"
    run_check "$scratch/build"
    expect 0 "layers: 5 files, 3 objects, 0 violations"
    ;;
  usage_errors)
    make_tree clean
    run_check
    expect 2 "no build directory given" "usage:"
    run_check "$scratch/no-such-build"
    expect 2 "no build directory '$scratch/no-such-build'"
    mkdir -p "$scratch/empty-build"
    run_check "$scratch/empty-build"
    expect 2 "no objects of libbackplane"
    printf '%s\n' "$scratch/build/CMakeFiles/backplane.dir/hal/gone.c.o" >"$scratch/objects.txt"
    run_check --objects "$scratch/objects.txt" "$scratch/build"
    expect 2 "no object '$scratch/build/CMakeFiles/backplane.dir/hal/gone.c.o', which '$scratch/objects.txt' names"
    printf '/elsewhere/CMakeFiles/backplane.dir/hal/log.c.o\n' >"$scratch/objects.txt"
    run_check --objects "$scratch/objects.txt" "$scratch/build"
    expect 2 "the object '/elsewhere/CMakeFiles/backplane.dir/hal/log.c.o', which '$scratch/objects.txt' names, is not in the build directory"
    mkdir -p "$scratch/src/newlayer"
    printf 'int bp_new(void) { return 0; }\n' >"$scratch/src/newlayer/new.c"
    run_check "$scratch/build"
    expect 2 "newlayer/new.c: the folder newlayer/ is in no row of"
    ;;
  *)
    fail "unknown case '$case_name'"
    ;;
esac
echo "layering_fixture $case_name: ok"
