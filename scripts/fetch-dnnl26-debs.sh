#!/usr/bin/env bash
# fetch-dnnl26-debs.sh: Debian 12's oneDNN 2.6 as .deb files in .devdeps/dnnl26/, for a
# machine without network (the GPU machine's host) where `scripts/cpu-compare.sh --dnnl26`
# is to measure it beside oneDNN 3 and PyTorch (issue 20: "measure both on both hosts").
#
#   scripts/fetch-dnnl26-debs.sh      (here, with Debian's package lists: apt-get update)
#
# Downloads (apt-get download: nothing is installed here) libdnnl2 (the library),
# libdnnl-dev (dnnl.h and libdnnl.so) and ocl-icd-libopencl1 (libOpenCL.so.1, which
# libdnnl.so.2 links: `readelf -d` lists it with libgomp.so.1). libgomp.so.1, Debian's
# GNU OpenMP that libdnnl2 threads with, is not fetched: it comes with the C compiler that
# builds bench/dnnl_matmul_v2.c with -fopenmp, and one libgomp must serve both.
# cpu-compare.sh --dnnl26 unpacks these files (dpkg -x) when the system has no oneDNN 2
# headers. .devdeps/ is git-ignored: carry it to the device machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=.devdeps/dnnl26
mkdir -p "$dir"
(cd "$dir" && apt-get download libdnnl2 libdnnl-dev ocl-icd-libopencl1)
ls -l "$dir"
