# Runs bp-info (EXE) behind EMULATOR (qemu-aarch64; the test sets QEMU_CPU, the emulated
# CPU model) with BP_LOG=debug, and checks which kernel variant the arm backend chose at
# each registration: it logs one line per kernel, "arm: kernel <op> <dtype>: <variant>"
# (backends/arm/arm_kernel.h), and one line "arm: <n> device(s), features: <list>".
# Every regex of REQUIRE must match the output, none of FORBID may.
set(ENV{BP_LOG} debug)
execute_process(COMMAND ${EMULATOR} ${EXE} RESULT_VARIABLE code OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
message("---- QEMU_CPU=$ENV{QEMU_CPU} BP_LOG=debug bp-info: exit ${code}\n${out}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "bp-info exited with '${code}'")
endif()
if(NOT out MATCHES "arm: kernel [a-z_0-9]+ [a-z0-9]+: ")
  message(FATAL_ERROR "the arm backend logged no kernel registration (is libbp_arm.so loaded?)")
endif()
foreach(re IN LISTS REQUIRE)
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "QEMU_CPU=$ENV{QEMU_CPU}: the output does not match: ${re}")
  endif()
endforeach()
foreach(re IN LISTS FORBID)
  if(out MATCHES "${re}")
    message(FATAL_ERROR "QEMU_CPU=$ENV{QEMU_CPU}: the output matches what it must not: ${re} ('${CMAKE_MATCH_0}')")
  endif()
endforeach()
list(LENGTH REQUIRE n_required)
list(LENGTH FORBID n_forbidden)
message("QEMU_CPU=$ENV{QEMU_CPU}: the kernels chosen match (${n_required} required, ${n_forbidden} forbidden)")
