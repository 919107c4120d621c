# The flake check and the ThreadSanitizer set (issue 13), included at the end of
# tests/CMakeLists.txt: it only adds labels and entries for tests defined there.
#
# Label "concurrency": the tests of threads, streams, events, host functions, the
# allocator, regions, cross-device work, guards and lazy backend initialisation. `make test-tsan` runs exactly this label in the
# ThreadSanitizer build (-DBP_SANITIZE=thread), where it also has the conformance
# suite's threading/events/streams groups against cpu, hpu and opencl:0 (in the other
# builds conformance_cpu, _hpu and _opencl already run those groups).
#
# Label "stress": each of those again, N times in a row while busy threads load every
# core (scripts/bp-stress.c), a failure reported with the test, the iteration and the
# run's output. N is BP_STRESS_ITERATIONS from the environment, else the cache variable
# below. `make test` runs this label as a step of its own after the release build's
# other tests (STRESS_ITERATIONS=5); `make test-asan` and `make test-tsan` leave it out;
# `make stress` is the long run (ITERATIONS=100 unless given, e.g. ITERATIONS=500).

set(BP_STRESS_ITERATIONS 10 CACHE STRING
  "Runs of each stress test when the environment has no BP_STRESS_ITERATIONS")
if(NOT BP_STRESS_ITERATIONS MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "BP_STRESS_ITERATIONS='${BP_STRESS_ITERATIONS}': expected a whole "
    "number from 1")
endif()

# The driver is the harness, not code under test: warnings as errors, no sanitizer.
add_executable(bp-stress ${PROJECT_SOURCE_DIR}/scripts/bp-stress.c)
target_compile_definitions(bp-stress PRIVATE _GNU_SOURCE)
target_compile_options(bp-stress PRIVATE ${BP_WARNING_FLAGS})
target_link_libraries(bp-stress PRIVATE Threads::Threads)

# The driver itself: a failing run is named with its iteration and output, every
# iteration still runs, and a bad count is refused (these run in the normal label).
add_test(NAME bp_stress_reports_failure COMMAND bp-stress --name failing --iterations 3
  --load 1 -- sh -c "echo 'the output of the run'; exit 3")
set_tests_properties(bp_stress_reports_failure PROPERTIES TIMEOUT 60 ENVIRONMENT "BP_STRESS_ITERATIONS="
  PASS_REGULAR_EXPRESSION "FAIL failing, iteration 1 of 3: exit status 3[^\n]*\n---- output of failing, iteration 1 [^\n]*\nthe output of the run\n.*3 of 3 iterations run, 3 failed \\(iterations 1, 2, 3\\)")
add_test(NAME bp_stress_strict_count COMMAND bp-stress --load 0 -- true)
set_tests_properties(bp_stress_strict_count PROPERTIES TIMEOUT 60 ENVIRONMENT "BP_STRESS_ITERATIONS=1e3"
  PASS_REGULAR_EXPRESSION "BP_STRESS_ITERATIONS='1e3': expected a whole number from 1 to 1000000")

set(bp_concurrency_tests test_stream_event test_threads test_memory test_region
    test_cross_device test_guard test_host_func test_lazy_backends)
set(bp_concurrency_targets ${bp_concurrency_tests} bp-conformance bp_hpu bp-stress)

# A stress entry takes the environment of the test it repeats.
foreach(t IN LISTS bp_concurrency_tests)
  set_property(TEST ${t} APPEND PROPERTY LABELS concurrency)
  get_test_property(${t} ENVIRONMENT env)
  add_test(NAME stress_${t} COMMAND bp-stress --name ${t}
    --default-iterations ${BP_STRESS_ITERATIONS} -- ${bp_emulator} $<TARGET_FILE:${t}>)
  set_tests_properties(stress_${t} PROPERTIES LABELS stress ENVIRONMENT "${env}")
endforeach()

# The conformance suite's concurrency groups, on the reference backend and on the hpu
# simulator (a plugin with its own engine threads).
set(bp_conf_concurrency_filter "threading.*,events.*,streams.*,host_funcs.*")
# Under TSan (5 to 15 times slower) on a loaded 2-core machine, the events group once
# outran the default 120 s group limit on hpu: the limit is only a hang guard, so these
# entries get 600 s a group (ctest's limit 1900 s for the three).
set(bp_tsan_conf_timeout --timeout 600)
foreach(device cpu hpu)
  set(env "${bp_conf_env}")
  if(device STREQUAL "hpu")
    set(env "${env};BP_HPU_MEMORY_MB=2048")
  endif()
  add_test(NAME stress_conformance_${device} COMMAND bp-stress --name conformance_${device}
    --default-iterations ${BP_STRESS_ITERATIONS}
    -- ${bp_emulator} $<TARGET_FILE:bp-conformance> --device ${device} --filter ${bp_conf_concurrency_filter})
  set_tests_properties(stress_conformance_${device} PROPERTIES LABELS stress
    ENVIRONMENT "${env}")
  if(BP_SANITIZER STREQUAL "thread")
    bp_conformance_test(conformance_concurrency_${device} EXIT 0
      ARGS --device ${device} --filter ${bp_conf_concurrency_filter} ${bp_tsan_conf_timeout})
    set_tests_properties(conformance_concurrency_${device} PROPERTIES
      LABELS "conformance;concurrency" ENVIRONMENT "${env}" TIMEOUT 1900)
  endif()
endforeach()

# Under ThreadSanitizer, the same groups on opencl:0 too (PoCL's CPU device in CI):
# the plugin's completion threads are instrumented, PoCL itself is not (its own races
# are not seen; its locks and threads are, through TSan's interceptors). About 70 s.
if(BP_SANITIZER STREQUAL "thread" AND TARGET bp_opencl)
  bp_conformance_test(conformance_concurrency_opencl EXIT 0
    ARGS --device opencl:0 --filter ${bp_conf_concurrency_filter} ${bp_tsan_conf_timeout})
  set_tests_properties(conformance_concurrency_opencl PROPERTIES
    LABELS "conformance;concurrency" ENVIRONMENT "${bp_ocl_env}" TIMEOUT 1900)
  list(APPEND bp_concurrency_targets bp_opencl)
endif()

# What `make test-tsan` builds (not the whole tree).
add_custom_target(bp_concurrency_tests)
add_dependencies(bp_concurrency_tests ${bp_concurrency_targets})
