# Runs bp-info (EXE) with BP_OPENCL_LIBRARY (set by the test) naming LIBRARY, a loader that
# does not exist: the opencl plugin must be listed as loaded with 0 devices and a reason
# that names the library (with dlerror's text), and the cpu device must still be there.
# EXE runs behind EMULATOR (a cross build's emulator, e.g. qemu-aarch64; empty natively).
if(NOT "$ENV{BP_OPENCL_LIBRARY}" STREQUAL "${LIBRARY}")
  message(FATAL_ERROR "BP_OPENCL_LIBRARY is '$ENV{BP_OPENCL_LIBRARY}', not '${LIBRARY}'")
endif()
execute_process(COMMAND ${EMULATOR} ${EXE} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "bp-info exited with ${code}")
endif()
string(REPLACE "." "\\." lib_re "${LIBRARY}")
foreach(re
    "\n  opencl +[^ \n]+ +1\\.[0-9]+ +loaded +0 "
    "no devices: BP_OPENCL_LIBRARY=${lib_re} cannot be loaded: [^\n]*${lib_re}"
    "\n  cpu:0 ")
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "the output does not match: ${re}")
  endif()
endforeach()
if(out MATCHES "\n  opencl:[0-9]")
  message(FATAL_ERROR "bp-info lists an opencl device although the loader cannot be loaded")
endif()
