#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing.
# Used by `make demo` and `make test`, so a fresh Debian 12 machine needs nothing else.
set -euo pipefail

# The last three: the OpenCL headers and ICD loader for backends/opencl, and PoCL, the
# OpenCL CPU device its conformance test runs on.
packages=(cmake make gcc pkg-config libcmocka-dev libcjson-dev libopenblas-dev
          ocl-icd-opencl-dev pocl-opencl-icd opencl-headers)
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
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
