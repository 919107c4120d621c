# Tests of the rocm plugin (backends/rocm), included by tests/CMakeLists.txt. No AMD GPU
# is needed: each test names its HIP runtime with BP_ROCM_LIBRARY, mostly the stand-in
# fake_libamdhip64.c built here (its devices are host memory, its kernels never run), so
# they pass or fail the same on a machine with an AMD GPU. On such a machine the plugin's
# real check is `bp-conformance --device rocm:0` (scripts/gpu-check.sh --device rocm:0).
if(NOT TARGET bp_rocm)
  return()
endif()
set(bp_rocm_env "BP_PLUGIN_PATH=;BP_PLUGINS=;BP_AUTOLOAD=;BP_DEVICE=;BP_ROCM_LIBRARY=;BP_MEMORY_LIMIT_MB=0;BP_TRACE_OPS=;BP_PROFILE=;BP_CPU_FALLBACK=;BP_GPU_PORTABLE_KERNELS=")

# The stand-in runtime: as built, with what ROCm 6 adds (hipLaunchHostFunc,
# hipGetDevicePropertiesR0000); as Debian's HIP 5.2 library (without them); and without
# hipGraphExecUpdate (a runtime older than the plugin needs).
# bp_fake_hip(<target> <definitions...>)
function(bp_fake_hip target)
  add_library(${target} SHARED rocm/fake_libamdhip64.c)
  target_include_directories(${target} PRIVATE ${BP_HIP_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE __HIP_PLATFORM_AMD__ ${ARGN})
  target_link_libraries(${target} PRIVATE Threads::Threads)
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_hip)
  bp_project_target(${target})
  add_dependencies(${target} bp_rocm_nokernels bp_rocm_stubimages)
endfunction()
bp_fake_hip(bp_fake_hip)
bp_fake_hip(bp_fake_hip52 FAKE_HIP_5_2)
bp_fake_hip(bp_fake_hip_old FAKE_HIP_WITHOUT_GRAPH_EXEC_UPDATE)
set(bp_fake_hip "BP_ROCM_LIBRARY=$<TARGET_FILE:bp_fake_hip>")

# bp-info lists the plugin loaded with no devices and the reason, and the cpu device still.
# bp_rocm_info_test(<name> <environment entries> <regex>)
function(bp_rocm_info_test name env regex)
  add_test(NAME ${name} COMMAND ${bp_emulator} $<TARGET_FILE:bp-info>)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${bp_rocm_env};${env};${bp_emulator_env}"
    PASS_REGULAR_EXPRESSION "${regex}" LABELS rocm)
endfunction()
set(bp_rocm_row "\n  rocm +0\\.1\\.0\\+[^ ]+ +1\\.[0-9]+ +loaded +0 [^\n]*\n +no devices: ")
bp_rocm_info_test(rocm_no_runtime "BP_ROCM_LIBRARY=/nonexistent/libamdhip64.so"
  "${bp_rocm_row}the HIP runtime is not installed: /nonexistent/libamdhip64\\.so: cannot open shared object file.*\n  cpu:0 ")
bp_rocm_info_test(rocm_not_a_runtime "BP_ROCM_LIBRARY=libm.so.6"
  "${bp_rocm_row}libm\\.so\\.6 has no hipInit: not a HIP runtime")
# (and no "/dev/kfd" hint: that is for hipInit's failures only)
bp_rocm_info_test(rocm_missing_function "BP_ROCM_LIBRARY=$<TARGET_FILE:bp_fake_hip_old>"
  "${bp_rocm_row}[^\n]*libbp_fake_hip_old\\.so has no hipGraphExecUpdate: not a HIP runtime, or one older than 5\\.2[^/\n]*\n")
bp_rocm_info_test(rocm_init_failure "${bp_fake_hip};FAKE_HIP_INIT_ERROR=100"
  "${bp_rocm_row}hipInit failed: hipErrorNoDevice: no ROCm-capable device is detected")
bp_rocm_info_test(rocm_no_device "${bp_fake_hip};FAKE_HIP_DEVICES=0"
  "${bp_rocm_row}the HIP driver \\(50221153\\) sees no device: hipErrorNoDevice")
# A build without hipcc: its version says so, and so does its reason for no devices.
bp_rocm_info_test(rocm_without_kernels
  "BP_PLUGIN_PATH=${CMAKE_BINARY_DIR}/tests/rocm_nokernels;BP_ROCM_LIBRARY=/nonexistent/libamdhip64.so"
  "\n  rocm +0\\.1\\.0\\+nokernels +1\\.[0-9]+ +loaded +0 [^\n]*rocm_nokernels/libbp_rocm\\.so\n +no devices: [^\n]*built without kernels")
