# Runs bp-conformance (EXE) on opencl:0 with the disk cache in CACHE_DIR (the test sets
# BP_OPENCL_CACHE_DIR to it): a first run fills the cache, then every *.bin is
# overwritten with junk; a second run must pass, rebuilding the programs from source, and
# every .bin must be a valid cache file again.
# EXE runs behind EMULATOR (a cross build's emulator, e.g. qemu-aarch64; empty natively).
set(filter "ops.add_f32")
file(REMOVE_RECURSE ${CACHE_DIR})
if(NOT "$ENV{BP_OPENCL_CACHE_DIR}" STREQUAL "${CACHE_DIR}")
  message(FATAL_ERROR "BP_OPENCL_CACHE_DIR is '$ENV{BP_OPENCL_CACHE_DIR}', not '${CACHE_DIR}'")
endif()

function(run_conformance what)
  execute_process(COMMAND ${EMULATOR} ${EXE} --device opencl:0 --filter "${filter}"
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("---- ${what}: exit ${code}\n${out}")
  if(NOT code EQUAL 0 OR NOT out MATCHES "PASS +ops\\.add_f32")
    message(FATAL_ERROR "${what}: bp-conformance exited with '${code}' or ops.add_f32 did not pass")
  endif()
endfunction()

run_conformance("the first run (empty cache)")
file(GLOB bins "${CACHE_DIR}/*.bin")
list(LENGTH bins nbins)
if(nbins EQUAL 0)
  message(FATAL_ERROR "the first run wrote no *.bin into ${CACHE_DIR}")
endif()

set(junk "this is not a kernel binary, just junk bytes 0123456789abcdef\n")
foreach(f IN LISTS bins)
  file(WRITE "${f}" "${junk}")
endforeach()

# (bp-conformance runs each test in a child process and shows the child's log only when
# the test fails, so the rebuild is checked through the files: only a build from source
# writes them.)
run_conformance("the second run (every *.bin junk)")
foreach(f IN LISTS bins)
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "${f} is gone after the second run")
  endif()
  file(READ "${f}" head LIMIT 10)
  file(SIZE "${f}" size)
  if(NOT head STREQUAL "BPOCLBIN1\n" OR size LESS_EQUAL 18)
    message(FATAL_ERROR "${f} was not rewritten as a valid cache file (${size} bytes)")
  endif()
endforeach()
file(GLOB after "${CACHE_DIR}/*.bin")
list(LENGTH after nafter)
if(NOT nafter EQUAL nbins)
  message(FATAL_ERROR "${nbins} cache files before, ${nafter} after the second run")
endif()
message("${nbins} corrupt cache files rebuilt")
