#!/usr/bin/env bash
# Checks the AMD code objects of the GPU kernels (backends/gpu/hip_kernels.cmake builds
# them; the rocm plugin embeds them): for each offload bundle <family>.hipfb and each
# target in it, the code object's AMDGPU metadata (llvm-readelf --notes) must show
#   - every kernel that kernels/<family>.def lists as GPU_KERNEL (portable; GPU_KERNEL_NV
#     kernels are NVIDIA-only and not looked for);
#   - .wavefront_size 64 on CDNA targets (gfx9*: gfx90a, gfx940), which the kernels'
#     GPU_WARP and the host's launches assume there;
#   - .group_segment_fixed_size (static LDS) within the target's 64 KiB;
#   - .private_segment_fixed_size 0 and no dynamic stack (no scratch: register spills or
#     private arrays), unless the kernel is on the allow-list below (for that target)
#     with its reason.
# and every target of --targets must be in every bundle.
#
# usage: check-amd-code-objects.sh [--bundler CMD] [--readelf CMD] [--targets "T1;T2"]
#                                  KERNELS_DIR BUNDLE...
#        check-amd-code-objects.sh --skip REASON
# KERNELS_DIR holds the <family>.def files. Exit 0: all good (a table of every kernel's
# LDS, scratch and wavefront size per target, then "ok: ..."); 1: a violation, each one
# named; 2: bad usage or a tool that failed. With --skip, or without the LLVM tools, it
# prints "skipped: <why>" and exits 0 (ctest shows the test as skipped).
set -euo pipefail

# Kernels allowed to use scratch, each with its reason: "<target glob> <kernel glob>:
# <reason>". Keep it short.
scratch_allowed=(
  # wave32 (RDNA): rows of up to 2048 elements are 64 floats a lane, which with their
  # addresses do not fit the 256 VGPRs of a lane (CDNA's wave64 holds 32 a lane)
  "gfx1[01]* ew_softmax_warp64_*: wave32 keeps 64 floats a lane for rows of 2048"
)

LDS_LIMIT=65536

usage() {
  echo "usage: $0 [--bundler CMD] [--readelf CMD] [--targets \"T1;T2\"] KERNELS_DIR BUNDLE..." >&2
  echo "       $0 --skip REASON" >&2
  exit 2
}

