/* clc kernels that only move elements, built per element size (BP_ESIZE): fill,
 * strided/broadcast copies between tensors of one dtype (copy, cat) and where.
 * Moving bits keeps NaN payloads, as the cpu kernels do. */
#if BP_ESIZE == 1
typedef uchar E;
#elif BP_ESIZE == 2
typedef ushort E;
#elif BP_ESIZE == 4
typedef uint E;
#else
typedef ulong E;
#endif

/* Every element of out becomes `bits` (the value already converted by the host). */
__kernel void k_fill(__global E *out, tdesc od, long n, ulong bits) {
    long i = get_global_id(0);
    GUARD(i, n);
    out[tpos(&od, i)] = (E)bits;
}

/* out = in, in broadcast to out's shape. */
__kernel void k_move(__global E *out, tdesc od, __global const E *in, tdesc id, long n) {
    long i = get_global_id(0);
    GUARD(i, n);
    out[tpos(&od, i)] = in[tpos(&id, i)];
}

/* out = cond ? a : b, all three broadcast to out's shape; cond is bool (a byte). */
__kernel void k_where(__global E *out, tdesc od, __global const uchar *c, tdesc cd,
                      __global const E *a, tdesc ad, __global const E *b, tdesc bd, long n) {
    long i = get_global_id(0);
    GUARD(i, n);
    out[tpos(&od, i)] = c[tpos(&cd, i)] ? a[tpos(&ad, i)] : b[tpos(&bd, i)];
}
