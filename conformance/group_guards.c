/* Conformance group "guards": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_guards = {
    .name = "guards",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
