# The README's two commands: `make demo` and `make test`. Everything else is a helper.
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build build-asan demo test test-release test-asan bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)

# Runs the main job, sliced attention under each schedule (samples/sliced_attention.c),
# on the default device (BP_DEVICE picks another; DEMO_ARGS passes options, e.g.
# DEMO_ARGS="--shape 8,32,2048,128 --slices 256"). device_tour is built too.
DEMO_ARGS ?=
demo: build
	$(BUILD_DIR)/bin/sliced_attention $(DEMO_ARGS)

# Every test, in a release build and again under AddressSanitizer + UBSan.
test: test-release test-asan

test-release: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j $(JOBS)

# Benchmarks (not tests): allocator, dispatch, op throughput; instruction counts with
# scripts/bench-callgrind.sh and scripts/bench-dispatch-callgrind.sh.
bench: build
	$(BUILD_DIR)/bin/bp-bench alloc
	$(BUILD_DIR)/bin/bp-bench dispatch
	$(BUILD_DIR)/bin/bp-bench ops

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)
