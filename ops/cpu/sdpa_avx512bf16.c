#if defined(__x86_64__)
#include "sdpa_kernel.h"
void bp_cpu_sdpa_range_avx512bf16(void *ctx, int64_t begin, int64_t end) {
    bp_cpu_sdpa_range_avx512(ctx, begin, end);
}
#endif
