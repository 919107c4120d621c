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
