# cmake -DBUILD_DIR=<build tree> -DPREFIX=<dir> -P sdk_install.cmake
# Installs the build (every component) into PREFIX, emptied first so that nothing of an
# earlier install remains.
foreach(var BUILD_DIR PREFIX)
  if(NOT ${var})
    message(FATAL_ERROR "sdk_install.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc}):\n${out}")
endif()
message("installed ${BUILD_DIR} into ${PREFIX}")
