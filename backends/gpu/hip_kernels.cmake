# The AMD code objects of the GPU kernels: each family's kernels/<family>.cu compiled by
# hipcc (HIP on the amd platform, clang 15 underneath) into one clang offload bundle,
# <family>.hipfb, holding a code object for each target of BP_ROCM_TARGETS. The rocm
# plugin embeds them (embed_images.cmake, EXT hipfb) and loads them with
# hipModuleLoadData; scripts/check-amd-code-objects.sh checks them (ctest amd_code_objects).
#
#   include(${PROJECT_SOURCE_DIR}/backends/gpu/hip_kernels.cmake)
#   bp_hip_kernels(FILES <var> HAVE <var> [DIR <var>] [TARGETS <var>])
#
# sets <FILES> to the bundles (elementwise, matmul, sdpa, in that order), <HAVE> to 1 when
# they are built (else 0, and the list is empty), <DIR> to their directory and <TARGETS>
# to the targets they hold. The commands are made once per build tree (target
# bp_hip_kernels); every caller gets the same files. Without hipcc, or with
# BP_ROCM_KERNELS=OFF, there are no kernels and a STATUS message says why.
#
# What Debian 12's hipcc (5.2) needs: HIP_PLATFORM=amd (else hipcc may take a CUDA
# toolkit in PATH for the nvidia platform, whose headers do not build against CUDA 13),
# -std=c++17 (hipcc passes -std=c++11 first; the last one wins), -x hip for the .cu
# sources, and --genco for device code only (an offload bundle with an empty host entry).
# It finds the ROCm device libraries itself (rocm-device-libs, in
# /usr/lib/<multiarch>/amdgcn/bitcode), which have no gfx1100 library: gfx1100 does not
# build with it, and the RDNA target is gfx1030 (RDNA 2) then.
option(BP_ROCM_KERNELS "Compile the AMD GPU kernels with hipcc (when found)" ON)

set(BP_GPU_KERNEL_FAMILIES elementwise matmul sdpa)

# RDNA targets to try, in order: the first that this hipcc builds joins the default
# targets (CDNA: gfx90a, MI200; gfx940, the MI300 family as far as hipcc 5.2 targets it).
set(bp_hip_cdna_targets gfx90a gfx940)
set(bp_hip_rdna_candidates gfx1100 gfx1030)

# <out>: 1 when hipcc compiles a small kernel (through gpu_port.h) for <target>.
function(bp_hip_target_builds hipcc target out)
  set(dir ${CMAKE_BINARY_DIR}/backends/gpu/hip_probe)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/probe.cu
    "#include \"gpu_port.h\"\n"
    "extern \"C\" __global__ void probe(float *x) {\n"
    "    x[threadIdx.x] = gpu_shfl_xor(x[threadIdx.x], 1) + (float)GPU_WARP;\n}\n")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd
            ${hipcc} -x hip -std=c++17 --genco -O3 --offload-arch=${target}
            -I${PROJECT_SOURCE_DIR}/backends/gpu/kernels -o ${dir}/probe_${target}.hipfb
            ${dir}/probe.cu
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(rc EQUAL 0)
    set(${out} 1 PARENT_SCOPE)
  else()
    string(REGEX REPLACE "\n.*" "" err "${err}")
    message(STATUS "hip kernels: ${target} does not build with ${hipcc}: ${err}")
    set(${out} 0 PARENT_SCOPE)
  endif()
endfunction()

function(bp_hip_kernels)
  cmake_parse_arguments(arg "" "FILES;HAVE;DIR;TARGETS" "" ${ARGN})
  if(NOT arg_FILES OR NOT arg_HAVE)
    message(FATAL_ERROR "bp_hip_kernels: FILES <var> and HAVE <var> are required")
  endif()
  set(dir ${CMAKE_BINARY_DIR}/backends/gpu/hip)
  get_property(made GLOBAL PROPERTY BP_HIP_KERNELS_MADE SET)
  if(NOT made)
    set(files "")
    set(targets "")
    if(NOT BP_ROCM_KERNELS)
      message(STATUS "hip kernels: none (BP_ROCM_KERNELS=OFF)")
    else()
      find_program(BP_HIPCC hipcc)
      if(NOT BP_HIPCC)
        message(STATUS "hip kernels: none (no hipcc: apt-get install hipcc, as scripts/install-deps.sh does)")
      endif()
    endif()
    if(BP_ROCM_KERNELS AND BP_HIPCC)
      if(NOT DEFINED CACHE{BP_ROCM_TARGETS})
        set(default ${bp_hip_cdna_targets})
        foreach(target IN LISTS bp_hip_rdna_candidates)
          bp_hip_target_builds(${BP_HIPCC} ${target} builds)
          if(builds)
            list(APPEND default ${target})
            break()
          endif()
        endforeach()
        set(BP_ROCM_TARGETS "${default}" CACHE STRING
            "AMD GPU targets to compile the kernels for (offload archs, e.g. gfx90a;gfx940)")
      endif()
      set(targets ${BP_ROCM_TARGETS})
      set(arch_flags "")
      foreach(target IN LISTS targets)
        list(APPEND arch_flags --offload-arch=${target})
      endforeach()
      set(kernels_dir ${PROJECT_SOURCE_DIR}/backends/gpu/kernels)
      file(GLOB headers ${kernels_dir}/*.h ${kernels_dir}/*.cuh)
      file(MAKE_DIRECTORY ${dir})
      foreach(family IN LISTS BP_GPU_KERNEL_FAMILIES)
        set(out ${dir}/${family}.hipfb)
        add_custom_command(
          OUTPUT ${out}
          COMMAND ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd
                  ${BP_HIPCC} -x hip -std=c++17 --genco -O3 ${arch_flags}
                  -I${kernels_dir} -o ${out} ${kernels_dir}/${family}.cu
          DEPENDS ${kernels_dir}/${family}.cu ${headers}
          COMMENT "hipcc: the ${family} kernels (${targets})"
          VERBATIM)
        list(APPEND files ${out})
      endforeach()
      add_custom_target(bp_hip_kernels ALL DEPENDS ${files})
      string(REPLACE ";" " " shown "${targets}")
      message(STATUS "hip kernels: ${shown} with ${BP_HIPCC}")
    endif()
    set_property(GLOBAL PROPERTY BP_HIP_KERNELS_MADE 1)
    set_property(GLOBAL PROPERTY BP_HIP_KERNEL_FILES "${files}")
    set_property(GLOBAL PROPERTY BP_HIP_KERNEL_TARGETS "${targets}")
  endif()
  get_property(files GLOBAL PROPERTY BP_HIP_KERNEL_FILES)
  get_property(targets GLOBAL PROPERTY BP_HIP_KERNEL_TARGETS)
  set(have 0)
  if(files)
    set(have 1)
  endif()
  set(${arg_FILES} "${files}" PARENT_SCOPE)
  set(${arg_HAVE} ${have} PARENT_SCOPE)
  if(arg_DIR)
    set(${arg_DIR} ${dir} PARENT_SCOPE)
  endif()
  if(arg_TARGETS)
    set(${arg_TARGETS} "${targets}" PARENT_SCOPE)
  endif()
endfunction()
