// The split pass of FP32 emulated on the BF16 tensor cores (tuner/gpu/split_launch.py; not a kernel
// family, not rendered): each float32 x of `rows` x `cols` elements at `src` (rows `src_pitch`
// elements apart) becomes hi = bf16(x) and lo = bf16(x - hi), both rounded to nearest even,
// written as BF16 bits into three parts of `dst` (rows `dst_pitch` apart), part p starting
// `part_stride` elements after part p - 1: lo into part `lo_part`, hi into the other two.
// Where K runs along a row, the parts sit side by side in each row; where it runs down the
// columns, one below the other. Elements past `cols` and the rows and columns between parts are
// never written (the caller keeps them zero). The geometry is the pad copy's (tuner/gpu/pad_copy.py:
// lanes of a warp on consecutive elements of one row, blocks striding over the rows).

#define UNROLL 4
#define PARTS 3

static __device__ __forceinline__ unsigned short to_bf16(float x) {
    unsigned short bits;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(x));
    return bits;
}

extern "C" __global__ void split_bf16x3(unsigned short* __restrict__ dst, long long dst_pitch,
                                        long long part_stride, int lo_part,
                                        const float* __restrict__ src, long long src_pitch,
                                        int rows, int cols) {
    const int col0 = blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
    for (int row = blockIdx.y * blockDim.y + threadIdx.y; row < rows; row += gridDim.y * blockDim.y) {
        const float* s = src + row * src_pitch;
        unsigned short* d = dst + row * dst_pitch;
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int col = col0 + u * blockDim.x;
            v[u] = col < cols ? s[col] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int col = col0 + u * blockDim.x;
            if (col >= cols) continue;
            const unsigned short hi = to_bf16(v[u]);
            const unsigned short lo = to_bf16(v[u] - __uint_as_float((unsigned int)hi << 16));
#pragma unroll
            for (int p = 0; p < PARTS; ++p) d[p * part_stride + col] = p == lo_part ? lo : hi;
        }
    }
}
