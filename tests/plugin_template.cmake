# The plugin template built out of tree against the installed SDK, with CMake and with a
# plain cc line, and bp-conformance from the install run against it
# (check_plugin_template.cmake; issue 19, item 5). It installs into a prefix of its own:
# it adds the template to that prefix's plugin directory. A cross build compiles the
# template with its toolchain (bp_sdk_compiler, sdk.cmake) and runs the prefix's
# programs behind the emulator.
add_test(NAME plugin_template_from_sdk COMMAND ${CMAKE_COMMAND}
  -DBUILD_DIR=${CMAKE_BINARY_DIR} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/plugin_template_from_sdk
  -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DDATADIR=${CMAKE_INSTALL_DATADIR}
  -DC_COMPILER=${CMAKE_C_COMPILER} -DCOMPILER_ARG=${bp_sdk_compiler} -DEMULATOR=${bp_emulator_arg}
  -P ${CMAKE_CURRENT_SOURCE_DIR}/check_plugin_template.cmake)
set_tests_properties(plugin_template_from_sdk PROPERTIES TIMEOUT 900 LABELS sdk)
