# Runs bp-info (EXE) with OCL_ICD_VENDORS (set by the test) naming the empty directory
# EMPTY_DIR: the opencl plugin must be listed as loaded with 0 devices and the reason
# that no platform was found, and the cpu device must still be there.
# EXE runs behind EMULATOR (a cross build's emulator, e.g. qemu-aarch64; empty natively).
file(REMOVE_RECURSE ${EMPTY_DIR})
file(MAKE_DIRECTORY ${EMPTY_DIR})
execute_process(COMMAND ${EMULATOR} ${EXE} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "bp-info exited with ${code}")
endif()
foreach(re
    "\n  opencl +[^ \n]+ +1\\.[0-9]+ +loaded +0 "
    "no devices: no OpenCL platform found \\(clGetPlatformIDs: -?[0-9]+\\); is an ICD installed\\? OCL_ICD_VENDORS=${EMPTY_DIR}"
    "\n  cpu:0 ")
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "the output does not match: ${re}")
  endif()
endforeach()
if(out MATCHES "\n  opencl:[0-9]")
  message(FATAL_ERROR "bp-info lists an opencl device although no platform is installed")
endif()
