/* gpu: the device code a GPU plugin embeds (backends/gpu/embed_images.cmake generates
 * the table at build time): one image per kernel family (kernels/<family>.cu), as the
 * vendor's compiler made it: an nvcc fatbin for cuda, a clang offload bundle of AMD code
 * objects for rocm. A plugin built without a device compiler has none. */
#ifndef BP_GPU_IMAGES_H
#define BP_GPU_IMAGES_H

#include <stddef.h>

typedef struct gpu_image {
    const char *family;        /* "elementwise", "matmul", "sdpa" */
    const unsigned char *data;
    size_t size;               /* bytes of data */
} gpu_image;

extern const gpu_image gpu_images[];
extern const int gpu_image_count;

#endif
