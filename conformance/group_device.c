/* Conformance group "device": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_device = {
    .name = "device",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
