# Extracts the README's C example at configure time so that a test can build and run it.
file(READ ${PROJECT_SOURCE_DIR}/README.md readme)
string(REGEX MATCH "```c\n([^`]*)```" match "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md has no ```c example block")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/readme_example.c "${CMAKE_MATCH_1}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/README.md)
