#!/usr/bin/env bash
# The AMD code-object check (scripts/check-amd-code-objects.sh) on bundles with known
# faults, compiled here with hipcc for gfx90a and gfx940.
# usage: amd_code_objects_fixture.sh detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR [HIPCC]
#   detects_violations: family "fixture" holds kernels `fine` and `spills` (a volatile
#     private array: scratch); fixture.def lists them, `absent` (GPU_KERNEL) and `nv_only`
#     (GPU_KERNEL_NV); a stand-in llvm-readelf reports gfx940's kernels with wavefront 32
#     and 70000 bytes of LDS; --targets asks for gfx908 too. Expected: exit 1 and each
#     fault named (absent missing on both targets, not nv_only; spills' scratch; the
#     wavefront and the LDS on gfx940 only; no gfx908), then the same check on a bundle
#     of `fine` alone with the real tools: exit 0 and "ok: ".
#   usage_errors: no arguments, a missing kernels directory, a missing bundle, a bundle
#     whose family has no .def: exit 2 and the message each; --skip: "skipped: <why>".
# HIPCC: the build's hipcc (found in PATH when empty); without one: "skipped: <why>".
set -euo pipefail
[ $# -ge 3 ] && [ $# -le 4 ] ||
  { echo "usage: $0 detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR [HIPCC]" >&2; exit 2; }
case_name="$1" source_dir="$2" scratch="$3" hipcc="${4:-}"
check="$source_dir/scripts/check-amd-code-objects.sh"

fail() {
  echo "amd_code_objects_fixture $case_name: FAILED: $*" >&2
  exit 1
}

# Runs the check with the arguments given; sets out and rc.
run_check() {
  set +e
  out=$(bash "$check" "$@" 2>&1)
  rc=$?
  set -e
  printf '%s\n' "$out"
}

expect() {
  printf '%s\n' "$out" | grep -qF -- "$1" || fail "no '$1' in the output"
}

rm -rf "$scratch"
mkdir -p "$scratch"

case "$case_name" in
  detects_violations)
    [ -n "$hipcc" ] || hipcc=$(command -v hipcc || true)
    [ -n "$hipcc" ] || { echo "skipped: no hipcc (scripts/install-deps.sh installs it)"; exit 0; }
    readelf=""
    for c in llvm-readelf-15 /usr/lib/llvm-15/bin/llvm-readelf llvm-readelf; do
      if command -v "$c" >/dev/null 2>&1; then
        readelf=$(command -v "$c")
        break
      fi
    done
    [ -n "$readelf" ] || { echo "skipped: no llvm-readelf (Debian: llvm-15)"; exit 0; }

    cat >"$scratch/fixture.cu" <<'EOF'
#include "gpu_port.h"
extern "C" __global__ void fine(float *x) { x[threadIdx.x] += 1.0f; }
#ifndef FINE_ONLY
extern "C" __global__ void spills(float *x, int i) {
    volatile float a[64]; /* a private array: scratch */
    for (int j = 0; j < 64; j++)
        a[j] = x[j * blockDim.x + threadIdx.x];
    x[threadIdx.x] = a[i & 63];
}
#endif
EOF
    mkdir -p "$scratch/faulty" "$scratch/clean"
    printf 'GPU_KERNEL(fine)\nGPU_KERNEL(spills)\nGPU_KERNEL(absent)\nGPU_KERNEL_NV(nv_only)\n' \
      >"$scratch/faulty/fixture.def"
    printf 'GPU_KERNEL(fine)\nGPU_KERNEL_NV(nv_only)\n' >"$scratch/clean/fixture.def"
    compile() { # $1: output directory, then extra flags
      local dir="$1"
      shift
      HIP_PLATFORM=amd "$hipcc" -x hip -std=c++17 --genco -O3 --offload-arch=gfx90a \
        --offload-arch=gfx940 -I"$source_dir/backends/gpu/kernels" "$@" \
        -o "$dir/fixture.hipfb" "$scratch/fixture.cu" || fail "hipcc failed"
    }
    compile "$scratch/faulty"
    compile "$scratch/clean" -DFINE_ONLY

    # The stand-in readelf: the real one's notes, doctored for gfx940's code objects.
    cat >"$scratch/readelf" <<EOF
