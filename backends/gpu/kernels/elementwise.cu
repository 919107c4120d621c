/* gpu kernels of the elementwise family (the host's elementwise ops launch them):
 *
 *   ew_unary_<dt>, ew_binary_<dt>   float math (f32, f16, bf16), computed in f32;
 *                                   ew_binary_<dt> also add, sub, mul of i32 and i64
 *   ew_move_<size>, ew_fill_<size>  copies within a dtype and fills, by element size
 *   ew_where_<size>                 out = cond ? a : b, by element size
 *   ew_convert_<dt>                 copy into dtype <dt> from any dtype
 *   ew_reduce_block_<dt>            sum, max, mean: one block per row (i32 and i64:
 *                                   sum and max)
 *   ew_reduce_thread_<dt>           the same, one thread per row
 *   ew_softmax_warp<E>_<dt>         softmax, one warp per row of up to GPU_WARP * E elements,
 *                                   held in registers
 *   ew_softmax_block_<dt>           softmax, one block per row (shared memory cache)
 *   ew_norm_<dt>                    rmsnorm and layernorm, one block per row (likewise)
 *   ew_rope_<dt>                    rotary embedding, one thread per rotated pair
 *
 * Elementwise kernels walk a gpu_ew_layout (the host's plan of the operands) with
 * grid-stride loops over int64 indices; contiguous operands (and rows of them, with
 * broadcasts along the last dim) take 16-byte loads and stores where the pointers are
 * 16-byte aligned. Row kernels get the rows as a gpu_ew_rows. Semantics follow the cpu
 * kernels (ops/cpu/): float results round to nearest even, reductions accumulate in
 * f32, NaN wins a max; integers compute in their own type and wrap around. */
#include "elementwise_common.cuh"

/* ---- elementwise maps over same-dtype operands ---- */

/* Stride of operand k in the last dim of L. */
__device__ __forceinline__ int64_t last_stride(const gpu_ew_layout &L, int k) {
    int64_t s = 0;
#pragma unroll
    for (int d = 0; d < GPU_EW_MAX_DIMS; d++)
        if (d == L.ndim - 1)
            s = L.strides[k][d];
    return s;
}

/* The pack at p, or V copies of *p for an operand broadcast along the last dim. */
template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T *p, bool broadcast) {
    Pack<T> r;
    if (broadcast) {
        const T v = *p;
#pragma unroll
        for (int e = 0; e < Pack<T>::N; e++)
            r.v[e] = v;
    } else {
        r = *reinterpret_cast<const Pack<T> *>(p);
    }
    return r;
}

/* f() (NIN 0), f(a) or f(a, b) element by element, over packs. */
template <int NIN, typename T, typename F>
__device__ __forceinline__ Pack<T> map_pack(F f, const Pack<T> &pa, const Pack<T> &pb) {
    Pack<T> r;
#pragma unroll
    for (int e = 0; e < Pack<T>::N; e++) {
        if constexpr (NIN == 0)
            r.v[e] = f();
        else if constexpr (NIN == 1)
            r.v[e] = f(pa.v[e]);
        else
            r.v[e] = f(pa.v[e], pb.v[e]);
    }
    return r;
}

/* out = f(), f(a) or f(a, b) for NIN = 0, 1 or 2, element by element, over layout L
 * (operand 0 out, then a, then b). f takes and returns stored values of T. The host's
 * L.path says how: GPU_EW_FLAT and GPU_EW_INNER take 16-byte packs where the pointers are
 * 16-byte aligned, else (and for GPU_EW_STRIDED) element by element. */
template <int NIN, typename T, typename F>
__device__ __forceinline__ void map(T *out, const T *a, const T *b, const gpu_ew_layout &L, F f) {
    constexpr int V = Pack<T>::N;
    const int64_t n = L.numel;
    if (L.path == GPU_EW_FLAT) {
        const bool vec =
            aligned16(out) && (NIN < 1 || aligned16(a)) && (NIN < 2 || aligned16(b));
        const int64_t nvec = vec ? n / V : 0;
        for (int64_t v = thread_index(); v < nvec; v += thread_count()) {
            const Pack<T> pa = NIN >= 1 ? load_pack(a + v * V, false) : Pack<T>();
            const Pack<T> pb = NIN >= 2 ? load_pack(b + v * V, false) : Pack<T>();
            *reinterpret_cast<Pack<T> *>(out + v * V) = map_pack<NIN>(f, pa, pb);
        }
        for (int64_t i = nvec * V + thread_index(); i < n; i += thread_count()) {
            if constexpr (NIN == 0)
                out[i] = f();
            else if constexpr (NIN == 1)
                out[i] = f(a[i]);
            else
                out[i] = f(a[i], b[i]);
        }
        return;
    }
    if (L.path == GPU_EW_INNER) {
        const bool a_bcast = NIN >= 1 && last_stride(L, 1) == 0;
        const bool b_bcast = NIN >= 2 && last_stride(L, 2) == 0;
        if (aligned16(out) && (NIN < 1 || a_bcast || aligned16(a)) &&
            (NIN < 2 || b_bcast || aligned16(b))) {
            for (int64_t v = thread_index(); v < n / V; v += thread_count()) {
                int64_t off[NIN + 1];
                layout_offsets(L, v * V, off);
                Pack<T> pa, pb;
                if constexpr (NIN >= 1)
                    pa = load_pack(a + off[1], a_bcast);
                if constexpr (NIN >= 2)
                    pb = load_pack(b + off[2], b_bcast);
                *reinterpret_cast<Pack<T> *>(out + off[0]) = map_pack<NIN>(f, pa, pb);
            }
            return;
        }
    }
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        int64_t off[NIN + 1];
        layout_offsets(L, i, off);
        if constexpr (NIN == 0)
            out[off[0]] = f();
        else if constexpr (NIN == 1)
            out[off[0]] = f(a[off[1]]);
        else
            out[off[0]] = f(a[off[1]], b[off[2]]);
    }
}

