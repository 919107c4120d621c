# Runs bp-conformance (EXE) on opencl:0 with BP_OPENCL_BUILD_OPTIONS breaking every kernel
# build (the test sets BP_OPENCL_CACHE=0, so nothing comes from the disk cache):
#  1. -Dtdesc=int (prelude.cl's `typedef struct tdesc` no longer compiles): the run fails
#     cleanly (exit 1, no crash), and the error names CL_BUILD_PROGRAM_FAILURE, the
#     options and the compiler's log; every later op fails the same way (a failed build
#     is never kept).
#  2. an option the compiler rejects outright: a clear message naming the options.
#  3. no extra options: the same op passes (nothing half-built was left behind).
# EXE runs behind EMULATOR (a cross build's emulator, e.g. qemu-aarch64; empty natively).
function(run_conformance options filter)
  set(ENV{BP_OPENCL_BUILD_OPTIONS} "${options}")
  execute_process(COMMAND ${EMULATOR} ${EXE} --device opencl:0 --filter "${filter}"
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("---- BP_OPENCL_BUILD_OPTIONS='${options}' --filter '${filter}': exit ${code}\n${out}")
  set(code "${code}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect what)
  foreach(re IN LISTS ARGN)
    if(NOT out MATCHES "${re}")
      message(FATAL_ERROR "${what}: the output does not match: ${re}")
    endif()
  endforeach()
endfunction()

# 1. A source that does not compile.
run_conformance("-Dtdesc=int" "ops.add_f32")
if(NOT code EQUAL 1)
  message(FATAL_ERROR "a failing kernel build: bp-conformance exited with '${code}', not 1")
endif()
expect("a failing kernel build"
  "FAIL +ops\\.add_f32"
  "opencl:0: building the '[a-z]+' kernels \\([^)]*-Dtdesc=int\\) failed with CL_BUILD_PROGRAM_FAILURE \\(-11\\): "
  "CL_BUILD_PROGRAM_FAILURE \\(-11\\): [^\n]*[Ee]rror")

# Several ops in one process: each fails with the build error, none crashes.
run_conformance("-Dtdesc=int" "ops.add_*")
if(NOT code EQUAL 1)
  message(FATAL_ERROR "failing kernel builds: bp-conformance exited with '${code}', not 1")
endif()
string(REGEX MATCHALL "FAIL +ops\\.add_[a-z0-9]+" fails "${out}")
list(LENGTH fails nfail)
if(nfail LESS 2)
  message(FATAL_ERROR "failing kernel builds: expected several failing ops.add_* tests, got ${nfail}")
endif()
if(out MATCHES "PASS +ops\\.add_")
  message(FATAL_ERROR "an ops.add_* test passed although no kernel can be built")
endif()

# 2. An option the compiler rejects outright.
run_conformance("-cl-no-such-option" "ops.add_f32")
if(NOT code EQUAL 1)
  message(FATAL_ERROR "a rejected build option: bp-conformance exited with '${code}', not 1")
endif()
expect("a rejected build option"
  "FAIL +ops\\.add_f32"
  "building the '[a-z]+' kernels \\([^)]*-cl-no-such-option\\) failed with CL_INVALID_BUILD_OPTIONS \\(-43\\) \\(check BP_OPENCL_BUILD_OPTIONS='-cl-no-such-option'\\): ")

# 3. Without them the same op builds and passes.
run_conformance("" "ops.add_f32")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "without BP_OPENCL_BUILD_OPTIONS: bp-conformance exited with '${code}', not 0")
endif()
expect("without BP_OPENCL_BUILD_OPTIONS" "PASS +ops\\.add_f32")
