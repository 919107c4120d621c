# Runs the check script CHECK (e.g. check_conformance.cmake, with its own -D variables)
# against Intel's OpenCL CPU runtime: OCL_ICD_VENDORS names VENDORS, the directory
# scripts/intel-opencl.sh writes. With POCL_ICD (PoCL's .icd file), Intel's runtime is
# the second OpenCL platform beside PoCL instead: WORK_DIR/vendors holds both .icd
# files, and "opencl:INTEL" in ARGS becomes the device that bp-info (INFO) lists as
# Intel's. When the runtime is not installed, the test is skipped (the ctest entry's
# SKIP_REGULAR_EXPRESSION is "skipped: ").
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
if(NOT POCL_ICD)
  set(ENV{OCL_ICD_VENDORS} "${VENDORS}")
else()
  set(both ${WORK_DIR}/vendors)
  file(REMOVE_RECURSE ${both})
  file(MAKE_DIRECTORY ${both})
  file(COPY ${POCL_ICD} ${VENDORS}/intel-cpu.icd DESTINATION ${both})
  set(ENV{OCL_ICD_VENDORS} "${both}")
  execute_process(COMMAND ${EMULATOR} ${INFO} OUTPUT_VARIABLE listing ERROR_VARIABLE listing)
  if(NOT listing MATCHES "Portable Computing Language"
     OR NOT listing MATCHES "\n  opencl:([0-9]+) [^\n]*Intel\\(R\\) OpenCL")
    message(FATAL_ERROR "bp-info does not list both PoCL and Intel's runtime:\n${listing}")
  endif()
  set(intel opencl:${CMAKE_MATCH_1})
  message("Intel's runtime is ${intel} beside PoCL")
  list(TRANSFORM ARGS REPLACE "^opencl:INTEL$" "${intel}")
endif()
include(${CHECK})
