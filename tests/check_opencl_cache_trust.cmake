# Runs bp-conformance (EXE) on opencl:0 with BP_OPENCL_CACHE_DIR pointing into WORK_DIR
# and checks that the disk cache of kernel binaries (native code loaded back into the
# process) is trusted only when no one else can have written it:
# 1. a missing cache directory is created 0700, its missing parent too, files are 0600;
# 2. a group-writable cache file is not loaded: it is rebuilt and replaced (0600
#    again), with a warning that names it;
# 3. a cache directory writable by others is not used: nothing is written into it,
#    with a warning, and the run still passes;
# 4. (when run as root, who can chown) a directory owned by another user is not used.
# bp-conformance shows a passing test's log with --verbose: that is where the warnings
# are looked for.
# EXE runs behind EMULATOR (a cross build's emulator, e.g. qemu-aarch64; empty natively).
set(filter "ops.add_f32")
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run_conformance what dir out_var)
  set(ENV{BP_OPENCL_CACHE_DIR} "${dir}")
  execute_process(COMMAND ${EMULATOR} ${EXE} --device opencl:0 --filter "${filter}" --verbose
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("---- ${what}: exit ${code}\n${out}")
  if(NOT code EQUAL 0 OR NOT out MATCHES "PASS +ops\\.add_f32")
    message(FATAL_ERROR "${what}: bp-conformance exited with '${code}' or ops.add_f32 did not pass")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_mode path want)
  execute_process(COMMAND stat -c %a "${path}" OUTPUT_VARIABLE mode
    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE code)
  if(NOT code EQUAL 0 OR NOT mode STREQUAL "${want}")
    message(FATAL_ERROR "${path} has mode '${mode}', expected ${want}")
  endif()
endfunction()

function(expect_in out regex what)
  if(NOT out MATCHES "${regex}")
    message(FATAL_ERROR "${what}: the output lacks '${regex}'")
  endif()
endfunction()

function(expect_no_bins dir what)
  file(GLOB bins "${dir}/*")
  if(bins)
    message(FATAL_ERROR "${what}: the refused directory ${dir} got files: ${bins}")
  endif()
endfunction()

# 1. A new directory (and parent) 0700, files 0600.
set(cache "${WORK_DIR}/new/opencl")
run_conformance("a missing cache directory" "${cache}" out)
expect_mode("${WORK_DIR}/new" 700)
expect_mode("${cache}" 700)
file(GLOB bins "${cache}/*.bin")
if(NOT bins)
  message(FATAL_ERROR "the first run wrote no *.bin into ${cache}")
endif()
foreach(f IN LISTS bins)
  expect_mode("${f}" 600)
endforeach()

# 2. Group-writable files (still valid binaries): ignored, rebuilt, replaced.
foreach(f IN LISTS bins)
  file(CHMOD "${f}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ GROUP_WRITE)
endforeach()
run_conformance("group-writable cache files" "${cache}" out)
list(GET bins 0 first)
get_filename_component(first_name "${first}" NAME)
expect_in("${out}" "ignoring the cached binary [^\n]*${first_name}: it is writable by its group \\(mode 0660\\); rebuilding it"
  "group-writable cache files")
foreach(f IN LISTS bins)
  expect_mode("${f}" 600)
endforeach()

# 3. A directory writable by others: not used.
set(open_dir "${WORK_DIR}/open")
file(MAKE_DIRECTORY "${open_dir}")
file(CHMOD "${open_dir}" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
  GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_WRITE WORLD_EXECUTE)
run_conformance("a cache directory writable by others" "${open_dir}" out)
expect_in("${out}" "not using [^\n]*/open \\(from BP_OPENCL_CACHE_DIR\\) as the kernel cache: it is writable by others \\(mode 0757\\)"
  "a cache directory writable by others")
expect_no_bins("${open_dir}" "a cache directory writable by others")

# 4. A directory owned by another user (only root can make one).
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(uid STREQUAL "0")
  set(foreign "${WORK_DIR}/foreign")
  file(MAKE_DIRECTORY "${foreign}")
  execute_process(COMMAND chown 65534 "${foreign}" RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "chown 65534 ${foreign} failed")
  endif()
  run_conformance("a cache directory of another user" "${foreign}" out)
  expect_in("${out}" "as the kernel cache: it is owned by uid 65534, not by this user"
    "a cache directory of another user")
  expect_no_bins("${foreign}" "a cache directory of another user")
else()
  message("not root: the directory of another user is not checked")
endif()
message("the kernel cache trusts only what this user wrote")
