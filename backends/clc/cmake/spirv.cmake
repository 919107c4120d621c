# The SPIR-V modules of the kernels (clc.h): every (program, variant, fp64) that a
# registered kernel needs, compiled at build time from the same kernels/*.cl as the
# source builds (cmake/spirv_module.cmake: clang -target spir64, llvm-spirv, spirv-val)
# and embedded by cmake/embed_spirv.cmake as clc_spirv.c. Sets bp_clc_spirv_c.
#
# Without the tools (Debian 12: clang-15, llvm-spirv-15, spirv-tools), or with
# -DBP_CLC_SPIRV=OFF, clc_spirv.c has no modules and the reason is printed here.
option(BP_CLC_SPIRV "Build the SPIR-V modules of the OpenCL C kernels" ON)
set(BP_CLC_SPIRV_VERSION "1.0" CACHE STRING
    "The SPIR-V version of the modules (llvm-spirv --spirv-max-version)")

set(bp_clc_kernel_dir ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
set(bp_clc_spirv_dir ${CMAKE_CURRENT_BINARY_DIR}/spirv)
set(bp_clc_spirv_c ${CMAKE_CURRENT_BINARY_DIR}/clc_spirv.c)

# The fixed build parameters of precompiled modules are clc.h's, read from it (and
# checked again by the generated file's _Static_asserts).
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/clc.h)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/clc.h bp_clc_h_defines
     REGEX "^#define CLC_(FIXED_RWG|FIXED_TS|MATMUL_WPT|SDPA_SBK) +[0-9]+$")
