/* The list of groups (groups.h), in run order. */
#include "conformance.h"
#include "groups.h"

#define BP_CONF_DECLARE(g) extern const bp_conf_group bp_conf_group_##g;
BP_CONF_GROUPS(BP_CONF_DECLARE)
#undef BP_CONF_DECLARE

#define BP_CONF_ENTRY(g) &bp_conf_group_##g,
const bp_conf_group *const bp_conf_groups[] = {BP_CONF_GROUPS(BP_CONF_ENTRY)};
#undef BP_CONF_ENTRY

const size_t bp_conf_group_count = sizeof bp_conf_groups / sizeof bp_conf_groups[0];
