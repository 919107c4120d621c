/* hpu: the model's parameters (see hpu_params.h) and their environment overrides. */
#include "hpu_params.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- THE table ----
 * Gaudi2-class defaults. Peak figures are the vendor's published peaks (Habana Gaudi2
 * white paper / product brief, 2022); the host costs are estimates, said so below. */
static const hpu_params hpu_defaults = {
    /* MME, the two matrix engines as one resource: 432 TFLOP/s dense bf16/f16
     * (Gaudi2 product brief). */
    .mme_tflops_16 = 432.0,
    /* MME f32: 108 TFLOP/s, a quarter of the bf16 rate (product brief); every dtype
     * that is not bf16/f16 is modelled at this rate. */
    .mme_tflops_32 = 108.0,
    /* TPC cluster, 24 TPCs as one resource: 11 TFLOP/s bf16/f16 (product brief). */
    .tpc_tflops_16 = 11.0,
    /* TPC f32: 5.5 TFLOP/s, half the bf16 rate (product brief). */
    .tpc_tflops_32 = 5.5,
    /* 96 GB of HBM2E at 2.46 TB/s (product brief), shared by every engine. */
    .hbm_gbps = 2460.0,
    /* PCIe Gen4 x16: 32 GB/s raw per direction, ~25 GB/s achieved after protocol
     * overhead (a typical measured host<->device copy rate). */
    .host_link_gbps = 25.0,
    /* Eager launch cost on the host, per op. ESTIMATE: seed 002 measured 262 ms for the
     * sliced eager fwd+bwd run, roughly 2,600 op launches through the PyTorch bridge,
     * i.e. ~100 us per launch. */
    .eager_launch_us = 100.0,
    /* One graph launch per region on the host. ESTIMATE: taken equal to one eager
     * launch (one submission through the same bridge). */
    .graph_launch_us = 100.0,
    /* Engine-side dispatch per node (descriptor fetch and sync), in a graph and
     * eagerly. ESTIMATE: order of magnitude of a hardware queue's per-job cost. */
    .graph_node_us = 1.0,
    .eager_node_us = 1.0,
    /* Device memory per device: 96 GiB, the size of Gaudi2's HBM. */
    .arena_bytes = 96ull << 30,
    /* One device by default; BP_HPU_DEVICES up to 8, an HLS-2 server's count. */
    .devices = 1,
    .max_devices = 8,
};

/* Engine and flops of every op the simulator runs. Bytes moved are
 * always the elements of all inputs and outputs times the dtype size (sdpa is fused:
 * its scores never reach HBM). */
const hpu_op_cost hpu_op_costs[] = {
    /* op          engine          rule                  flops/elem */
    {"matmul",    HPU_ENGINE_MME, HPU_FLOPS_MATMUL,     0.0},
    {"sdpa",      HPU_ENGINE_MME, HPU_FLOPS_SDPA,       0.0},
    {"copy",      HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 0.0},
    {"fill",      HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 0.0},
    {"cat",       HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 0.0},
    {"add",       HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 1.0},
    {"sub",       HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 1.0},
    {"mul",       HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 1.0},
    {"div",       HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 1.0},
    {"scale",     HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 1.0},
    {"where",     HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 1.0},
    {"exp",       HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 8.0},
    {"tanh",      HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 8.0},
    {"silu",      HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 8.0},
    {"gelu",      HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 8.0},
    {"softmax",   HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 5.0},
    {"sum",       HPU_ENGINE_TPC, HPU_FLOPS_PER_INPUT,  1.0},
    {"max",       HPU_ENGINE_TPC, HPU_FLOPS_PER_INPUT,  1.0},
    {"mean",      HPU_ENGINE_TPC, HPU_FLOPS_PER_INPUT,  1.0},
    {"rmsnorm",   HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 5.0},
    {"layernorm", HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 5.0},
    {"rope",      HPU_ENGINE_TPC, HPU_FLOPS_PER_OUTPUT, 6.0},
};
const int hpu_op_cost_count = (int)(sizeof hpu_op_costs / sizeof hpu_op_costs[0]);

/* TFLOP/s -> flops per microsecond; GB/s -> bytes per microsecond. */
#define FLOPS_PER_US_PER_TFLOPS 1e6
#define BYTES_PER_US_PER_GBPS 1e3
#define BYTES_PER_MB (1ull << 20)

