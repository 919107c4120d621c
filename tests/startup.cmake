# bp-startup (scripts/bp-startup.c): the start-up cost of a program with its plugins
# present and with BP_AUTOLOAD=0 (docs/architecture.md "Objects and lifetimes"; issue
# 18's figures). A benchmark, not a test of speed: these entries check only that the
# tool measures and refuses bad usage. Not in a cross build (it executes the target's
# programs itself, outside the emulator).
add_executable(bp-startup ${PROJECT_SOURCE_DIR}/scripts/bp-startup.c)
target_compile_definitions(bp-startup PRIVATE _GNU_SOURCE)
target_compile_options(bp-startup PRIVATE ${BP_WARNING_FLAGS})

if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME bp_startup_measures COMMAND bp-startup --runs 1 --json -- $<TARGET_FILE:readme_example>)
  set_tests_properties(bp_startup_measures PROPERTIES TIMEOUT 120
    PASS_REGULAR_EXPRESSION "\"autoload\": {\"ms\": [0-9.]+, \"max_rss_kib\": [1-9][0-9]*},\n \"no_autoload\": {\"ms\": [0-9.]+, \"max_rss_kib\": [1-9][0-9]*}}")
  add_test(NAME bp_startup_usage_errors COMMAND sh -c
    "$<TARGET_FILE:bp-startup> --runs 0 -- true; a=$?; $<TARGET_FILE:bp-startup> --runs 1; b=$?; \
$<TARGET_FILE:bp-startup> --runs 1 -- false; c=$?; echo \"exit $a $b $c\"")
  set_tests_properties(bp_startup_usage_errors PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "--runs takes a whole number from 1 to 1000.*no program given after --.*false exited with a non-zero status \\(autoload\\).*exit 2 2 1")
endif()
