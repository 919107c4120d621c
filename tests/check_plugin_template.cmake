# The template plugin (samples/plugin_template) built the way a vendor builds it: from a
# copy outside our tree, against an installed SDK and nothing else (issue 19, item 5).
#  1. install this build into PREFIX (cmake --install);
#  2. copy the template that the SDK installed (share/backplane/plugin_template) to a
#     fresh directory under $TMPDIR (or /tmp);
#  3. CMake: configure with only CMAKE_PREFIX_PATH=PREFIX (no package registries), check
#     that find_package took PREFIX's package, build, and run PREFIX's bp-conformance
#     against it through BP_PLUGIN_PATH;
#  4. pkg-config: build it again with the README's plain cc line, pkg-config seeing
#     PREFIX's .pc files only, and run the suite against that library too;
#  5. cmake --install the template: it lands in PREFIX's plugin directory, where
#     PREFIX's bp-info finds it without BP_PLUGIN_PATH.
# Arguments: BUILD_DIR WORK_DIR LIBDIR DATADIR; C_COMPILER (the cc of step 4), COMPILER_ARG
# (-DCMAKE_C_COMPILER=... or a cross build's -DCMAKE_TOOLCHAIN_FILE=...), EMULATOR (a cross
# build's, in front of the prefix's programs; empty natively).
# Every command runs under umask 022: the loader refuses plugins that others can change.
set(umask022 sh -c "umask 022 && exec \"$@\"" sh)
set(prefix ${WORK_DIR}/prefix)
set(plugin_dir ${prefix}/${LIBDIR}/backplane/plugins)
# BP_* from the caller's environment must not steer the runs.
set(clean_env BP_PLUGIN_PATH= BP_PLUGINS= BP_DEVICE= BP_AUTOLOAD= BP_MEMORY_LIMIT_MB=0
    BP_TRACE_OPS= BP_PROFILE= BP_CPU_FALLBACK= BP_LOG=)

# run(<what> <command>...): runs the command under umask 022, fails the test with its
# output unless it exits 0; leaves its output in `out`.
function(run what)
  execute_process(COMMAND ${umask022} ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${code}):\n${ARGN}\n${output}")
  endif()
  set(out "${output}" PARENT_SCOPE)
endfunction()

# conformance(<plugin file>): PREFIX's bp-conformance on template:0, all of it passing,
# the template's add f32 kernel included.
function(conformance plugin)
  run("bp-conformance with ${plugin}" ${CMAKE_COMMAND} -E env ${clean_env}
      BP_PLUGIN_PATH=${plugin} ${EMULATOR} ${prefix}/bin/bp-conformance --device template:0)
  message("${out}")
  foreach(re "backend +template [^\n]*\\(${plugin}\\)" "PASS  ops\\.add_f32"
             "PASS  events\\.elapsed_time" "\n[1-9][0-9]* passed, 0 failed")
    if(NOT out MATCHES "${re}")
      message(FATAL_ERROR "the bp-conformance output does not match: ${re}")
    endif()
  endforeach()
endfunction()

message("== 1. cmake --install ${BUILD_DIR} --prefix ${prefix}")
file(REMOVE_RECURSE ${WORK_DIR})
run("installing the SDK" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

set(tmp_root "$ENV{TMPDIR}")
if(NOT tmp_root)
  set(tmp_root /tmp)
endif()
string(RANDOM LENGTH 8 ALPHABET abcdefghijklmnopqrstuvwxyz0123456789 suffix)
set(vendor ${tmp_root}/bp-plugin-template-${suffix})
set(installed_template ${prefix}/${DATADIR}/backplane/plugin_template)
message("== 2. ${installed_template} copied to ${vendor}")
run("making ${vendor}" ${CMAKE_COMMAND} -E make_directory ${vendor})
file(GLOB template_files ${installed_template}/*)
if(NOT template_files)
  message(FATAL_ERROR "the SDK installed no template in ${installed_template}")
endif()
run("copying the template" ${CMAKE_COMMAND} -E copy ${template_files} ${vendor})

message("== 3. CMake: find_package(backplane) from ${prefix}")
run("configuring the template" ${CMAKE_COMMAND} -E env --unset=CMAKE_PREFIX_PATH
    --unset=PKG_CONFIG_PATH ${CMAKE_COMMAND} -S ${vendor} -B ${vendor}/build
    ${COMPILER_ARG} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${vendor}/build/CMakeCache.txt found REGEX "^backplane_DIR:")
if(NOT found STREQUAL "backplane_DIR:PATH=${prefix}/${LIBDIR}/cmake/backplane")
  message(FATAL_ERROR "find_package(backplane) did not take the prefix's package: ${found}")
endif()
run("building the template" ${CMAKE_COMMAND} --build ${vendor}/build)
conformance(${vendor}/build/libbp_template.so)

message("== 4. pkg-config: cc $(pkg-config --cflags backplane-plugin) -shared ...")
run("making ${vendor}/cc" ${CMAKE_COMMAND} -E make_directory ${vendor}/cc)
run("building the template with cc" ${CMAKE_COMMAND} -E env
    PKG_CONFIG_LIBDIR=${prefix}/${LIBDIR}/pkgconfig PKG_CONFIG_PATH= CC=${C_COMPILER}
    sh -c "cd '${vendor}' && \"$CC\" -std=c11 -O2 $(pkg-config --cflags backplane-plugin) -shared -o cc/libbp_template.so *.c -pthread")
conformance(${vendor}/cc/libbp_template.so)

message("== 5. cmake --install of the template: into ${plugin_dir}")
run("installing the template" ${CMAKE_COMMAND} --install ${vendor}/build)
run("bp-info" ${CMAKE_COMMAND} -E env ${clean_env} ${EMULATOR} ${prefix}/bin/bp-info)
message("${out}")
if(NOT out MATCHES "template +0\\.1\\.0 +1\\.[0-9]+ +loaded +2 +${plugin_dir}/libbp_template\\.so")
  message(FATAL_ERROR "bp-info does not list the installed template from ${plugin_dir}")
endif()

file(REMOVE_RECURSE ${vendor})
message("the template builds, loads and passes from the installed SDK alone")
