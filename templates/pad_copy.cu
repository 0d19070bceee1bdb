// Pitched row copies for padded operands (tuner/gpu/pad_copy.py; not a kernel family, not rendered):
// `rows` rows of `cols` elements from `src` (rows `src_pitch` elements apart) to `dst` (rows
// `dst_pitch` apart), elements of 4 bytes (float32) or 2 (float16, bfloat16 bits). Either
// pitch may be any length and either base only element-aligned: lanes of a warp take
// consecutive elements of one row, so each warp reads and writes contiguous runs whatever the
// alignment. A block is blockDim.y rows by blockDim.x * UNROLL columns; blocks stride over the
// rows when there are more than gridDim.y * blockDim.y. Elements past `cols` are not touched.

#define UNROLL 4

template <typename T>
static __device__ __forceinline__ void copy_rows(T* __restrict__ dst, long long dst_pitch,
                                                 const T* __restrict__ src, long long src_pitch,
                                                 int rows, int cols) {
    const int col0 = blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
    for (int row = blockIdx.y * blockDim.y + threadIdx.y; row < rows; row += gridDim.y * blockDim.y) {
        const T* s = src + row * src_pitch;
        T* d = dst + row * dst_pitch;
        T v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int col = col0 + u * blockDim.x;
            v[u] = col < cols ? s[col] : T(0);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int col = col0 + u * blockDim.x;
            if (col < cols) d[col] = v[u];
        }
    }
}

extern "C" __global__ void copy_rows_4(unsigned int* dst, long long dst_pitch, const unsigned int* src,
                                       long long src_pitch, int rows, int cols) {
    copy_rows(dst, dst_pitch, src, src_pitch, rows, cols);
}

extern "C" __global__ void copy_rows_2(unsigned short* dst, long long dst_pitch, const unsigned short* src,
                                       long long src_pitch, int rows, int cols) {
    copy_rows(dst, dst_pitch, src, src_pitch, rows, cols);
}
