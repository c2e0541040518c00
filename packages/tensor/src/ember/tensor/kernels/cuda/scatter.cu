// Scatter-add kernels for ember-tensor (CUDA twins of kernels/cpu scatter kernels).
//
// Compiled at run time by CuPy's RawModule (NVRTC) and at test time by nvcc: no #include.
// Every kernel is a grid-stride loop with 64-bit indexing. Indices are validated on the host
// before launch; the kernels still skip any index outside its range, so they never write out
// of bounds. Accumulation uses atomicAdd (double atomicAdd needs sm_60 or newer).

#define EMBER_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

// out (P, M, Q) += alpha * src (P, N, Q) scattered along axis 1 by index (N,).
template <typename T>
__device__ void index_add_impl(T* __restrict__ out, const long long* __restrict__ index,
                               const T* __restrict__ src, T alpha, long long P, long long M,
                               long long N, long long Q) {
    const long long total = P * N * Q;
    EMBER_GRID_STRIDE(i, total) {
        const long long q = i % Q;
        const long long n = (i / Q) % N;
        const long long p = i / (Q * N);
        const long long m = index[n];
        if (m < 0 || m >= M) continue;
        atomicAdd(out + (p * M + m) * Q + q, alpha * src[i]);
    }
}

extern "C" __global__ void index_add_f32(float* out, const long long* index, const float* src,
                                         float alpha, long long P, long long M, long long N,
                                         long long Q) {
    index_add_impl<float>(out, index, src, alpha, P, M, N, Q);
}

extern "C" __global__ void index_add_f64(double* out, const long long* index, const double* src,
                                         double alpha, long long P, long long M, long long N,
                                         long long Q) {
    index_add_impl<double>(out, index, src, alpha, P, M, N, Q);
}

// grad_weight (num_weights, D) += grad (n, D) scattered by indices (n,). Rows equal to
// padding_idx (-1: none) get nothing. With use_counts, each contribution is divided by
// counts[row], the number of times that row occurs in the batch (scale_grad_by_freq).
template <typename T>
__device__ void embedding_backward_impl(T* __restrict__ grad_weight, const T* __restrict__ grad,
                                        const long long* __restrict__ indices,
                                        const long long* __restrict__ counts, int use_counts,
                                        long long n, long long D, long long num_weights,
                                        long long padding_idx) {
    const long long total = n * D;
    EMBER_GRID_STRIDE(i, total) {
        const long long d = i % D;
        const long long row = indices[i / D];
        if (row < 0 || row >= num_weights || row == padding_idx) continue;
        T v = grad[i];
        if (use_counts) {
            const long long c = counts[row];
            if (c > 0) v = v / (T)c;
        }
        atomicAdd(grad_weight + row * D + d, v);
    }
}

extern "C" __global__ void embedding_backward_f32(float* grad_weight, const float* grad,
                                                  const long long* indices,
                                                  const long long* counts, int use_counts,
                                                  long long n, long long D,
                                                  long long num_weights, long long padding_idx) {
    embedding_backward_impl<float>(grad_weight, grad, indices, counts, use_counts, n, D,
                                   num_weights, padding_idx);
}

extern "C" __global__ void embedding_backward_f64(double* grad_weight, const double* grad,
                                                  const long long* indices,
                                                  const long long* counts, int use_counts,
                                                  long long n, long long D,
                                                  long long num_weights, long long padding_idx) {
    embedding_backward_impl<double>(grad_weight, grad, indices, counts, use_counts, n, D,
                                    num_weights, padding_idx);
}
