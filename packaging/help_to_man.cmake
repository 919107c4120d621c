# cmake -DPROGRAM=<path> [-DEMULATOR=<command>] -DNAME=<name> -DSUMMARY=<one line>
#       -DVERSION=<version> -DOUTPUT=<file.1> -P help_to_man.cmake
# The manual page of a tool from its own --help: NAME, then the help text as DESCRIPTION,
# so the page says what the program says (the Debian packages ship it, gzipped).
foreach(var PROGRAM NAME SUMMARY VERSION OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "help_to_man.cmake: -D${var}=... is missing")
  endif()
endforeach()
execute_process(COMMAND ${EMULATOR} ${PROGRAM} --help OUTPUT_VARIABLE help
  COMMAND_ERROR_IS_FATAL ANY)
# roff: a backslash is \e, a minus sign \-; a line starting with . or ' would be a request.
string(REPLACE "\\" "\\e" help "${help}")
string(REPLACE "-" "\\-" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(REPLACE "-" "\\-" name_roff "${NAME}")
string(TOUPPER "${NAME}" title)
file(WRITE ${OUTPUT} ".TH \"${title}\" 1 \"\" \"backplane ${VERSION}\" \"backplane tools\"
.SH NAME
${name_roff} \\- ${SUMMARY}
.SH DESCRIPTION
.nf
${help}.fi
.SH SEE ALSO
The documentation in /usr/share/doc/backplane (package libbackplane\\-dev).
")
