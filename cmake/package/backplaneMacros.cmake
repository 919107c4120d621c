# backplane_add_plugin(<name> SOURCES <file>...)
#
# Builds the plugin <name> as the MODULE library target <name>, written as
# libbp_<name>.so (the file name the plugin loader looks for), compiled with
# backplane::plugin (the public headers, hidden visibility; no libbackplane). Only
# bp_plugin_entry is exported (the linker version script beside this file hides every
# other symbol, those of static libraries linked in too): declare it with
# BP_PLUGIN_EXPORT (<backplane/plugin.h>). The install rule puts the plugin in
# BACKPLANE_PLUGIN_DIR, where libbackplane and bp-info find it.
set(BACKPLANE_PLUGIN_VERSION_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/backplane-plugin.map")

function(backplane_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES")
  set(usage "usage: backplane_add_plugin(<name> SOURCES <file>...)")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "backplane_add_plugin(${name}): unexpected arguments "
      "'${arg_UNPARSED_ARGUMENTS}' (${usage})")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "backplane_add_plugin(${name}): no SOURCES (${usage})")
  endif()
  # The plugin loader's rule for names (the descriptor's name should be the same).
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "backplane_add_plugin(${name}): the name must match "
      "[a-z][a-z0-9_]* (the plugin is written as libbp_<name>.so)")
  endif()

  add_library(${name} MODULE ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE backplane::plugin)
  target_link_options(${name} PRIVATE "LINKER:--version-script=${BACKPLANE_PLUGIN_VERSION_SCRIPT}")
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME libbp_${name}
    SUFFIX ".so"
    LINK_DEPENDS "${BACKPLANE_PLUGIN_VERSION_SCRIPT}")
  install(TARGETS ${name} LIBRARY DESTINATION "${BACKPLANE_PLUGIN_DIR}")
endfunction()
