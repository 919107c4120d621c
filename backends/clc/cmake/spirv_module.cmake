# Compiles one SPIR-V module of the kernels (backends/clc/cmake/spirv.cmake):
# PRELUDE + SOURCE with clang -target spir64, then llvm-spirv, then spirv-val. An
# invalid module, or any tool's error, fails the build with the tool's output.
#   cmake -DCLANG=... -DLLVM_SPIRV=... -DSPIRV_VAL=... -DSPIRV_VERSION=1.0
#         -DPRELUDE=prelude.cl -DSOURCE=move.cl -DDEFINES="-DBP_ESIZE=4;..." -DOUT=x.spv
#         -P spirv_module.cmake
#
# The module is the program as clang's front end emits it at -O2 (so no function is
# marked noinline or optnone), without LLVM's optimizations: the driver that builds
# the module optimizes it, as it optimizes a source build. LLVM 15's -O2 output does
# not become valid SPIR-V through llvm-spirv 15 (it has `freeze`, integers such as i5,
# and blocks before their dominators, all of which llvm-spirv or spirv-val rejects).
# -fgnu89-inline: clang compiles OpenCL C with C99 inline semantics, where a helper
# declared `inline` (kernels/prelude.cl) is only an inline definition; without the
# inliner it would stay an imported, unresolved function of the module.
function(run_tool what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    get_filename_component(name "${OUT}" NAME)
    message(FATAL_ERROR "SPIR-V module ${name}: ${what} failed (${rc}):\n${out}")
  endif()
endfunction()

run_tool("clang" ${CLANG} -c -emit-llvm -target spir64 -O2 -Xclang -disable-llvm-passes
         -cl-std=CL1.2 -fgnu89-inline -Xclang -finclude-default-header -include ${PRELUDE}
         ${DEFINES} ${SOURCE} -o ${OUT}.bc)
run_tool("llvm-spirv" ${LLVM_SPIRV} --spirv-max-version=${SPIRV_VERSION} ${OUT}.bc -o ${OUT}.tmp)
run_tool("spirv-val" ${SPIRV_VAL} ${OUT}.tmp)
file(REMOVE "${OUT}.bc")
file(RENAME "${OUT}.tmp" "${OUT}")
