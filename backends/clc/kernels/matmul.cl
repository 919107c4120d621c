/* clc kernel of matmul, built per dtype (BP_DT): c[..., M, N] = a[..., M, K] @
 * b[..., K, N] in f32, for any strides (the host has applied the transposes to a's
 * and b's strides) and broadcast batch dims (stride 0).
 *
 * A work-group of TS x TS work-items computes a BM x BM block of c (BM = WPT TS; TS
 * and WPT are build options), each work-item WPT x WPT elements of it (rows
 * ty + i TS, columns tx + j TS) in registers. K goes in panels of TS: the work-group
 * stages a BM x TS panel of a and a TS x BM panel of b in local memory (zero outside
 * the matrices, so edges need no special case), then every work-item accumulates its
 * outer products from there. The first `nb` dims of the
 * descriptors are the batch dims, with c's shape; the last two are the matrix dims. */
#define BM (TS * WPT)

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void k_matmul(__global T *c, tdesc cd, __global const T *a, tdesc ad, __global const T *b,
              tdesc bd, long M, long N, long K, int nb) {
    __local float as[TS][BM];
    __local float bs[TS][BM];
    int tx = (int)get_local_id(0), ty = (int)get_local_id(1), lid = ty * TS + tx;
    long col0 = (long)get_group_id(0) * BM, row0 = (long)get_group_id(1) * BM;
    long ao = ad.off, bo = bd.off, co = cd.off, t = (long)get_group_id(2);
    for (int d = nb - 1; d >= 0; d--) {
        long q = t / cd.shape[d], ix = t - q * cd.shape[d];
        ao += ix * ad.stride[d];
        bo += ix * bd.stride[d];
        co += ix * cd.stride[d];
        t = q;
    }
    long sam = ad.stride[nb], sak = ad.stride[nb + 1];
    long sbk = bd.stride[nb], sbn = bd.stride[nb + 1];
    float acc[WPT][WPT];
    for (int i = 0; i < WPT; i++)
        for (int j = 0; j < WPT; j++)
            acc[i][j] = 0.0f;
    for (long k0 = 0; k0 < K; k0 += TS) {
        for (int l = lid; l < BM * TS; l += TS * TS) {
            int r = l / TS, ka = l - r * TS; /* a: consecutive work-items walk k */
            long gr = row0 + r, gk = k0 + ka;
            as[ka][r] = gr < M && gk < K ? LD(a[ao + gr * sam + gk * sak]) : 0.0f;
            int kb = l / BM, cc = l - kb * BM; /* b: consecutive work-items walk n */
            long gkb = k0 + kb, gc = col0 + cc;
            bs[kb][cc] = gkb < K && gc < N ? LD(b[bo + gkb * sbk + gc * sbn]) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TS; kk++) {
            float av[WPT], bv[WPT];
            for (int i = 0; i < WPT; i++)
                av[i] = as[kk][ty + i * TS];
            for (int j = 0; j < WPT; j++)
                bv[j] = bs[kk][tx + j * TS];
            for (int i = 0; i < WPT; i++)
                for (int j = 0; j < WPT; j++)
                    acc[i][j] = mad(av[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    long scm = cd.stride[nb], scn = cd.stride[nb + 1];
    for (int i = 0; i < WPT; i++) {
        long r = row0 + ty + i * TS;
        for (int j = 0; j < WPT; j++) {
            long cc = col0 + tx + j * TS;
            if (r < M && cc < N)
                c[co + r * scm + cc * scn] = ST(acc[i][j]);
        }
    }
}
