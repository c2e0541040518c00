// Fused softmax / log-softmax / cross-entropy for ember-tensor (CUDA twins of kernels/cpu).
//
// All work on a C-contiguous 2-d (rows, cols) array, over the last axis. Row kernels run one
// block of EMBER_THREADS threads (a power of two; the wrappers launch exactly that many) per
// row, grid-striding over rows, with shared-memory tree reductions. The max reduction
// propagates NaN, and the max is subtracted before exponentiating (numerically stable).
// No #include: the sources are compiled by NVRTC (CuPy RawModule) and by nvcc in the tests.

#define EMBER_THREADS 256

#define EMBER_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ float ember_exp(float v) { return expf(v); }
__device__ __forceinline__ double ember_exp(double v) { return exp(v); }
__device__ __forceinline__ float ember_log(float v) { return logf(v); }
__device__ __forceinline__ double ember_log(double v) { return log(v); }

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
template <typename T>
__device__ __forceinline__ T ember_nan();
template <>
__device__ __forceinline__ float ember_nan<float>() {
    return __int_as_float(0x7fc00000);
}
template <>
__device__ __forceinline__ double ember_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

// max that keeps a NaN once one is seen
template <typename T>
__device__ __forceinline__ T ember_nanmax(T a, T b) {
    return (b > a || b != b) ? b : a;
}

// Block-wide reductions over buf[EMBER_THREADS]; every thread of the block must call them and
// every thread gets the result.
template <typename T>
__device__ T block_max(T v, T* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = ember_nanmax(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    const T r = buf[0];
    __syncthreads();
    return r;
}

template <typename T>
__device__ T block_sum(T v, T* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    const T r = buf[0];
    __syncthreads();
    return r;
}

// Returns (max, sum(exp(x - max))) of one row, reduced over the block.
template <typename T>
__device__ void row_max_sumexp(const T* xr, long long cols, T* buf, T& m, T& s) {
    T lm = ember_neg_inf<T>();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) lm = ember_nanmax(lm, xr[j]);
    m = block_max(lm, buf);
    T ls = (T)0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) ls += ember_exp(xr[j] - m);
    s = block_sum(ls, buf);
}

// y = softmax(x) (log_mode = 0) or log_softmax(x) (log_mode = 1) over each row.
template <typename T>
__device__ void softmax_forward_impl(const T* __restrict__ x, T* __restrict__ y, long long rows,
                                     long long cols, int log_mode) {
    __shared__ T buf[EMBER_THREADS];
    if (blockDim.x > EMBER_THREADS) return;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        T m, s;
        row_max_sumexp(xr, cols, buf, m, s);
        if (log_mode) {
            const T log_s = ember_log(s);
            for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - m - log_s;
        } else {
            for (long long j = threadIdx.x; j < cols; j += blockDim.x)
                yr[j] = ember_exp(xr[j] - m) / s;
        }
    }
}

// softmax:     dx = y * (g - sum(g * y))
// log_softmax: dx = g - exp(y) * sum(g)
template <typename T>
__device__ void softmax_backward_impl(const T* __restrict__ y, const T* __restrict__ g,
                                      T* __restrict__ dx, long long rows, long long cols,
                                      int log_mode) {
    __shared__ T buf[EMBER_THREADS];
    if (blockDim.x > EMBER_THREADS) return;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* yr = y + row * cols;
        const T* gr = g + row * cols;
        T* dr = dx + row * cols;
        T ls = (T)0;
        if (log_mode) {
            for (long long j = threadIdx.x; j < cols; j += blockDim.x) ls += gr[j];
        } else {
            for (long long j = threadIdx.x; j < cols; j += blockDim.x) ls += gr[j] * yr[j];
        }
        const T s = block_sum(ls, buf);
        if (log_mode) {
            for (long long j = threadIdx.x; j < cols; j += blockDim.x)
                dr[j] = gr[j] - ember_exp(yr[j]) * s;
        } else {
            for (long long j = threadIdx.x; j < cols; j += blockDim.x) dr[j] = yr[j] * (gr[j] - s);
        }
    }
}

