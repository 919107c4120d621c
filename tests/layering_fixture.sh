#!/usr/bin/env bash
# The layering check (scripts/check-layers.sh) on scratch trees with known faults.
# usage: layering_fixture.sh detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR CC NM
#   detects_violations: hal/log.c includes dispatcher_internal.h and hal/stream.c's
#     object calls bp_region_check_not_recording, defined by dispatcher/region.c's: exit
#     1, each named with its file; without the two faults: exit 0 and the summary.
#   usage_errors: no build directory, a missing one, one without objects, a folder of
#     sources the table lacks, an object list naming a missing object: exit 2 and the
#     message each.
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR CC NM" >&2; exit 2; }
case_name="$1" source_dir="$2" scratch="$3" cc="$4" nm="$5"
check="$source_dir/scripts/check-layers.sh"

fail() {
  echo "layering_fixture $case_name: FAILED: $*" >&2
  exit 1
}

# The scratch tree: a copy of the real table; hal/stream.c, hal/log.c and
# dispatcher/region.c (with dispatcher/dispatcher_internal.h); their objects where a
# build puts libbackplane's. $1: "faulty" or "clean".
make_tree() {
  rm -rf "$scratch"
  mkdir -p "$scratch/src/scripts" "$scratch/src/hal" "$scratch/src/dispatcher" \
           "$scratch/build/CMakeFiles/backplane.dir/hal" "$scratch/build/CMakeFiles/backplane.dir/dispatcher"
  cp "$source_dir/scripts/layers.txt" "$scratch/src/scripts/"
  printf 'int bp_region_check_not_recording(void);\n' >"$scratch/src/dispatcher/dispatcher_internal.h"
  printf '#include "dispatcher_internal.h"\nint bp_region_check_not_recording(void) { return 0; }\n' \
    >"$scratch/src/dispatcher/region.c"
  if [ "$1" = faulty ]; then
    printf 'int bp_region_check_not_recording(void);\nint bp_stream_check(void) { return bp_region_check_not_recording(); }\n' \
      >"$scratch/src/hal/stream.c"
    printf '#include <stdio.h>\n\n#include "dispatcher_internal.h"\nvoid bp_log(void) { puts("log"); }\n' \
      >"$scratch/src/hal/log.c"
  else
    printf 'int bp_stream_check(void) { return 0; }\n' >"$scratch/src/hal/stream.c"
    printf '#include <stdio.h>\nvoid bp_log(void) { puts("log"); }\n' >"$scratch/src/hal/log.c"
  fi
  local file
  for file in hal/stream.c hal/log.c dispatcher/region.c; do
    "$cc" -c -I"$scratch/src/dispatcher" -o "$scratch/build/CMakeFiles/backplane.dir/$file.o" \
      "$scratch/src/$file" || fail "cannot compile $file with $cc"
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
      "layers: 2 violation(s)"
    make_tree clean
    run_check "$scratch/build"
    expect 0 "layers: 4 files, 3 objects, 0 violations"
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
    printf '/x/CMakeFiles/backplane.dir/hal/gone.c.o\n' >"$scratch/objects.txt"
    run_check --objects "$scratch/objects.txt" "$scratch/build"
    expect 2 "no object '$scratch/build/CMakeFiles/backplane.dir/hal/gone.c.o'"
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