# The first of the commands given that exists.
find_tool() {
  local c
  for c in "$@"; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

bundler="" readelf="" targets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --skip) [ $# -eq 2 ] || usage; echo "skipped: $2"; exit 0 ;;
    --bundler) [ $# -ge 2 ] || usage; bundler="$2"; shift 2 ;;
    --readelf) [ $# -ge 2 ] || usage; readelf="$2"; shift 2 ;;
    --targets) [ $# -ge 2 ] || usage; targets="${2//;/ }"; shift 2 ;;
    --*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
kernels_dir="$1"
shift
[ -d "$kernels_dir" ] || { echo "check-amd-code-objects: no directory $kernels_dir" >&2; exit 2; }

# Debian 12: clang-offload-bundler is clang-tools-15's, llvm-readelf llvm-15's.
if [ -z "$bundler" ]; then
  bundler=$(find_tool clang-offload-bundler clang-offload-bundler-15 \
    /usr/lib/llvm-15/bin/clang-offload-bundler) ||
    { echo "skipped: no clang-offload-bundler (Debian: clang-tools-15)"; exit 0; }
fi
if [ -z "$readelf" ]; then
  readelf=$(find_tool llvm-readelf-15 /usr/lib/llvm-15/bin/llvm-readelf llvm-readelf) ||
    { echo "skipped: no llvm-readelf (Debian: llvm-15)"; exit 0; }
fi

# The reason kernel $2 may use scratch on target $1, from the allow-list.
scratch_reason() {
  local entry globs
  for entry in ${scratch_allowed[@]+"${scratch_allowed[@]}"}; do
    globs=${entry%%:*}
    # shellcheck disable=SC2053 # the entries are globs
    if [[ "$1" == ${globs%% *} && "$2" == ${globs#* } ]]; then
      echo "${entry#*: }"
      return 0
    fi
  done
  return 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

violations=0
violation() {
  echo "VIOLATION: $*"
  violations=$((violations + 1))
}

checked=0
printf '%-8s %-32s %8s %8s %5s\n' target kernel lds scratch wave
for bundle in "$@"; do
  [ -f "$bundle" ] || { echo "check-amd-code-objects: no bundle $bundle" >&2; exit 2; }
  family=$(basename "$bundle" .hipfb)
  def="$kernels_dir/$family.def"
  [ -f "$def" ] || { echo "check-amd-code-objects: no $def for bundle $bundle" >&2; exit 2; }
  expected=$(sed -n 's/^GPU_KERNEL(\([A-Za-z0-9_]*\)).*/\1/p' "$def")
  entries=$("$bundler" --list --type=o --input="$bundle") ||
    { echo "check-amd-code-objects: $bundler --list failed on $bundle" >&2; exit 2; }
  present=""
  for entry in $entries; do
    case "$entry" in
      hip*-amdgcn-amd-amdhsa-*) ;;
      *) continue ;;
    esac
    target=${entry#*-amdhsa--}
    target=${target%%:*} # a target id's features (gfx90a:xnack-) are not the arch
    present="$present $target"
    object="$work/$family-$target.co"
    "$bundler" --unbundle --type=o --input="$bundle" --targets="$entry" --output="$object" ||
      { echo "check-amd-code-objects: cannot unbundle $entry from $bundle" >&2; exit 2; }
    notes="$work/$family-$target.notes"
    "$readelf" --notes "$object" >"$notes" ||
      { echo "check-amd-code-objects: $readelf --notes failed on $entry of $bundle" >&2; exit 2; }
    # One line per kernel: name lds scratch wave dynamic_stack (the YAML's kernel list
    # items start at "  - ", their keys at four spaces).
    awk '
      function flush() { if (name != "") print name, lds, priv, wave, dyn; name = "" }
      /^amdhsa\.kernels:/ { inside = 1; next }
      /^[a-z]/ { if (inside) flush(); inside = 0 }
      !inside { next }
      /^  - / { flush(); lds = "?"; priv = "?"; wave = "?"; dyn = "false"; sub(/^  - /, "    ") }
      /^    \.name:/ { name = $2 }
      /^    \.group_segment_fixed_size:/ { lds = $2 }
      /^    \.private_segment_fixed_size:/ { priv = $2 }
      /^    \.wavefront_size:/ { wave = $2 }
      /^    \.uses_dynamic_stack:/ { dyn = $2 }
      END { flush() }
    ' "$notes" >"$notes.kernels"
    for kernel in $expected; do
      grep -q "^$kernel " "$notes.kernels" ||
        violation "$family.hipfb $target: kernel $kernel (GPU_KERNEL in $family.def) is missing"
    done
    while read -r name lds priv wave dyn; do
      checked=$((checked + 1))
      printf '%-8s %-32s %8s %8s %5s\n' "$target" "$name" "$lds" "$priv" "$wave"
      case "$target" in
        gfx9*)
          [ "$wave" = 64 ] ||
            violation "$family.hipfb $target: $name has wavefront size $wave, not 64 (CDNA)" ;;
      esac
      if ! [[ "$lds" =~ ^[0-9]+$ ]] || [ "$lds" -gt "$LDS_LIMIT" ]; then
        violation "$family.hipfb $target: $name uses $lds bytes of LDS, over the target's $LDS_LIMIT"
      fi
      if ! [[ "$priv" =~ ^[0-9]+$ ]] || [ "$priv" -gt 0 ] || [ "$dyn" = true ]; then
        if reason=$(scratch_reason "$target" "$name"); then
          echo "  allowed scratch ($priv bytes): $target $name: $reason"
        else
          violation "$family.hipfb $target: $name uses scratch ($priv bytes, dynamic stack $dyn): spills or a private array (allow it in $0 with a reason, or fix it)"
        fi
      fi
    done <"$notes.kernels"
  done
  for target in $targets; do
    case " $present " in
      *" $target "*) ;;
      *) violation "$family.hipfb: no code object for target $target (it has:$present)" ;;
    esac
  done
done

if [ "$violations" -gt 0 ]; then
  echo "check-amd-code-objects: $violations violation(s)"
  exit 1
fi
echo "ok: $checked kernel code objects in $# bundle(s): every GPU_KERNEL present, wavefront 64 on CDNA, LDS <= $LDS_LIMIT, no scratch outside the allow-list"
