# The README's two commands: `make demo` and `make test`. Everything else is a helper.
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
TSAN_BUILD_DIR ?= build-tsan
ARM_BUILD_DIR ?= build-arm
ARM_ASAN_BUILD_DIR ?= build-arm-asan
DEB_BUILD_DIR ?= build-deb
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The loader refuses plugins in group- or world-writable directories (hal/plugin_file.c):
# build trees are made with umask 022 whatever the caller's (e.g. Ubuntu's 002).
BUILD_UMASK = umask 022 &&
# hipcc's AMD code objects take minutes on two cores: the release and package builds make
# and check them (tests/amd_code_objects.cmake); the sanitizer and cross builds, which
# test host code, leave them out (their AMD code object tests say "skipped").
NO_AMD_KERNELS = -DBP_ROCM_KERNELS=OFF

.PHONY: all deps deps-arm intel-opencl onednn build build-asan build-tsan build-arm package demo test test-release \
	test-asan test-stress stress test-tsan test-arm test-arm-asan bench clean

all: build

deps:
	@scripts/install-deps.sh

deps-arm:
	@scripts/install-deps.sh --arm

# Intel's OpenCL CPU runtime from PyPI, in .intel-opencl (its own virtual environment and
# ICD file): the OpenCL tests run the conformance suite on it too, from source and from
# the SPIR-V modules (tests/opencl_spirv.cmake); without it they are skipped.
intel-opencl: deps
	@scripts/intel-opencl.sh

# oneDNN 3.2 from PyPI, in .onednn (headers and libdnnl.so.3): the cpu matmul engine
# compiles against its headers and the tests load it (docs/ops.md, "cpu matmul engines");
# without it (e.g. offline) that engine is not built and its tests are skipped, so a
# failed download does not stop the build.
onednn: deps
	@scripts/onednn.sh || echo "onednn: not installed: the cpu matmul builds without its oneDNN engine"

build: deps onednn
	$(BUILD_UMASK) cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DBP_DEB_PACKAGE_DIR=$(CURDIR)/$(DEB_BUILD_DIR)/packages $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps onednn
	$(BUILD_UMASK) cmake -S . -B $(ASAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=ON $(NO_AMD_KERNELS) $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)

