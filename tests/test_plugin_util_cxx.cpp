// <backplane/plugin_util.h> compiled as C++17 with the project's warnings as errors, and
// run: a vendor may write a plugin in C++ (test_plugin_util.c calls this).
#include <backplane/plugin_util.h>

#include <cstdlib>

#include "test_plugin_util_cxx.h"

namespace {

struct cxx_device {
    int index;
    bp_plugin_link link;
};

bp_status set_current(void *device) {
    return bp_plugin_current_set(static_cast<cxx_device *>(device)->index);
}

bp_status no_move(void *, const bp_tensor_desc *, const bp_tensor_desc *) {
    return BP_OK;
}

} // namespace

extern "C" int plugin_util_cxx_check(const bp_host_services *host) {
    int wrong = 0;
    // The guard table a C++ plugin would write, get_current as the header gives it.
    const bp_guard_vtable guard = {sizeof(bp_guard_vtable), set_current, bp_plugin_current_get};
    cxx_device dev = {5, {nullptr}};
    int index = -1;
    wrong += guard.set_current(&dev) != BP_OK;
    wrong += guard.get_current(nullptr, &index) != BP_OK || index != 5;
    wrong += bp_plugin_check_index(host, "cxx", 1, 1, "C++", nullptr) != BP_ERR_NOT_FOUND;
    wrong += bp_plugin_check_index(host, "cxx", 0, 1, "C++", nullptr) != BP_OK;
    bp_backend_device_props props = {};
    props.struct_size = sizeof props;
    bp_backend_device_props p;
    wrong += bp_plugin_props_begin(host, "cxx", &props, &p) != BP_OK;
    bp_props_copy_out(&props, &p);
    void *mem = bp_plugin_calloc(host, "cxx", 0, 16, "a test");
    wrong += mem == nullptr;
    std::free(mem);
    wrong += bp_plugin_fail(host, BP_ERR_BACKEND, "cxx", 0, "%d", 1) != BP_ERR_BACKEND;
    wrong += bp_plugin_unavailable_reason(0, "why") == nullptr;
    wrong += bp_plugin_check_out_ptr(host, "cxx", 0, &mem) != BP_OK;
    wrong += bp_plugin_check_copy_kind(host, "cxx", 0, BP_COPY_HOST_TO_DEVICE) != BP_OK;
    wrong += bp_plugin_check_copy_pointers(host, "cxx", 0, &dev, &dev, 1) != BP_OK;
    wrong += bp_plugin_check_host_fn(host, "cxx", 0, nullptr) != BP_ERR_INVALID_ARGUMENT;
    wrong += bp_plugin_elapsed_recorded(host, "cxx", 0, true, true) != BP_OK;
    wrong += bp_plugin_elapsed_completed(host, "cxx", 0, BP_OK, BP_OK) != BP_OK;
    wrong += bp_plugin_dtype_size(BP_DTYPE_BF16) != 2;
    bp_plugin_list streams;
    wrong += bp_plugin_list_init(&streams) != 0;
    bp_plugin_list_add(&streams, &dev.link);
    wrong += streams.head == nullptr || BP_PLUGIN_CONTAINER_OF(streams.head, cxx_device, link) != &dev;
    bp_plugin_list_remove(&streams, &dev.link);
    wrong += streams.head != nullptr;
    bp_plugin_list_fini(&streams);
    bp_tensor_desc t = {};
    t.ndim = 1;
    t.shape[0] = 3;
    wrong += bp_plugin_numel(&t) != 3;
    const bp_tensor_desc *inputs[1] = {&t};
    const bp_tensor_desc *outputs[1] = {&t};
    bp_kernel_call call = {};
    call.struct_size = sizeof call;
    call.n_inputs = 1;
    call.n_outputs = 1;
    call.inputs = inputs;
    call.outputs = outputs;
    wrong += bp_plugin_cat(&call, no_move, nullptr) != BP_OK;
    return wrong;
}
