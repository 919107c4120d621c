/* test_plugin_util_cxx.cpp: <backplane/plugin_util.h> compiled as C++17. */
#ifndef TEST_PLUGIN_UTIL_CXX_H
#define TEST_PLUGIN_UTIL_CXX_H

#include <backplane/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs a few helpers as a C++ plugin would and returns the number of results that
 * differ from what the C build gives (0: the C++ build agrees). */
int plugin_util_cxx_check(const bp_host_services *host);

#ifdef __cplusplus
}
#endif
#endif
