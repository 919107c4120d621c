# Debian packages of the SDK (`make package`): CPack's DEB generator, one package per
# install component.
#
#   component       package                  contents
#   runtime         libbackplane0            libbackplane.so.0*, the hpu and arm plugins
#   dev             libbackplane-dev         headers, the .so link, CMake package, .pc files,
#                                            the plugin template, docs
#   tools           backplane-tools          bp-info, bp-conformance, bp-bench
#   plugin-opencl   backplane-plugin-opencl  needs an OpenCL ICD loader
#   plugin-xpu      backplane-plugin-xpu     needs the Level Zero loader
#   plugin-cuda     backplane-plugin-cuda    dlopens NVIDIA's libcuda.so.1 (see below)
#   plugin-rocm     backplane-plugin-rocm    dlopens the HIP runtime, libamdhip64 (see below)
#
# The library has the plugin directory and the .pc files the install prefix compiled in:
# packages are made from a build configured with -DCMAKE_INSTALL_PREFIX=/usr (the Makefile's
# `package` target does it in its own build directory); any other build gets no `package`
# target, rather than packages whose paths are wrong.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "Debian packages: not from this build (prefix ${CMAKE_INSTALL_PREFIX}): "
                 "configure with -DCMAKE_INSTALL_PREFIX=/usr, or run `make package`")
  return()
endif()

set(BP_DEB_MAINTAINER "backplane maintainers <maintainers@users.noreply.a-seed-0ae4fe5b.example>"
  CACHE STRING "The Maintainer field of the Debian packages")
# No Homepage field unless given: the project has no public home page yet.
set(BP_DEB_HOMEPAGE "" CACHE STRING "The Homepage field of the Debian packages (none when empty)")

# The Debian version (upstream-revision) is the top entry of packaging/debian/changelog,
# whose upstream part must be this project's version.
set(bp_deb_dir ${PROJECT_SOURCE_DIR}/packaging/debian)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${bp_deb_dir}/changelog)
file(STRINGS ${bp_deb_dir}/changelog bp_deb_top LIMIT_COUNT 1)
if(NOT bp_deb_top MATCHES "^backplane \\(([^)-]+)-([^)]+)\\)")
  message(FATAL_ERROR "${bp_deb_dir}/changelog: the top line is not 'backplane (<version>-<revision>) ...'")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "${bp_deb_dir}/changelog: its top entry is version ${CMAKE_MATCH_1}, the project "
                      "${PROJECT_VERSION}: add an entry for ${PROJECT_VERSION}")
endif()
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CMAKE_MATCH_2})

# Every package carries usr/share/doc/<package>/copyright and changelog.Debian.gz (Debian
# policy 12.5 and 12.7). EXCLUDE_FROM_ALL: a plain `cmake --install` leaves them out; CPack
# installs component by component, which includes them.
find_program(BP_GZIP gzip REQUIRED)
set(bp_deb_changelog_gz ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/packaging)
execute_process(COMMAND ${BP_GZIP} -9 -n -c ${bp_deb_dir}/changelog
  OUTPUT_FILE ${bp_deb_changelog_gz} COMMAND_ERROR_IS_FATAL ANY)

# bp_deb_package(<component> <package> <section> <description> [DEPENDS ...]
#                [RECOMMENDS ...] [SUGGESTS ...]): the package of one install component.
# <description>: the synopsis, a newline, the long description.
function(bp_deb_package component package section description)
  cmake_parse_arguments(PARSE_ARGV 4 arg "" "" "DEPENDS;RECOMMENDS;SUGGESTS")
  string(TOUPPER ${component} key)
  set(CPACK_DEBIAN_${key}_PACKAGE_NAME ${package} PARENT_SCOPE)
  set(CPACK_DEBIAN_${key}_PACKAGE_SECTION ${section} PARENT_SCOPE)
  set(CPACK_DEBIAN_${key}_DESCRIPTION "${description}" PARENT_SCOPE)
  foreach(field IN ITEMS DEPENDS RECOMMENDS SUGGESTS)
    if(arg_${field})
      list(JOIN arg_${field} ", " value)
      set(CPACK_DEBIAN_${key}_PACKAGE_${field} "${value}" PARENT_SCOPE)
    endif()
  endforeach()
  install(FILES ${bp_deb_dir}/copyright ${bp_deb_changelog_gz}
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}
    COMPONENT ${component} EXCLUDE_FROM_ALL)
endfunction()

# lintian's overrides of libbackplane-dev, each with its reason.
install(FILES ${bp_deb_dir}/libbackplane-dev/lintian-overrides
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME libbackplane-dev
  COMPONENT dev EXCLUDE_FROM_ALL)

# backplane-tools: a manual page per tool (Debian policy 12.1), made from its --help.
set(bp_deb_man_dir ${CMAKE_BINARY_DIR}/packaging/man)
set(bp_deb_man_pages "")
foreach(tool_and_summary IN ITEMS
    "bp-info|list the backplane plugins and devices"
    "bp-conformance|run the backplane conformance suite against a device"
    "bp-bench|benchmarks of backplane's allocator, dispatch and ops")
  string(REPLACE "|" ";" tool_and_summary "${tool_and_summary}")
  list(GET tool_and_summary 0 tool)
  list(GET tool_and_summary 1 summary)
  string(REPLACE ";" "\\;" emulator "${CMAKE_CROSSCOMPILING_EMULATOR}")
  add_custom_command(OUTPUT ${bp_deb_man_dir}/${tool}.1.gz
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${tool}> "-DEMULATOR=${emulator}"
            -DNAME=${tool} "-DSUMMARY=${summary}" -DVERSION=${PROJECT_VERSION}
            -DOUTPUT=${bp_deb_man_dir}/${tool}.1 -P ${bp_deb_dir}/../help_to_man.cmake
    COMMAND ${BP_GZIP} -9 -n -f ${bp_deb_man_dir}/${tool}.1
    DEPENDS ${tool} ${bp_deb_dir}/../help_to_man.cmake
    COMMENT "Manual page of ${tool}" VERBATIM)
  list(APPEND bp_deb_man_pages ${bp_deb_man_dir}/${tool}.1.gz)
