/* Conformance group "streams": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_streams = {
    .name = "streams",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