/* ---- float math ---- */

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

/* 0.5 x (1 + erf(x / sqrt 2)), written with erfc, which keeps its precision for negative
 * x where 1 + erf cancels (as the cpu kernel). */
__device__ __forceinline__ float gelu_erf(float x) {
    return 0.5f * x * erfcf(-x * 0.70710678118654752f);
}

__device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <typename T>
__device__ __forceinline__ void unary(T *out, const T *in, const gpu_ew_layout &L, int op, float p) {
    switch (op) {
    case GPU_EW_SCALE:
        map<1>(out, in, in, L, [p](T x) { return from_f32<T>(to_f32(x) * p); });
        break;
    case GPU_EW_EXP:
        map<1>(out, in, in, L, [](T x) { return from_f32<T>(expf(to_f32(x))); });
        break;
    case GPU_EW_TANH:
        map<1>(out, in, in, L, [](T x) { return from_f32<T>(tanhf(to_f32(x))); });
        break;
    case GPU_EW_SILU:
        map<1>(out, in, in, L, [](T x) { return from_f32<T>(silu(to_f32(x))); });
        break;
    case GPU_EW_GELU_ERF:
        map<1>(out, in, in, L, [](T x) { return from_f32<T>(gelu_erf(to_f32(x))); });
        break;
    case GPU_EW_GELU_TANH:
        map<1>(out, in, in, L, [](T x) { return from_f32<T>(gelu_tanh(to_f32(x))); });
        break;
    default:
        break;
    }
}

template <typename T>
__device__ __forceinline__ void binary(T *out, const T *a, const T *b, const gpu_ew_layout &L,
                                       int op) {
    switch (op) {
    case GPU_EW_ADD:
        map<2>(out, a, b, L, [](T x, T y) { return from_f32<T>(to_f32(x) + to_f32(y)); });
        break;
    case GPU_EW_SUB:
        map<2>(out, a, b, L, [](T x, T y) { return from_f32<T>(to_f32(x) - to_f32(y)); });
        break;
    case GPU_EW_MUL:
        map<2>(out, a, b, L, [](T x, T y) { return from_f32<T>(to_f32(x) * to_f32(y)); });
        break;
    case GPU_EW_DIV:
        map<2>(out, a, b, L, [](T x, T y) { return from_f32<T>(to_f32(x) / to_f32(y)); });
        break;
    default:
        break;
    }
}

/* Integer add, sub and mul, wrapping around (there is no integer div). */
template <typename T>
__device__ __forceinline__ void int_binary(T *out, const T *a, const T *b, const gpu_ew_layout &L,
                                           int op) {
    switch (op) {
    case GPU_EW_ADD: map<2>(out, a, b, L, [](T x, T y) { return wrap_add(x, y); }); break;
    case GPU_EW_SUB: map<2>(out, a, b, L, [](T x, T y) { return wrap_sub(x, y); }); break;
    case GPU_EW_MUL: map<2>(out, a, b, L, [](T x, T y) { return wrap_mul(x, y); }); break;
    default: break;
    }
}

/* ---- moves, fills, where (by element size: the bytes are copied as they are) ---- */

template <typename T>
__device__ __forceinline__ void move(T *out, const T *in, const gpu_ew_layout &L) {
    map<1>(out, in, in, L, [](T x) { return x; });
}

/* `bits` holds the element in its low sizeof(T) bytes. */
template <typename T>
__device__ __forceinline__ void fill(T *out, const gpu_ew_layout &L, uint64_t bits) {
    const T value = (T)bits;
    map<0>(out, out, out, L, [value]() { return value; });
}

template <typename T>
__device__ __forceinline__ void where(T *out, const uint8_t *cond, const T *a, const T *b,
                                      const gpu_ew_layout &L) {
    for (int64_t i = thread_index(); i < L.numel; i += thread_count()) {
        int64_t off[4];
        layout_offsets(L, i, off);
        out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
    }
}

/* ---- conversions between any two dtypes ----
 * As the cpu kernels (ops/cpu/copy.c): float sources widen exactly to double and
 * integer sources to int64, so that each conversion rounds once. Into f16 or bf16 a
 * value is first rounded to f32 "to odd" (toward zero, then the last bit set when
 * inexact): f32 keeps more than two extra bits, so rounding that to nearest even is
 * the single rounding of the exact value. Floats to integers truncate toward zero
 * through int64 (NaN gives 0, out of range saturates) and then wrap to the narrower
 * type; anything to bool is != 0. */

