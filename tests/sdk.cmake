# ---- The installed SDK (issue 19): what a vendor or an application gets from
# `cmake --install`, used from the install prefix alone ----
# sdk_install installs this build into ${bp_sdk_prefix} (under the build tree, emptied
# first): the fixture bp_sdk_prefix, which every test of the installed SDK requires.
set(bp_sdk_prefix ${CMAKE_CURRENT_BINARY_DIR}/sdk/prefix)
add_test(NAME sdk_install COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
  -DPREFIX=${bp_sdk_prefix} -P ${CMAKE_CURRENT_SOURCE_DIR}/sdk_install.cmake)
set_tests_properties(sdk_install PROPERTIES FIXTURES_SETUP bp_sdk_prefix ENVIRONMENT "DESTDIR="
  TIMEOUT 120)

# No install() rule is left without a component (nothing falls into "Unspecified").
add_test(NAME sdk_install_components COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
  -DPREFIX=${CMAKE_CURRENT_BINARY_DIR}/sdk/unspecified
  -P ${CMAKE_CURRENT_SOURCE_DIR}/check_install_components.cmake)
set_tests_properties(sdk_install_components PROPERTIES ENVIRONMENT "DESTDIR=" TIMEOUT 120)

# The install tree: libbackplane.so.<major> with its SONAME, only bp_ symbols exported,
# and the CMake package and .pc files free of paths into this source or build tree.
set(bp_sdk_library ${bp_sdk_prefix}/${CMAKE_INSTALL_LIBDIR}/libbackplane.so.${PROJECT_VERSION_MAJOR})
add_test(NAME sdk_install_tree COMMAND ${CMAKE_COMMAND} -DPREFIX=${bp_sdk_prefix}
  -DLIBRARY=${bp_sdk_library} -DNM=${CMAKE_NM} -DREADELF=${CMAKE_READELF}
  -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBINARY_DIR=${PROJECT_BINARY_DIR}
  -DPACKAGE_DIRS=${CMAKE_INSTALL_LIBDIR}/cmake\\;${CMAKE_INSTALL_LIBDIR}/pkgconfig
  -P ${CMAKE_CURRENT_SOURCE_DIR}/check_sdk_install.cmake)
set_tests_properties(sdk_install_tree PROPERTIES FIXTURES_REQUIRED bp_sdk_prefix
  SKIP_REGULAR_EXPRESSION "skipped: " TIMEOUT 60)

# A tiny application (samples/sdk_app) copied out of the source tree and built against the
# prefix alone, once with find_package(backplane) and once with pkg-config, then run. Both
# executables find libbackplane through their RPATH (CMake's build RPATH; -Wl,-rpath with
# pkg-config's libdir), not LD_LIBRARY_PATH. A cross build compiles them with its
# toolchain and runs them behind the emulator; a sanitized build compiles them with the
# sanitizers its libbackplane needs.
if(CMAKE_CROSSCOMPILING)
  set(bp_sdk_compiler -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE})
else()
  set(bp_sdk_compiler -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER})
endif()
string(REPLACE ";" " " bp_sdk_cflags "${BP_SANITIZE_FLAGS}")
add_test(NAME sdk_app
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sdk_app.sh ${PROJECT_SOURCE_DIR}/samples/sdk_app
          ${CMAKE_CURRENT_BINARY_DIR}/sdk/app ${bp_sdk_prefix} ${CMAKE_INSTALL_LIBDIR}
          ${CMAKE_C_COMPILER} ${bp_sdk_compiler})
# Nothing of the caller's environment reaches the builds (search paths, flags) or the
# programs (plugin and device choices).
set(bp_sdk_app_env "BP_SDK_CFLAGS=${bp_sdk_cflags}" "${bp_emulator_env}" "${bp_pocl_env}"
  CMAKE_PREFIX_PATH= PKG_CONFIG_PATH= PKG_CONFIG_SYSROOT_DIR= CFLAGS= LDFLAGS=
  BP_PLUGIN_PATH= BP_PLUGINS= BP_DEVICE= BP_AUTOLOAD= BP_TRACE_OPS= BP_PROFILE= BP_CPU_FALLBACK=)
set_tests_properties(sdk_app PROPERTIES FIXTURES_REQUIRED bp_sdk_prefix TIMEOUT 300
  ENVIRONMENT "${bp_sdk_app_env}"
  PASS_REGULAR_EXPRESSION "cmake: sdk_app: cpu:0 round trip ok.*pkg-config: sdk_app: cpu:0 round trip ok")
