# The cpu matmul engines (ops/cpu/matmul.c; docs/ops.md, "cpu matmul engines"): the
# matmul op tests and the conformance suite run once with each engine selected
# (BP_CPU_MATMUL=onednn|blas|builtin), the matmul tests checking from the info log that
# the engine asked for is the one that ran; then the bad environment values, each with
# its warning and correct results. The oneDNN runs load the library of
# scripts/onednn.sh (BP_ONEDNN_LIBRARY) and print "skipped: <why>" without it, in a
# build without the engine (aarch64, no headers) (check_matmul_engine.cmake).
set(bp_onednn_library ${PROJECT_SOURCE_DIR}/.onednn/lib/libdnnl.so.3)
if(NOT DEFINED BP_ONEDNN_ENGINE)
  set(BP_ONEDNN_ENGINE OFF)
endif()
set(bp_engine_env "BP_PLUGIN_PATH=;BP_PLUGINS=;BP_DEVICE=;BP_MEMORY_LIMIT_MB=0;BP_AUTOLOAD=;BP_TRACE_OPS=;BP_PROFILE=;BP_CPU_FALLBACK=;BP_BLAS=;BP_ONEDNN_LIBRARY=;BP_LOG=info")
# The log lines that show which engine ran.
set(bp_onednn_ran "matmul: oneDNN 3\\.[0-9]+\\.[0-9]+" "f32 matmul on oneDNN" "bf16 matmul on oneDNN")
set(bp_blas_ran "matmul uses cblas_sgemm|no CBLAS library found")
set(bp_any_engine "oneDNN [0-9]|on oneDNN|uses cblas_sgemm")

# bp_matmul_engine_test(<name> ENGINE <engine> [NEEDS_ONEDNN] [ENV <NAME=VALUE>...]
#                       [EXPECT <regex>...] [FORBID <regex>...] CMD <program> <args>...)
function(bp_matmul_engine_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NEEDS_ONEDNN" "ENGINE" "ENV;EXPECT;FORBID;CMD")
  foreach(list CMD ENV EXPECT FORBID)
    string(REPLACE ";" "\\;" ${list} "${arg_${list}}")
  endforeach()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND}
    -DENGINE=${arg_ENGINE} -DNEEDS_ONEDNN=${arg_NEEDS_ONEDNN} -DBUILT=${BP_ONEDNN_ENGINE}
    -DLIBRARY=${bp_onednn_library} -DEMULATOR=${bp_emulator_arg} -DCMD=${CMD} -DENV=${ENV}
    -DEXPECT=${EXPECT} -DFORBID=${FORBID}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_matmul_engine.cmake)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${bp_engine_env}" TIMEOUT 900)
endfunction()

# The matmul tests check the log; bp-conformance runs each test in a child process whose
# log it does not pass on, so its runs check the exit code alone (the same environment
# selects the same engine in both).
foreach(program test_ops_matmul conformance)
  if(program STREQUAL "conformance")
    set(cmd $<TARGET_FILE:bp-conformance> --device cpu)
    set(prefix conformance_cpu_matmul)
    set(onednn_ran "")
    set(blas_ran "")
  else()
    set(cmd $<TARGET_FILE:test_ops_matmul>)
    set(prefix test_ops_matmul_engine)
    set(onednn_ran ${bp_onednn_ran})
    set(blas_ran ${bp_blas_ran})
  endif()
  bp_matmul_engine_test(${prefix}_onednn ENGINE onednn NEEDS_ONEDNN
    ENV BP_ONEDNN_LIBRARY=${bp_onednn_library} EXPECT ${onednn_ran} CMD ${cmd})
  bp_matmul_engine_test(${prefix}_blas ENGINE blas EXPECT ${blas_ran}
    ENV BP_ONEDNN_LIBRARY=${bp_onednn_library} FORBID "oneDNN [0-9]" CMD ${cmd})
  bp_matmul_engine_test(${prefix}_builtin ENGINE builtin
    ENV BP_ONEDNN_LIBRARY=${bp_onednn_library} FORBID ${bp_any_engine} CMD ${cmd})
endforeach()
set_tests_properties(conformance_cpu_matmul_onednn conformance_cpu_matmul_blas
  conformance_cpu_matmul_builtin PROPERTIES LABELS conformance)

# Bad environment values: a warning naming the variable, then correct results.
bp_matmul_engine_test(matmul_engine_bogus ENGINE bogus
  EXPECT "BP_CPU_MATMUL='bogus' is not auto, onednn, blas or builtin; using auto"
  CMD $<TARGET_FILE:test_ops_matmul>)
bp_matmul_engine_test(matmul_engine_onednn_missing ENGINE ""
  ENV BP_ONEDNN_LIBRARY=/nonexistent/libdnnl.so.3
  EXPECT "oneDNN asked for \\(BP_CPU_MATMUL=auto, BP_ONEDNN_LIBRARY=/nonexistent/libdnnl.so.3\\) but unavailable"
  FORBID "on oneDNN" CMD $<TARGET_FILE:test_ops_matmul>)
# A library that is not oneDNN (the C maths library): the reason names what it lacks.
bp_matmul_engine_test(matmul_engine_onednn_not_onednn ENGINE onednn NEEDS_ONEDNN
  ENV BP_ONEDNN_LIBRARY=libm.so.6
  EXPECT "BP_CPU_MATMUL=onednn, BP_ONEDNN_LIBRARY=libm.so.6\\) but unavailable: libm.so.6 has no dnnl_version: not oneDNN 3"
  FORBID "on oneDNN" CMD $<TARGET_FILE:test_ops_matmul>)

# The demo on oneDNN: its scenarios run products on several streams at once, which
# share the cached primitives (each call with its own scratchpad; a shared one gave
# wrong sums here).
bp_matmul_engine_test(sliced_attention_onednn ENGINE onednn NEEDS_ONEDNN
  ENV BP_ONEDNN_LIBRARY=${bp_onednn_library} EXPECT "checked \\(all within\\)"
  CMD $<TARGET_FILE:sliced_attention> --repeat 1)