/* bool as stored: one byte, 0 or 1 when written by us. */
struct Bool8 {
    uint8_t v;
};

__device__ __forceinline__ float odd_float_from_double(double d) {
    float f = gpu_double2float_rz(d);
    if ((double)f != d && !isnan(d))
        f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}

__device__ __forceinline__ float odd_float_from_int(int64_t v) {
    float f = gpu_ll2float_rz(v); /* never beyond int64's range: |f| <= 2^63 */
    if (__float2ll_rz(f) != v)
        f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}

__device__ __forceinline__ int64_t trunc_to_i64(double d) {
    if (isnan(d))
        return 0;
    if (d >= 9223372036854775808.0)
        return INT64_MAX;
    if (d <= -9223372036854775808.0)
        return INT64_MIN;
    return __double2ll_rz(d);
}

template <typename TD> __device__ __forceinline__ TD from_double(double d);
template <typename TD> __device__ __forceinline__ TD from_int(int64_t v);

template <> __device__ __forceinline__ float from_double<float>(double d) {
    return __double2float_rn(d);
}
template <> __device__ __forceinline__ float from_int<float>(int64_t v) {
    return __ll2float_rn(v);
}
template <> __device__ __forceinline__ gpu_f16 from_double<gpu_f16>(double d) {
    return gpu_f32_to_f16_rn(odd_float_from_double(d));
}
template <> __device__ __forceinline__ gpu_f16 from_int<gpu_f16>(int64_t v) {
    return gpu_f32_to_f16_rn(odd_float_from_int(v));
}
template <> __device__ __forceinline__ gpu_bf16 from_double<gpu_bf16>(double d) {
    return gpu_f32_to_bf16_rn(odd_float_from_double(d));
}
template <> __device__ __forceinline__ gpu_bf16 from_int<gpu_bf16>(int64_t v) {
    return gpu_f32_to_bf16_rn(odd_float_from_int(v));
}
template <> __device__ __forceinline__ double from_double<double>(double d) { return d; }
template <> __device__ __forceinline__ double from_int<double>(int64_t v) {
    return __ll2double_rn(v);
}
template <> __device__ __forceinline__ int8_t from_double<int8_t>(double d) {
    return (int8_t)trunc_to_i64(d);
}
template <> __device__ __forceinline__ int8_t from_int<int8_t>(int64_t v) { return (int8_t)v; }
template <> __device__ __forceinline__ uint8_t from_double<uint8_t>(double d) {
    return (uint8_t)trunc_to_i64(d);
}
template <> __device__ __forceinline__ uint8_t from_int<uint8_t>(int64_t v) { return (uint8_t)v; }
template <> __device__ __forceinline__ int32_t from_double<int32_t>(double d) {
    return (int32_t)trunc_to_i64(d);
}
template <> __device__ __forceinline__ int32_t from_int<int32_t>(int64_t v) { return (int32_t)v; }
template <> __device__ __forceinline__ int64_t from_double<int64_t>(double d) {
    return trunc_to_i64(d);
}
template <> __device__ __forceinline__ int64_t from_int<int64_t>(int64_t v) { return v; }
template <> __device__ __forceinline__ Bool8 from_double<Bool8>(double d) {
    return Bool8{(uint8_t)(d != 0.0)};
}
template <> __device__ __forceinline__ Bool8 from_int<Bool8>(int64_t v) {
    return Bool8{(uint8_t)(v != 0)};
}

/* A stored source element as TD. */
template <typename TD> __device__ __forceinline__ TD convert(float x) { return from_double<TD>(x); }
template <typename TD> __device__ __forceinline__ TD convert(gpu_f16 x) {
    return from_double<TD>(gpu_to_f32(x));
}
template <typename TD> __device__ __forceinline__ TD convert(gpu_bf16 x) {
    return from_double<TD>(gpu_to_f32(x));
}
template <typename TD> __device__ __forceinline__ TD convert(double x) {
    return from_double<TD>(x);
}
template <typename TD> __device__ __forceinline__ TD convert(int8_t x) { return from_int<TD>(x); }
template <typename TD> __device__ __forceinline__ TD convert(uint8_t x) { return from_int<TD>(x); }
template <typename TD> __device__ __forceinline__ TD convert(int32_t x) { return from_int<TD>(x); }
template <typename TD> __device__ __forceinline__ TD convert(int64_t x) { return from_int<TD>(x); }
template <typename TD> __device__ __forceinline__ TD convert(Bool8 x) {
    return from_int<TD>(x.v != 0);
}

template <typename TD, typename TS>
__device__ __forceinline__ void convert_all(TD *out, const TS *in, const gpu_ew_layout &L) {
    for (int64_t i = thread_index(); i < L.numel; i += thread_count()) {
        int64_t off[2];
        layout_offsets(L, i, off);
        out[off[0]] = convert<TD>(in[off[1]]);
    }
}

