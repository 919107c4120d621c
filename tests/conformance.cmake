# The conformance suite in `make test` (docs/conformance.md): it must pass on cpu and
# on bp-broken without a defect, and catch each seeded defect of bp-broken by the test
# the docs name. Every run goes through check_conformance.cmake, which checks the exit
# code and the report, not only the output.
set(bp_broken_plugin ${BP_TEST_PLUGIN_DIR}/broken/libbp_broken.so)
set(bp_conf_env "BP_PLUGIN_PATH=;BP_PLUGINS=;BP_DEVICE=;BP_MEMORY_LIMIT_MB=0;BP_AUTOLOAD=;BP_TRACE_OPS=;BP_PROFILE=;BP_CPU_FALLBACK=;BP_BLAS=;BP_CPU_MATMUL=;BP_ONEDNN_LIBRARY=;BP_BROKEN_DEFECT=")

# bp_conformance_test(<name> EXIT <code> [EXPECT <regex>...] [DEFECT <defect>] ARGS <args>...)
function(bp_conformance_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "EXIT;DEFECT" "EXPECT;ARGS")
  string(REPLACE ";" "\\;" args "${arg_ARGS}")
  string(REPLACE ";" "\\;" expect "${arg_EXPECT}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND}
    -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
    -DARGS=${args} -DEXIT=${arg_EXIT} -DEXPECT=${expect} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/${name}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake)
  set(env "${bp_conf_env}")
  if(arg_DEFECT)
    set(env "${env};BP_BROKEN_DEFECT=${arg_DEFECT}")
  endif()
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}" TIMEOUT 900 LABELS conformance)
endfunction()

# The reference backend passes, and its JUnit lists every test (the script compares the
# <testcase> count with --list).
bp_conformance_test(conformance_cpu EXIT 0 ARGS --device cpu --junit JUNIT)
# --level full (docs/conformance.md): the ops group's large shapes on cpu. About 30 s on
# 2 cores in a RelWithDebInfo build but 10 min in the ASan (Debug) one, so it has the
# label "full", which make test leaves out: run it with ctest -L full.
bp_conformance_test(conformance_cpu_full EXIT 0 EXPECT "level full" "PASS  ops\\.sdpa_bf16"
  ARGS --device cpu --level full --filter "ops.*" --timeout 1800 --junit JUNIT)
set_tests_properties(conformance_cpu_full PROPERTIES LABELS "conformance;full" TIMEOUT 2000)
# The ops.sdpa tests on each cpu sdpa path (BP_CPU_SDPA, docs/ops.md); a path the CPU
# lacks falls back to auto with a warning, so those entries test the fallback.
foreach(path amx avx512bf16 avx512 generic)
  bp_conformance_test(conformance_cpu_sdpa_${path} EXIT 0 EXPECT "PASS  ops\\.sdpa_bf16"
    ARGS --device cpu --filter "ops.sdpa*" --junit JUNIT)
  set_property(TEST conformance_cpu_sdpa_${path} APPEND PROPERTY ENVIRONMENT "BP_CPU_SDPA=${path}")
endforeach()
# A --level that is neither quick nor full is a usage error.
bp_conformance_test(conformance_bad_level EXIT 2
  EXPECT "bp-conformance: --level 'fast': expected quick or full"
  ARGS --device cpu --level fast)
# A correct plugin that lacks most kernels passes too: what it lacks is skipped.
bp_conformance_test(conformance_broken EXIT 0 ARGS --device broken --plugin ${bp_broken_plugin} --junit JUNIT)
# The same plugin without enqueue_host, as a third-party plugin may be: host functions
# (and the gates the streams/events tests hold streams on) go through the library's
# fallback, on asynchronous streams.
bp_conformance_test(conformance_broken_no_host_func EXIT 0
  EXPECT "PASS  host_funcs\\.order" "PASS  host_funcs\\.held_until_released" "PASS  streams\\.query"
  ARGS --device broken --plugin ${BP_TEST_PLUGIN_DIR}/broken_no_host_func/libbp_broken.so
       --junit JUNIT)

# The hpu simulator (backends/hpu), a plugin that compiles whole regions itself: the
# whole suite, regions group included, with a 2 GiB arena. Its clock is its model
# (BP_CAP_MODELLED_TIME), so the elapsed-time check against the host's wall clock is
# skipped.
bp_conformance_test(conformance_hpu EXIT 0
  EXPECT "SKIP  events\\.elapsed_is_stream_time: the device reports BP_CAP_MODELLED_TIME"
  ARGS --device hpu --junit JUNIT)
