# The README's two commands: `make demo` and `make test`. Everything else is a helper.
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
TSAN_BUILD_DIR ?= build-tsan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The loader refuses plugins in group- or world-writable directories (hal/plugin_file.c):
# build trees are made with umask 022 whatever the caller's (e.g. Ubuntu's 002).
BUILD_UMASK = umask 022 &&

.PHONY: all deps build build-asan build-tsan demo test test-release test-asan test-stress \
	stress test-tsan bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(BUILD_UMASK) cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps
	$(BUILD_UMASK) cmake -S . -B $(ASAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=ON $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)

# ThreadSanitizer: only what the "concurrency" label needs (tests/stress.cmake).
build-tsan: deps
	$(BUILD_UMASK) cmake -S . -B $(TSAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=thread $(CMAKE_FLAGS)
	$(BUILD_UMASK) cmake --build $(TSAN_BUILD_DIR) -j $(JOBS) --target bp_concurrency_tests

# Runs the main job, sliced attention under each schedule (samples/sliced_attention.c),
# on the default device (BP_DEVICE picks another; DEMO_ARGS passes options, e.g.
# DEMO_ARGS="--shape 8,32,2048,128 --slices 256"). device_tour is built too.
DEMO_ARGS ?=
demo: build
	$(BUILD_DIR)/bin/sliced_attention $(DEMO_ARGS)

# Every test, in a release build and again under AddressSanitizer + UBSan; then the
# flake check: the concurrency tests STRESS_ITERATIONS times each, every core loaded
# (ctest label "stress", release build only; tests/stress.cmake). Tests labelled "full"
# (bp-conformance --level full) are left out: run them with ctest -L full.
test: test-release test-asan test-stress

test-release: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -LE 'stress|full'

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
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
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --test-dir $(TSAN_BUILD_DIR) --output-on-failure -j $(JOBS) -L concurrency

# Benchmarks (not tests): allocator, dispatch, op throughput; instruction counts with
# scripts/bench-callgrind.sh and scripts/bench-dispatch-callgrind.sh.
bench: build
	$(BUILD_DIR)/bin/bp-bench alloc
	$(BUILD_DIR)/bin/bp-bench dispatch
	$(BUILD_DIR)/bin/bp-bench ops

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(TSAN_BUILD_DIR)
