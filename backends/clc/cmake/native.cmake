# The ahead-of-time device binaries of the kernels (clc.h's clc_native_modules): each
# SPIR-V module of spirv.cmake compiled by ocloc (Debian: intel-opencl-icd ships it)
# for every Intel GPU family of BP_CLC_NATIVE_FAMILIES, as zebin without the IR
# (cmake/native_module.cmake), and embedded by cmake/embed_native.cmake as
# clc_native.c. Sets bp_clc_native_c. Generated files hold only data; the choice among
# modules (clc_native_find) is clc_modules.c's.
#
# Without ocloc, without SPIR-V modules, or with -DBP_CLC_NATIVE=OFF, the table is empty
# (the reason is printed here): a backend then runs the SPIR-V modules, which every
# device takes. ocloc needs no GPU. Both families take about 10 s of ocloc on 2 cores.
option(BP_CLC_NATIVE "Compile the SPIR-V kernel modules ahead of time for Intel GPUs (ocloc)" ON)
set(BP_CLC_NATIVE_FAMILIES "pvc;dg2" CACHE STRING
    "Intel GPU families (ocloc -device names, as the xpu plugin names its devices' families) to compile the kernels for")
set(BP_CLC_NATIVE_FP64_FAMILIES "pvc" CACHE STRING
    "Those of BP_CLC_NATIVE_FAMILIES with fp64: only they get the fp64 builds (ocloc refuses double elsewhere)")

set(bp_clc_native_c ${CMAKE_CURRENT_BINARY_DIR}/clc_native.c)
set(bp_clc_native_dir ${CMAKE_CURRENT_BINARY_DIR}/native)

set(bp_clc_native_none "")
if(NOT BP_CLC_NATIVE)
  set(bp_clc_native_none "BP_CLC_NATIVE is OFF")
elseif(bp_clc_spirv_none)
  set(bp_clc_native_none "no SPIR-V modules to compile (${bp_clc_spirv_none})")
elseif(NOT BP_CLC_NATIVE_FAMILIES)
  set(bp_clc_native_none "BP_CLC_NATIVE_FAMILIES is empty")
else()
  find_program(BP_CLC_OCLOC NAMES ocloc DOC "ocloc for the ahead-of-time Intel GPU binaries")
  if(NOT BP_CLC_OCLOC)
    set(bp_clc_native_none "ocloc not found (Debian: intel-opencl-icd)")
  endif()
endif()

set(bp_clc_native_list "")  # for embed_native.cmake: "program|variant|fp64|family|file"
set(bp_clc_native_files "")
if(NOT bp_clc_native_none)
  foreach(family IN LISTS BP_CLC_NATIVE_FAMILIES)
    list(FIND BP_CLC_NATIVE_FP64_FAMILIES ${family} has_fp64)
    file(MAKE_DIRECTORY ${bp_clc_native_dir}/${family})
    foreach(module IN LISTS bp_clc_spirv_list)
      string(REPLACE "|" ";" fields "${module}")
      list(GET fields 0 program)
      list(GET fields 1 variant)
      list(GET fields 2 fp64)
      list(GET fields 3 spv)
      if(fp64 AND has_fp64 EQUAL -1)
        continue()
      endif()
      get_filename_component(name "${spv}" NAME_WE)
      set(out ${bp_clc_native_dir}/${family}/${name}.bin)
      add_custom_command(
        OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -DOCLOC=${BP_CLC_OCLOC} -DFAMILY=${family} -DSPIRV=${spv}
                -DOUT=${out} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/native_module.cmake
        DEPENDS ${spv} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/native_module.cmake
        COMMENT "Intel GPU binary ${family}/${name}"
        VERBATIM)
      list(APPEND bp_clc_native_list "${program}|${variant}|${fp64}|${family}|${out}")
      list(APPEND bp_clc_native_files ${out})
    endforeach()
  endforeach()
  list(LENGTH bp_clc_native_files n)
  list(JOIN BP_CLC_NATIVE_FAMILIES ", " families)
  message(STATUS "clc: ${n} ahead-of-time binaries for ${families} (${BP_CLC_OCLOC})")
else()
  message(STATUS "clc: no ahead-of-time binaries: ${bp_clc_native_none}")
endif()

# What embed_native.cmake embeds, rewritten only when it changes.
set(bp_clc_native_manifest ${CMAKE_CURRENT_BINARY_DIR}/clc_native_manifest.cmake)
string(CONCAT manifest "set(NONE \"${bp_clc_native_none}\")\n" "set(MODULES \"\")\n")
foreach(module IN LISTS bp_clc_native_list)
  string(APPEND manifest "list(APPEND MODULES \"${module}\")\n")
endforeach()
file(CONFIGURE OUTPUT ${bp_clc_native_manifest} CONTENT "${manifest}" @ONLY)
add_custom_command(
  OUTPUT ${bp_clc_native_c}
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${bp_clc_native_manifest} -DOUT=${bp_clc_native_c}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_native.cmake
  DEPENDS ${bp_clc_native_files} ${bp_clc_native_manifest}
          ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_native.cmake
          ${CMAKE_CURRENT_SOURCE_DIR}/cmake/c_bytes.cmake
  COMMENT "Embedding the ahead-of-time Intel GPU binaries"
  VERBATIM)
