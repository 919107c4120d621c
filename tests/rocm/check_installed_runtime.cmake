# cmake -DBP_INFO=<bp-info> [-DEMULATOR=<cmd>] -P check_installed_runtime.cmake
# The rocm plugin against the HIP runtime installed on this machine (BP_ROCM_LIBRARY
# unset): every function the plugin looks up must be found. Passes when bp-info lists a
# rocm device or its reason for none is hipInit's (the runtime loaded completely, and
# found no GPU); fails on any other reason (a function missing, e.g. one the headers
# declare but the library lacks); skipped when no runtime is installed.
execute_process(COMMAND ${EMULATOR} ${BP_INFO} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bp-info failed (${rc}):\n${out}")
endif()
if(out MATCHES "\n  rocm:0 ")
  message("the installed HIP runtime gives rocm devices")
  return()
endif()
if(NOT out MATCHES "\n  rocm [^\n]*\n +no devices: ([^\n]*)")
  message(FATAL_ERROR "bp-info shows no rocm plugin row with a reason:\n${out}")
endif()
set(reason "${CMAKE_MATCH_1}")
if(reason MATCHES "^the HIP runtime is not installed: ")
  message("skipped: no HIP runtime installed (${reason})")
elseif(reason MATCHES "^hipInit failed: ")
  message("the installed HIP runtime has every function the plugin needs; ${reason}")
else()
  message(FATAL_ERROR "the installed HIP runtime did not load: ${reason}")
endif()
