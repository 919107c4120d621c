/* Conformance group "allocator": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_allocator = {
    .name = "allocator",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
