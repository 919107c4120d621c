/* Conformance group "threading": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_threading = {
    .name = "threading",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