endforeach()
add_custom_target(bp_deb_man_pages ALL DEPENDS ${bp_deb_man_pages})
install(FILES ${bp_deb_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
  COMPONENT tools EXCLUDE_FROM_ALL)

set(bp_deb_about "backplane is a hardware abstraction layer for compute devices: one C API,
device backends loaded as plugins, a dispatcher and an op library.")

bp_deb_package(runtime libbackplane0 libs
  "compute device abstraction layer - shared library
${bp_deb_about}

This package holds the shared library and the plugins that need no vendor
stack: hpu (a simulated accelerator) and arm (AArch64 CPUs).
f32 matmul uses an installed CBLAS (OpenBLAS first) when there is one."
  RECOMMENDS "libopenblas0 | libblas3")

bp_deb_package(dev libbackplane-dev libdevel
  "compute device abstraction layer - development files
${bp_deb_about}

This package holds what applications and out-of-tree device plugins are built
with: the headers, the CMake package (find_package(backplane)), the pkg-config
files backplane.pc and backplane-plugin.pc, the plugin template and the
documentation."
  SUGGESTS cmake pkgconf)

bp_deb_package(tools backplane-tools devel
  "compute device abstraction layer - tools
${bp_deb_about}

This package holds bp-info (the devices and plugins found), bp-conformance
(the conformance suite a device plugin must pass) and bp-bench.")

bp_deb_package(plugin-opencl backplane-plugin-opencl libs
  "compute device abstraction layer - OpenCL plugin
${bp_deb_about}

This package holds the plugin that drives OpenCL devices through the ICD
loader; the devices come from an installed OpenCL driver (ICD)."
  DEPENDS "ocl-icd-libopencl1 | libopencl1"
  RECOMMENDS opencl-icd)

bp_deb_package(plugin-xpu backplane-plugin-xpu libs
  "compute device abstraction layer - Level Zero plugin
${bp_deb_about}

This package holds the plugin that drives Intel GPUs through the oneAPI Level
Zero loader; the devices come from Intel's Level Zero GPU driver."
  DEPENDS libze1
  SUGGESTS "libze-intel-gpu1 | intel-level-zero-gpu")

# The cuda plugin loads NVIDIA's driver library (libcuda.so.1) and cuBLASLt at run time
# and reports no device without them. Both are non-free (Debian: libcuda1 in non-free,
# libcublaslt12 in non-free; NVIDIA's repositories name them otherwise): a Depends or
# Recommends would hold the plugin to non-free or to one vendor repository's names, so
# they are Suggests.
bp_deb_package(plugin-cuda backplane-plugin-cuda libs
  "compute device abstraction layer - CUDA plugin
${bp_deb_about}

This package holds the plugin that drives NVIDIA GPUs. It loads the driver
library libcuda.so.1 (and cuBLASLt, when installed) at run time: without
NVIDIA's driver it reports no device."
  SUGGESTS libcuda1 libcublaslt12)

# The rocm plugin loads the HIP runtime (libamdhip64.so.5: Debian's libamdhip64-5, amd64
# only; or a ROCm installation's) at run time and reports no device without it or without
# an AMD GPU, so the runtime is only suggested: most machines have no AMD GPU.
bp_deb_package(plugin-rocm backplane-plugin-rocm libs
  "compute device abstraction layer - ROCm plugin
${bp_deb_about}

This package holds the plugin that drives AMD GPUs (device type rocm, alias
hip). It loads the HIP runtime libamdhip64 at run time: without it, the ROCm
kernel driver or an AMD GPU it reports no device."
  SUGGESTS libamdhip64-5)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME backplane)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${BP_DEB_MAINTAINER})
if(BP_DEB_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${BP_DEB_HOMEPAGE})
endif()
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools plugin-opencl plugin-xpu plugin-cuda plugin-rocm)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_COMPONENT_PLUGIN-OPENCL_DEPENDS runtime)
set(CPACK_COMPONENT_PLUGIN-XPU_DEPENDS runtime)
set(CPACK_COMPONENT_PLUGIN-CUDA_DEPENDS runtime)
set(CPACK_COMPONENT_PLUGIN-ROCM_DEPENDS runtime)
# Each package depends on libbackplane0 of its exact version (the plugin interface is
# the library's own), plus what dpkg-shlibdeps finds.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib)
# libbackplane0's DEBIAN/shlibs ("libbackplane 0 libbackplane0 (>= <version>)") and its
# ldconfig trigger (CPack adds an ldconfig call to its postinst and postrm as well).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${bp_deb_dir}/libbackplane0/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Stripped (Debian policy 10.1), as dh_strip does; the build tree keeps the symbols.
set(CPACK_STRIP_FILES ON)
include(CPack)
