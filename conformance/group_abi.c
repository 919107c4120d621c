/* Conformance group "abi": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_abi = {
    .name = "abi",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
