# Runs bp-info (EXE, behind EMULATOR) for the xpu plugin's no-device tests: it must exit
# 0 and list the xpu plugin as loaded with 0 devices, its aliases, the reason matching
# REASON, the cpu device, and no xpu device. When the output matches SKIP_IF (optional),
# the test prints "skipped: SKIP_WHY" instead (CTest reports it as skipped).
execute_process(COMMAND ${EMULATOR} ${EXE} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(DEFINED SKIP_IF AND NOT "${SKIP_IF}" STREQUAL "" AND out MATCHES "${SKIP_IF}")
  message("skipped: ${SKIP_WHY}")
  return()
endif()
if(NOT code EQUAL 0)
  message(FATAL_ERROR "bp-info exited with ${code}")
endif()
foreach(re
    "\n  xpu +0\\.1\\.0 +1\\.[0-9]+ +loaded +0 [^\n]*libbp_xpu\\.so\n"
    "\n +no devices: ${REASON}"
    "\n +aliases: ze,level_zero\n"
    "\n  cpu:0 ")
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "the output does not match: ${re}")
  endif()
endforeach()
if(out MATCHES "\n  xpu:[0-9]")
  message(FATAL_ERROR "bp-info lists an xpu device")
endif()
