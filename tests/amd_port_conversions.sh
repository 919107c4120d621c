#!/usr/bin/env bash
# Builds tests/amd_port_conversions.cpp with hipcc (host code only) and runs it: the AMD
# conversions of backends/gpu/kernels/gpu_port.h against references on the host.
# usage: amd_port_conversions.sh SOURCE_DIR SCRATCH_DIR [HIPCC]
# HIPCC: the build's hipcc (found in PATH when empty); without one: "skipped: <why>".
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: $0 SOURCE_DIR SCRATCH_DIR [HIPCC]" >&2; exit 2; }
source_dir="$1" scratch="$2" hipcc="${3:-}"
[ -n "$hipcc" ] || hipcc=$(command -v hipcc || true)
[ -n "$hipcc" ] || { echo "skipped: no hipcc (scripts/install-deps.sh installs it)"; exit 0; }
rm -rf "$scratch"
mkdir -p "$scratch"
# --offload-arch: any target; without one hipcc asks rocm_agent_enumerator for the GPUs.
HIP_PLATFORM=amd "$hipcc" -x hip -std=c++17 --cuda-host-only --offload-arch=gfx90a -O1 \
  -I"$source_dir/backends/gpu/kernels" -o "$scratch/amd_port_conversions" \
  "$source_dir/tests/amd_port_conversions.cpp"
exec "$scratch/amd_port_conversions"
