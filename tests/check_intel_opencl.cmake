# Runs the check script CHECK (e.g. check_conformance.cmake, with its own -D variables)
# against Intel's OpenCL CPU runtime alone: OCL_ICD_VENDORS names VENDORS, the directory
# scripts/intel-opencl.sh writes. When the runtime is not installed there, the test is
# skipped (the ctest entry's SKIP_REGULAR_EXPRESSION is "skipped: ").
if(NOT EXISTS "${VENDORS}/intel-cpu.icd")
  message("skipped: Intel's OpenCL CPU runtime is not installed in ${VENDORS} "
          "(scripts/intel-opencl.sh installs it; make test runs it)")
  return()
endif()
file(READ "${VENDORS}/intel-cpu.icd" library)
string(STRIP "${library}" library)
if(NOT EXISTS "${library}")
  message(FATAL_ERROR "${VENDORS}/intel-cpu.icd names ${library}, which does not exist: run scripts/intel-opencl.sh again")
endif()
set(ENV{OCL_ICD_VENDORS} "${VENDORS}")
include(${CHECK})
