/* bp-conformance runner: turning cmocka's report of one test into a message.
 *
 * cmocka frames each test ("[ RUN      ] name", "[  FAILED  ] name", counts) and puts
 * its failure text after "[  ERROR   ] --- " with the source location on a
 * "[   LINE   ] --- file:line: error: Failure!" line; fail_msg() prints "ERROR: text".
 * The runner reports its own status lines, so only the text is kept. */
#ifndef BP_CONF_CMOCKA_OUTPUT_H
#define BP_CONF_CMOCKA_OUTPUT_H

#include <stdbool.h>

/* The message of one test from its captured output: for a failure, the failure text
 * first, its first line ending in "(file.c:line)", then whatever else the test printed;
 * otherwise just what it printed. Sets *skipped when cmocka reported a skip. Returns a
 * new string ("" when there is nothing) or NULL when out of memory. */
char *bp_conf_cmocka_message(const char *output, bool *skipped);

#endif
