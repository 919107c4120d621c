#!/usr/bin/env bash
# sdk_app.sh <app source> <work dir> <install prefix> <libdir> <cc> <cmake compiler args>...
# Builds the application <app source> (samples/sdk_app) against the backplane SDK
# installed in <install prefix>, from a copy outside the source tree and with nothing
# but that prefix: (1) a fresh CMake project, find_package(backplane) through
# CMAKE_PREFIX_PATH; (2) one `cc ... $(pkg-config --cflags --libs backplane)` line, with
# pkg-config seeing only the prefix's .pc files. Runs both; each prints its lines
# prefixed with "cmake: " or "pkg-config: ". Both find libbackplane through their RPATH.
# Environment: BP_SDK_CFLAGS (a sanitized SDK's flags), BP_TEST_EMULATOR (a cross build's
# runner, e.g. qemu-aarch64).
set -euo pipefail
if [ $# -lt 5 ]; then
  echo "usage: $0 <app source> <work dir> <install prefix> <libdir> <cc> [cmake args...]" >&2
  exit 2
fi
app_source=$1 work=$2 prefix=$3 libdir=$4 cc=$5
shift 5
read -r -a cflags <<< "${BP_SDK_CFLAGS:-}"
read -r -a emulator <<< "${BP_TEST_EMULATOR:-}"

rm -rf "$work"
mkdir -p "$work"
cp -R "$app_source" "$work/src"

echo "== find_package(backplane) with CMAKE_PREFIX_PATH=$prefix"
cmake -S "$work/src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="${cflags[*]}" "$@" | tee "$work/cmake-configure.log"
# The package found must be the prefix's, not one installed elsewhere on the machine.
grep -qF "from $prefix/$libdir/cmake/backplane" "$work/cmake-configure.log" || {
  echo "find_package(backplane) did not find the package in $prefix" >&2
  exit 1
}
cmake --build "$work/cmake-build"
"${emulator[@]}" "$work/cmake-build/sdk_app" | sed 's/^/cmake: /'

echo "== cc \$(pkg-config --cflags --libs backplane) with PKG_CONFIG_LIBDIR=$prefix/$libdir/pkgconfig"
export PKG_CONFIG_LIBDIR="$prefix/$libdir/pkgconfig"
pc_flags=$(pkg-config --cflags --libs backplane)
pc_libdir=$(pkg-config --variable=libdir backplane)
mkdir "$work/pkgconfig-build"
(
  set -x
  # shellcheck disable=SC2086 # pkg-config's flags are words
  "$cc" "${cflags[@]}" -std=c11 -Wall -Werror "$work/src/sdk_app.c" $pc_flags \
    -Wl,-rpath,"$pc_libdir" -o "$work/pkgconfig-build/sdk_app"
)
"${emulator[@]}" "$work/pkgconfig-build/sdk_app" | sed 's/^/pkg-config: /'
