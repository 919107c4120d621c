#!/usr/bin/env bash
# Installs Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt, with intel-cmplr-lib-rt)
# into a virtual environment of the project, and writes an ICD directory that names only
# that runtime, for the OpenCL tests that run on it (tests/opencl_spirv.cmake;
# docs/backends/opencl.md, "Intel's OpenCL CPU runtime").
#
#   scripts/intel-opencl.sh [DIR]     DIR defaults to .intel-opencl in the repository
#
# DIR/venv is the environment (about 850 MB; pip of that environment, never the
# system's), DIR/vendors/intel-cpu.icd the ICD file. The wheel's own .icd names a path
# that does not exist (/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so), so this one
# names the real libintelocl.so, which finds its libraries through its RUNPATH ($ORIGIN).
# Nothing is installed again when the ICD file names an existing library of that
# version. At the end it prints what to set:
#   export OCL_ICD_VENDORS=DIR/vendors     (ocl-icd then loads only Intel's runtime)
set -euo pipefail

# The versions the tests were run with (docs/backends/opencl.md).
version=2026.2.0
packages=("intel-opencl-rt==$version" "intel-cmplr-lib-rt==$version")

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/.intel-opencl}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
venv="$dir/venv"
vendors="$dir/vendors"
icd="$vendors/intel-cpu.icd"
stamp="$dir/installed-$version"

if [ ! -f "$stamp" ] || [ ! -f "$icd" ] || [ ! -f "$(cat "$icd")" ]; then
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    echo "intel-opencl: python3 not found (Debian: python3 python3-venv)" >&2
    exit 1
  fi
  echo "intel-opencl: installing ${packages[*]} into $venv"
  rm -rf "$venv" "$stamp"
  if ! "$python" -m venv "$venv"; then
    echo "intel-opencl: '$python -m venv' failed (Debian: python3-venv)" >&2
    exit 1
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}"
  # The library itself, not one of its links: the real path of libintelocl.so.
  lib="$(find "$venv" -name 'libintelocl.so' -print -quit)"
  if [ -z "$lib" ]; then
    echo "intel-opencl: no libintelocl.so in $venv after installing ${packages[*]}" >&2
    exit 1
  fi
  mkdir -p "$vendors"
  readlink -f "$lib" >"$icd.tmp"
  mv "$icd.tmp" "$icd"
  touch "$stamp"
fi

echo "intel-opencl: Intel's OpenCL CPU runtime $version: $(cat "$icd")"
echo "export OCL_ICD_VENDORS=$vendors"
