# cmake -DBUILD_DIR=<build tree> -DPREFIX=<scratch dir> -P check_install_components.cmake
# Every install() rule names a component (runtime, dev, tools, plugin-<name>: packaging
# maps them to packages). A rule without one falls into CMake's default component,
# "Unspecified", which no package takes: installing that component must install nothing.
foreach(var BUILD_DIR PREFIX)
  if(NOT ${var})
    message(FATAL_ERROR "check_install_components.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
  --component Unspecified RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install --component Unspecified failed (${rc}):\n${out}")
endif()
file(GLOB_RECURSE strays LIST_DIRECTORIES true RELATIVE "${PREFIX}" "${PREFIX}/*")
if(strays)
  list(JOIN strays "\n  " strays)
  message(FATAL_ERROR "install() rules without a COMPONENT installed:\n  ${strays}")
endif()
message("every install() rule names a component")
