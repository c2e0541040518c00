// im2col / col2im for ember-tensor convolutions (CUDA twins of kernels/cpu im2col / col2im).
//
// x (N, C, D, H, W) <-> cols (N, C*kD*kH*kW, oD*oH*oW), rows ordered (c, kd, kh, kw) like
// torch.nn.functional.unfold; col2im is the adjoint (torch fold): overlapping windows add up.
// col2im gathers (one thread per input element sums the columns that touch it), so it needs no
// atomics and is deterministic. Zero padding. 1-d and 2-d convolutions use size-1 dims.
// No #include: the sources are compiled by NVRTC (CuPy RawModule) and by nvcc in the tests.

#define EMBER_GRID_STRIDE(i, n)                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

struct ConvGeom {
    long long N, C, D, H, W, oD, oH, oW;
    long long kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw;
};

// Geometry travels as plain scalars (what CuPy passes most reliably) and is packed here.
#define EMBER_CONV_PARAMS                                                                     \
    long long N, long long C, long long D, long long H, long long W, long long oD,            \
        long long oH, long long oW, long long kd, long long kh, long long kw, long long sd,    \
        long long sh, long long sw, long long pd, long long ph, long long pw, long long dd,    \
        long long dh, long long dw
#define EMBER_CONV_GEOM \
    ConvGeom{N, C, D, H, W, oD, oH, oW, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw}

template <typename T>
__device__ void im2col_impl(const T* __restrict__ x, T* __restrict__ cols, const ConvGeom g) {
    const long long K = g.kd * g.kh * g.kw;
    const long long L = g.oD * g.oH * g.oW;
    const long long total = g.N * g.C * K * L;
    EMBER_GRID_STRIDE(i, total) {
        const long long l = i % L;
        const long long r = (i / L) % (g.C * K);
        const long long n = i / (L * g.C * K);
        const long long c = r / K;
        const long long k = r % K;
        const long long e = k % g.kw;
        const long long b = (k / g.kw) % g.kh;
        const long long a = k / (g.kw * g.kh);
        const long long ow = l % g.oW;
        const long long oh = (l / g.oW) % g.oH;
        const long long od = l / (g.oW * g.oH);
        const long long id = od * g.sd - g.pd + a * g.dd;
        const long long ih = oh * g.sh - g.ph + b * g.dh;
        const long long iw = ow * g.sw - g.pw + e * g.dw;
        T v = (T)0;
        if (id >= 0 && id < g.D && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) {
            v = x[(((n * g.C + c) * g.D + id) * g.H + ih) * g.W + iw];
        }
        cols[i] = v;
    }
}

template <typename T>
__device__ void col2im_impl(const T* __restrict__ cols, T* __restrict__ x, const ConvGeom g) {
    const long long K = g.kd * g.kh * g.kw;
    const long long L = g.oD * g.oH * g.oW;
    const long long total = g.N * g.C * g.D * g.H * g.W;
    EMBER_GRID_STRIDE(i, total) {
        const long long iw = i % g.W;
        const long long ih = (i / g.W) % g.H;
        const long long id = (i / (g.W * g.H)) % g.D;
        const long long nc = i / (g.W * g.H * g.D);  // n * C + c
        const T* col_base = cols + nc * K * L;
        T acc = (T)0;
        for (long long a = 0; a < g.kd; ++a) {
            const long long td = id + g.pd - a * g.dd;
            if (td < 0 || td % g.sd != 0) continue;
            const long long od = td / g.sd;
            if (od >= g.oD) continue;
            for (long long b = 0; b < g.kh; ++b) {
                const long long th = ih + g.ph - b * g.dh;
                if (th < 0 || th % g.sh != 0) continue;
                const long long oh = th / g.sh;
                if (oh >= g.oH) continue;
                for (long long e = 0; e < g.kw; ++e) {
                    const long long tw = iw + g.pw - e * g.dw;
                    if (tw < 0 || tw % g.sw != 0) continue;
                    const long long ow = tw / g.sw;
                    if (ow >= g.oW) continue;
                    const long long k = (a * g.kh + b) * g.kw + e;
                    acc += col_base[k * L + (od * g.oH + oh) * g.oW + ow];
                }
            }
        }
        x[i] = acc;
    }
}

extern "C" __global__ void im2col_f32(const float* x, float* cols, EMBER_CONV_PARAMS) {
    im2col_impl<float>(x, cols, EMBER_CONV_GEOM);
}

extern "C" __global__ void im2col_f64(const double* x, double* cols, EMBER_CONV_PARAMS) {
    im2col_impl<double>(x, cols, EMBER_CONV_GEOM);
}

extern "C" __global__ void col2im_f32(const float* cols, float* x, EMBER_CONV_PARAMS) {
    col2im_impl<float>(cols, x, EMBER_CONV_GEOM);
}

extern "C" __global__ void col2im_f64(const double* cols, double* x, EMBER_CONV_PARAMS) {
    col2im_impl<double>(cols, x, EMBER_CONV_GEOM);
}
