#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing.
# Used by `make demo` and `make test`, so a fresh Debian 12 machine needs nothing else.
#
#   install-deps.sh         the native build's packages
#   install-deps.sh --arm   those of the aarch64 cross build (`make test-arm`): the cross
#                           compiler, qemu-user, and the arm64 libraries through Debian
#                           multiarch (the arm64 architecture is added to dpkg if missing)
set -euo pipefail

case "${1:-}" in
  "")
    # Then: the OpenCL headers and ICD loader for backends/opencl, and PoCL, the OpenCL
    # CPU device its conformance test runs on; clang, llvm-spirv and spirv-val, which
    # compile the OpenCL C kernels to SPIR-V modules (backends/clc/cmake/spirv.cmake).
    packages=(cmake make gcc pkg-config libcmocka-dev libcjson-dev libopenblas-dev
              ocl-icd-opencl-dev pocl-opencl-icd opencl-headers
              clang-15 llvm-spirv-15 spirv-tools)
    # backends/xpu: the Level Zero header and loader, and Intel's GPU driver, whose zeInit
    # fails without an Intel GPU (the no-device tests of tests/xpu/xpu.cmake run on it).
    packages+=(libze-dev libze1 intel-opencl-icd)
    # backends/rocm and the AMD code objects of the GPU kernels
    # (backends/gpu/hip_kernels.cmake, checked by scripts/check-amd-code-objects.sh): the
    # HIP headers, hipcc 5.2 with the ROCm device libraries, and clang-15's tools
    # (clang-offload-bundler in clang-tools-15, llvm-readelf in llvm-15). Debian has them
    # for amd64 only; elsewhere the build goes without AMD kernels.
    if [ "$(dpkg --print-architecture)" = amd64 ]; then
      packages+=(libamdhip64-dev hipcc rocm-device-libs clang-tools-15 llvm-15)
    fi
    arch=""
    # python3 with venv: scripts/intel-opencl.sh installs Intel's OpenCL CPU runtime from
    # PyPI into a virtual environment of the project (make test runs it); pip:
    # scripts/onednn.sh downloads oneDNN's wheels with `python3 -m pip download`.
    packages+=(python3 python3-venv python3-pip)
    # The Debian packages (`make package`, cmake/packaging.cmake): dpkg-shlibdeps (dpkg-dev)
    # and file, which CPack's DEB generator runs; lintian, which tests/deb/deb.cmake runs.
    packages+=(dpkg-dev file lintian)
    ;;
  --arm)
    # No OpenCL loader or PoCL of arm64: the cross build's OpenCL tests that need a device
    # are skipped with that reason (tests/CMakeLists.txt).
    packages=(cmake make pkg-config opencl-headers gcc-aarch64-linux-gnu qemu-user
              libc6:arm64 libcmocka-dev:arm64 libcjson-dev:arm64 libopenblas-dev:arm64)
    arch=arm64
    ;;
  *)
    echo "usage: install-deps.sh [--arm]" >&2
    exit 2
    ;;
esac

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
if [ -n "$arch" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
  echo "install-deps: adding the $arch architecture (dpkg --add-architecture $arch)"
  $sudo dpkg --add-architecture "$arch"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
