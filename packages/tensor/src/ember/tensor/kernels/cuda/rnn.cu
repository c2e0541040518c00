// Fused LSTM / GRU cell pointwise math for ember-tensor (CUDA twins of kernels/cpu rnn kernels).
//
// The matrix products stay on cuBLAS; these kernels fuse the gate nonlinearities and their
// derivatives. Gate layouts follow PyTorch: LSTM gates (N, 4H) in order i, f, g, o; GRU
// gi / gh (N, 3H) in order r, z, n. One thread per (n, j) element of the hidden state,
// grid-stride, 64-bit indexing. Optional gradients (has_* = 0) are never read.
// No #include: the sources are compiled by NVRTC (CuPy RawModule) and by nvcc in the tests.

#define EMBER_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ float ember_exp(float v) { return expf(v); }
__device__ __forceinline__ double ember_exp(double v) { return exp(v); }
__device__ __forceinline__ float ember_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double ember_tanh(double v) { return tanh(v); }

template <typename T>
__device__ __forceinline__ T ember_sigmoid(T v) {
    return (T)1 / ((T)1 + ember_exp(-v));
}

// act = [sig(i), sig(f), tanh(g), sig(o)], c = f*c_prev + i*g, tanh_c = tanh(c), h = o*tanh_c
template <typename T>
__device__ void lstm_cell_forward_impl(const T* __restrict__ gates, const T* __restrict__ c_prev,
                                       T* __restrict__ h, T* __restrict__ c,
                                       T* __restrict__ act, T* __restrict__ tanh_c, long long N,
                                       long long H) {
    const long long total = N * H;
    EMBER_GRID_STRIDE(k, total) {
        const long long n = k / H;
        const long long j = k % H;
        const long long base = n * 4 * H + j;
        const T ig = ember_sigmoid(gates[base]);
        const T fg = ember_sigmoid(gates[base + H]);
        const T gg = ember_tanh(gates[base + 2 * H]);
        const T og = ember_sigmoid(gates[base + 3 * H]);
        const T cv = fg * c_prev[k] + ig * gg;
        const T tc = ember_tanh(cv);
        act[base] = ig;
        act[base + H] = fg;
        act[base + 2 * H] = gg;
        act[base + 3 * H] = og;
        c[k] = cv;
        tanh_c[k] = tc;
        h[k] = og * tc;
    }
}

template <typename T>
__device__ void lstm_cell_backward_impl(const T* __restrict__ grad_h, int has_grad_h,
                                        const T* __restrict__ grad_c, int has_grad_c,
                                        const T* __restrict__ act, const T* __restrict__ c_prev,
                                        const T* __restrict__ tanh_c, T* __restrict__ grad_gates,
                                        T* __restrict__ grad_c_prev, long long N, long long H) {
    const long long total = N * H;
    EMBER_GRID_STRIDE(k, total) {
        const long long n = k / H;
        const long long j = k % H;
        const long long base = n * 4 * H + j;
        const T ig = act[base];
        const T fg = act[base + H];
        const T gg = act[base + 2 * H];
        const T og = act[base + 3 * H];
        const T tc = tanh_c[k];
        const T gh = has_grad_h ? grad_h[k] : (T)0;
        T gc = has_grad_c ? grad_c[k] : (T)0;
        gc += gh * og * ((T)1 - tc * tc);
        grad_gates[base] = gc * gg * ig * ((T)1 - ig);
        grad_gates[base + H] = gc * c_prev[k] * fg * ((T)1 - fg);
        grad_gates[base + 2 * H] = gc * ig * ((T)1 - gg * gg);
        grad_gates[base + 3 * H] = gh * tc * og * ((T)1 - og);
        grad_c_prev[k] = gc * fg;
    }
}

// r = sig(gi_r + gh_r), z = sig(gi_z + gh_z), n = tanh(gi_n + r * gh_n), h = (1-z)*n + z*h_prev
template <typename T>
__device__ void gru_cell_forward_impl(const T* __restrict__ gi, const T* __restrict__ gh,
                                      const T* __restrict__ h_prev, T* __restrict__ h,
                                      T* __restrict__ r, T* __restrict__ z, T* __restrict__ nn,
                                      long long N, long long H) {
    const long long total = N * H;
    EMBER_GRID_STRIDE(k, total) {
        const long long n = k / H;
        const long long j = k % H;
        const long long base = n * 3 * H + j;
        const T rv = ember_sigmoid(gi[base] + gh[base]);
        const T zv = ember_sigmoid(gi[base + H] + gh[base + H]);
        const T nv = ember_tanh(gi[base + 2 * H] + rv * gh[base + 2 * H]);
        r[k] = rv;
        z[k] = zv;
        nn[k] = nv;
        h[k] = ((T)1 - zv) * nv + zv * h_prev[k];
    }
}