/* out (dtype TD) = in, of source dtype `src` (GPU_EW_F32 ...). */
template <typename TD>
__device__ __forceinline__ void convert_from(TD *out, const void *in, const gpu_ew_layout &L,
                                             int src) {
    switch (src) {
    case GPU_EW_F32: convert_all(out, (const float *)in, L); break;
    case GPU_EW_F16: convert_all(out, (const gpu_f16 *)in, L); break;
    case GPU_EW_BF16: convert_all(out, (const gpu_bf16 *)in, L); break;
    case GPU_EW_F64: convert_all(out, (const double *)in, L); break;
    case GPU_EW_I8: convert_all(out, (const int8_t *)in, L); break;
    case GPU_EW_U8: convert_all(out, (const uint8_t *)in, L); break;
    case GPU_EW_I32: convert_all(out, (const int32_t *)in, L); break;
    case GPU_EW_I64: convert_all(out, (const int64_t *)in, L); break;
    case GPU_EW_BOOL: convert_all(out, (const Bool8 *)in, L); break;
    default: break;
    }
}

/* ---- a row for a block ----
 * Block kernels pass over their row several times, and a thread owns the same elements
 * in every pass: with `packs` (row_packs: the row contiguous, 16-byte aligned and a whole
 * number of packs) packs threadIdx.x, threadIdx.x + blockDim.x, ..., else elements
 * likewise. So a row cached in shared memory (`cache`: len floats, or NULL) needs no
 * barriers: each thread reads back only what it wrote itself. Values are Value<T>'s:
 * f32, or the integer itself (integer rows are only reduced, never cached). */

template <typename T>
__device__ __forceinline__ bool row_packs(const T *x, int64_t len, int64_t stride) {
    return stride == 1 && len % Pack<T>::N == 0 && aligned16(x);
}

/* The values of pack p of row x: the cache's, or x's as loaded. */
template <typename T>
__device__ __forceinline__ void row_pack(const T *x, int64_t p,
                                         const typename Value<T>::type *cache,
                                         typename Value<T>::type (&v)[Pack<T>::N]) {
    constexpr int V = Pack<T>::N;
    if (cache) {
#pragma unroll
        for (int e = 0; e < V; e++)
            v[e] = cache[p * V + e];
    } else {
        const Pack<T> pk = *reinterpret_cast<const Pack<T> *>(x + p * V);
#pragma unroll
        for (int e = 0; e < V; e++)
            v[e] = load_value(pk.v[e]);
    }
}

/* f(j, value) for each element j of the row that the thread owns: the cache's value when
 * `cache` is set, else x_j as loaded. */
template <typename T, typename F>
__device__ __forceinline__ void row_for_each(const T *x, int64_t len, int64_t stride, bool packs,
                                             const typename Value<T>::type *cache, F f) {
    constexpr int V = Pack<T>::N;
    if (packs) {
        for (int64_t p = threadIdx.x; p < len / V; p += blockDim.x) {
            typename Value<T>::type v[V];
            row_pack(x, p, cache, v);
#pragma unroll
            for (int e = 0; e < V; e++)
                f(p * V + e, v[e]);
        }
    } else {
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
            f(j, cache ? cache[j] : load_value(x[j * stride]));
    }
}

/* y_j = value(j, v) for the elements the thread owns, v as row_for_each gives it; 16-byte
 * stores when the output row is contiguous and aligned too. */
template <typename T, typename F>
__device__ __forceinline__ void row_store(T *y, int64_t out_stride, const T *x, int64_t len,
                                          int64_t stride, bool packs, const float *cache,
                                          F value) {
    constexpr int V = Pack<T>::N;
    if (packs && out_stride == 1 && aligned16(y)) {
        for (int64_t p = threadIdx.x; p < len / V; p += blockDim.x) {
            float v[V];
            row_pack(x, p, cache, v);
            Pack<T> o;
#pragma unroll
            for (int e = 0; e < V; e++)
                o.v[e] = from_f32<T>(value(p * V + e, v[e]));
            *reinterpret_cast<Pack<T> *>(y + p * V) = o;
        }
    } else {
        row_for_each(x, len, stride, packs, cache,
                     [&](int64_t j, float v) { y[j * out_stride] = from_f32<T>(value(j, v)); });
    }
}

/* ---- reductions over rows ----
 * Float rows accumulate in f32; integer rows in their own type, sums wrapping around
 * (so the order of the terms does not matter), as the cpu's. A sum of an empty row is
 * 0; max never gets one (the op rejects it); mean is for the float dtypes only. */

/* The block's sum (or max) of row x. */
template <int OP, typename T>
__device__ __forceinline__ typename Value<T>::type row_reduce(const T *x, int64_t len,
                                                              int64_t stride,
                                                              typename Value<T>::type *part) {
    typedef typename Value<T>::type V;
    V acc = identity<OP, V>();
    row_for_each(x, len, stride, row_packs(x, len, stride), nullptr,
                 [&](int64_t, V v) { acc = combine<OP>(acc, v); });
    return block_reduce<OP>(acc, part);
}

/* *y = a row's result: mean divides the sum by len (an empty row's 0 / 0 is NaN, as the
 * cpu's). */
