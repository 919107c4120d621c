# Runs CMD (a program and its arguments, behind EMULATOR) with the cpu matmul engine
# ENGINE (BP_CPU_MATMUL; empty: left unset) and the environment ENV (NAME=VALUE items),
# and checks its exit code is 0, that its output (stdout and stderr) matches every regex
# of EXPECT and none of FORBID. NEEDS_ONEDNN: the test needs this build's oneDNN engine
# (BUILT: ON or OFF) and LIBRARY (the libdnnl.so.3 of scripts/onednn.sh), and a build
# without AddressSanitizer (SANITIZER), else it prints "skipped: <why>" and passes
# (tests/matmul_engines.cmake).
if(NEEDS_ONEDNN)
  if(SANITIZER STREQUAL "address")
    # Seen with GCC 12 (sliced_attention on oneDNN): LeakSanitizer's exit-time scan
    # reads a bogus dynamic-TLS range of libdnnl and crashes ("Tracer caught signal
    # 11"); likely the stream workers started before the dlopen. test_cpukit_dnnl,
    # whose threads start after the library loads, runs the engine under ASan.
    message("skipped: under ASan, LeakSanitizer (GCC 12) crashes at exit scanning oneDNN's thread-local storage in these programs (test_cpukit_dnnl covers the engine under ASan)")
    return()
  endif()
  if(NOT BUILT)
    message("skipped: this build has no oneDNN engine (x86-64 with scripts/onednn.sh's headers)")
    return()
  endif()
  if(NOT EXISTS "${LIBRARY}")
    message("skipped: oneDNN not installed (scripts/onednn.sh): no ${LIBRARY}")
    return()
  endif()
endif()
if(ENGINE)
  set(ENV{BP_CPU_MATMUL} "${ENGINE}")
else()
  unset(ENV{BP_CPU_MATMUL})
endif()
foreach(item IN LISTS ENV)
  string(REGEX MATCH "^([A-Z_]+)=(.*)$" _ "${item}")
  set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
endforeach()
execute_process(COMMAND ${EMULATOR} ${CMD} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "exited with ${code} (BP_CPU_MATMUL=${ENGINE})")
endif()
foreach(re IN LISTS EXPECT)
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "the output does not match: ${re}")
  endif()
endforeach()
foreach(re IN LISTS FORBID)
  if(out MATCHES "${re}")
    message(FATAL_ERROR "the output matches what it must not: ${re}")
  endif()
endforeach()