foreach(line IN LISTS bp_clc_h_defines)
  string(REGEX MATCH "^#define (CLC_[A-Z_]+) +([0-9]+)$" _ "${line}")
  set(${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
foreach(name CLC_FIXED_RWG CLC_FIXED_TS CLC_MATMUL_WPT CLC_SDPA_SBK)
  if(NOT DEFINED ${name})
    message(FATAL_ERROR "backends/clc/clc.h: no '#define ${name} <number>' found")
  endif()
endforeach()
set(bp_clc_fixed_defines -DRWG=${CLC_FIXED_RWG} -DTS=${CLC_FIXED_TS} -DWPT=${CLC_MATMUL_WPT}
    -DSBK=${CLC_SDPA_SBK})

# The variants of each program that clc_ops.c's op_table registers: an element size
# (move) or a dtype (bp_dtype's names, in its order, so the index is the value).
set(bp_clc_dtypes F32 F16 BF16 F64 I8 U8 I32 I64 BOOL)
set(bp_clc_arith_dtypes F32 F16 BF16 I32 I64)
set(bp_clc_float_dtypes F32 F16 BF16)
set(bp_clc_variants_move 1 2 4 8)
set(bp_clc_variants_convert ${bp_clc_dtypes})
set(bp_clc_variants_elemwise ${bp_clc_arith_dtypes})
set(bp_clc_variants_reduce ${bp_clc_arith_dtypes})
set(bp_clc_variants_norm ${bp_clc_float_dtypes})
set(bp_clc_variants_matmul ${bp_clc_float_dtypes})
set(bp_clc_variants_sdpa ${bp_clc_float_dtypes})

# Why there are no modules, or empty.
set(bp_clc_spirv_none "")
if(NOT BP_CLC_SPIRV)
  set(bp_clc_spirv_none "BP_CLC_SPIRV is OFF")
else()
  find_program(BP_CLC_CLANG NAMES clang-15 clang DOC "clang for the SPIR-V modules")
  find_program(BP_CLC_LLVM_SPIRV NAMES llvm-spirv-15 llvm-spirv DOC "llvm-spirv for the SPIR-V modules")
  find_program(BP_CLC_SPIRV_VAL NAMES spirv-val DOC "spirv-val for the SPIR-V modules")
  set(missing "")
  foreach(tool BP_CLC_CLANG BP_CLC_LLVM_SPIRV BP_CLC_SPIRV_VAL)
    if(NOT ${tool})
      string(REGEX REPLACE "^BP_CLC_" "" t "${tool}")
      string(TOLOWER "${t}" t)
      string(REPLACE "_" "-" t "${t}")
      list(APPEND missing ${t})
    endif()
  endforeach()
  if(missing)
    list(JOIN missing ", " missing)
    set(bp_clc_spirv_none "${missing} not found (Debian: clang-15 llvm-spirv-15 spirv-tools)")
  else()
    # llvm-spirv reads the bitcode of its own LLVM version only.
    execute_process(COMMAND ${BP_CLC_CLANG} --version OUTPUT_VARIABLE clang_v ERROR_QUIET)
    execute_process(COMMAND ${BP_CLC_LLVM_SPIRV} --version OUTPUT_VARIABLE spirv_v ERROR_QUIET)
    string(REGEX MATCH "clang version ([0-9]+)" _ "${clang_v}")
    set(clang_major "${CMAKE_MATCH_1}")
    string(REGEX MATCH "LLVM version ([0-9]+)" _ "${spirv_v}")
    set(spirv_major "${CMAKE_MATCH_1}")
    if(NOT clang_major OR NOT clang_major STREQUAL spirv_major)
      set(bp_clc_spirv_none "${BP_CLC_CLANG} (LLVM '${clang_major}') and ${BP_CLC_LLVM_SPIRV} (LLVM '${spirv_major}') are not of one LLVM version")
    endif()
  endif()
endif()

set(bp_clc_spirv_list "")   # for embed_spirv.cmake: "program|variant|fp64|file"
set(bp_clc_spirv_files "")
if(NOT bp_clc_spirv_none)
  file(MAKE_DIRECTORY ${bp_clc_spirv_dir})
  foreach(prog move convert elemwise reduce norm matmul sdpa)
    set(src ${bp_clc_kernel_dir}/${prog}.cl)
    # A program whose source reads BP_FP64 gets a second build for devices with fp64;
    # the prelude's use (the pragma, double for an f64 program) changes nothing else.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    file(STRINGS ${src} uses_fp64 REGEX "BP_FP64")
    string(TOUPPER "${prog}" prog_id)
    foreach(variant IN LISTS bp_clc_variants_${prog})
      if(prog STREQUAL "move")
        set(define -DBP_ESIZE=${variant})
        set(label ${variant})
        set(value ${variant})
      else()
        list(FIND bp_clc_dtypes ${variant} dt)
        set(define -DBP_DT=${dt})
        string(TOLOWER "${variant}" label)
        set(value BP_DTYPE_${variant})
      endif()
      if(variant STREQUAL "F64")
        set(fp64_builds 1)
      elseif(uses_fp64)
        set(fp64_builds 0 1)
      else()
        set(fp64_builds 0)
      endif()
      foreach(fp64 IN LISTS fp64_builds)
        set(name ${prog}-${label})
        if(fp64)
          string(APPEND name "-fp64")
        endif()
        set(out ${bp_clc_spirv_dir}/${name}.spv)
        set(defines -DBP_FP64=${fp64} ${bp_clc_fixed_defines} ${define})
        string(REPLACE ";" "\\;" defines_arg "${defines}")
        add_custom_command(
          OUTPUT ${out}
          COMMAND ${CMAKE_COMMAND} -DCLANG=${BP_CLC_CLANG} -DLLVM_SPIRV=${BP_CLC_LLVM_SPIRV}
                  -DSPIRV_VAL=${BP_CLC_SPIRV_VAL} -DSPIRV_VERSION=${BP_CLC_SPIRV_VERSION}
                  -DPRELUDE=${bp_clc_kernel_dir}/prelude.cl -DSOURCE=${src}
                  -DDEFINES=${defines_arg} -DOUT=${out}
                  -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/spirv_module.cmake
          DEPENDS ${bp_clc_kernel_dir}/prelude.cl ${src}
                  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/spirv_module.cmake
          COMMENT "SPIR-V module ${name}"
          VERBATIM)
        if(fp64)
          set(fp64_c true)
        else()
          set(fp64_c false)
        endif()
        list(APPEND bp_clc_spirv_list "CLC_PROG_${prog_id}|${value}|${fp64_c}|${out}")
        list(APPEND bp_clc_spirv_files ${out})
      endforeach()
    endforeach()
  endforeach()
  list(LENGTH bp_clc_spirv_files n)
  message(STATUS "clc: ${n} SPIR-V modules (SPIR-V ${BP_CLC_SPIRV_VERSION}; ${BP_CLC_CLANG}, ${BP_CLC_LLVM_SPIRV}, ${BP_CLC_SPIRV_VAL})")
else()
  message(STATUS "clc: no SPIR-V modules: ${bp_clc_spirv_none}")
endif()

# What embed_spirv.cmake embeds, rewritten only when it changes.
set(bp_clc_spirv_manifest ${CMAKE_CURRENT_BINARY_DIR}/clc_spirv_manifest.cmake)
string(CONCAT manifest "set(NONE \"${bp_clc_spirv_none}\")\n"
                     "set(FIXED CLC_FIXED_RWG=${CLC_FIXED_RWG} CLC_FIXED_TS=${CLC_FIXED_TS} "
                     "CLC_MATMUL_WPT=${CLC_MATMUL_WPT} CLC_SDPA_SBK=${CLC_SDPA_SBK})\n"
                     "set(DTYPES ${bp_clc_dtypes})\n"
                     "set(MODULES \"\")\n")
foreach(module IN LISTS bp_clc_spirv_list)
  string(APPEND manifest "list(APPEND MODULES \"${module}\")\n")
endforeach()
file(CONFIGURE OUTPUT ${bp_clc_spirv_manifest} CONTENT "${manifest}" @ONLY)
add_custom_command(
  OUTPUT ${bp_clc_spirv_c}
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${bp_clc_spirv_manifest} -DOUT=${bp_clc_spirv_c}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
  DEPENDS ${bp_clc_spirv_files} ${bp_clc_spirv_manifest}
          ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
          ${CMAKE_CURRENT_SOURCE_DIR}/cmake/c_bytes.cmake
  COMMENT "Embedding the SPIR-V modules"
  VERBATIM)
