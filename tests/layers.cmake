# The layer table (scripts/layers.txt, docs/architecture.md "Layers") against the code:
# `layering` runs scripts/check-layers.sh over the source tree and this build's objects
# of libbackplane; layering_detects_violations and layering_usage_errors run it on
# scratch trees with known faults (tests/layering_fixture.sh). nm and the compiler are
# the build's (the cross toolchain's in a cross build); nothing runs on the target, so no
# emulator. The objects are this configuration's, listed at generate time: an object a
# moved or removed source left in the build tree is not read.
# libbackplane's objects are its own and those of the static libraries linked into it
# (the cpu kit).
set(bp_layering_objects ${CMAKE_BINARY_DIR}/layering/backplane-objects.txt)
set(bp_layering_content "$<JOIN:$<TARGET_OBJECTS:backplane>,\n>\n")
get_target_property(bp_backplane_links backplane LINK_LIBRARIES)
foreach(lib IN LISTS bp_backplane_links)
  if(TARGET ${lib})
    get_target_property(type ${lib} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
      string(APPEND bp_layering_content "$<JOIN:$<TARGET_OBJECTS:${lib}>,\n>\n")
    endif()
  endif()
endforeach()
file(GENERATE OUTPUT ${bp_layering_objects} CONTENT "${bp_layering_content}")
add_test(NAME layering COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check-layers.sh
  --nm ${CMAKE_NM} --objects ${bp_layering_objects} ${CMAKE_BINARY_DIR})
foreach(case detects_violations usage_errors)
  add_test(NAME layering_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/layering_fixture.sh
    ${case} ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/layering_${case}
    ${CMAKE_C_COMPILER} ${CMAKE_NM})
endforeach()
set_tests_properties(layering layering_detects_violations layering_usage_errors
  PROPERTIES TIMEOUT 120)
