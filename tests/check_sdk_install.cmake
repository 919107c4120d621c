# cmake -DPREFIX=<install prefix> -DLIBRARY=<prefix>/lib/libbackplane.so.<major>
#       -DNM=<nm> -DREADELF=<readelf> -DSOURCE_DIR=<dir> -DBINARY_DIR=<dir>
#       -DPACKAGE_DIRS=<dir;dir>
#       -P check_sdk_install.cmake
# Checks the installed library: its SONAME is its own file name (libbackplane.so.<major>)
# and `nm -D --defined-only` lists bp_ symbols only. Then the CMake package and pkg-config
# files under PACKAGE_DIRS (relative to PREFIX) must name no path into the source or the
# build tree (nor the prefix, which is under the build tree: every path is relative). Without nm or readelf: "skipped: <why>".
foreach(tool NM READELF)
  if(NOT ${tool} OR NOT EXISTS "${${tool}}")
    string(TOLOWER "${tool}" program)
    message("skipped: no ${program} program (binutils) to read the installed library with")
    return()
  endif()
endforeach()
if(NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "${LIBRARY} is not installed")
endif()

execute_process(COMMAND "${READELF}" -d "${LIBRARY}" RESULT_VARIABLE rc OUTPUT_VARIABLE dynamic
  ERROR_VARIABLE dynamic)
get_filename_component(library_name "${LIBRARY}" NAME)
if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "\\(SONAME\\)[^\n]*\\[([^]\n]*)\\]")
  message(FATAL_ERROR "${LIBRARY}: no SONAME (readelf -d: ${rc})\n${dynamic}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL library_name)
  message(FATAL_ERROR "${LIBRARY}: SONAME ${CMAKE_MATCH_1}, expected ${library_name}")
endif()

execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}" RESULT_VARIABLE rc
  OUTPUT_VARIABLE symbols ERROR_VARIABLE error)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc}): ${error}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
set(exported 0)
set(others "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; a versioned name ends in @VERSION.
  if(NOT line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ ]+)$")
    message(FATAL_ERROR "cannot read the nm line '${line}'")
  endif()
  if(CMAKE_MATCH_1 MATCHES "^bp_")
    math(EXPR exported "${exported} + 1")
  else()
    string(APPEND others "  ${line}\n")
  endif()
endforeach()
if(others)
  message(FATAL_ERROR "${LIBRARY} exports symbols outside the bp_ namespace:\n${others}")
endif()
if(exported EQUAL 0)
  message(FATAL_ERROR "${LIBRARY} exports no bp_ symbol")
endif()
message("${library_name}: SONAME ${library_name}, ${exported} dynamic symbols, all bp_")

foreach(dir IN LISTS PACKAGE_DIRS)
  file(GLOB_RECURSE files "${PREFIX}/${dir}/*")
  if(NOT files)
    message(FATAL_ERROR "${PREFIX}/${dir}: nothing installed")
  endif()
  foreach(file IN LISTS files)
    file(READ "${file}" text)
    foreach(tree "${SOURCE_DIR}" "${BINARY_DIR}")
      string(FIND "${text}" "${tree}" at)
      if(NOT at EQUAL -1)
        message(FATAL_ERROR "${file} names ${tree}: the installed SDK must not depend on the "
          "tree it was built in")
      endif()
    endforeach()
  endforeach()
  message("${dir}: no path into the source or build tree")
endforeach()
