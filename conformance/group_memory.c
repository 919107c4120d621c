/* Conformance group "memory": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_memory = {
    .name = "memory",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
