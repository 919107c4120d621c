# Tests of the xpu plugin (backends/xpu), included by tests/CMakeLists.txt.
#
# No machine here has an Intel GPU. The first tests run the plugin's paths up to the
# point where a device would be needed and check that each ends in 0 devices with its
# reason, never a crash: on the real loader, and on a fake loader (xpu/fake_ze_loader.c)
# standing for the drivers that cannot be installed here, which aborts in every function
# past the one a test expects the plugin to stop at. The others run the plugin's host
# side on the fake's pretend GPU (xpu/fake_ze_gpu.c): no kernel runs, and nothing here
# tests a device (docs/backends/xpu.md says what ran on what, and what never ran).
if(NOT TARGET bp_xpu)
  return()
endif()
# Only the xpu plugin is loaded: the tests do not depend on the other plugins' drivers.
set(bp_xpu_env "BP_PLUGIN_PATH=;BP_PLUGINS=xpu;BP_AUTOLOAD=;BP_DEVICE=;BP_XPU_LIBRARY=;BP_MEMORY_LIMIT_MB=0;FAKE_ZE_MODE=;FAKE_ZE_GPUS=;FAKE_ZE_MAX_GROUP=;FAKE_ZE_FP64=;FAKE_ZE_FAIL=;ZE_ENABLE_ALT_DRIVERS=")

# bp_fake_ze_library(<target> [<compile definitions>...]): the fake loader.
function(bp_fake_ze_library target)
  add_library(${target} SHARED xpu/fake_ze_loader.c xpu/fake_ze_gpu.c)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/backends/xpu
    ${BP_LEVEL_ZERO_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE ${ARGN})
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_ze)
  bp_project_target(${target})
endfunction()
bp_fake_ze_library(bp_fake_ze_loader)
# The same without zeModuleBuildLogGetString: a loader lacking a function the plugin needs.
bp_fake_ze_library(bp_fake_ze_loader_lacking
  zeModuleBuildLogGetString=fake_renamed_zeModuleBuildLogGetString)

# bp_xpu_info_test(<name> <environment entries> <reason regex> [<skip regex> <skip why>])
function(bp_xpu_info_test name env reason)
  set(skip_args "")
  if(BP_SANITIZER AND env STREQUAL "")
    # The real driver (env empty: nothing hidden from the loader).
    bp_skipped_test(${name} "Intel's Level Zero driver is not loaded under the ${BP_SANITIZER} sanitizer (it dlopens with RTLD_DEEPBIND under WSL, which the sanitizer runtime refuses): the release build runs this test")
    return()
  endif()
  if(ARGC GREATER 3)
    set(skip_args -DSKIP_IF=${ARGV3} -DSKIP_WHY=${ARGV4})
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:bp-info>
    -DEMULATOR=${bp_emulator_arg} -DREASON=${reason} ${skip_args}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/xpu/check_xpu_info.cmake)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${bp_xpu_env};${env}"
    SKIP_REGULAR_EXPRESSION "skipped: " LABELS xpu)
endfunction()

set(bp_fake_ze "BP_XPU_LIBRARY=$<TARGET_FILE:bp_fake_ze_loader>")
# BP_XPU_LIBRARY names a file that does not exist: no fallback to the default loader.
bp_xpu_info_test(xpu_no_loader "BP_XPU_LIBRARY=/nonexistent/libze_loader.so.1"
  "BP_XPU_LIBRARY=/nonexistent/libze_loader\\.so\\.1 cannot be loaded: /nonexistent/libze_loader\\.so\\.1: cannot open shared object file: No such file")
# A library that is no Level Zero loader at all.
bp_xpu_info_test(xpu_loader_without_ze "BP_XPU_LIBRARY=libm.so.6"
  "the Level Zero loader libm\\.so\\.6 lacks zeInit \\(a loader of Level Zero 1\\.2 or newer is needed\\)")
