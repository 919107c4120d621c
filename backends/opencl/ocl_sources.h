/* opencl: the kernel sources of kernels/NAME.cl, embedded at build time (embed_cl.cmake
 * writes ocl_sources.c into the build tree), each a NUL-terminated string. */
#ifndef BP_OCL_SOURCES_H
#define BP_OCL_SOURCES_H

extern const char ocl_src_prelude[];
extern const char ocl_src_move[];
extern const char ocl_src_convert[];
extern const char ocl_src_elemwise[];
extern const char ocl_src_reduce[];
extern const char ocl_src_norm[];
extern const char ocl_src_matmul[];
extern const char ocl_src_sdpa[];

#endif
