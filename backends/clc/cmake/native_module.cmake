# Compiles one SPIR-V module ahead of time for an Intel GPU family
# (backends/clc/cmake/native.cmake): ocloc -spirv_input, as zebin without the IR. Any
# error of ocloc fails the build with its output (ocloc -q would hide the message).
#   cmake -DOCLOC=ocloc -DFAMILY=pvc -DSPIRV=x.spv -DOUT=dir/x.bin -P native_module.cmake
get_filename_component(dir "${OUT}" DIRECTORY)
get_filename_component(name "${OUT}" NAME)
file(REMOVE "${OUT}")
file(MAKE_DIRECTORY "${dir}")
execute_process(
  COMMAND ${OCLOC} compile -spirv_input -file ${SPIRV} -device ${FAMILY} --format zebin
          -exclude_ir -output ${name} -output_no_suffix -out_dir ${dir}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUT}")
  message(FATAL_ERROR "ocloc for ${FAMILY} of ${SPIRV} failed (${rc}):\n${out}\n"
                      "(configure with -DBP_CLC_NATIVE=OFF to build without ahead-of-time binaries)")
endif()