template <typename T>
__device__ __forceinline__ void store_result(T *y, float res, int op, int64_t len) {
    *y = from_f32<T>(op == GPU_EW_MEAN ? res / (float)len : res);
}
__device__ __forceinline__ void store_result(int32_t *y, int32_t res, int, int64_t) { *y = res; }
__device__ __forceinline__ void store_result(int64_t *y, int64_t res, int, int64_t) { *y = res; }

/* One block per row: out[row] = sum, max or mean of the input row. */
template <typename T>
__device__ __forceinline__ void reduce_block(T *out, const T *in, const gpu_ew_rows &R, int op) {
    typedef typename Value<T>::type V;
    __shared__ V part[BLOCK_WARPS_MAX];
    for (int64_t r = blockIdx.x; r < R.rows.numel; r += gridDim.x) {
        int64_t off[2];
        layout_offsets(R.rows, r, off);
        const T *x = in + off[1];
        const V res = op == GPU_EW_MAX ? row_reduce<RED_MAX>(x, R.len, R.in_stride, part)
                                      : row_reduce<RED_SUM>(x, R.len, R.in_stride, part);
        if (threadIdx.x == 0)
            store_result(out + off[0], res, op, R.len);
    }
}

/* Terms a thread adds up before adding them to its total: the rounding error then grows
 * with len / CHUNK + CHUNK rather than len. */
#define REDUCE_CHUNK 128

/* One thread per row (rows whose elements are far apart, or short). */
template <typename T>
__device__ __forceinline__ void reduce_thread(T *out, const T *in, const gpu_ew_rows &R, int op) {
    typedef typename Value<T>::type V;
    const int64_t len = R.len, stride = R.in_stride;
    for (int64_t r = thread_index(); r < R.rows.numel; r += thread_count()) {
        int64_t off[2];
        layout_offsets(R.rows, r, off);
        const T *x = in + off[1];
        V res;
        if (op == GPU_EW_MAX) {
            res = identity<RED_MAX, V>();
            for (int64_t j = 0; j < len; j++)
                res = combine<RED_MAX>(res, load_value(x[j * stride]));
        } else {
            res = 0;
            for (int64_t j0 = 0; j0 < len; j0 += REDUCE_CHUNK) {
                const int64_t j1 = len - j0 < REDUCE_CHUNK ? len : j0 + REDUCE_CHUNK;
                V chunk = 0;
                for (int64_t j = j0; j < j1; j++)
                    chunk = combine<RED_SUM>(chunk, load_value(x[j * stride]));
                res = combine<RED_SUM>(res, chunk);
            }
        }
        store_result(out + off[0], res, op, len);
    }
}

/* ---- softmax ----
 * Of row r of x * scale. With `causal`, the row keeps elements j <= r % sq (its index in
 * dim -2) and the rest become 0. Kept elements become exp(x_j * scale - m) / sum, m the
 * max of the kept logits, as the cpu's; the exponentials are taken as exp2(x_j * scale *
 * log2(e) - m'), which differs from expf by a few f32 ulps. The max leaves NaN out
 * (fmaxf): a NaN still makes the sum, and so every kept element, NaN, as the cpu's NaN
 * max does. A row whose max is not finite gets the cpu's results directly
 * (softmax_nonfinite). */

#define LOG2E 1.4426950408889634f

/* Elements of row r that take part (the rest become 0). */
__device__ __forceinline__ int64_t softmax_kept(int64_t r, int64_t len, int causal, int64_t sq) {
    if (!causal)
        return len;
    const int64_t last = r % sq + 1;
    return last < len ? last : len;
}

/* A kept element of a row whose max m (NaN left out) is not finite: 0 when every kept
 * logit is -inf, else NaN (the cpu's max is then +inf or NaN, and so is every result). */
__device__ __forceinline__ float softmax_nonfinite(float m, bool any_nan) {
    return m == -INFINITY && !any_nan ? 0.0f : NAN;
}

/* One row for one warp, each lane holding EPL elements in registers: element
 * (p * GPU_WARP + lane) * V + e of the row is v[p * V + e], so that the warp's 16-byte
 * loads of pack p cover GPU_WARP * 16 contiguous bytes. FAST: the row has exactly
 * GPU_WARP * EPL elements, all
 * kept, contiguous and 16-byte aligned in and out, so nothing is masked; otherwise
 * elements past `kept` are masked and the loads and stores are vectorized where vec_in
 * and vec_out say. */
template <typename T, int EPL, bool FAST>
__device__ __forceinline__ void softmax_warp_row(const T *x, T *y, int len, int kept, int64_t is,
                                                 int64_t os, float k2, bool vec_in,
                                                 bool vec_out) {
    constexpr int V = Pack<T>::N;
    constexpr int P = EPL / V;
    const int lane = threadIdx.x % GPU_WARP;
    float v[EPL];
#pragma unroll
    for (int p = 0; p < P; p++) {
        const int base = (p * GPU_WARP + lane) * V;
        if (FAST || (vec_in && base < len)) {
            const Pack<T> pk = *reinterpret_cast<const Pack<T> *>(x + base);
#pragma unroll
            for (int e = 0; e < V; e++)
                v[p * V + e] = to_f32(pk.v[e]);
        } else {
#pragma unroll
            for (int e = 0; e < V; e++)
                v[p * V + e] = base + e < len ? to_f32(x[(int64_t)(base + e) * is]) : 0.0f;
        }
#pragma unroll
        for (int e = 0; e < V; e++)
            v[p * V + e] = FAST || base + e < kept ? v[p * V + e] * k2 : -INFINITY;
    }

    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < EPL; k++)
        m = fmaxf(m, v[k]);
    m = warp_reduce<RED_FMAX>(m);
    if (isfinite(m)) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < EPL; k++) {
            v[k] = exp2f(v[k] - m); /* 0 for the masked -inf */
            s += v[k];
        }
        const float inv = 1.0f / warp_reduce<RED_SUM>(s);
