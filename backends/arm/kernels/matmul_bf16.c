/* matmul bf16 with BFMMLA (FEAT_BF16; compiled with the *_bf16.c flags, run only when
 * arm_features.bf16): variant "neon-bfmmla". The operands are packed as they are (no
 * conversion) for the tile of mm_bfmmla.h, which says why its round-to-odd sums stay
 * within the suite's bound; K panels add into an f32 output tile, rounded once to bf16
 * at the end. Output tiles as the blocked kernel's (mm_job.h). */
#include <string.h>

#include "mm_bfmmla.h"
#include "mm_job.h"

enum { KC = 128 }; /* a multiple of 4; buffers: MC KC + KC NC bf16, MC NC f32 (32 KiB) */

/* Output tile (mt, nt) of batch item t. */
static void bfmmla_block(const mm_job *j, int64_t t, int64_t mt, int64_t nt) {
    uint16_t ap[MC * KC], bp[KC * NC];
    float cp[MC * NC];
    size_t oa, ob, oc;
    cpukit_mm_item_offsets(&j->g, t, j->esize, &oa, &ob, &oc);
    int64_t i0 = mt * MC, j0 = nt * NC;
    int64_t mc = j->g.m - i0 < MC ? j->g.m - i0 : MC, nc = j->g.n - j0 < NC ? j->g.n - j0 : NC;
    int64_t mc_pad = mm_round_up(mc, 8), nc_pad = mm_round_up(nc, 8);
    const uint16_t *a = (const uint16_t *)(j->a + oa) + i0 * j->g.sam;
    const uint16_t *b = (const uint16_t *)(j->b + ob) + j0 * j->g.sbn;
    memset(cp, 0, sizeof cp);
    for (int64_t k0 = 0; k0 < j->g.k; k0 += KC) {
        int64_t kc = j->g.k - k0 < KC ? j->g.k - k0 : KC;
        bfmmla_pack(ap, KC, a + k0 * j->g.sak, mc, mc_pad, kc, j->g.sam, j->g.sak);
        bfmmla_pack(bp, KC, b + k0 * j->g.sbk, nc, nc_pad, kc, j->g.sbn, j->g.sbk);
        bfmmla_product(KC, mm_round_up(kc, 4), ap, bp, cp, NC, mc_pad, nc_pad);
    }
    char *c = j->c + oc + (size_t)(i0 * j->g.scm + j0 * j->g.scn) * j->esize;
    for (int64_t r = 0; r < mc; r++)
        mm_store_f32(c + (size_t)(r * j->g.scm) * j->esize, j->dt, j->g.scn, cp + r * NC, nc);
}

void mm_matmul_bfmmla(const bp_kernel_call *call, const arm_exec *ex) {
    mm_job j;
    if (!mm_job_of(call, &j))
        return;
    j.block = bfmmla_block;
    mm_run_tiles(&j, ex);
}
