# The Debian packages (cmake/packaging.cmake) as a user gets them: lintian on them, and the
# plugin template and the README's example built against their unpacked files alone
# (deb_packages.sh). They are made by `make package`, in a build of their own configured
# for /usr, which `make test` runs before this build's tests; without packages the
# entries are skipped with that reason.
set(BP_DEB_PACKAGE_DIR ${PROJECT_SOURCE_DIR}/build-deb/packages CACHE PATH
  "The Debian packages the deb_* tests check (`make package` makes them)")
set(bp_deb_script ${CMAKE_CURRENT_SOURCE_DIR}/deb/deb_packages.sh)
if(CMAKE_CROSSCOMPILING)
  set(bp_deb_skip "the packages are built and checked natively (make package)")
elseif(BP_SANITIZER)
  set(bp_deb_skip "the packages are checked once, by the release build's tests")
endif()
if(bp_deb_skip)
  bp_skipped_test(deb_lintian "${bp_deb_skip}")
  bp_skipped_test(deb_root "${bp_deb_skip}")
  return()
endif()
add_test(NAME deb_lintian COMMAND ${bp_deb_script} lintian ${BP_DEB_PACKAGE_DIR})
add_test(NAME deb_root COMMAND ${bp_deb_script} root ${BP_DEB_PACKAGE_DIR}
         ${CMAKE_CURRENT_BINARY_DIR}/deb_root ${CMAKE_CURRENT_BINARY_DIR}/readme_example.c)
set_tests_properties(deb_lintian deb_root PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: ")
# deb_root runs the unpacked bp-conformance on the template: no plugin or device choice of
# the caller's may reach it.
set_tests_properties(deb_root PROPERTIES TIMEOUT 600 ENVIRONMENT
  "BP_PLUGINS=;BP_DEVICE=;BP_AUTOLOAD=;BP_TRACE_OPS=;BP_PROFILE=;BP_CPU_FALLBACK=;BP_MEMORY_LIMIT_MB=0")