#pragma unroll
        for (int k = 0; k < EPL; k++)
            v[k] *= inv;
    } else {
        bool any_nan = false;
#pragma unroll
        for (int k = 0; k < EPL; k++)
            any_nan |= isnan(v[k]) != 0;
        const float kept_value = softmax_nonfinite(m, gpu_any(any_nan));
#pragma unroll
        for (int k = 0; k < EPL; k++)
            v[k] = kept_value;
    }

#pragma unroll
    for (int p = 0; p < P; p++) {
        const int base = (p * GPU_WARP + lane) * V;
        if (!FAST) { /* masked elements are 0, even when the sum is NaN */
#pragma unroll
            for (int e = 0; e < V; e++)
                v[p * V + e] = base + e < kept ? v[p * V + e] : 0.0f;
        }
        if (FAST || (vec_out && base < len)) {
            Pack<T> pk;
#pragma unroll
            for (int e = 0; e < V; e++)
                pk.v[e] = from_f32<T>(v[p * V + e]);
            *reinterpret_cast<Pack<T> *>(y + base) = pk;
        } else {
#pragma unroll
            for (int e = 0; e < V; e++)
                if (base + e < len)
                    y[(int64_t)(base + e) * os] = from_f32<T>(v[p * V + e]);
        }
    }
}

/* One warp per row, for rows of up to GPU_WARP * EPL elements.
 * Host (lanes): the block is a multiple of GPU_WARP threads (GPU_EW_SOFTMAX_WARP_BLOCK,
 * 128: two wavefronts of 64, four warps of 32), each warp takes rows (grid-stride, so
 * any grid is correct), and the host picks the smallest EPL with len <= warp size * EPL
 * and sizes the grid with block / warp size rows a block, using the device's warp size
 * (a host that assumes 32 lanes on a wave64 device is still correct: it picks an EPL
 * twice as large as needed and twice the blocks). */
template <typename T, int EPL>
__device__ __forceinline__ void softmax_warp(T *out, const T *in, const gpu_ew_rows &R,
                                             float scale, int causal, int64_t sq) {
    constexpr int V = Pack<T>::N;
    static_assert(EPL % V == 0, "a lane holds whole packs");
    const int64_t warps = blockDim.x / GPU_WARP;
    const int len = (int)R.len; /* <= GPU_WARP * EPL */
    const int64_t is = R.in_stride, os = R.out_stride;
    const float k2 = scale * LOG2E;
    for (int64_t r = (int64_t)blockIdx.x * warps + (threadIdx.x / GPU_WARP); r < R.rows.numel;
         r += (int64_t)gridDim.x * warps) {
        int64_t off[2];
        layout_offsets(R.rows, r, off);
        const T *x = in + off[1];
        T *y = out + off[0];
        const int kept = (int)softmax_kept(r, len, causal, sq);
        const bool vec_in = is == 1 && len % V == 0 && aligned16(x);
        const bool vec_out = os == 1 && len % V == 0 && aligned16(y);
        if (vec_in && vec_out && kept == GPU_WARP * EPL)
            softmax_warp_row<T, EPL, true>(x, y, len, kept, is, os, k2, true, true);
        else
            softmax_warp_row<T, EPL, false>(x, y, len, kept, is, os, k2, vec_in, vec_out);
    }
}

/* One block per row, for rows longer than the warp kernel takes, the row cached in
 * shared memory when `cache` (see "a row for a block"). */
