/* Conformance group "events": (being written). */
#include "conformance.h"

const bp_conf_group bp_conf_group_events = {
    .name = "events",
    .summary = "",
    .tests = NULL,
    .n_tests = 0,
};
