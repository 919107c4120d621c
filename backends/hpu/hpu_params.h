/* hpu: the one table of model parameters.
 *
 * Every rate, latency and size the simulator uses is here (hpu_params.c gives each
 * value with its source); nothing else in backends/hpu hard-codes a number of the
 * model. Two environment variables override the device memory and the device count.
 */
#ifndef BP_HPU_PARAMS_H
#define BP_HPU_PARAMS_H

#include <backplane/plugin.h>

#include <stddef.h>
#include <stdint.h>

/** The resources an op occupies. HBM bandwidth is shared by all of them. */
typedef enum hpu_engine {
    HPU_ENGINE_MME = 0, /* matrix engine (the two MMEs as one resource) */
    HPU_ENGINE_TPC = 1, /* tensor processor cluster (24 TPCs as one resource) */
    HPU_ENGINE_DMA = 2, /* DMA engine: copies and memsets */
    HPU_ENGINE_COUNT = 3
} hpu_engine;

/** How an op's flops follow from its arguments. */
typedef enum hpu_flops_rule {
    HPU_FLOPS_PER_OUTPUT,   /* flops_per_elem * elements of the outputs */
    HPU_FLOPS_PER_INPUT,    /* flops_per_elem * elements of the first input */
    HPU_FLOPS_MATMUL,       /* 2 * elements of out * K */
    HPU_FLOPS_SDPA,         /* 4 * B*H * Sq * Skv * D */
} hpu_flops_rule;

/** One op the simulator runs: its engine and its cost. */
typedef struct hpu_op_cost {
    const char *op;         /* op name (<backplane/ops.h>) */
    hpu_engine engine;
    hpu_flops_rule rule;
    double flops_per_elem;  /* for the PER_OUTPUT / PER_INPUT rules */
} hpu_op_cost;

typedef struct hpu_params {
    double mme_tflops_16;     /* MME, bf16 and f16 */
    double mme_tflops_32;     /* MME, f32 and every other dtype */
    double tpc_tflops_16;     /* TPC cluster, bf16 and f16 */
    double tpc_tflops_32;     /* TPC cluster, f32 and every other dtype */
    double hbm_gbps;          /* HBM bandwidth, GB/s (1e9 bytes), shared by all engines */
    double host_link_gbps;    /* host <-> device copies, GB/s */
    double eager_launch_us;   /* modelled host time per eager kernel launch */
    double graph_launch_us;   /* modelled host time per region (graph) launch */
    double graph_node_us;     /* engine-side dispatch overhead per node in a graph */
    double eager_node_us;     /* engine-side dispatch overhead per eager op */
    uint64_t arena_bytes;     /* device memory per device (BP_HPU_MEMORY_MB), capped */
    int devices;              /* number of devices (BP_HPU_DEVICES) */
    int max_devices;          /* largest BP_HPU_DEVICES accepted */
} hpu_params;

/** The defaults with the environment overrides applied. A malformed or out-of-range
 *  variable fails (set_error names the variable and its value). Device memory is then
 *  capped at each device's share of the host's physical memory, in whole MiB (logged):
 *  it is host memory, and more than the host has could only fail when touched. */
bp_status hpu_params_load(const bp_host_services *host, hpu_params *out);

/** Flops per microsecond of `engine` for `dtype` (0 for the DMA engine). */
double hpu_params_flops_per_us(const hpu_params *p, hpu_engine engine, bp_dtype dtype);

/** Bytes per microsecond of HBM, and of the host link. */
double hpu_params_hbm_bytes_per_us(const hpu_params *p);
double hpu_params_host_link_bytes_per_us(const hpu_params *p);

/** The ops the simulator registers, and how many. */
extern const hpu_op_cost hpu_op_costs[];
extern const int hpu_op_cost_count;

/** "MME", "TPC", "DMA". */
const char *hpu_engine_name(hpu_engine engine);

#endif