template <typename T>
__device__ __forceinline__ void softmax_block(T *out, const T *in, const gpu_ew_rows &R,
                                              float scale, int causal, int64_t sq, int cache) {
    extern __shared__ float row[];
    __shared__ float part[BLOCK_WARPS_MAX];
    const int64_t len = R.len, is = R.in_stride, os = R.out_stride;
    const float k2 = scale * LOG2E;
    float *const c = cache ? row : nullptr;
    for (int64_t r = blockIdx.x; r < R.rows.numel; r += gridDim.x) {
        int64_t off[2];
        layout_offsets(R.rows, r, off);
        const T *x = in + off[1];
        T *y = out + off[0];
        const int64_t kept = softmax_kept(r, len, causal, sq);
        const bool packs = row_packs(x, len, is);
        /* the scaled logit of a value that row_for_each gives (the cache holds them) */
        auto logit = [&](float v) { return c ? v : v * k2; };
        float m = -INFINITY;
        row_for_each(x, len, is, packs, nullptr, [&](int64_t j, float v) {
            if (j < kept) {
                v *= k2;
                if (c)
                    c[j] = v;
                m = fmaxf(m, v);
            }
        });
        m = block_reduce<RED_FMAX>(m, part);
        if (isfinite(m)) {
            float s = 0.0f;
            row_for_each(x, len, is, packs, c, [&](int64_t j, float v) {
                if (j < kept) {
                    const float e = exp2f(logit(v) - m);
                    if (c)
                        c[j] = e; /* the cache now holds the exponentials */
                    s += e;
                }
            });
            const float inv = 1.0f / block_reduce<RED_SUM>(s, part);
            row_store(y, os, x, len, is, packs, c, [&](int64_t j, float v) {
                return j < kept ? (c ? v : exp2f(v * k2 - m)) * inv : 0.0f;
            });
        } else {
            float any_nan = 0.0f;
            row_for_each(x, len, is, packs, c, [&](int64_t j, float v) {
                if (j < kept && isnan(logit(v)))
                    any_nan = 1.0f;
            });
            const float kept_value =
                softmax_nonfinite(m, block_reduce<RED_FMAX>(any_nan, part) > 0.0f);
            row_store(y, os, x, len, is, packs, c,
                      [&](int64_t j, float) { return j < kept ? kept_value : 0.0f; });
        }
    }
}

/* ---- rmsnorm, layernorm ----
 * One block per row: y = (x - mean) * rstd * w + b, with mean 0 unless `center`
 * (layernorm) and rstd = 1 / sqrt(mean((x - mean)^2) + eps); w and b NULL when absent.
 * The row is cached in shared memory when `cache` (see "a row for a block"). */
template <typename T>
__device__ __forceinline__ void norm(T *out, const T *in, const gpu_ew_rows &R, const T *w,
                                     int64_t ws, const T *b, int64_t bs, float eps, int center,
                                     int cache) {
    extern __shared__ float row[];
    __shared__ float part[BLOCK_WARPS_MAX];
    const int64_t len = R.len, is = R.in_stride, os = R.out_stride;
    float *const c = cache ? row : nullptr;
    for (int64_t r = blockIdx.x; r < R.rows.numel; r += gridDim.x) {
        int64_t off[2];
        layout_offsets(R.rows, r, off);
        const T *x = in + off[1];
        T *y = out + off[0];
        const bool packs = row_packs(x, len, is);
        /* the mean (layernorm) or the mean square (rmsnorm) */
        float acc = 0.0f;
        row_for_each(x, len, is, packs, nullptr, [&](int64_t j, float v) {
            if (c)
                c[j] = v;
            acc += center ? v : v * v;
        });
        acc = block_reduce<RED_SUM>(acc, part) / (float)len;
        float mean = 0.0f, var = acc;
        if (center) {
            mean = acc;
            float d2 = 0.0f;
            row_for_each(x, len, is, packs, c, [&](int64_t, float v) {
                const float d = v - mean;
                d2 += d * d;
            });
            var = block_reduce<RED_SUM>(d2, part) / (float)len;
        }
        const float rstd = 1.0f / sqrtf(var + eps);
        row_store(y, os, x, len, is, packs, c, [&](int64_t j, float v) {
            float o = (v - mean) * rstd;
            if (w)
                o *= to_f32(w[j * ws]);
            if (b)
                o += to_f32(b[j * bs]);
            return o;
        });
    }
}

/* ---- rope ----
 * Pair i of row r: elements (i, i + len/2), or (2i, 2i + 1) when interleaved, rotated by
 * the angle position * theta^(-2i/len), position = pos_offset + r % seq (the row's index
 * in dim -2). The angle is taken in double, as the cpu's: it reaches thousands of
 * radians, where f32 would lose the bits that cos and sin depend on; reduced to
 * [-pi, pi] in double, its sine and cosine are then exact enough in f32. */

/* angle - k * 2 pi for the k that leaves it in [-pi, pi], with 2 pi in two parts so that
 * k * 2 pi is exact to about 2^-100. */
__device__ __forceinline__ float reduce_angle(double angle) {
    const double two_pi_hi = 6.283185307179586, two_pi_lo = 2.4492935982947064e-16;
    const double k = rint(angle * 0.15915494309189535);
    return (float)fma(-k, two_pi_lo, fma(-k, two_pi_hi, angle));
}

template <typename T>
__device__ __forceinline__ void rope(T *out, const T *in, const gpu_ew_rows &R, int64_t seq,
                                     float theta, int pos_offset, int interleaved) {
    const int64_t len = R.len, half = len / 2, is = R.in_stride, os = R.out_stride;
    const int64_t pairs = R.rows.numel * half;
    const double exponent_step = -2.0 * log2((double)theta) / (double)len;
    for (int64_t g = thread_index(); g < pairs; g += thread_count()) {
        const int64_t r = div_index(g, half), i = g - r * half;
        int64_t off[2];
        layout_offsets(R.rows, r, off);
        const T *x = in + off[1];
        T *y = out + off[0];
        const double pos = (double)pos_offset + (double)(r % seq);
        float s, c;
        sincosf(reduce_angle(pos * exp2(exponent_step * (double)i)), &s, &c);
        const int64_t j0 = interleaved ? 2 * i : i, j1 = interleaved ? 2 * i + 1 : i + half;
        const float x0 = to_f32(x[j0 * is]), x1 = to_f32(x[j1 * is]);
        y[j0 * os] = from_f32<T>(x0 * c - x1 * s);
        y[j1 * os] = from_f32<T>(x1 * c + x0 * s);
    }
}

