# A build on a machine without clang, llvm-spirv and spirv-val: the library and the
# opencl plugin still build, with no SPIR-V module, CMake says why, and SPIR-V mode
# fails each kernel with that reason (backends/clc/cmake/spirv.cmake). The tools are
# hidden by searching no system path (CMAKE_FIND_USE_*), so the compiler, make,
# pkg-config and the OpenCL headers are named. Runs bp-conformance of that build on
# opencl:0 (PoCL) with BP_OPENCL_PROGRAM=spirv.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DC_COMPILER=... -DBUILD_TYPE=... -DSANITIZE=...
#         -DOPENCL_INCLUDE_DIR=... -P check_clc_without_tools.cmake
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(code "${code}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
  if(NOT what STREQUAL "" AND NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (${code}):\n${out}")
  endif()
endfunction()

find_program(make NAMES make gmake REQUIRED)
find_program(pkg_config NAMES pkg-config REQUIRED)
file(REMOVE_RECURSE ${WORK_DIR})
run("configuring" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G "Unix Makefiles"
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_MAKE_PROGRAM=${make}
    -DPKG_CONFIG_EXECUTABLE=${pkg_config} -DBP_OPENCL_INCLUDE_DIR=${OPENCL_INCLUDE_DIR}
    -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DBP_SANITIZE=${SANITIZE} -DBP_BUILD_TESTS=OFF)
message("${out}")
if(NOT out MATCHES "clc: no SPIR-V modules: clang, llvm-spirv, spirv-val not found \\(Debian: clang-15 llvm-spirv-15 spirv-tools\\)")
  message(FATAL_ERROR "CMake does not say why there are no SPIR-V modules")
endif()
run("building" ${CMAKE_COMMAND} --build ${WORK_DIR} -j 2 --target bp_opencl bp-conformance)
run("" ${WORK_DIR}/bin/bp-conformance --device opencl:0 --filter ops.add_f32)
message("${out}")
if(NOT code EQUAL 1 OR NOT out MATCHES "the 'elemwise' kernels from SPIR-V \\(BP_OPENCL_PROGRAM=spirv\\): this libbp_opencl.so was built without SPIR-V modules \\(clang, llvm-spirv or spirv-val missing at build time")
  message(FATAL_ERROR "bp-conformance (exit ${code}) does not fail with the reason")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