# A loader lacking one function the plugin needs: found before any is called.
bp_xpu_info_test(xpu_loader_lacking_function
  "BP_XPU_LIBRARY=$<TARGET_FILE:bp_fake_ze_loader_lacking>"
  "the Level Zero loader /[^ ]*/libbp_fake_ze_loader_lacking\\.so lacks zeModuleBuildLogGetString")
# zeInit fails and zeDriverGet would crash: the plugin stops after zeInit. This is what
# Debian's loader does with intel-opencl-icd installed and no Intel GPU.
bp_xpu_info_test(xpu_init_fails "${bp_fake_ze}"
  "zeInit\\(ZE_INIT_FLAG_GPU_ONLY\\) failed with ZE_RESULT_ERROR_UNINITIALIZED \\(0x78000001\\)")
bp_xpu_info_test(xpu_no_driver "${bp_fake_ze};FAKE_ZE_MODE=no_driver"
  "no Level Zero driver \\(zeDriverGet: ZE_RESULT_SUCCESS, 0 drivers\\)")
bp_xpu_info_test(xpu_old_driver "${bp_fake_ze};FAKE_ZE_MODE=old_api"
  "Level Zero driver 0 implements API 1\\.1, older than the 1\\.2 this plugin needs")
bp_xpu_info_test(xpu_no_gpu "${bp_fake_ze};FAKE_ZE_MODE=no_gpu"
  "Level Zero driver 0 has no GPU device \\(zeDeviceGet: ZE_RESULT_SUCCESS, 0 devices\\)")

# The real loader (Debian's libze1) with the real driver (intel-opencl-icd) and no Intel
# GPU: zeInit fails. Then the same with the driver hidden from the loader, as on a
# machine without intel-opencl-icd. Skipped where the loader is not installed, or where
# a GPU is found.
set(bp_xpu_real_skip "no devices: libze_loader\\.so\\.1 not found|xpu:0 +xpu ")
set(bp_xpu_real_why "no Level Zero loader (Debian: libze1), or a Level Zero GPU is present: this test is for a machine without one")
bp_xpu_info_test(xpu_real_loader_no_gpu ""
  "zeInit\\(ZE_INIT_FLAG_GPU_ONLY\\) failed with ZE_RESULT_ERROR_[A-Z_]+ \\(0x[0-9a-f]+\\)"
  "${bp_xpu_real_skip}" "${bp_xpu_real_why}")
bp_xpu_info_test(xpu_real_loader_no_driver "ZE_ENABLE_ALT_DRIVERS=/nonexistent/libze_no_driver.so.1"
  "zeInit\\(ZE_INIT_FLAG_GPU_ONLY\\) failed with ZE_RESULT_ERROR_[A-Z_]+ \\(0x[0-9a-f]+\\)"
  "${bp_xpu_real_skip}" "${bp_xpu_real_why}")

# bp-conformance on xpu:0 without a device: a clear error and exit code 2, no crash.
add_test(NAME xpu_conformance_no_device COMMAND ${CMAKE_COMMAND}
  -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
  -DARGS=--device\;xpu:0 -DEXIT=2
  "-DEXPECT=cannot open device 'xpu:0': device 'xpu:0' not found: backend 'xpu' has no devices \\(zeInit"
  -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/xpu_conformance_no_device
  -P ${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake)
set_tests_properties(xpu_conformance_no_device PROPERTIES
  ENVIRONMENT "${bp_xpu_env};${bp_fake_ze}" LABELS xpu)

# The fake loader's "gpu" mode: one pretend GPU (xpu/fake_ze_gpu.c; host memory, commands
# run at once, every module build fails with a fixed build log). It checks the plugin's
# host side only: the device table and what bp-info shows of it, and the error of a
# module the driver rejects, which must carry the driver's build log. No kernel runs.
set(bp_fake_gpu "${bp_fake_ze};FAKE_ZE_MODE=gpu")
add_test(NAME xpu_fake_gpu_props COMMAND bp-info)
set_tests_properties(xpu_fake_gpu_props PROPERTIES ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu}"
  PASS_REGULAR_EXPRESSION "xpu +0\\.1\\.0 +1\\.[0-9]+ +loaded +1 .*xpu:0 +xpu 0\\.1\\.0 +1024/1024 +0\\.\\.0 +Fake Level Zero GPU\n +capabilities: async_streams timed_events pinned_host\n +dtypes: f32 f16 bf16 f64 i8 u8 i32 i64 bool\n +features: pci=0x0bd5 family=pvc fp64 fp16 eus=16 simd=16\n"
  LABELS xpu)
