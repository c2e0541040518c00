// Fused optimizer updates for ember-tensor (CUDA twins of kernels/cpu optimizer kernels).
//
// Elementwise over flat, C-contiguous arrays, updating param and the state buffers in place.
// The arithmetic follows PyTorch's single-tensor Adam / AdamW and SGD step by step (same
// operations in the same order, scalars rounded to the parameter dtype as PyTorch does);
// bias corrections and other step-dependent scalars are computed on the host in double.
// No #include: the sources are compiled by NVRTC (CuPy RawModule) and by nvcc in the tests.

#define EMBER_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ float ember_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double ember_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float ember_abs(float v) { return fabsf(v); }
__device__ __forceinline__ double ember_abs(double v) { return fabs(v); }

// torch.lerp's formula (ATen/native/Lerp.h)
template <typename T>
__device__ __forceinline__ T ember_lerp(T self, T end, T weight) {
    return ember_abs(weight) < (T)0.5 ? self + weight * (end - self)
                                      : end - (end - self) * ((T)1 - weight);
}

// torch.maximum: NaN in either argument gives NaN
template <typename T>
__device__ __forceinline__ T ember_maximum(T a, T b) {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
}

// Adam / AdamW (torch.optim.adam._single_tensor_adam):
//   g = maximize ? -grad : grad
//   weight_decay != 0: AdamW: p *= decay_factor (= 1 - lr*wd); Adam: g = g + wd * p
//   exp_avg = lerp(exp_avg, g, 1 - beta1)
//   exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * g * g
//   amsgrad: max_exp_avg_sq = maximum(max_exp_avg_sq, exp_avg_sq), used in place of exp_avg_sq
//   denom = sqrt(v) / bias_correction2_sqrt + eps
//   p = p + (-step_size) * exp_avg / denom,  step_size = lr / bias_correction1
template <typename T>
__device__ void adam_step_impl(T* __restrict__ param, const T* __restrict__ grad,
                               T* __restrict__ exp_avg, T* __restrict__ exp_avg_sq,
                               T* __restrict__ max_exp_avg_sq, long long n, T weight_decay,
                               T decay_factor, T beta2, T one_minus_beta1, T one_minus_beta2,
                               T eps, T neg_step_size, T bias_correction2_sqrt, int amsgrad,
                               int maximize, int decoupled) {
    EMBER_GRID_STRIDE(i, n) {
        T g = grad[i];
        if (maximize) g = -g;
        T p = param[i];
        if (weight_decay != (T)0) {
            if (decoupled) {
                p = p * decay_factor;
            } else {
                g = g + weight_decay * p;
            }
        }
        const T m = ember_lerp(exp_avg[i], g, one_minus_beta1);
        const T v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
        T vhat = v;
        if (amsgrad) {
            vhat = ember_maximum(max_exp_avg_sq[i], v);
            max_exp_avg_sq[i] = vhat;
        }
        const T denom = ember_sqrt(vhat) / bias_correction2_sqrt + eps;
        param[i] = p + neg_step_size * m / denom;
    }
}

// SGD (torch.optim.sgd._single_tensor_sgd):
//   g = maximize ? -grad : grad;  weight_decay != 0: g = g + wd * p
//   momentum != 0: buf = first_step ? g : buf * momentum + (1 - dampening) * g
//                  g = nesterov ? g + momentum * buf : buf
//   p = p + (-lr) * g
template <typename T>
__device__ void sgd_step_impl(T* __restrict__ param, const T* __restrict__ grad,
                              T* __restrict__ buf, long long n, T neg_lr, T momentum,
                              T one_minus_dampening, T weight_decay, int nesterov, int maximize,
                              int first_step) {
    EMBER_GRID_STRIDE(i, n) {
        T g = grad[i];
        if (maximize) g = -g;
        const T p = param[i];
        if (weight_decay != (T)0) g = g + weight_decay * p;
        if (momentum != (T)0) {
            const T b = first_step ? g : buf[i] * momentum + one_minus_dampening * g;
            buf[i] = b;
            g = nesterov ? g + momentum * b : b;
        }
        param[i] = p + neg_lr * g;
    }
}

extern "C" __global__ void adam_step_f32(float* param, const float* grad, float* exp_avg,
                                         float* exp_avg_sq, float* max_exp_avg_sq, long long n,
                                         float weight_decay, float decay_factor, float beta2,
                                         float one_minus_beta1, float one_minus_beta2, float eps,
                                         float neg_step_size, float bias_correction2_sqrt,
                                         int amsgrad, int maximize, int decoupled) {
    adam_step_impl<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, weight_decay,
                          decay_factor, beta2, one_minus_beta1, one_minus_beta2, eps,
                          neg_step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled);
}
extern "C" __global__ void adam_step_f64(double* param, const double* grad, double* exp_avg,
                                         double* exp_avg_sq, double* max_exp_avg_sq,
                                         long long n, double weight_decay, double decay_factor,
                                         double beta2, double one_minus_beta1,
                                         double one_minus_beta2, double eps,
                                         double neg_step_size, double bias_correction2_sqrt,
                                         int amsgrad, int maximize, int decoupled) {
    adam_step_impl<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, weight_decay,
                           decay_factor, beta2, one_minus_beta1, one_minus_beta2, eps,
                           neg_step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled);
}
extern "C" __global__ void sgd_step_f32(float* param, const float* grad, float* buf, long long n,
                                        float neg_lr, float momentum, float one_minus_dampening,
                                        float weight_decay, int nesterov, int maximize,
                                        int first_step) {
    sgd_step_impl<float>(param, grad, buf, n, neg_lr, momentum, one_minus_dampening,
                         weight_decay, nesterov, maximize, first_step);
}
extern "C" __global__ void sgd_step_f64(double* param, const double* grad, double* buf,
                                        long long n, double neg_lr, double momentum,
                                        double one_minus_dampening, double weight_decay,
                                        int nesterov, int maximize, int first_step) {
    sgd_step_impl<double>(param, grad, buf, n, neg_lr, momentum, one_minus_dampening,
                          weight_decay, nesterov, maximize, first_step);
}
