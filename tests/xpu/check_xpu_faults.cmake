# Runs bp-conformance (EXE, behind EMULATOR) with ARGS on the fake loader's pretend GPU
# once per function of FUNCTIONS, with FAKE_ZE_FAIL making that function fail with
# ZE_RESULT_ERROR_DEVICE_LOST (tests/xpu/fake_ze_gpu.c): each run must end without a
# crash (exit 1, tests failed, or 2, the device did not open) with an error that names
# the function and the result on one line; a failing zeModuleBuildLogGetString leaves
# the build error without its log.
foreach(fn IN LISTS FUNCTIONS)
  set(ENV{FAKE_ZE_FAIL} "${fn}")
  execute_process(COMMAND ${EMULATOR} ${EXE} ${ARGS}
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("---- FAKE_ZE_FAIL=${fn}: exit ${code}\n${out}")
  if(NOT code MATCHES "^[12]$")
    message(FATAL_ERROR "FAKE_ZE_FAIL=${fn}: bp-conformance exited with '${code}', not 1 or 2")
  endif()
  if(out MATCHES "crashed|fake_ze_gpu:|fake_ze_loader:")
    message(FATAL_ERROR "FAKE_ZE_FAIL=${fn}: a crash, or the fake caught the plugin misusing it")
  endif()
  if(fn STREQUAL "zeModuleBuildLogGetString")
    set(re "failed with ZE_RESULT_ERROR_MODULE_BUILD_FAILURE: \\(no build log\\)")
  else()
    set(re "${fn}[^\n]*ZE_RESULT_ERROR_DEVICE_LOST")
  endif()
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "FAKE_ZE_FAIL=${fn}: the output does not match: ${re}")
  endif()
endforeach()
