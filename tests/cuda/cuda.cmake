# Tests of the cuda plugin (backends/cuda), included by tests/CMakeLists.txt.
#
# Those that need a GPU run through cuda/skip_unless_cuda.sh: without a CUDA device it
# prints "skipped: no CUDA device: <the plugin's reason>" and exits 77, which CTest
# reports as skipped, never as passed. The others run everywhere: the plugin's errors
# without a driver, with a driver too old for it, with a driver that finds no device,
# and a build without nvcc.
# The GPU core (backends/gpu) on its own, linked as a GPU plugin links it, on a driver
# table of the test's (no GPU, no CUDA): runs everywhere.
add_executable(test_gpu_core cuda/test_gpu_core.c)
target_link_libraries(test_gpu_core PRIVATE bp_gpu_core PkgConfig::CMOCKA)
target_include_directories(test_gpu_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${BP_GPU_KERNELS_DIR})
target_compile_definitions(test_gpu_core PRIVATE _GNU_SOURCE)
bp_project_target(test_gpu_core)
add_test(NAME test_gpu_core COMMAND test_gpu_core)
set_tests_properties(test_gpu_core PROPERTIES LABELS cuda ENVIRONMENT "BP_GPU_PORTABLE_KERNELS=")

if(NOT TARGET bp_cuda)
  return()
endif()
set(bp_cuda_skip ${CMAKE_CURRENT_SOURCE_DIR}/cuda/skip_unless_cuda.sh $<TARGET_FILE:bp-info>)
set(bp_cuda_env "BP_PLUGIN_PATH=;BP_PLUGINS=;BP_AUTOLOAD=;BP_DEVICE=;BP_CUDA_LIBRARY=;BP_MEMORY_LIMIT_MB=0;BP_TRACE_OPS=;BP_PROFILE=;BP_CPU_FALLBACK=;BP_GPU_PORTABLE_KERNELS=;FAKE_CUDA_DEVICES=")

# On a GPU: the backend's HAL pieces and regions as graphs (test_cuda.c).
bp_add_test(test_cuda WRAPPED_BY ${bp_cuda_skip} SOURCES cuda/test_cuda.c test_util.c)
add_dependencies(test_cuda bp_cuda)
# The one test that needs two GPUs, as its own entry: skipped with one GPU, while
# test_cuda reports the rest as run.
add_test(NAME test_cuda_peer_copy COMMAND ${bp_cuda_skip} ${bp_emulator} $<TARGET_FILE:test_cuda>
  test_peer_copy)
# The whole conformance suite on cuda:0, and the demo on cuda:0 within its error bounds.
add_test(NAME conformance_cuda COMMAND ${bp_cuda_skip} ${CMAKE_COMMAND}
  -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
  -DARGS=--device\;cuda:0\;--junit\;JUNIT -DEXIT=0
  -DEXPECT=PASS\ \ ops\\.sdpa_bf16 -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/conformance_cuda
  -P ${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake)
add_test(NAME demo_sliced_attention_cuda COMMAND ${bp_cuda_skip}
  ${bp_emulator} $<TARGET_FILE:sliced_attention> --device cuda:0)
set_tests_properties(test_cuda test_cuda_peer_copy conformance_cuda demo_sliced_attention_cuda
  PROPERTIES
  ENVIRONMENT "${bp_cuda_env};${bp_emulator_env}" SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION "skipped: "
  TIMEOUT 900 LABELS cuda)
set_tests_properties(demo_sliced_attention_cuda PROPERTIES PASS_REGULAR_EXPRESSION
  "on cuda:0.*naive_eager.*sliced_eager.*sliced_bfs.*sliced_strict.*sliced_auto.*\\(all within\\)")

# Without a GPU too: bp-info lists the plugin as loaded with no devices and the reason.
add_library(bp_fake_libcuda SHARED cuda/fake_libcuda.c)
set_target_properties(bp_fake_libcuda PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda)
bp_project_target(bp_fake_libcuda)
# bp_cuda_info_test(<name> <environment entries> <regex>)
function(bp_cuda_info_test name env regex)
  add_test(NAME ${name} COMMAND bp-info)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${bp_cuda_env};${env}"
    PASS_REGULAR_EXPRESSION "${regex}" LABELS cuda)