/* ---- the kernels (extern "C": their names are in elementwise.def) ---- */

#define KERNEL extern "C" __global__ void __launch_bounds__(GPU_EW_MAX_BLOCK)

/* Sum, max (and, for floats, mean) over rows. */
#define REDUCE_KERNELS(dt, T)                                                                 \
    KERNEL ew_reduce_block_##dt(T *out, const T *in, gpu_ew_rows R, int op) {                  \
        reduce_block(out, in, R, op);                                                         \
    }                                                                                         \
    KERNEL ew_reduce_thread_##dt(T *out, const T *in, gpu_ew_rows R, int op) {                 \
        reduce_thread(out, in, R, op);                                                        \
    }

#define FLOAT_KERNELS(dt, T)                                                                  \
    KERNEL ew_unary_##dt(T *out, const T *in, gpu_ew_layout L, int op, float p) {              \
        unary(out, in, L, op, p);                                                             \
    }                                                                                         \
    KERNEL ew_binary_##dt(T *out, const T *a, const T *b, gpu_ew_layout L, int op) {           \
        binary(out, a, b, L, op);                                                             \
    }                                                                                         \
    REDUCE_KERNELS(dt, T)                                                                     \
    SOFTMAX_WARP(dt, T, 8)                                                                    \
    SOFTMAX_WARP(dt, T, 16)                                                                   \
    SOFTMAX_WARP(dt, T, 32)                                                                   \
    SOFTMAX_WARP(dt, T, 64)                                                                   \
    KERNEL ew_softmax_block_##dt(T *out, const T *in, gpu_ew_rows R, float scale, int causal,  \
                                 int64_t sq, int cache) {                                     \
        softmax_block(out, in, R, scale, causal, sq, cache);                                  \
    }                                                                                         \
    KERNEL ew_norm_##dt(T *out, const T *in, gpu_ew_rows R, const T *w, int64_t ws, const T *b, \
                        int64_t bs, float eps, int center, int cache) {                       \
        norm(out, in, R, w, ws, b, bs, eps, center, cache);                                   \
    }                                                                                         \
    KERNEL ew_rope_##dt(T *out, const T *in, gpu_ew_rows R, int64_t seq, float theta,          \
                        int pos_offset, int interleaved) {                                    \
        rope(out, in, R, seq, theta, pos_offset, interleaved);                                \
    }

/* NVIDIA: at most 128 registers a thread, so that 16 warps (rows) fit on an SM; the
 * longest rows (EPL 64) fit in that without spilling. */
#define SOFTMAX_WARP(dt, T, EPL)                                                              \
    extern "C" __global__ void GPU_LAUNCH_BOUNDS(GPU_EW_SOFTMAX_WARP_BLOCK, 4)                 \
        ew_softmax_warp##EPL##_##dt(T *out, const T *in, gpu_ew_rows R, float scale,           \
                                    int causal, int64_t sq) {                                 \
        softmax_warp<T, EPL>(out, in, R, scale, causal, sq);                                  \
    }

FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f16, gpu_f16)
FLOAT_KERNELS(bf16, gpu_bf16)

#define INT_KERNELS(dt, T)                                                                    \
    KERNEL ew_binary_##dt(T *out, const T *a, const T *b, gpu_ew_layout L, int op) {           \
        int_binary(out, a, b, L, op);                                                         \
    }                                                                                         \
    REDUCE_KERNELS(dt, T)

INT_KERNELS(i32, int32_t)
INT_KERNELS(i64, int64_t)

#define SIZED_KERNELS(size, T)                                                                \
    KERNEL ew_move_##size(T *out, const T *in, gpu_ew_layout L) { move(out, in, L); }          \
    KERNEL ew_fill_##size(T *out, gpu_ew_layout L, uint64_t bits) { fill(out, L, bits); }      \
    KERNEL ew_where_##size(T *out, const uint8_t *cond, const T *a, const T *b,               \
                           gpu_ew_layout L) {                                                  \
        where(out, cond, a, b, L);                                                            \
    }

SIZED_KERNELS(1, uint8_t)
SIZED_KERNELS(2, uint16_t)
SIZED_KERNELS(4, uint32_t)
SIZED_KERNELS(8, uint64_t)

#define CONVERT_KERNEL(dt, T)                                                                 \
    KERNEL ew_convert_##dt(T *out, const void *in, gpu_ew_layout L, int src) {                 \
        convert_from(out, in, L, src);                                                        \
    }

CONVERT_KERNEL(f32, float)
CONVERT_KERNEL(f16, gpu_f16)
CONVERT_KERNEL(bf16, gpu_bf16)
CONVERT_KERNEL(f64, double)
CONVERT_KERNEL(i8, int8_t)
CONVERT_KERNEL(u8, uint8_t)
CONVERT_KERNEL(i32, int32_t)
CONVERT_KERNEL(i64, int64_t)
CONVERT_KERNEL(bool, Bool8)