// gh_n (N, H) is the n-part of gh saved by the forward.
template <typename T>
__device__ void gru_cell_backward_impl(const T* __restrict__ grad_h, const T* __restrict__ r,
                                       const T* __restrict__ z, const T* __restrict__ nn,
                                       const T* __restrict__ gh_n, const T* __restrict__ h_prev,
                                       T* __restrict__ grad_gi, T* __restrict__ grad_gh,
                                       T* __restrict__ grad_h_prev, long long N, long long H) {
    const long long total = N * H;
    EMBER_GRID_STRIDE(k, total) {
        const long long n = k / H;
        const long long j = k % H;
        const long long base = n * 3 * H + j;
        const T g = grad_h[k];
        const T rv = r[k];
        const T zv = z[k];
        const T nv = nn[k];
        const T dn = g * ((T)1 - zv) * ((T)1 - nv * nv);
        const T dz = g * (h_prev[k] - nv) * zv * ((T)1 - zv);
        const T dr = dn * gh_n[k] * rv * ((T)1 - rv);
        grad_gi[base] = dr;
        grad_gi[base + H] = dz;
        grad_gi[base + 2 * H] = dn;
        grad_gh[base] = dr;
        grad_gh[base + H] = dz;
        grad_gh[base + 2 * H] = dn * rv;
        grad_h_prev[k] = g * zv;
    }
}

extern "C" __global__ void lstm_cell_forward_f32(const float* gates, const float* c_prev,
                                                 float* h, float* c, float* act, float* tanh_c,
                                                 long long N, long long H) {
    lstm_cell_forward_impl<float>(gates, c_prev, h, c, act, tanh_c, N, H);
}
extern "C" __global__ void lstm_cell_forward_f64(const double* gates, const double* c_prev,
                                                 double* h, double* c, double* act,
                                                 double* tanh_c, long long N, long long H) {
    lstm_cell_forward_impl<double>(gates, c_prev, h, c, act, tanh_c, N, H);
}
extern "C" __global__ void lstm_cell_backward_f32(const float* grad_h, int has_grad_h,
                                                  const float* grad_c, int has_grad_c,
                                                  const float* act, const float* c_prev,
                                                  const float* tanh_c, float* grad_gates,
                                                  float* grad_c_prev, long long N, long long H) {
    lstm_cell_backward_impl<float>(grad_h, has_grad_h, grad_c, has_grad_c, act, c_prev, tanh_c,
                                   grad_gates, grad_c_prev, N, H);
}
extern "C" __global__ void lstm_cell_backward_f64(const double* grad_h, int has_grad_h,
                                                  const double* grad_c, int has_grad_c,
                                                  const double* act, const double* c_prev,
                                                  const double* tanh_c, double* grad_gates,
                                                  double* grad_c_prev, long long N, long long H) {
    lstm_cell_backward_impl<double>(grad_h, has_grad_h, grad_c, has_grad_c, act, c_prev, tanh_c,
                                    grad_gates, grad_c_prev, N, H);
}
extern "C" __global__ void gru_cell_forward_f32(const float* gi, const float* gh,
                                                const float* h_prev, float* h, float* r,
                                                float* z, float* nn, long long N, long long H) {
    gru_cell_forward_impl<float>(gi, gh, h_prev, h, r, z, nn, N, H);
}
extern "C" __global__ void gru_cell_forward_f64(const double* gi, const double* gh,
                                                const double* h_prev, double* h, double* r,
                                                double* z, double* nn, long long N,
                                                long long H) {
    gru_cell_forward_impl<double>(gi, gh, h_prev, h, r, z, nn, N, H);
}
extern "C" __global__ void gru_cell_backward_f32(const float* grad_h, const float* r,
                                                 const float* z, const float* nn,
                                                 const float* gh_n, const float* h_prev,
                                                 float* grad_gi, float* grad_gh,
                                                 float* grad_h_prev, long long N, long long H) {
    gru_cell_backward_impl<float>(grad_h, r, z, nn, gh_n, h_prev, grad_gi, grad_gh, grad_h_prev,
                                  N, H);
}
extern "C" __global__ void gru_cell_backward_f64(const double* grad_h, const double* r,
                                                 const double* z, const double* nn,
                                                 const double* gh_n, const double* h_prev,
                                                 double* grad_gi, double* grad_gh,
                                                 double* grad_h_prev, long long N, long long H) {
    gru_cell_backward_impl<double>(grad_h, r, z, nn, gh_n, h_prev, grad_gi, grad_gh,
                                   grad_h_prev, N, H);
}
