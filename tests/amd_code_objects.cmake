# The AMD code objects of the GPU kernels (backends/gpu/hip_kernels.cmake), checked by
# scripts/check-amd-code-objects.sh: amd_code_objects runs it on the bundles this build
# made (every GPU_KERNEL of the .def files for every target, wavefront 64 on CDNA, LDS
# within 64 KiB, no scratch); amd_code_objects_detects_violations and
# amd_code_objects_usage_errors run it on a fixture compiled with hipcc
# (tests/amd_code_objects_fixture.sh); amd_port_conversions checks gpu_port.h's AMD
# conversions on the host (tests/amd_port_conversions.cpp). Without hipcc they say
# "skipped: <why>".
# A cross build (aarch64) leaves them to the native build, unless a plugin of this build
# made the AMD kernels anyway.
get_property(bp_amd_made GLOBAL PROPERTY BP_HIP_KERNELS_MADE SET)
if(CMAKE_CROSSCOMPILING AND NOT bp_amd_made)
  foreach(name amd_code_objects amd_code_objects_detects_violations
               amd_code_objects_usage_errors amd_port_conversions)
    bp_skipped_test(${name} "a cross build: the native build checks the AMD code objects")
    set_tests_properties(${name} PROPERTIES LABELS rocm)
  endforeach()
  return()
endif()
include(${PROJECT_SOURCE_DIR}/backends/gpu/hip_kernels.cmake)
bp_hip_kernels(FILES bp_amd_bundles HAVE bp_amd_have TARGETS bp_amd_targets)
set(bp_amd_check ${PROJECT_SOURCE_DIR}/scripts/check-amd-code-objects.sh)
if(bp_amd_have)
  string(REPLACE ";" "\\;" bp_amd_targets_arg "${bp_amd_targets}")
  add_test(NAME amd_code_objects COMMAND bash ${bp_amd_check} --targets ${bp_amd_targets_arg}
    ${PROJECT_SOURCE_DIR}/backends/gpu/kernels ${bp_amd_bundles})
else()
  if(NOT BP_ROCM_KERNELS)
    set(bp_amd_why "BP_ROCM_KERNELS=OFF: no AMD code objects in this build")
  elseif(NOT BP_HIPCC)
    set(bp_amd_why "no hipcc at configure time (scripts/install-deps.sh installs it)")
  else()
    set(bp_amd_why "BP_ROCM_TARGETS is empty: no AMD code objects in this build")
  endif()
  add_test(NAME amd_code_objects COMMAND bash ${bp_amd_check} --skip "${bp_amd_why}")
endif()
foreach(case detects_violations usage_errors)
  add_test(NAME amd_code_objects_${case} COMMAND bash
    ${CMAKE_CURRENT_SOURCE_DIR}/amd_code_objects_fixture.sh ${case} ${PROJECT_SOURCE_DIR}
    ${CMAKE_CURRENT_BINARY_DIR}/amd_code_objects_${case} "${BP_HIPCC}")
endforeach()
# gpu_port.h's AMD conversions (bf16 rounding, conversions toward zero), run on the host.
add_test(NAME amd_port_conversions COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/amd_port_conversions.sh
  ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/amd_port_conversions "${BP_HIPCC}")
set_tests_properties(amd_code_objects amd_code_objects_detects_violations
  amd_code_objects_usage_errors amd_port_conversions PROPERTIES LABELS rocm TIMEOUT 120
  SKIP_REGULAR_EXPRESSION "skipped: ")
