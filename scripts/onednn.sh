#!/usr/bin/env bash
# Installs oneDNN 3.2 (the CPU build with GNU OpenMP: no SYCL, no TBB) from PyPI into a
# directory of the project, for the cpu backend's matmul engine (backends/cpukit/
# cpukit_dnnl.c; docs/ops.md, "cpu matmul engines"): the headers the build compiles
# against and the library the tests load with dlopen.
#
#   scripts/onednn.sh [DIR]     DIR defaults to .onednn in the repository
#
# The two wheels (onednn-cpu-gomp: the library; onednn-devel-cpu-gomp: the headers) are
# downloaded with `pip download --no-deps` into DIR/wheels (no virtual environment:
# nothing is installed into any Python), unpacked with python3's zipfile module, and
# only these kept:
#   DIR/include   dnnl.h, dnnl_*.h, oneapi/
#   DIR/lib       libdnnl.so.3 and its links
# Nothing is downloaded again when DIR's stamp file of this version exists and the
# library and dnnl.h are there. At the end it prints what it installed.
set -euo pipefail

# The version the tests were run with (docs/ops.md).
version=2023.2.0
packages=("onednn-cpu-gomp==$version" "onednn-devel-cpu-gomp==$version")

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/.onednn}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
stamp="$dir/installed-$version"

installed() {
  [ -f "$stamp" ] && [ -f "$dir/include/dnnl.h" ] && [ -e "$dir/lib/libdnnl.so.3" ]
}

if ! installed; then
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    echo "onednn: python3 not found (Debian: python3 python3-pip)" >&2
    exit 1
  fi
  if ! "$python" -m pip --version >/dev/null 2>&1; then
    echo "onednn: '$python -m pip' not found (Debian: python3-pip)" >&2
    exit 1
  fi
  echo "onednn: downloading ${packages[*]} into $dir"
  rm -rf "$dir/wheels" "$dir/unpacked" "$dir/include" "$dir/lib" "$stamp"
  mkdir -p "$dir/wheels" "$dir/unpacked"
  "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --dest "$dir/wheels" "${packages[@]}"
  for wheel in "$dir"/wheels/*.whl; do
    "$python" -m zipfile -e "$wheel" "$dir/unpacked"
  done
  # The wheels keep the files under <name>.data/data/{include,lib}.
  header="$(find "$dir/unpacked" -name dnnl.h -path '*/include/dnnl.h' -print -quit)"
  # The wheel holds libdnnl.so, .so.3 and .so.3.2 as three copies (zip has no links):
  # one file is kept, and libdnnl.so.3 links to it.
  library="$(find "$dir/unpacked" -name 'libdnnl.so.3.*' -type f -print -quit)"
  if [ -z "$header" ] || [ -z "$library" ]; then
    echo "onednn: no include/dnnl.h or libdnnl.so.3 in ${packages[*]}" >&2
    exit 1
  fi
  mv "$(dirname "$header")" "$dir/include"
  mkdir -p "$dir/lib"
  mv "$library" "$dir/lib/"
  ln -s "$(basename "$library")" "$dir/lib/libdnnl.so.3"
  rm -rf "$dir/unpacked" "$dir/wheels"
  touch "$stamp"
fi

echo "onednn: oneDNN from ${packages[*]}:"
echo "  headers  $dir/include"
echo "  library  $(readlink -f "$dir/lib/libdnnl.so.3")"
