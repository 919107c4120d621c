/* rocm: the GPU core's driver table from the HIP runtime (hip_driver.c). */
#ifndef BP_HIP_DRIVER_H
#define BP_HIP_DRIVER_H

#include "gpu_driver.h"

extern const gpu_driver hip_driver;

#endif