# What this build embeds (backends/clc/cmake/spirv.cmake and native.cmake): the tests of
# module builds need the SPIR-V modules, the fallback test a pvc binary.
set(bp_xpu_no_spirv "")
if(NOT BP_CLC_SPIRV OR NOT BP_CLC_CLANG OR NOT BP_CLC_LLVM_SPIRV OR NOT BP_CLC_SPIRV_VAL)
  set(bp_xpu_no_spirv "this build embeds no SPIR-V modules (backends/clc/cmake/spirv.cmake)")
endif()
set(bp_xpu_no_pvc "${bp_xpu_no_spirv}")
if(NOT bp_xpu_no_pvc AND (NOT BP_CLC_NATIVE OR NOT BP_CLC_OCLOC OR NOT "pvc" IN_LIST BP_CLC_NATIVE_FAMILIES))
  set(bp_xpu_no_pvc "this build embeds no pvc binaries (backends/clc/cmake/native.cmake: ocloc, BP_CLC_NATIVE_FAMILIES)")
endif()
if(bp_xpu_no_spirv)
  bp_skipped_test(xpu_fake_gpu_build_log "${bp_xpu_no_spirv}")
else()
  add_test(NAME xpu_fake_gpu_build_log COMMAND ${CMAKE_COMMAND}
    -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
    -DARGS=--device\;xpu:0\;--filter\;ops.add_f32 -DEXIT=1
    "-DEXPECT=FAIL +ops\\.add_f32:.*BP_ERR_BACKEND: xpu:0: building the 'elemwise' kernels \\(SPIR-V, variant 0\\) failed with ZE_RESULT_ERROR_MODULE_BUILD_FAILURE: fake build log: error: the fake driver compiles nothing"
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/xpu_fake_gpu_build_log
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake)
  set_tests_properties(xpu_fake_gpu_build_log PROPERTIES
    ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu}" LABELS xpu)
endif()

# A pvc binary (the pretend GPU's family, from its PCI id) that the driver refuses: a
# warning with the driver's log, then the SPIR-V is built (and fails here).
if(bp_xpu_no_pvc)
  bp_skipped_test(xpu_fake_gpu_native_fallback "${bp_xpu_no_pvc}")
else()
  add_test(NAME xpu_fake_gpu_native_fallback COMMAND ${CMAKE_COMMAND}
    -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
    -DARGS=--device\;xpu:0\;--filter\;ops.add_f32 -DEXIT=1
    "-DEXPECT=xpu:0: the pvc binary of the 'elemwise' kernels \\(variant 0\\) does not load \\(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY: fake build log: the fake driver loads no native binary\\): building the SPIR-V instead, for every module of this device"
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/xpu_fake_gpu_native_fallback
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake)
  set_tests_properties(xpu_fake_gpu_native_fallback PROPERTIES
    ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu};BP_LOG=warn" LABELS xpu)
endif()

# Kernels the plugin cannot build for the device: work-groups below the modules' 256
# work-items, and a cast into f64 on a device without fp64 (no module of that variant).
add_dependencies(f64_cast_error bp_xpu bp_fake_ze_loader)
add_test(NAME xpu_fake_gpu_small_work_groups COMMAND ${bp_emulator} $<TARGET_FILE:f64_cast_error> xpu:0)
set_tests_properties(xpu_fake_gpu_small_work_groups PROPERTIES
  ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu};FAKE_ZE_MAX_GROUP=128" LABELS xpu
  PASS_REGULAR_EXPRESSION "bp_copy f32 -> f64: BP_ERR_UNSUPPORTED: [^\n]*xpu:0: the 'convert' kernels need work-groups of 256 work-items; this device takes at most 128")