set_property(TEST conformance_hpu APPEND PROPERTY ENVIRONMENT "BP_HPU_MEMORY_MB=2048")

# The OpenCL plugin (backends/opencl) against the first OpenCL device, PoCL's CPU device
# in CI (scripts/install-deps.sh installs it): the whole suite, nothing skipped that the
# device has. Its kernels are built into a cache inside the build tree (XDG_CACHE_HOME
# also moves PoCL's own cache there), so the first run compiles them all.
if(TARGET bp_opencl)
  # The environment of the tests below: PoCL alone (bp_pocl_env) with its cache in the
  # build tree, no OpenCL variable from the caller's environment, PoCL's leaks suppressed.
  set(bp_ocl_env "${bp_conf_env};${bp_pocl_env};XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache"
    "BP_OPENCL_CACHE=;BP_OPENCL_CACHE_DIR=;BP_OPENCL_LIBRARY=;BP_OPENCL_BUILD_OPTIONS="
    "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/backends/opencl/lsan-pocl.supp")
  # An ICD loader that cannot be opened (BP_OPENCL_LIBRARY): 0 devices, the reason names
  # the library, the cpu is still there.
  add_test(NAME opencl_no_loader COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:bp-info>
    -DEMULATOR=${bp_emulator_arg} -DLIBRARY=/nonexistent/libOpenCL.so.1
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_opencl_no_loader.cmake)
  set_tests_properties(opencl_no_loader PROPERTIES TIMEOUT 60 LABELS conformance ENVIRONMENT
    "${bp_ocl_env};BP_OPENCL_LIBRARY=/nonexistent/libOpenCL.so.1")
  # The tests that need an OpenCL device.
  set(bp_opencl_device_tests conformance_opencl conformance_opencl_no_fp64_rope
      opencl_no_platform opencl_build_failure opencl_corrupt_cache opencl_cache_trust)
  if(bp_opencl_skip)
    foreach(t IN LISTS bp_opencl_device_tests)
      bp_skipped_test(${t} "${bp_opencl_skip}")
    endforeach()
  else()
    bp_conformance_test(conformance_opencl EXIT 0
      EXPECT "PASS  ops\\.sdpa_f32" "PASS  ops\\.copy_bf16" "PASS  events\\.elapsed_time"
      ARGS --device opencl:0 --junit JUNIT)
    # In sanitizer builds, PoCL's own leaks (compiling kernels) are suppressed.
    set_property(TEST conformance_opencl APPEND PROPERTY ENVIRONMENT
      "${bp_pocl_env};XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache;BP_OPENCL_CACHE=;BP_OPENCL_CACHE_DIR="
      "BP_OPENCL_LIBRARY=;BP_OPENCL_BUILD_OPTIONS="
      "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/backends/opencl/lsan-pocl.supp")
    # rope on a device without fp64 (BP_OPENCL_FP64=0, as Intel's Arc GPUs): its angle in
    # float-float (kernels/norm.cl), at the full level's long sequences.
    bp_conformance_test(conformance_opencl_no_fp64_rope EXIT 0
      EXPECT "PASS  ops\\.rope_f32" "PASS  ops\\.rope_bf16"
      ARGS --device opencl:0 --filter "ops.rope*" --level full --junit JUNIT)
    set_property(TEST conformance_opencl_no_fp64_rope APPEND PROPERTY ENVIRONMENT
      "${bp_pocl_env};XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache;BP_OPENCL_CACHE=;BP_OPENCL_CACHE_DIR="
      "BP_OPENCL_LIBRARY=;BP_OPENCL_BUILD_OPTIONS=;BP_OPENCL_FP64=0"
      "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/backends/opencl/lsan-pocl.supp")
    # No OpenCL platform (OCL_ICD_VENDORS names an empty directory): the plugin still
    # loads, with 0 devices and the reason, and the cpu is still there.
    add_test(NAME opencl_no_platform COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:bp-info>
      -DEMULATOR=${bp_emulator_arg} -DEMPTY_DIR=${CMAKE_CURRENT_BINARY_DIR}/opencl_no_icd
      -P ${CMAKE_CURRENT_SOURCE_DIR}/check_opencl_no_platform.cmake)
    set_tests_properties(opencl_no_platform PROPERTIES TIMEOUT 60 LABELS conformance ENVIRONMENT
      "${bp_conf_env};OCL_ICD_VENDORS=${CMAKE_CURRENT_BINARY_DIR}/opencl_no_icd")
    # Kernel builds that fail (BP_OPENCL_BUILD_OPTIONS): the error carries the build log.
    add_test(NAME opencl_build_failure COMMAND ${CMAKE_COMMAND}
      -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/check_opencl_build_failure.cmake)
    set_tests_properties(opencl_build_failure PROPERTIES TIMEOUT 300 LABELS conformance
      ENVIRONMENT "${bp_ocl_env};BP_OPENCL_CACHE=0")
    # Junk in the disk cache: the programs are rebuilt and the files replaced.
    add_test(NAME opencl_corrupt_cache COMMAND ${CMAKE_COMMAND}
      -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
      -DCACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache_corrupt
      -P ${CMAKE_CURRENT_SOURCE_DIR}/check_opencl_corrupt_cache.cmake)
    set_tests_properties(opencl_corrupt_cache PROPERTIES TIMEOUT 300 LABELS conformance
      ENVIRONMENT "${bp_ocl_env};BP_OPENCL_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache_corrupt")
    # Only a cache no one else can have written is used (check_opencl_cache_trust.cmake).
    add_test(NAME opencl_cache_trust COMMAND ${CMAKE_COMMAND}
      -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache_trust
      -P ${CMAKE_CURRENT_SOURCE_DIR}/check_opencl_cache_trust.cmake)
    set_tests_properties(opencl_cache_trust PROPERTIES TIMEOUT 300 LABELS conformance
      ENVIRONMENT "${bp_ocl_env};BP_LOG=warn")
  endif()
