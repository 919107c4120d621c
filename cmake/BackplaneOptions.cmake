# Build options and the warning/sanitizer flags applied to project code.
option(BP_BUILD_TESTS "Build the unit tests and test plugins" ON)
# BP_SANITIZE: OFF; ON or "address" (AddressSanitizer + UndefinedBehaviorSanitizer,
# `make test-asan`); "thread" (ThreadSanitizer, `make test-tsan`). The two cannot be
# combined in one build.
set(BP_SANITIZE OFF CACHE STRING
  "Sanitizers: OFF, ON or address (ASan + UBSan), thread (TSan)")
set_property(CACHE BP_SANITIZE PROPERTY STRINGS OFF ON address thread)
string(TOLOWER "${BP_SANITIZE}" bp_sanitize_lower)
if(bp_sanitize_lower STREQUAL "thread")
  set(BP_SANITIZER thread)
elseif(bp_sanitize_lower STREQUAL "address" OR bp_sanitize_lower MATCHES "^(on|yes|true|y|1)$")
  set(BP_SANITIZER address)
elseif(bp_sanitize_lower MATCHES "^(off|no|false|n|0|)$")
  set(BP_SANITIZER "")
else()
  message(FATAL_ERROR "BP_SANITIZE='${BP_SANITIZE}': expected OFF, ON, address or thread")
endif()

set(BP_WARNING_FLAGS -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter)
if(BP_SANITIZER STREQUAL "address")
  set(BP_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
elseif(BP_SANITIZER STREQUAL "thread")
  # -O1 (after the build type's -O0): TSan's checks on every access make -O0 code
  # about twice as slow again. Not -O2: GCC 12 then warns that a calloc size in
  # dispatcher/region_exec.c may exceed the object size limit (-Walloc-size-larger-than).
  set(BP_SANITIZE_FLAGS -fsanitize=thread -fno-omit-frame-pointer -O1)
  # target_clones dispatch is an IRELATIVE relocation whose resolver runs while the
  # dynamic loader relocates the library, before the TSan runtime is initialised; an
  # instrumented resolver crashes the process before main. ops/cpu/simd.h builds
  # without clones (the baseline x86-64 code only) under this definition.
  add_compile_definitions(BP_NO_TARGET_CLONES=1)
else()
  set(BP_SANITIZE_FLAGS "")
endif()

# bp_project_target(<target>): warnings as errors, and sanitizers when enabled.
function(bp_project_target target)
  target_compile_options(${target} PRIVATE ${BP_WARNING_FLAGS})
  if(BP_SANITIZER)
    target_compile_options(${target} PRIVATE ${BP_SANITIZE_FLAGS})
    target_link_options(${target} PRIVATE ${BP_SANITIZE_FLAGS})
  endif()
endfunction()
set(BP_SELECTED_OPS "" CACHE FILEPATH
  "A BP_TRACE_OPS file: build only the cpu kernels it lists (selective build)")
if(BP_SELECTED_OPS AND NOT IS_ABSOLUTE "${BP_SELECTED_OPS}")
  get_filename_component(BP_SELECTED_OPS "${BP_SELECTED_OPS}" ABSOLUTE BASE_DIR "${CMAKE_BINARY_DIR}")
endif()

# The compile flags of the cpu sdpa's AVX-512 paths (ops/CMakeLists.txt) and of the
# test that measures their exp (tests/test_sdpa_exp_avx512.c); empty off x86-64.
set(BP_AVX512_FLAGS "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(BP_AVX512_FLAGS "-ffp-contract=fast;-Wno-psabi;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mfma")
endif()
