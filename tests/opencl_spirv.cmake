# The OpenCL plugin with its programs from the embedded SPIR-V modules
# (BP_OPENCL_PROGRAM=spirv; docs/backends/opencl.md, "SPIR-V mode"), and Intel's OpenCL
# CPU runtime as a second OpenCL platform beside PoCL. Included by conformance.cmake's
# caller after it (bp_conformance_test, bp_ocl_env).
#
# Intel's runtime (PyPI intel-opencl-rt) is installed by scripts/intel-opencl.sh into
# BP_INTEL_OPENCL_DIR, which make test runs first; the entries on it run the whole
# suite in both program modes and are skipped ("skipped: ...") where it is not
# installed. PoCL (Debian 12's 3.1) takes no SPIR-V: its entries check the errors.
set(BP_INTEL_OPENCL_DIR ${PROJECT_SOURCE_DIR}/.intel-opencl CACHE PATH
    "Where scripts/intel-opencl.sh installed Intel's OpenCL CPU runtime")
set(bp_spirv_tests conformance_opencl_intel conformance_opencl_intel_spirv
    conformance_opencl_intel_spirv_full conformance_opencl_intel_spirv_no_fp64
    opencl_intel_spirv_no_module opencl_intel_spirv_build_options
    opencl_intel_spirv_defines_built_in
    opencl_spirv_pocl_no_spirv opencl_spirv_small_work_groups opencl_bad_program_mode
    opencl_bad_fp64_switch clc_spirv_without_tools)
if(NOT TARGET bp_opencl)
  return()
endif()
if(bp_opencl_skip)
  foreach(t IN LISTS bp_spirv_tests)
    bp_skipped_test(${t} "${bp_opencl_skip}")
  endforeach()
  return()
endif()