endfunction()
set(bp_cuda_row "\n  cuda +0\\.1\\.0\\+[^ ]+ +1\\.[0-9]+ +loaded +0 [^\n]*\n +no devices: ")
bp_cuda_info_test(cuda_no_driver "BP_CUDA_LIBRARY=/nonexistent/libcuda.so.1"
  "${bp_cuda_row}the CUDA driver is not installed: /nonexistent/libcuda\\.so\\.1: cannot open shared object file.*\n  cpu:0 ")
bp_cuda_info_test(cuda_old_driver "BP_CUDA_LIBRARY=libm.so.6"
  "${bp_cuda_row}libm\\.so\\.6 has no cuGetProcAddress_v2: the driver is older than CUDA 12\\.0")
bp_cuda_info_test(cuda_no_device "BP_CUDA_LIBRARY=$<TARGET_FILE:bp_fake_libcuda>"
  "${bp_cuda_row}cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
bp_cuda_info_test(cuda_missing_function
  "BP_CUDA_LIBRARY=$<TARGET_FILE:bp_fake_libcuda>;FAKE_CUDA_MISSING=cuGraphExecUpdate"
  "${bp_cuda_row}[^\n]*cuGetProcAddress\\(\"cuGraphExecUpdate\"\\) found no function")
# A build without nvcc: its version says so, and so does its reason for no devices.
bp_cuda_info_test(cuda_without_kernels
  "BP_PLUGIN_PATH=${CMAKE_BINARY_DIR}/tests/cuda_nokernels;BP_CUDA_LIBRARY=/nonexistent/libcuda.so.1"
  "\n  cuda +0\\.1\\.0\\+nokernels +1\\.[0-9]+ +loaded +0 [^\n]*cuda_nokernels/libbp_cuda\\.so\n +no devices: [^\n]*built without kernels")
add_dependencies(bp_fake_libcuda bp_cuda_nokernels)
# BP_GPU_PORTABLE_KERNELS (the GPU core, read at init): 1 is reported (the log at info
# here, and each device's description on a GPU); a value that is neither 0 nor 1 is a
# warning naming it, and the fast paths stay on.
bp_cuda_info_test(cuda_portable_kernels "BP_CUDA_LIBRARY=$<TARGET_FILE:bp_fake_libcuda>;BP_GPU_PORTABLE_KERNELS=1;BP_LOG=info"
  "cuda: portable kernels only \\(BP_GPU_PORTABLE_KERNELS=1\\): no NVIDIA-only fast path, no vendor BLAS.*${bp_cuda_row}cuInit failed")
bp_cuda_info_test(cuda_portable_kernels_bad_value "BP_CUDA_LIBRARY=$<TARGET_FILE:bp_fake_libcuda>;BP_GPU_PORTABLE_KERNELS=yes;BP_LOG=info"
  "BP_GPU_PORTABLE_KERNELS='yes' is not 0 \\(fast paths\\) or 1 \\(portable kernels only\\); using the fast paths.*${bp_cuda_row}cuInit failed")
set_tests_properties(cuda_portable_kernels_bad_value PROPERTIES
  FAIL_REGULAR_EXPRESSION "portable kernels only \\(BP_GPU")
set_tests_properties(cuda_portable_kernels PROPERTIES FAIL_REGULAR_EXPRESSION "is not 0")
# The fake driver with one device (FAKE_CUDA_DEVICES=1) under the plugin built without
# kernels: discovery, open, properties and memory info through the GPU core's driver
# table, and the device's description saying when portable kernels are on.
set(bp_cuda_fake_device "BP_PLUGIN_PATH=${CMAKE_BINARY_DIR}/tests/cuda_nokernels;BP_CUDA_LIBRARY=$<TARGET_FILE:bp_fake_libcuda>;FAKE_CUDA_DEVICES=1")
bp_cuda_info_test(cuda_fake_device "${bp_cuda_fake_device}"
  "\n  cuda:0 +cuda 0\\.1\\.0\\+nokernels +512/1024 +-5\\.\\.0 +Fake CUDA device \\(sm_90, 4 SMs\\)\n")
bp_cuda_info_test(cuda_fake_device_portable "${bp_cuda_fake_device};BP_GPU_PORTABLE_KERNELS=1"
  "\n  cuda:0 +cuda [^\n]*Fake CUDA device \\(sm_90, 4 SMs, portable kernels\\)\n")