endif()

# Each seeded defect: the run fails (exit 1) and the named test is among the failures.
# bp_conformance_defect(<defect> <group> <test> [<regex of the failure detail>] [extra args])
function(bp_conformance_defect defect group test detail)
  bp_conformance_test(conformance_defect_${defect} EXIT 1 DEFECT ${defect}
    EXPECT "FAIL  ${group}\\.${test}: ${detail}"
    ARGS --device broken --plugin ${bp_broken_plugin} --filter "${group}.*" ${ARGN})
endfunction()
bp_conformance_defect(event_early events synchronize_waits_for_work "")
bp_conformance_defect(wait_ignored streams wait_event_orders_streams "")
bp_conformance_defect(copy_drops_byte memory copy_sizes_and_offsets "")
bp_conformance_defect(alloc_overlap allocator live_blocks_disjoint "")
bp_conformance_defect(softmax_no_max ops softmax_f32 "")
bp_conformance_defect(guard_no_restore guards backend_follows_nested_guards "")
# Only broken:1 is wrong: the test checks every device of the type, not just the one
# under test.
bp_conformance_defect(mem_info_free_above_total device mem_info_free_within_total "broken:1")
# A memset that drops its last byte fails memory.memset alone: the copy tests, the guards
# and the allocator set their bytes with uploads, never memset ("blame the right test").
bp_conformance_test(conformance_defect_memset_drops_byte EXIT 1 DEFECT memset_drops_byte
  EXPECT "FAIL  memory\\.memset: .*\\(group_memory\\.c:[0-9]+\\)"
         "PASS  memory\\.copy_sizes_and_offsets" "PASS  memory\\.overlapping_copies"
         "PASS  memory\\.peer_copies" "failures by group: memory 1[^,0-9]"
  ARGS --device broken --plugin ${bp_broken_plugin} --filter "memory.*,guards.*,allocator.*")
# Peer copies that lose the byte at each 1 MiB boundary fail memory.peer_copies, and the
# failure, found by a helper of expect.c, is located at the test's own line.
bp_conformance_test(conformance_defect_peer_copy_chunk EXIT 1 DEFECT peer_copy_chunk
  EXPECT "FAIL  memory\\.peer_copies: .*\\(group_memory\\.c:[0-9]+\\)"
         "PASS  memory\\.copy_sizes_and_offsets"
  ARGS --device broken --plugin ${bp_broken_plugin} --filter "memory.*")
