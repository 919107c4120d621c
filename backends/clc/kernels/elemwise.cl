/* clc kernels of the elementwise ops, built per dtype (BP_DT): floats compute in
 * f32 and round once when stored; integers wrap like unsigned arithmetic. The op is an
 * argument (the same in every work-item). */
#define OP_ADD 0
#define OP_SUB 1
#define OP_MUL 2
#define OP_DIV 3

#define OP_SCALE 0
#define OP_EXP 1
#define OP_TANH 2
#define OP_SILU 3
#define OP_GELU 4

#if IS_FLOAT
/* 0.5 x (1 + erf(x / sqrt 2)) as 0.5 x erfc(-x / sqrt 2), which keeps its precision for
 * negative x, where 1 + erf cancels. */
inline float gelu_erf(float x) {
    return 0.5f * x * erfc(-x * 0.7071067811865476f);
}

inline float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
}

__kernel void k_binary(__global T *out, tdesc od, __global const T *a, tdesc ad,
                       __global const T *b, tdesc bd, int op, long n) {
    long i = get_global_id(0);
    GUARD(i, n);
    float x = LD(a[tpos(&ad, i)]), y = LD(b[tpos(&bd, i)]);
    float r = op == OP_ADD ? x + y : op == OP_SUB ? x - y : op == OP_MUL ? x * y : x / y;
    out[tpos(&od, i)] = ST(r);
}

/* p: scale's alpha (as f32), or gelu's approximate_tanh (nonzero: the tanh form). */
__kernel void k_unary(__global T *out, tdesc od, __global const T *a, tdesc ad, int op, float p,
                      long n) {
    long i = get_global_id(0);
    GUARD(i, n);
    float x = LD(a[tpos(&ad, i)]);
    float r;
    switch (op) {
    case OP_SCALE: r = x * p; break;
    case OP_EXP: r = exp(x); break;
    case OP_TANH: r = tanh(x); break;
    case OP_SILU: r = x / (1.0f + exp(-x)); break;
    default: r = p != 0.0f ? gelu_tanh(x) : gelu_erf(x); break;
    }
    out[tpos(&od, i)] = ST(r);
}

#else /* integers: add, sub, mul */

__kernel void k_binary(__global T *out, tdesc od, __global const T *a, tdesc ad,
                       __global const T *b, tdesc bd, int op, long n) {
    long i = get_global_id(0);
    GUARD(i, n);
    UT x = (UT)a[tpos(&ad, i)], y = (UT)b[tpos(&bd, i)];
    UT r = op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y;
    out[tpos(&od, i)] = (T)r;
}

#endif