# ThreadSanitizer: only what the "concurrency" label needs (tests/stress.cmake).
build-tsan: deps
	$(BUILD_UMASK) cmake -S . -B $(TSAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=thread $(NO_AMD_KERNELS) $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(TSAN_BUILD_DIR) -j $(JOBS) --target bp_concurrency_tests

# The whole SDK cross-built for aarch64 (cmake/aarch64-linux-gnu.cmake: Debian's
# gcc-aarch64-linux-gnu and the arm64 libraries through multiarch).
build-arm: deps-arm
	$(BUILD_UMASK) cmake -S . -B $(ARM_BUILD_DIR) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo $(NO_AMD_KERNELS) $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(ARM_BUILD_DIR) -j $(JOBS)

# The Debian packages (cmake/packaging.cmake) in $(DEB_BUILD_DIR)/packages: libbackplane0,
# libbackplane-dev, backplane-tools, backplane-plugin-{opencl,xpu,cuda,rocm}. A build of their
# own, configured for /usr (the paths the library and the .pc files have compiled in),
# without the tests; `make test` checks them (tests/deb/deb.cmake).
# Compiled with Debian's hardening flags (dpkg-buildflags, all features), as a Debian
# package build is.
DEB_BUILDFLAGS = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
package: deps
	$(BUILD_UMASK) cmake -S . -B $(DEB_BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_PREFIX=/usr -DBP_BUILD_TESTS=OFF \
		-DCMAKE_C_FLAGS="$$($(DEB_BUILDFLAGS) CFLAGS) $$($(DEB_BUILDFLAGS) CPPFLAGS)" \
		-DCMAKE_EXE_LINKER_FLAGS="$$($(DEB_BUILDFLAGS) LDFLAGS)" \
		-DCMAKE_SHARED_LINKER_FLAGS="$$($(DEB_BUILDFLAGS) LDFLAGS)" \
		-DCMAKE_MODULE_LINKER_FLAGS="$$($(DEB_BUILDFLAGS) LDFLAGS)" $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(DEB_BUILD_DIR) -j $(JOBS)
	rm -f $(DEB_BUILD_DIR)/packages/*.deb
	cd $(DEB_BUILD_DIR) && $(BUILD_UMASK) cpack

# Runs the main job, sliced attention under each schedule (samples/sliced_attention.c),
# on the default device (BP_DEVICE picks another; DEMO_ARGS passes options, e.g.
# DEMO_ARGS="--shape 8,32,2048,128 --slices 256"). device_tour is built too.
# The oneDNN of `make onednn` (scripts/onednn.sh) for the cpu matmul engine of the demo
# and the benchmarks when it is installed (tested when the recipe runs, after `onednn`),
# unless BP_ONEDNN_LIBRARY names another; empty is the same as unset.
ONEDNN_LIBRARY = $(CURDIR)/.onednn/lib/libdnnl.so.3
ONEDNN_ENV = BP_ONEDNN_LIBRARY="$${BP_ONEDNN_LIBRARY:-$$(test -e $(ONEDNN_LIBRARY) && echo $(ONEDNN_LIBRARY))}"
DEMO_ARGS ?=
demo: build
	$(ONEDNN_ENV) $(BUILD_DIR)/bin/sliced_attention $(DEMO_ARGS)

# Every test, in a release build and again under AddressSanitizer + UBSan; then the
# flake check: the concurrency tests STRESS_ITERATIONS times each, every core loaded
# (ctest label "stress", release build only; tests/stress.cmake). Tests labelled "full"
# (bp-conformance --level full) are left out: run them with ctest -L full.
test: test-release test-asan test-stress

test-release: build intel-opencl package
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -LE 'stress|full'

# Sanitized processes see PoCL alone among the OpenCL ICDs and no Level Zero driver:
# Intel's GPU ICD and its Level Zero driver (intel-opencl-icd, which the xpu plugin's tests
# install) dlopen a library with RTLD_DEEPBIND under WSL, which the sanitizers' runtime
# refuses, killing any process that initialises the opencl or xpu plugin. Tests that name
# their ICDs or Level Zero drivers still do (and skip themselves in sanitizer builds).
# Nor do they load the HIP runtime (libamdhip64-dev, which the rocm plugin's build
# installs): Debian's HIP 5.2 leaks in a failing hipInit and LeakSanitizer then crashes at
# exit in every process that listed the devices; the rocm tests use their stand-in.
POCL_ICD = /etc/OpenCL/vendors/pocl.icd
SANITIZED_ENV = $(if $(wildcard $(POCL_ICD)),OCL_ICD_VENDORS=$(POCL_ICD)) \
	ZE_ENABLE_ALT_DRIVERS=/nonexistent/sanitized-build/libze_no_driver.so.1 \
	BP_ROCM_LIBRARY=/nonexistent/sanitized-build/libamdhip64.so

# intercept_tls_get_addr=0: GCC 12's ASan records a bogus dynamic TLS block (start 0x100)
# from __tls_get_addr in some processes that load PoCL's LLVM beside every plugin (it
# depends on the address layout), and LeakSanitizer then crashes at exit scanning it
# ("Tracer caught signal 11"). Without the interception LeakSanitizer still finds the
# dynamic TLS blocks, as the dynamic linker's allocations (use_ld_allocations).
test-asan: build-asan intel-opencl
	$(SANITIZED_ENV) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 \
		UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j $(JOBS) -LE 'stress|full'

STRESS_ITERATIONS ?= 5
test-stress: build
	BP_STRESS_ITERATIONS=$(STRESS_ITERATIONS) \
		ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -L stress

# The long flake check: `make stress ITERATIONS=500`.
ITERATIONS ?= 100
stress: build
	BP_STRESS_ITERATIONS=$(ITERATIONS) \
		ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -L stress

# The concurrency tests (label "concurrency") under ThreadSanitizer; any report fails.
test-tsan: build-tsan
	$(SANITIZED_ENV) TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --test-dir $(TSAN_BUILD_DIR) --output-on-failure -j $(JOBS) -L concurrency

# Every test of the aarch64 build (as test-release does natively), each program run under
# qemu-aarch64 (the toolchain file's CMAKE_CROSSCOMPILING_EMULATOR), the arm backend's
# conformance at SVE lengths 128/256/512 and NEON-only among them (tests/arm.cmake). No
# binfmt_misc needed.
test-arm: build-arm
	ctest --test-dir $(ARM_BUILD_DIR) --output-on-failure -j $(JOBS) -LE 'stress|full'

# The arm backend, the kit and the aarch64 conformance suite under ASan + UBSan, run by
# qemu-aarch64 (not part of `make test`; .ci/run runs it last; docs/architecture.md). The sanitizer
# runtimes come from the cross compiler's own directory, linked one by one into
# $(ARM_ASAN_BUILD_DIR)/sanitizer-libs: that directory also holds a libc and a loader of
# another build than the multiarch ones, and mixing the two hangs pthread_create.
# LeakSanitizer cannot stop the world under qemu-user: detect_leaks=0.
ARM_ASAN_TARGETS = bp-conformance bp_arm test_arm_topology test_cpukit test_arm_plugin \
	test_arm_kernel_math test_arm_mm
ARM_ASAN_RUN = LD_LIBRARY_PATH=$(CURDIR)/$(ARM_ASAN_BUILD_DIR)/sanitizer-libs \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	BP_MEMORY_LIMIT_MB=0 qemu-aarch64
test-arm-asan: deps-arm
	$(BUILD_UMASK) cmake -S . -B $(ARM_ASAN_BUILD_DIR) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBP_SANITIZE=ON $(NO_AMD_KERNELS) $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(ARM_ASAN_BUILD_DIR) -j $(JOBS) --target $(ARM_ASAN_TARGETS)
	mkdir -p $(ARM_ASAN_BUILD_DIR)/sanitizer-libs
	for lib in libasan.so.8 libubsan.so.1 libstdc++.so.6; do \
		ln -sf "$$(aarch64-linux-gnu-gcc -print-file-name=$$lib)" $(ARM_ASAN_BUILD_DIR)/sanitizer-libs/$$lib; done
	for cpu in max,sve128=on max,sve512=on neoverse-n1; do \
		for prog in test_arm_topology test_cpukit test_arm_plugin test_arm_kernel_math test_arm_mm; do \
			echo "== $$prog ($$cpu)"; \
			QEMU_CPU=$$cpu $(ARM_ASAN_RUN) $(ARM_ASAN_BUILD_DIR)/bin/$$prog || exit 1; done; \
		echo "== bp-conformance --device arm:0 ($$cpu)"; \
		QEMU_CPU=$$cpu $(ARM_ASAN_RUN) $(ARM_ASAN_BUILD_DIR)/bin/bp-conformance --device arm:0 || exit 1; \
	done

# Benchmarks (not tests): allocator, dispatch, op throughput; instruction counts with
# scripts/bench-callgrind.sh and scripts/bench-dispatch-callgrind.sh.
bench: build
	$(BUILD_DIR)/bin/bp-bench alloc
	$(BUILD_DIR)/bin/bp-bench dispatch
	$(ONEDNN_ENV) $(BUILD_DIR)/bin/bp-bench ops

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(TSAN_BUILD_DIR) $(ARM_BUILD_DIR) $(ARM_ASAN_BUILD_DIR) \
		$(DEB_BUILD_DIR)