# One process-wide current device in the backend's guard: the per-thread test fails (its
# worker's failure located at the test's line, not thread_report.c's), while the
# single-thread nesting test still passes.
bp_conformance_test(conformance_defect_guard_global EXIT 1 DEFECT guard_global
  EXPECT "FAIL  guards\\.backend_current_per_thread: .*\\(group_guards\\.c:[0-9]+\\)"
         "PASS  guards\\.backend_follows_nested_guards"
  ARGS --device broken --plugin ${bp_broken_plugin} --filter "guards.*")
# Timing, ordering and asynchrony (issue 14): each caught deterministically, through a
# gate that holds a stream. A wait that blocks the host hangs its test: a short group
# limit fails it.
bp_conformance_defect(elapsed_seconds events elapsed_is_stream_time
  "elapsed time [^ ]+ ms between two events, with the stream held")
bp_conformance_defect(timestamp_at_record events elapsed_is_stream_time
  "elapsed time [^ ]+ ms between two events, with the stream held")
bp_conformance_defect(small_copy_eager streams small_transfers_wait "a device-to-host copy of 1 bytes")
bp_conformance_test(conformance_defect_wait_blocks_host EXIT 1 DEFECT wait_blocks_host
  EXPECT "FAIL  streams\\.wait_event_does_not_block_host: timed out after 10 s"
  ARGS --device broken --plugin ${bp_broken_plugin} --timeout 10
       --filter "streams.*")
# Stream and event query both ignore waits: each group's test of its own query fails.
bp_conformance_test(conformance_defect_query_ignores_waits EXIT 1 DEFECT query_ignores_waits
  EXPECT "FAIL  streams\\.wait_event_does_not_block_host: bp_stream_query\\(B\\) returned BP_OK"
         "FAIL  events\\.query_sees_cross_stream_wait: bp_event_query returned BP_OK"
  ARGS --device broken --plugin ${bp_broken_plugin} --filter "streams.*,events.*")
bp_conformance_defect(add_writes_past_end ops add_f32 "add f32: .*: wrote outside its output")
# A bug of a long-row path: only --level full reaches it (the first failing case is its
# [4, 2048]); the quick level passes.
bp_conformance_test(conformance_defect_softmax_long_rows EXIT 1 DEFECT softmax_long_rows
  EXPECT "FAIL  ops\\.softmax_f32: " "softmax f32: x .4, 2048.[^\n]* out of bounds"
  ARGS --device broken --plugin ${bp_broken_plugin} --level full --filter "ops.softmax_f32")
bp_conformance_test(conformance_defect_softmax_long_rows_quick EXIT 0 DEFECT softmax_long_rows
  EXPECT "PASS  ops\\.softmax_f32"
  ARGS --device broken --plugin ${bp_broken_plugin} --filter "ops.softmax_f32")
# Numerics: rounding, accumulation and non-finite rows (docs/ops.md "Numerics").
bp_conformance_defect(bf16_round_truncates ops add_bf16_ties "")
bp_conformance_defect(sum_half_accumulate ops sum_f16_long "")
bp_conformance_defect(softmax_neg_inf_nan ops softmax_f32_nonfinite "")
# Isolation: a crash and a hang fail their test, and the rest of the suite still runs
# (these two run every group, so the groups after the broken one must report).
bp_conformance_test(conformance_defect_oom_abort EXIT 1 DEFECT oom_abort
  EXPECT "FAIL  memory\\.out_of_memory_is_error: crashed with signal 6" "PASS  streams\\.ordering"
  ARGS --device broken --plugin ${bp_broken_plugin} --filter "memory.*,streams.*")
bp_conformance_test(conformance_defect_query_hang EXIT 1 DEFECT query_hang
  EXPECT "FAIL  streams\\.query: timed out after 10 s" "PASS  events\\.synchronize_waits_for_work"
  ARGS --device broken --plugin ${bp_broken_plugin} --timeout 10 --filter "streams.*,events.*")

# The suite is installed with the SDK and runs from the install tree.
add_test(NAME conformance_installed COMMAND sh -c
  "rm -rf \"$1\" && ${CMAKE_COMMAND} --install ${CMAKE_BINARY_DIR} --prefix \"$1\" >/dev/null && ${bp_emulator_words} \"$1/bin/bp-conformance\" --device cpu --filter 'device.*,ops.add_f32'"
  sh ${CMAKE_CURRENT_BINARY_DIR}/conformance_install)
set_tests_properties(conformance_installed PROPERTIES ENVIRONMENT "${bp_conf_env}" TIMEOUT 300
  LABELS conformance PASS_REGULAR_EXPRESSION "6 passed, 0 failed")
