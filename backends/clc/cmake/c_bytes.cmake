# clc_c_bytes(<file> <var>): sets <var> to the bytes of <file> as a C initializer list,
# "0x2f,0x2a,...,", 24 bytes a line (indented by 4 after the first), for the generated
# sources of embed_cl.cmake, embed_spirv.cmake and embed_native.cmake.
function(clc_c_bytes file var)
  file(READ "${file}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # CMake's regular expressions have no {24}: the pattern is written out 24 times.
  string(REPEAT "0x[0-9a-f][0-9a-f]," 24 line)
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  set(${var} "${bytes}" PARENT_SCOPE)
endfunction()