// loss_i = (1-eps) * w[t] * (lse_i - x[i,t]) + (eps/C) * sum_c w[c] * (lse_i - x[i,c]),
// 0 where t == ignore_index (lse is still written). lse_i - x[i,c] is evaluated as
// (m - x[i,c]) + log(s): rounding lse = m + log(s) to the input dtype first would lose the
// low digits at large logits (about 0.03 at 1e6 in float32). An out-of-range target (rejected
// on the host before launch) gives NaN instead of an out-of-bounds read.
template <typename T>
__device__ void cross_entropy_forward_impl(const T* __restrict__ x,
                                           const long long* __restrict__ target,
                                           const T* __restrict__ w, T* __restrict__ loss,
                                           T* __restrict__ lse_out, long long rows,
                                           long long C, long long ignore_index, T eps) {
    __shared__ T buf[EMBER_THREADS];
    if (blockDim.x > EMBER_THREADS) return;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * C;
        T m, s;
        row_max_sumexp(xr, C, buf, m, s);
        const T log_s = ember_log(s);
        const long long t = target[row];
        T smooth = (T)0;
        T wsum = (T)0;
        if (eps != (T)0 && t != ignore_index) {
            T ls = (T)0;
            T lw = (T)0;
            for (long long j = threadIdx.x; j < C; j += blockDim.x) {
                ls += w[j] * (m - xr[j]);
                lw += w[j];
            }
            smooth = block_sum(ls, buf);
            wsum = block_sum(lw, buf);
        }
        if (threadIdx.x == 0) {
            lse_out[row] = m + log_s;
            T l;
            if (t == ignore_index) {
                l = (T)0;
            } else if (t < 0 || t >= C) {
                l = ember_nan<T>();
            } else {
                l = ((T)1 - eps) * w[t] * ((m - xr[t]) + log_s);
                if (eps != (T)0) l += eps / (T)C * (smooth + log_s * wsum);
            }
            loss[row] = l;
        }
    }
}

// d loss_i / d x[i,c] = (1-eps) * w[t] * (p_c - [c == t]) + (eps/C) * (wsum * p_c - w[c]),
// p_c = exp((x[i,c] - m) - log(s)) with the row's max m and sum s recomputed here (reading the
// forward's rounded lse would shift every probability at large logits), times grad_loss[i];
// rows with t == ignore_index get 0 whatever their grad_loss.
template <typename T>
__device__ void cross_entropy_backward_impl(const T* __restrict__ x,
                                            const long long* __restrict__ target,
                                            const T* __restrict__ w,
                                            const T* __restrict__ grad_loss, T* __restrict__ dx,
                                            long long rows, long long C, long long ignore_index,
                                            T eps, T wsum) {
    __shared__ T buf[EMBER_THREADS];
    if (blockDim.x > EMBER_THREADS) return;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * C;
        T* dr = dx + row * C;
        const long long t = target[row];
        if (t == ignore_index || t < 0 || t >= C) {
            for (long long j = threadIdx.x; j < C; j += blockDim.x) dr[j] = (T)0;
            continue;  // uniform across the block: every thread skips the reductions
        }
        T m, s;
        row_max_sumexp(xr, C, buf, m, s);
        const T log_s = ember_log(s);
        const T gl = grad_loss[row];
        const T hot = ((T)1 - eps) * w[t];
        for (long long j = threadIdx.x; j < C; j += blockDim.x) {
            const T p = ember_exp((xr[j] - m) - log_s);
            T gval = hot * (j == t ? p - (T)1 : p);
            if (eps != (T)0) gval += eps / (T)C * (wsum * p - w[j]);
            dr[j] = gl * gval;
        }
    }
}

extern "C" __global__ void softmax_forward_f32(const float* x, float* y, long long rows,
                                               long long cols, int log_mode) {
    softmax_forward_impl<float>(x, y, rows, cols, log_mode);
}
extern "C" __global__ void softmax_forward_f64(const double* x, double* y, long long rows,
                                               long long cols, int log_mode) {
    softmax_forward_impl<double>(x, y, rows, cols, log_mode);
}
extern "C" __global__ void softmax_backward_f32(const float* y, const float* g, float* dx,
                                                long long rows, long long cols, int log_mode) {
    softmax_backward_impl<float>(y, g, dx, rows, cols, log_mode);
}
extern "C" __global__ void softmax_backward_f64(const double* y, const double* g, double* dx,
                                                long long rows, long long cols, int log_mode) {
    softmax_backward_impl<double>(y, g, dx, rows, cols, log_mode);
}
extern "C" __global__ void cross_entropy_forward_f32(const float* x, const long long* target,
                                                     const float* w, float* loss, float* lse,
                                                     long long rows, long long C,
                                                     long long ignore_index, float eps) {
    cross_entropy_forward_impl<float>(x, target, w, loss, lse, rows, C, ignore_index, eps);
}
extern "C" __global__ void cross_entropy_forward_f64(const double* x, const long long* target,
                                                     const double* w, double* loss, double* lse,
                                                     long long rows, long long C,
                                                     long long ignore_index, double eps) {
    cross_entropy_forward_impl<double>(x, target, w, loss, lse, rows, C, ignore_index, eps);
}
extern "C" __global__ void cross_entropy_backward_f32(const float* x, const long long* target,
                                                      const float* w, const float* grad_loss,
                                                      float* dx, long long rows, long long C,
                                                      long long ignore_index, float eps,
                                                      float wsum) {
    cross_entropy_backward_impl<float>(x, target, w, grad_loss, dx, rows, C, ignore_index, eps,
                                       wsum);
}
extern "C" __global__ void cross_entropy_backward_f64(const double* x, const long long* target,
                                                      const double* w, const double* grad_loss,
                                                      double* dx, long long rows, long long C,
                                                      long long ignore_index, double eps,
                                                      double wsum) {
    cross_entropy_backward_impl<double>(x, target, w, grad_loss, dx, rows, C, ignore_index,
                                        eps, wsum);
}
