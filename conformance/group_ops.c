/* Conformance group "ops": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_ops = {
    .name = "ops",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
