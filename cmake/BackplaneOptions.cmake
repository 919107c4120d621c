# Build options and the warning/sanitizer flags applied to project code.
option(BP_BUILD_TESTS "Build the unit tests and test plugins" ON)
option(BP_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

set(BP_WARNING_FLAGS -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter)
set(BP_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)

# bp_project_target(<target>): warnings as errors, and sanitizers when enabled.
function(bp_project_target target)
  target_compile_options(${target} PRIVATE ${BP_WARNING_FLAGS})
  if(BP_SANITIZE)
    target_compile_options(${target} PRIVATE ${BP_SANITIZE_FLAGS})
    target_link_options(${target} PRIVATE ${BP_SANITIZE_FLAGS})
  endif()
endfunction()
set(BP_SELECTED_OPS "" CACHE FILEPATH
  "A BP_TRACE_OPS file: build only the cpu kernels it lists (selective build)")
if(BP_SELECTED_OPS AND NOT IS_ABSOLUTE "${BP_SELECTED_OPS}")
  get_filename_component(BP_SELECTED_OPS "${BP_SELECTED_OPS}" ABSOLUTE BASE_DIR "${CMAKE_BINARY_DIR}")
endif()