#!/usr/bin/env bash
case "\$*" in
  *gfx940*) "$readelf" "\$@" | sed -e 's/\.wavefront_size: *64/.wavefront_size: 32/' \\
              -e 's/\.group_segment_fixed_size: *[0-9]*/.group_segment_fixed_size: 70000/' ;;
  *) exec "$readelf" "\$@" ;;
esac
EOF
    chmod +x "$scratch/readelf"

    run_check --readelf "$scratch/readelf" --targets "gfx90a;gfx940;gfx908" "$scratch/faulty" \
      "$scratch/faulty/fixture.hipfb"
    [ "$rc" -eq 1 ] || fail "exit $rc, not 1"
    for target in gfx90a gfx940; do
      expect "VIOLATION: fixture.hipfb $target: kernel absent (GPU_KERNEL in fixture.def) is missing"
      expect "VIOLATION: fixture.hipfb $target: spills uses scratch"
    done
    expect "VIOLATION: fixture.hipfb gfx940: fine has wavefront size 32, not 64 (CDNA)"
    expect "VIOLATION: fixture.hipfb gfx940: fine uses 70000 bytes of LDS, over the target's 65536"
    expect "VIOLATION: fixture.hipfb: no code object for target gfx908 (it has: gfx90a gfx940)"
    expect "check-amd-code-objects: 9 violation(s)"
    ! printf '%s\n' "$out" | grep -q "nv_only" || fail "nv_only (GPU_KERNEL_NV) was looked for"
    ! printf '%s\n' "$out" | grep -q "gfx90a: fine has\|gfx90a: fine uses" ||
      fail "gfx90a's fine was flagged"

    run_check --targets "gfx90a;gfx940" "$scratch/clean" "$scratch/clean/fixture.hipfb"
    [ "$rc" -eq 0 ] || fail "the clean bundle: exit $rc, not 0"
    expect "ok: 2 kernel code objects in 1 bundle(s)"
    ;;
  usage_errors)
    run_check
    [ "$rc" -eq 2 ] || fail "no arguments: exit $rc, not 2"
    expect "usage: "
    run_check "$scratch/nowhere" "$scratch/none.hipfb"
    [ "$rc" -eq 2 ] || fail "missing kernels directory: exit $rc, not 2"
    expect "check-amd-code-objects: no directory $scratch/nowhere"
    run_check "$source_dir/backends/gpu/kernels" "$scratch/none.hipfb"
    if printf '%s\n' "$out" | grep -q "^skipped: "; then
      exit 0 # no LLVM tools: the rest needs them
    fi
    [ "$rc" -eq 2 ] || fail "missing bundle: exit $rc, not 2"
    expect "check-amd-code-objects: no bundle $scratch/none.hipfb"
    printf 'not a bundle' >"$scratch/nofamily.hipfb"
    run_check "$source_dir/backends/gpu/kernels" "$scratch/nofamily.hipfb"
    [ "$rc" -eq 2 ] || fail "no .def: exit $rc, not 2"
    expect "check-amd-code-objects: no $source_dir/backends/gpu/kernels/nofamily.def for bundle $scratch/nofamily.hipfb"
    # --skip (its line is not echoed: ctest would take this test for skipped)
    skip_out=$(bash "$check" --skip "a reason") || fail "--skip: exit $?, not 0"
    [ "$skip_out" = "skipped: a reason" ] || fail "--skip printed '$skip_out', not 'skipped: a reason'"
    ;;
  *)
    echo "usage: $0 detects_violations|usage_errors SOURCE_DIR SCRATCH_DIR [HIPCC]" >&2
    exit 2
    ;;
esac
echo "amd_code_objects_fixture $case_name: ok"