if(bp_xpu_no_spirv)
  bp_skipped_test(xpu_fake_gpu_no_fp64_module "${bp_xpu_no_spirv}")
else()
  add_test(NAME xpu_fake_gpu_no_fp64_module COMMAND ${bp_emulator} $<TARGET_FILE:f64_cast_error> xpu:0)
  set_tests_properties(xpu_fake_gpu_no_fp64_module PROPERTIES
    ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu};FAKE_ZE_FP64=0" LABELS xpu
    PASS_REGULAR_EXPRESSION "bp_copy f32 -> f64: BP_ERR_UNSUPPORTED: [^\n]*xpu:0: no SPIR-V module of the 'convert' kernels for variant 3 on a device without fp64")
endif()

# Level Zero calls that fail (ZE_RESULT_ERROR_DEVICE_LOST, one at a time): each gives a
# clear error naming the call, never a crash or a misuse the fake catches.
set(bp_xpu_fault_points zeDeviceGetProperties zeDeviceGetComputeProperties
  zeDeviceGetCommandQueueGroupProperties zeContextCreate zeCommandListCreateImmediate
  zeMemAllocDevice zeMemAllocHost zeEventPoolCreate zeEventCreate
  zeCommandListAppendMemoryCopy zeCommandListAppendMemoryFill zeCommandListAppendBarrier
  zeCommandListAppendWriteGlobalTimestamp zeModuleBuildLogGetString)
if(bp_xpu_no_spirv) # no module is built, so no build log is read
  list(REMOVE_ITEM bp_xpu_fault_points zeModuleBuildLogGetString)
endif()
string(REPLACE ";" "\\;" bp_xpu_fault_arg "${bp_xpu_fault_points}")
add_test(NAME xpu_fake_gpu_faults COMMAND ${CMAKE_COMMAND}
  -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
  -DARGS=--device\;xpu:0\;--filter\;memory.copies*,streams.ordering,events.elapsed_time,ops.add_f32
  -DFUNCTIONS=${bp_xpu_fault_arg}
  -P ${CMAKE_CURRENT_SOURCE_DIR}/xpu/check_xpu_faults.cmake)
# Without LeakSanitizer: a conformance test that fails mid-way (the point here) leaves its
# host buffers behind (cmocka's longjmp skips the frees), which would abort the group.
set_tests_properties(xpu_fake_gpu_faults PROPERTIES
  ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu};ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
  LABELS xpu TIMEOUT 300)

# The conformance groups that need no kernel, on the pretend GPU, whose commands stay
# pending until the host waits and which aborts when an event is reset or destroyed, or
# memory freed, while a pending command uses it: a check of the plugin's bookkeeping of
# event and staging lifetimes across streams and host functions, not of a device
# (docs/backends/xpu.md). Two pretend devices, so that peer copies, waits across devices
# and per-thread current devices run too. Without the two timing tests: the fake's clock
# counts commands.
set(bp_xpu_fake_events "events.unrecorded_is_complete,events.synchronize_waits_for_work,events.query_complete_means_done,events.query_sees_cross_stream_wait,events.cross_stream_wait,events.cross_thread_wait,events.rerecord")
add_test(NAME xpu_fake_gpu_bookkeeping COMMAND ${CMAKE_COMMAND}
  -DEXE=$<TARGET_FILE:bp-conformance> -DEMULATOR=${bp_emulator_arg}
  "-DARGS=--device\;xpu:0\;--filter\;abi.*,allocator.*,device.*,errors.*,${bp_xpu_fake_events},guards.*,memory.*,streams.*,host_funcs.*"
  -DEXIT=0 "-DEXPECT=[1-9][0-9]* passed, 0 failed"
  -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/xpu_fake_gpu_bookkeeping
  -P ${CMAKE_CURRENT_SOURCE_DIR}/check_conformance.cmake)
set_tests_properties(xpu_fake_gpu_bookkeeping PROPERTIES
  ENVIRONMENT "${bp_xpu_env};${bp_fake_gpu};FAKE_ZE_GPUS=2" LABELS xpu TIMEOUT 300)