# The stand-in's device, listed as rocm:0 with its arch (features dropped) and CUs.
bp_rocm_info_test(rocm_fake_device "${bp_fake_hip}"
  "\n  rocm:0 +rocm [^\n]*Fake AMD Instinct 0 \\(gfx90a, 104 CUs\\)")
# The wavefront size comes from the device: 64 on CDNA, 32 on RDNA (BP_LOG=debug's line).
bp_rocm_info_test(rocm_fake_wave64 "${bp_fake_hip};BP_LOG=debug"
  "rocm:0: Fake AMD Instinct 0, gfx90a, 104 CUs, warp 64, 64 MiB")
bp_rocm_info_test(rocm_fake_wave32 "${bp_fake_hip};BP_LOG=debug;FAKE_HIP_ARCH=gfx1030"
  "rocm:0: Fake AMD Instinct 0, gfx1030, 104 CUs, warp 32, 64 MiB")

# The installed HIP runtime, when there is one: every function the plugin needs is
# found (bp-info's reason is hipInit's, or there are devices); skipped without it.
# Not under the sanitizers: a process that loaded Debian's HIP 5.2 runtime leaks in
# hipInit and makes LeakSanitizer crash at exit, so the Makefile's SANITIZED_ENV points
# BP_ROCM_LIBRARY away from it (as it keeps Intel's drivers away).
if(BP_SANITIZER)
  bp_skipped_test(rocm_installed_runtime "the real HIP runtime is not loaded under ${BP_SANITIZER} sanitizer (it leaks in hipInit and LeakSanitizer crashes in processes that loaded it): the release build's tests run it")
else()
  add_test(NAME rocm_installed_runtime COMMAND ${CMAKE_COMMAND}
    -DBP_INFO=$<TARGET_FILE:bp-info> -DEMULATOR=${bp_emulator_arg}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/rocm/check_installed_runtime.cmake)
  set_tests_properties(rocm_installed_runtime PROPERTIES
    ENVIRONMENT "${bp_rocm_env};${bp_emulator_env}")
endif()
set_tests_properties(rocm_installed_runtime PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: " LABELS rocm)

# The GPU core through the HIP table, against the stand-in (test_rocm_fake.c): once with
# the ROCm 6 style runtime (hipLaunchHostFunc), once as Debian's 5.2 (host functions by
# hipStreamAddCallback, properties by their old name); with the plugin of stand-in
# images (kernels registered), an op whose launch reaches the runtime, and a device
# whose modules the runtime refuses.
bp_add_test(test_rocm_fake SOURCES rocm/test_rocm_fake.c test_util.c)
add_dependencies(test_rocm_fake bp_rocm bp_fake_hip bp_fake_hip52 bp_fake_hip_old)
add_test(NAME test_rocm_fake_hip52 COMMAND ${bp_emulator} $<TARGET_FILE:test_rocm_fake>)
add_test(NAME test_rocm_launch COMMAND ${bp_emulator} $<TARGET_FILE:test_rocm_fake> launch)
add_test(NAME test_rocm_module_failure COMMAND ${bp_emulator} $<TARGET_FILE:test_rocm_fake> module)
set_tests_properties(test_rocm_fake PROPERTIES ENVIRONMENT "${bp_rocm_env};${bp_fake_hip};${bp_emulator_env}")
set_tests_properties(test_rocm_fake_hip52 PROPERTIES ENVIRONMENT
  "${bp_rocm_env};BP_ROCM_LIBRARY=$<TARGET_FILE:bp_fake_hip52>;${bp_emulator_env}")
set_tests_properties(test_rocm_launch PROPERTIES ENVIRONMENT
  "${bp_rocm_env};BP_PLUGIN_PATH=${CMAKE_BINARY_DIR}/tests/rocm_stubimages;${bp_fake_hip};${bp_emulator_env}")
set_tests_properties(test_rocm_module_failure PROPERTIES ENVIRONMENT
  "${bp_rocm_env};BP_PLUGIN_PATH=${CMAKE_BINARY_DIR}/tests/rocm_stubimages;${bp_fake_hip};FAKE_HIP_MODULE_ERROR=209;${bp_emulator_env}")
set_tests_properties(test_rocm_fake test_rocm_fake_hip52 test_rocm_launch test_rocm_module_failure PROPERTIES
  TIMEOUT 300 LABELS rocm)
