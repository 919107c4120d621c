#!/usr/bin/env bash
# The Debian packages of `make package` (cmake/packaging.cmake), checked as a user gets them
# (tests/deb/deb.cmake):
#
#   deb_packages.sh lintian <package dir>
#       lintian on every package; any error fails.
#   deb_packages.sh root <package dir> <work dir> <readme_example.c>
#       unpacks every package (dpkg-deb -x) into <work dir>/root, checks that the root's
#       bp-info loads every packaged plugin from there, then against that root alone:
#       builds the plugin template libbackplane-dev ships with CMake (find_package) and
#       with pkg-config (backplane-plugin.pc), runs the root's bp-conformance on the CMake
#       one, and builds the README's example with pkg-config (backplane.pc) and runs it.
set -euo pipefail
# The loader refuses plugins in group- or world-writable directories (hal/plugin_file.c).
umask 022

packages=(libbackplane0 libbackplane-dev backplane-tools
          backplane-plugin-opencl backplane-plugin-xpu backplane-plugin-cuda
          backplane-plugin-rocm)

fail() { echo "deb_packages: $*" >&2; exit 1; }

# The .deb of each package, one each, in $debs; skips the test when there are none.
find_debs() {
  local dir=$1 name found
  debs=()
  for name in "${packages[@]}"; do
    found=("$dir/${name}"_*.deb)
    [ -e "${found[0]}" ] || continue
    [ ${#found[@]} -eq 1 ] || fail "${#found[@]} packages $name in $dir: ${found[*]}"
    debs+=("${found[0]}")
  done
  if [ ${#debs[@]} -eq 0 ]; then
    echo "skipped: no packages in $dir: run \`make package\` (make test does)"
    exit 0
  fi
  [ ${#debs[@]} -eq ${#packages[@]} ] || fail "$dir lacks some of ${packages[*]}"
}

check_lintian() {
  command -v lintian >/dev/null || { echo "skipped: lintian is not installed (scripts/install-deps.sh)"; exit 0; }
  find_debs "$1"
  # initial-upload-closes-no-bugs: about uploads to the Debian archive (an ITP bug), not ours.
  lintian --fail-on error --suppress-tags initial-upload-closes-no-bugs "${debs[@]}"
  echo "lintian: no errors in ${#debs[@]} packages"
}

check_root() {
  local work=$2 example=$3
  find_debs "$1"
  rm -rf "$work"
  mkdir -p "$work/root"
  local deb
  for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$work/root"; done
  local usr=$work/root/usr
  local library
  library=$(find "$usr/lib" -name 'libbackplane.so.0' -print -quit)
  [ -n "$library" ] || fail "no libbackplane.so.0 in the packages"
  local libdir
  libdir=$(dirname "$library")

  echo "== the root's bp-info: every packaged plugin loaded from beside the root's library"
  local info plugin_file
  info=$(BP_PLUGIN_PATH='' "$usr/bin/bp-info")
  echo "$info"
  for plugin_file in "$libdir"/backplane/plugins/libbp_*.so; do
    awk -v path="$plugin_file" '$NF == path && $(NF - 2) == "loaded" { found = 1 }
                                END { exit !found }' <<<"$info" \
      || fail "bp-info of the root does not list $plugin_file as loaded"
  done

  # The template as libbackplane-dev installs it, copied to a directory of its own.
  local template=$usr/share/backplane/plugin_template
  [ -d "$template" ] || fail "libbackplane-dev ships no usr/share/backplane/plugin_template"
  cp -r "$template" "$work/template"

  echo "== the template with CMake: find_package(backplane) in $usr"
  cmake -S "$work/template" -B "$work/template-cmake" -DCMAKE_PREFIX_PATH="$usr" \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  grep -qx "backplane_DIR:PATH=$libdir/cmake/backplane" "$work/template-cmake/CMakeCache.txt" \
    || fail "find_package(backplane) did not take the root's $libdir/cmake/backplane"
  cmake --build "$work/template-cmake"
  local plugin=$work/template-cmake/libbp_template.so
  [ -f "$plugin" ] || fail "the template's CMake build made no libbp_template.so"

  # The .pc files find their prefix from their own place (${pcfiledir}): the root's.
  local pkgconfig=(env PKG_CONFIG_LIBDIR="$libdir/pkgconfig" pkg-config)
  echo "== the template with pkg-config: backplane-plugin.pc"
  # shellcheck disable=SC2046 # the flags are words
  cc -shared -o "$work/libbp_template_pc.so" "$work"/template/*.c \
    $("${pkgconfig[@]}" --cflags backplane-plugin) -pthread
  nm -D --defined-only "$work/libbp_template_pc.so" | grep -q ' bp_plugin_entry$' \
    || fail "the pkg-config build of the template exports no bp_plugin_entry"

  echo "== the root's bp-conformance on the template (BP_PLUGIN_PATH=$plugin)"
  BP_PLUGIN_PATH="$plugin" BP_PLUGINS='' BP_DEVICE='' "$usr/bin/bp-conformance" --device template:0

  echo "== the README's example with pkg-config: backplane.pc"
  # shellcheck disable=SC2046
  cc -o "$work/readme_example" "$example" $("${pkgconfig[@]}" --cflags --libs backplane)
  local said
  said=$(LD_LIBRARY_PATH="$libdir" BP_PLUGIN_PATH='' BP_DEVICE='' "$work/readme_example")
  echo "$said"
  [ "$said" = "cpu:0 round trip ok" ] || fail "the README's example said: $said"
}

case "${1:-}" in
  lintian) [ $# -eq 2 ] || fail "usage: deb_packages.sh lintian <package dir>"; check_lintian "$2" ;;
  root) [ $# -eq 4 ] || fail "usage: deb_packages.sh root <package dir> <work dir> <readme_example.c>"
        check_root "$2" "$3" "$4" ;;
  *) fail "usage: deb_packages.sh lintian|root ..." ;;
esac
