// The sums behind a relative error (tuner/gpu/error_norm.py; not a kernel family, not
// rendered): for two arrays X and Y of n elements, each block writes sum((x - y)^2) and sum(y^2)
// over its share, in double, to sums[2 * block] and sums[2 * block + 1]; the host adds the
// blocks' sums. Written here rather than with CuPy's array operations because those compile
// with CuPy's headers (about a second each on an empty cache, several of them before the first
// candidate of a first command); this file compiles in a fraction of that.
//
// Elements are read as stored: double, float, FP16 and BF16 (bit patterns in 16 bits), widened
// exactly to double. A NaN or an infinity anywhere makes a sum non-finite, which the host
// reads as an infinite error.

struct fp16_bits { unsigned short bits; };
struct bf16_bits { unsigned short bits; };

__device__ __forceinline__ double widen(double x) { return x; }
__device__ __forceinline__ double widen(float x) { return static_cast<double>(x); }
__device__ __forceinline__ double widen(fp16_bits x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return static_cast<double>(f);
}
__device__ __forceinline__ double widen(bf16_bits x) {
    return static_cast<double>(__uint_as_float(static_cast<unsigned>(x.bits) << 16));
}

constexpr int SUM_THREADS = 256;

template <class X, class Y>
__device__ void squared_sums(const X* __restrict__ x, const Y* __restrict__ y,
                             unsigned long long n, double* __restrict__ sums) {
    double diff2 = 0.0, ref2 = 0.0;
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x +
                                threadIdx.x;
         i < n; i += stride) {
        const double b = widen(y[i]);
        const double d = widen(x[i]) - b;
        diff2 += d * d;
        ref2 += b * b;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        diff2 += __shfl_down_sync(0xffffffffu, diff2, offset);
        ref2 += __shfl_down_sync(0xffffffffu, ref2, offset);
    }
    __shared__ double warp_sums[SUM_THREADS / 32][2];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        warp_sums[warp][0] = diff2;
        warp_sums[warp][1] = ref2;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double block_diff2 = 0.0, block_ref2 = 0.0;
        for (int w = 0; w < SUM_THREADS / 32; ++w) {
            block_diff2 += warp_sums[w][0];
            block_ref2 += warp_sums[w][1];
        }
        sums[2 * blockIdx.x] = block_diff2;
        sums[2 * blockIdx.x + 1] = block_ref2;
    }
}

// One entry point per pair of stored types: squared_sums_<x>_<y>.
#define SQUARED_SUMS(NAME_X, TYPE_X, NAME_Y, TYPE_Y)                                          \
    extern "C" __global__ void __launch_bounds__(SUM_THREADS)                                  \
        squared_sums_##NAME_X##_##NAME_Y(const TYPE_X* x, const TYPE_Y* y,                     \
                                         unsigned long long n, double* sums) {                 \
        squared_sums(x, y, n, sums);                                                           \
    }

#define SQUARED_SUMS_AGAINST(NAME_Y, TYPE_Y)        \
    SQUARED_SUMS(f64, double, NAME_Y, TYPE_Y)       \
    SQUARED_SUMS(f32, float, NAME_Y, TYPE_Y)        \
    SQUARED_SUMS(f16, fp16_bits, NAME_Y, TYPE_Y)    \
    SQUARED_SUMS(bf16, bf16_bits, NAME_Y, TYPE_Y)

SQUARED_SUMS_AGAINST(f64, double)
SQUARED_SUMS_AGAINST(f32, float)
SQUARED_SUMS_AGAINST(f16, fp16_bits)
SQUARED_SUMS_AGAINST(bf16, bf16_bits)
