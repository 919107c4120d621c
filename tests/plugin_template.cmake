# The plugin template built out of tree against the installed SDK, with CMake and with a
# plain cc line, and bp-conformance from the install run against it
# (check_plugin_template.cmake; issue 19, item 5). A cross build cannot run it: the
# template would be built for the build machine, and bp-conformance runs under the
# emulator.
if(CMAKE_CROSSCOMPILING)
  bp_skipped_test(plugin_template_from_sdk "the template is built natively against the installed SDK, which a cross build (${CMAKE_SYSTEM_PROCESSOR} under ${CMAKE_CROSSCOMPILING_EMULATOR}) cannot load")
else()
  add_test(NAME plugin_template_from_sdk COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/plugin_template_from_sdk
    -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DC_COMPILER=${CMAKE_C_COMPILER}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_plugin_template.cmake)
  set_tests_properties(plugin_template_from_sdk PROPERTIES TIMEOUT 900 LABELS sdk)
endif()