static int is_16bit_float(bp_dtype dtype) {
    return dtype == BP_DTYPE_BF16 || dtype == BP_DTYPE_F16;
}

double hpu_params_flops_per_us(const hpu_params *p, hpu_engine engine, bp_dtype dtype) {
    double tflops = 0.0;
    if (engine == HPU_ENGINE_MME)
        tflops = is_16bit_float(dtype) ? p->mme_tflops_16 : p->mme_tflops_32;
    else if (engine == HPU_ENGINE_TPC)
        tflops = is_16bit_float(dtype) ? p->tpc_tflops_16 : p->tpc_tflops_32;
    return tflops * FLOPS_PER_US_PER_TFLOPS;
}

double hpu_params_hbm_bytes_per_us(const hpu_params *p) {
    return p->hbm_gbps * BYTES_PER_US_PER_GBPS;
}

double hpu_params_host_link_bytes_per_us(const hpu_params *p) {
    return p->host_link_gbps * BYTES_PER_US_PER_GBPS;
}

const char *hpu_engine_name(hpu_engine engine) {
    static const char *const names[HPU_ENGINE_COUNT] = {"MME", "TPC", "DMA"};
    return engine >= 0 && engine < HPU_ENGINE_COUNT ? names[engine] : "?";
}

/* A whole decimal number in [min, max]: no sign, no spaces, no suffix. */
static int parse_whole(const char *text, unsigned long long min, unsigned long long max,
                       unsigned long long *out) {
    if (!text || text[0] < '0' || text[0] > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Caps each device's memory at its share of the host's physical memory (total RAM,
 * not what is free now: that changes by the second, and the simulated device should
 * not change size with it). The arena is a reservation that becomes host memory page
 * by page as it is touched: a device larger than the host would hand out blocks that
 * kill the process (or another one) when used, instead of failing the allocation. */
static bp_status cap_to_host(const bp_host_services *host, bool asked, hpu_params *p) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return host->set_error(BP_ERR_INTERNAL,
                               "hpu: cannot size device memory: the host's physical memory "
                               "is unknown (sysconf gave %ld pages of %ld bytes)", pages, page);
    uint64_t ram = (uint64_t)pages * (uint64_t)page;
    uint64_t share = ram / (uint64_t)p->devices / BYTES_PER_MB * BYTES_PER_MB;
    if (p->arena_bytes <= share)
        return BP_OK;
    host->log(asked ? BP_LOG_WARN : BP_LOG_INFO, "hpu",
              "hpu: device memory capped at %llu MiB per device instead of %llu MiB: the "
              "host has %llu MiB of physical memory for %d device%s",
              (unsigned long long)(share / BYTES_PER_MB),
              (unsigned long long)(p->arena_bytes / BYTES_PER_MB),
              (unsigned long long)(ram / BYTES_PER_MB), p->devices, p->devices == 1 ? "" : "s");
    p->arena_bytes = share;
    return BP_OK;
}

bp_status hpu_params_load(const bp_host_services *host, hpu_params *out) {
    *out = hpu_defaults;
    const char *mem = getenv("BP_HPU_MEMORY_MB");
    if (mem && *mem) {
        unsigned long long mb = 0;
        if (parse_whole(mem, 1, UINT64_MAX / BYTES_PER_MB, &mb) != 0)
            return host->set_error(BP_ERR_INVALID_ARGUMENT,
                                   "hpu: BP_HPU_MEMORY_MB='%s' is not a positive whole number "
                                   "of MiB (device memory per device; default %llu)",
                                   mem,
                                   (unsigned long long)(hpu_defaults.arena_bytes / BYTES_PER_MB));
        out->arena_bytes = (uint64_t)mb * BYTES_PER_MB;
    }
    const char *devs = getenv("BP_HPU_DEVICES");
    if (devs && *devs) {
        unsigned long long n = 0;
        if (parse_whole(devs, 1, (unsigned long long)hpu_defaults.max_devices, &n) != 0)
            return host->set_error(BP_ERR_INVALID_ARGUMENT,
                                   "hpu: BP_HPU_DEVICES='%s' is not a device count from 1 to %d",
                                   devs, hpu_defaults.max_devices);
        out->devices = (int)n;
    }
    return cap_to_host(host, mem && *mem, out);
}
