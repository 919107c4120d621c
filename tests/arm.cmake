# The arm backend (backends/arm, libbp_arm.so) in the suite: included by
# tests/CMakeLists.txt when the target is aarch64. In the cross build (`make test-arm`)
# every program runs under qemu-aarch64, and QEMU_CPU (read by qemu-user, ignored on a
# real Arm host) picks the CPU it emulates: "max" with SVE at 128, 256 or 512 bits, and
# Neoverse N1 (Armv8.2 with FP16 and dot product, no SVE) for the NEON-only paths.
if(NOT TARGET bp_arm)
  return()
endif()

# name suffix, QEMU_CPU, and the SVE length the backend must report ("" for none).
set(bp_arm_cpus
  sve128 "max,sve128=on" 128
  sve256 "max,sve256=on" 256
  sve512 "max,sve512=on" 512
  neon   "neoverse-n1"   "")

# The backend's own variables come from the entry, not from whoever runs the tests.
set(bp_arm_env "${bp_conf_env};BP_ARM_SVE_BITS=;BP_ARM_SYSFS_ROOT=")

while(bp_arm_cpus)
  list(POP_FRONT bp_arm_cpus suffix qemu_cpu sve_bits)
  # The whole conformance suite on arm:0 (the backend's only cluster under qemu-user),
  # its ops group included.
  bp_conformance_test(conformance_arm_${suffix} EXIT 0
    EXPECT "bp-conformance on arm:0: " "PASS  ops\\.add_f16" "PASS  ops\\.matmul_bf16"
           "PASS  ops\\.sdpa_f32"
    ARGS --device arm:0 --junit JUNIT)
  set_tests_properties(conformance_arm_${suffix} PROPERTIES
    ENVIRONMENT "${bp_arm_env};QEMU_CPU=${qemu_cpu}")
  # The kernels the backend chose on that CPU (check_arm_kernels.cmake): with SVE, the
  # SVE kernels at that vector length; without, NEON and nothing of SVE.
  if(sve_bits)
    set(require "arm: [0-9]+ devices?, features: [^\n]*sve_bits=${sve_bits}"
                "arm: kernel add f32: sve" "arm: kernel sdpa f32: sve"
                "arm: kernel add i32: sve" "arm: kernel max i64: sve"
                "arm: kernel where bool: sve" "arm: kernel copy i8: sve")
    set(forbid "")
  else()
    set(require "arm: kernel add f32: neon" "arm: kernel add i32: neon"
                "arm: kernel where bool: neon")
    set(forbid "arm: kernel [^\n]*: sve" "features: [^\n]*sve")
  endif()
  string(REPLACE ";" "\\;" require "${require}")
  string(REPLACE ";" "\\;" forbid "${forbid}")
  add_test(NAME arm_kernels_${suffix} COMMAND ${CMAKE_COMMAND}
    -DEXE=$<TARGET_FILE:bp-info> -DEMULATOR=${bp_emulator_arg}
    -DREQUIRE=${require} -DFORBID=${forbid}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_arm_kernels.cmake)
  set_tests_properties(arm_kernels_${suffix} PROPERTIES TIMEOUT 120 LABELS conformance
    ENVIRONMENT "${bp_arm_env};QEMU_CPU=${qemu_cpu}")
endwhile()

# The aarch64 build's cpu backend passes too: conformance_cpu (tests/conformance.cmake).
