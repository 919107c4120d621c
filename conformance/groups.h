/* The conformance groups, in the order they run. Each is defined in group_<name>.c. */
#ifndef BP_CONF_GROUPS_H
#define BP_CONF_GROUPS_H

#define BP_CONF_GROUPS(X) \
    X(abi)                \
    X(device)             \
    X(memory)             \
    X(streams)            \
    X(events)             \
    X(host_funcs)         \
    X(guards)             \
    X(allocator)          \
    X(ops)                \
    X(regions)            \
    X(threading)          \
    X(errors)

#endif
