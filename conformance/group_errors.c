/* Conformance group "errors": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_errors = {
    .name = "errors",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
