// Conversions between float32 and the half input types (tuner/gpu/half_arrays.py; not a kernel
// family, not rendered): float32 rounded to nearest even into FP16 or BF16 bit patterns, and
// those patterns widened exactly to float32, n elements each, in one grid-stride pass. Written
// here rather than with CuPy's array operations because those compile with CuPy's headers on
// first use (2.0 s for a first BF16 shape's operands on the lent H200, on an empty cache).

__device__ __forceinline__ unsigned short bf16_nearest_even(float value) {
    const unsigned bits = __float_as_uint(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep the sign, make it quiet
        return static_cast<unsigned short>((bits >> 16) | 0x0040u);
    }
    // Add just under half a BF16 unit, plus one more when the kept part is odd, then truncate:
    // ties go to the even neighbour, and overflow carries into the exponent (to infinity).
    return static_cast<unsigned short>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

#define GRID_STRIDE(i, n)                                                                  \
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + \
                                threadIdx.x;                                               \
         i < (n); i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)

extern "C" __global__ void round_to_bf16(const float* __restrict__ in,
                                         unsigned short* __restrict__ out,
                                         unsigned long long n) {
    GRID_STRIDE(i, n) { out[i] = bf16_nearest_even(in[i]); }
}

extern "C" __global__ void round_to_f16(const float* __restrict__ in,
                                        unsigned short* __restrict__ out,
                                        unsigned long long n) {
    GRID_STRIDE(i, n) {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(in[i]));
        out[i] = h;
    }
}

extern "C" __global__ void widen_bf16(const unsigned short* __restrict__ in,
                                      float* __restrict__ out, unsigned long long n) {
    GRID_STRIDE(i, n) { out[i] = __uint_as_float(static_cast<unsigned>(in[i]) << 16); }
}

extern "C" __global__ void widen_f16(const unsigned short* __restrict__ in,
                                     float* __restrict__ out, unsigned long long n) {
    GRID_STRIDE(i, n) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(in[i]));
        out[i] = f;
    }
}