# bp_intel_opencl_test(<name> EXIT <code> [BESIDE_POCL] [EXE <program>]
# [EXPECT <regex>...] ARGS <args>...): as bp_conformance_test (EXE, bp-conformance by
# default, with ARGS), on Intel's runtime alone, or with BESIDE_POCL as the second
# platform beside PoCL, "opencl:INTEL" in ARGS naming its device
# (check_intel_opencl.cmake); the plugin's disk cache in a directory of its own.
# Skipped in sanitizer builds: the runtime leaks (LeakSanitizer) and calls a pure
# virtual function at exit there.
function(bp_intel_opencl_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "BESIDE_POCL" "EXIT;EXE" "EXPECT;ARGS")
  set(pocl "")
  if(arg_BESIDE_POCL)
    if(NOT BP_POCL_ICD)
      bp_skipped_test(${name} "PoCL's pocl.icd is not in /etc/OpenCL/vendors (Debian: pocl-opencl-icd)")
      return()
    endif()
    set(pocl ${BP_POCL_ICD})
  endif()
  if(NOT arg_EXE)
    set(arg_EXE $<TARGET_FILE:bp-conformance>)
  endif()
  if(BP_SANITIZER)
    bp_skipped_test(${name} "Intel's OpenCL CPU runtime is not run under ${BP_SANITIZER} sanitizer (it leaks and aborts at exit there): the release build's tests run it")
    return()
  endif()
  string(REPLACE ";" "\\;" args "${arg_ARGS}")
  string(REPLACE ";" "\\;" expect "${arg_EXPECT}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND}
    -DEXE=${arg_EXE} -DEMULATOR=${bp_emulator_arg}
    -DARGS=${args} -DEXIT=${arg_EXIT} -DEXPECT=${expect} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/${name}
    -DVENDORS=${BP_INTEL_OPENCL_DIR}/vendors -DPOCL_ICD=${pocl} -DINFO=$<TARGET_FILE:bp-info>
    -DCHECK=${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_intel_opencl.cmake)
  set_tests_properties(${name} PROPERTIES TIMEOUT 900 LABELS conformance
    SKIP_REGULAR_EXPRESSION "skipped: "
    ENVIRONMENT "${bp_ocl_env};XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/opencl_cache_intel")
endfunction()

# The whole suite on Intel's runtime from OpenCL C source, as on PoCL, with Intel's
# runtime the second platform beside PoCL: opencl:N of two platforms, and the tests
# that need a second device of the backend run (the guards' per-thread test).
bp_intel_opencl_test(conformance_opencl_intel EXIT 0 BESIDE_POCL
  EXPECT "on opencl:[0-9]+: Intel\\(R\\) OpenCL: " "PASS  ops\\.sdpa_f32" "PASS  ops\\.copy_bf16"
         "PASS  events\\.elapsed_time" "PASS  guards\\.backend_current_per_thread"
  ARGS --device opencl:INTEL --junit JUNIT)
# The same from the SPIR-V modules the xpu plugin ships: every kernel.
bp_intel_opencl_test(conformance_opencl_intel_spirv EXIT 0
  EXPECT "on opencl:0: Intel\\(R\\) OpenCL: [^\n]*\\(BP_OPENCL_PROGRAM=spirv\\)"
         "PASS  ops\\.sdpa_f32" "PASS  ops\\.sdpa_bf16" "PASS  ops\\.matmul_f16"
         "PASS  ops\\.copy_bf16" "PASS  ops\\.rope_f32"
  ARGS --device opencl:0 --junit JUNIT)
set_property(TEST conformance_opencl_intel_spirv APPEND PROPERTY ENVIRONMENT "BP_OPENCL_PROGRAM=spirv")
# --level full (docs/conformance.md): the ops group's large shapes, which reach the
# tiled matmul and the many-rows sdpa kernel, from the modules. About 50 s on 2 cores:
# label "full", which make test leaves out (ctest -L full).
bp_intel_opencl_test(conformance_opencl_intel_spirv_full EXIT 0
  EXPECT "level full" "PASS  ops\\.sdpa_bf16" "PASS  ops\\.matmul_f32"
  ARGS --device opencl:0 --level full --filter "ops.*" --timeout 1800 --junit JUNIT)
set_tests_properties(conformance_opencl_intel_spirv_full PROPERTIES
  LABELS "conformance;full" TIMEOUT 2000)
set_property(TEST conformance_opencl_intel_spirv_full APPEND PROPERTY ENVIRONMENT
  "BP_OPENCL_PROGRAM=spirv")
# Again as a device without fp64 (BP_OPENCL_FP64=0), as Intel's Arc GPUs are: the
# modules built without BP_FP64 (convert, norm) run, f64 is not listed; rope takes its
# angle in float-float there (kernels/norm.cl).
bp_intel_opencl_test(conformance_opencl_intel_spirv_no_fp64 EXIT 0
  EXPECT "SKIP  ops\\.copy_f64: opencl:0 does not list f64" "PASS  ops\\.copy_bf16_ties"
         "PASS  ops\\.rmsnorm_f32" "PASS  ops\\.rope_f32"
  ARGS --device opencl:0 --junit JUNIT)
set_property(TEST conformance_opencl_intel_spirv_no_fp64 APPEND PROPERTY ENVIRONMENT
  "BP_OPENCL_PROGRAM=spirv;BP_OPENCL_FP64=0")
# A variant without a module: a cast into f64 on a device without fp64.
bp_intel_opencl_test(opencl_intel_spirv_no_module EXIT 0 EXE $<TARGET_FILE:f64_cast_error>
  ARGS opencl:0
  EXPECT "bp_copy f32 -> f64: [^\n]*: opencl:0: no SPIR-V module of the 'convert' kernels for BP_DT=3 on a device without fp64 \\(BP_OPENCL_PROGRAM=spirv; ")
set_property(TEST opencl_intel_spirv_no_module APPEND PROPERTY ENVIRONMENT
  "BP_OPENCL_PROGRAM=spirv;BP_OPENCL_FP64=0")
# A build of a module that fails (an option the runtime rejects): the error names the
# module and carries the build log. Nothing comes from the disk cache.
bp_intel_opencl_test(opencl_intel_spirv_build_options EXIT 1
  EXPECT "FAIL  ops\\.add_f32" "opencl:0: building the 'elemwise' kernels \\(SPIR-V module BP_DT=0, [0-9]+ bytes; options -cl-no-such-option\\) failed with CL_INVALID_BUILD_OPTIONS \\(-43\\) \\(check BP_OPENCL_BUILD_OPTIONS='-cl-no-such-option'\\): [^\n]*-cl-no-such-option"
  ARGS --device opencl:0 --filter ops.add_f32)
set_property(TEST opencl_intel_spirv_build_options APPEND PROPERTY ENVIRONMENT
  "BP_OPENCL_PROGRAM=spirv;BP_OPENCL_CACHE=0;BP_OPENCL_BUILD_OPTIONS=-cl-no-such-option")
# A module has its defines built in: one that breaks every source build
# (opencl_build_failure) changes nothing.
bp_intel_opencl_test(opencl_intel_spirv_defines_built_in EXIT 0 EXPECT "PASS  ops\\.add_f32"
  ARGS --device opencl:0 --filter ops.add_f32)
set_property(TEST opencl_intel_spirv_defines_built_in APPEND PROPERTY ENVIRONMENT
  "BP_OPENCL_PROGRAM=spirv;BP_OPENCL_CACHE=0;BP_OPENCL_BUILD_OPTIONS=-Dtdesc=int")

# PoCL 3.1 (opencl:0, bp_ocl_env naming its .icd alone) reports no IL: its kernels fail
# with that reason, while the device itself still works (memory.memset).
bp_conformance_test(opencl_spirv_pocl_no_spirv EXIT 1
  EXPECT "FAIL  ops\\.add_f32" "BP_ERR_UNSUPPORTED: opencl:0: the 'elemwise' kernels from SPIR-V \\(BP_OPENCL_PROGRAM=spirv\\): the device takes no SPIR-V \\(CL_DEVICE_IL_VERSION is '', no cl_khr_il_program; OpenCL [^)]*\\)"
         "PASS  memory\\.memset"
  ARGS --device opencl:0 --filter ops.add_f32,memory.memset)
set_property(TEST opencl_spirv_pocl_no_spirv APPEND PROPERTY ENVIRONMENT
  "${bp_ocl_env};BP_OPENCL_PROGRAM=spirv")
# A device whose work-groups are smaller than the modules' (PoCL limited to 128).
bp_conformance_test(opencl_spirv_small_work_groups EXIT 1
  EXPECT "FAIL  ops\\.add_f32" "opencl:0: the 'elemwise' kernels from SPIR-V \\(BP_OPENCL_PROGRAM=spirv\\): the SPIR-V kernels need work-groups of 256 work-items, the device takes at most 128 "
  ARGS --device opencl:0 --filter ops.add_f32)
set_property(TEST opencl_spirv_small_work_groups APPEND PROPERTY ENVIRONMENT
  "${bp_ocl_env};BP_OPENCL_PROGRAM=spirv;POCL_MAX_WORK_GROUP_SIZE=128")
# A program mode that is neither source nor spirv: no device, the reason in bp-info.
add_test(NAME opencl_bad_program_mode COMMAND ${bp_emulator} $<TARGET_FILE:bp-info>)
set_tests_properties(opencl_bad_program_mode PROPERTIES TIMEOUT 60 LABELS conformance
  ENVIRONMENT "${bp_ocl_env};BP_OPENCL_PROGRAM=SPIRV"
  PASS_REGULAR_EXPRESSION "opencl +[^\n]+ +loaded +0 +[^\n]*\n +no devices: BP_OPENCL_PROGRAM='SPIRV' is not a program mode: expected 'source' \\(OpenCL C, the default\\) or 'spirv' \\(the embedded SPIR-V modules\\)")
# BP_OPENCL_FP64 other than 0 or 1 likewise.
add_test(NAME opencl_bad_fp64_switch COMMAND ${bp_emulator} $<TARGET_FILE:bp-info>)
set_tests_properties(opencl_bad_fp64_switch PROPERTIES TIMEOUT 60 LABELS conformance
  ENVIRONMENT "${bp_ocl_env};BP_OPENCL_FP64=no"
  PASS_REGULAR_EXPRESSION "opencl +[^\n]+ +loaded +0 +[^\n]*\n +no devices: BP_OPENCL_FP64='no' is not 0 \\(devices as without cl_khr_fp64\\) or 1 \\(as they report\\)")

# A build without clang, llvm-spirv and spirv-val (a second, small build of this tree
# that searches no system path): no modules, CMake's reason, SPIR-V mode's error. About
# 10 s on 2 cores; label "slow", as the other second build (selective_build).
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME clc_spirv_without_tools COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/clc_spirv_without_tools
    -DC_COMPILER=${CMAKE_C_COMPILER} -DBUILD_TYPE=${CMAKE_BUILD_TYPE} -DSANITIZE=${BP_SANITIZE}
    -DOPENCL_INCLUDE_DIR=${BP_OPENCL_INCLUDE_DIR}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_clc_without_tools.cmake)
  set_tests_properties(clc_spirv_without_tools PROPERTIES LABELS slow TIMEOUT 900
    ENVIRONMENT "${bp_ocl_env};BP_OPENCL_PROGRAM=spirv")
endif()
