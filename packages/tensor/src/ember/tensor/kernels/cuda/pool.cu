// Max pooling with indices for ember-tensor (CUDA twins of kernels/cpu pooling kernels).
//
// 1-d, 2-d and 3-d pooling all run as 3-d over x (B, D, H, W), B = batch * channels, with
// size-1 leading spatial dims. Padding acts as -inf; a NaN in a window is taken as the max
// (the last NaN wins, as in PyTorch). Indices are flat offsets into one D*H*W plane (int64).
// No #include: the sources are compiled by NVRTC (CuPy RawModule) and by nvcc in the tests.

#define EMBER_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

template <typename T>
__device__ __forceinline__ T ember_neg_inf();
template <>
__device__ __forceinline__ float ember_neg_inf<float>() {
    return __int_as_float(0xff800000);
}
template <>
__device__ __forceinline__ double ember_neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000LL);
}

struct PoolGeom {
    long long B, D, H, W, oD, oH, oW;
    long long kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw;
};

// Geometry travels as plain scalars (what CuPy passes most reliably) and is packed here.
#define EMBER_POOL_PARAMS                                                                  \
    long long B, long long D, long long H, long long W, long long oD, long long oH,        \
        long long oW, long long kd, long long kh, long long kw, long long sd, long long sh, \
        long long sw, long long pd, long long ph, long long pw, long long dd, long long dh, \
        long long dw
#define EMBER_POOL_GEOM \
    PoolGeom{B, D, H, W, oD, oH, oW, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw}

template <typename T>
__device__ void max_pool_forward_impl(const T* __restrict__ x, T* __restrict__ out,
                                      long long* __restrict__ indices, const PoolGeom g) {
    const long long plane = g.D * g.H * g.W;
    const long long total = g.B * g.oD * g.oH * g.oW;
    EMBER_GRID_STRIDE(i, total) {
        const long long ow = i % g.oW;
        const long long oh = (i / g.oW) % g.oH;
        const long long od = (i / (g.oW * g.oH)) % g.oD;
        const long long b = i / (g.oW * g.oH * g.oD);
        const T* xb = x + b * plane;
        T best = ember_neg_inf<T>();
        long long best_idx = -1;
        for (long long a = 0; a < g.kd; ++a) {
            const long long id = od * g.sd - g.pd + a * g.dd;
            if (id < 0 || id >= g.D) continue;
            for (long long c = 0; c < g.kh; ++c) {
                const long long ih = oh * g.sh - g.ph + c * g.dh;
                if (ih < 0 || ih >= g.H) continue;
                for (long long e = 0; e < g.kw; ++e) {
                    const long long iw = ow * g.sw - g.pw + e * g.dw;
                    if (iw < 0 || iw >= g.W) continue;
                    const long long flat = (id * g.H + ih) * g.W + iw;
                    const T v = xb[flat];
                    if (best_idx < 0 || v > best || v != v) {
                        best = v;
                        best_idx = flat;
                    }
                }
            }
        }
        out[i] = best;
        indices[i] = best_idx;
    }
}

// grad_in (B, plane) += grad_out (B, L) routed through indices (B, L).
template <typename T>
__device__ void max_pool_backward_impl(const T* __restrict__ grad_out,
                                       const long long* __restrict__ indices,
                                       T* __restrict__ grad_in, long long B, long long L,
                                       long long plane) {
    const long long total = B * L;
    EMBER_GRID_STRIDE(i, total) {
        const long long idx = indices[i];
        if (idx < 0 || idx >= plane) continue;
        atomicAdd(grad_in + (i / L) * plane + idx, grad_out[i]);
    }
}

extern "C" __global__ void max_pool_forward_f32(const float* x, float* out, long long* indices,
                                                EMBER_POOL_PARAMS) {
    max_pool_forward_impl<float>(x, out, indices, EMBER_POOL_GEOM);
}

extern "C" __global__ void max_pool_forward_f64(const double* x, double* out,
                                                long long* indices, EMBER_POOL_PARAMS) {
    max_pool_forward_impl<double>(x, out, indices, EMBER_POOL_GEOM);
}

extern "C" __global__ void max_pool_backward_f32(const float* grad_out, const long long* indices,
                                                 float* grad_in, long long B, long long L,
                                                 long long plane) {
    max_pool_backward_impl<float>(grad_out, indices, grad_in, B, L, plane);
}

extern "C" __global__ void max_pool_backward_f64(const double* grad_out,
                                                 const long long* indices, double* grad_in,
                                                 long long B, long long L, long long plane) {
    max_pool_backward_impl<double>(grad_out, indices, grad_in, B, L, plane);
}
