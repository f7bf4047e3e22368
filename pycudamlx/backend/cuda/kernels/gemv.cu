// Dense matrix-vector products for a few rows against transposed weights: the decode step of a
// dense model, y (rows, N) = x (rows, K) @ W.T with W (N, K) (nn.Linear's weight, read in
// place), rows <= 8. One launch where cuBLAS costs several times a launch in host time. After
// common.cuh.
//
// A warp owns NC consecutive output columns and one of ``ksplit`` slices of K; each lane reads
// 16 bytes of each column's weight row at a time (VN elements) and the matching VN elements of
// each row of x, which it reuses for the NC columns; products accumulate in float (fma), the
// lanes' sums meet in a warp shuffle and the slices' in shared memory. Narrow products (few
// columns: a 2048-wide projection) split K so that enough warps stream the weight to keep HBM
// busy; wide ones (an lm head) take ksplit 1. A block is 8 warps, ksplit divides 8. K, the row
// strides ldx and ldw, and both base pointers are multiples of 16 bytes (the launcher checks;
// other layouts go to cuBLAS). y is contiguous (rows, N).

template <typename T, int NC>
__global__ void __launch_bounds__(256) gemv_t(const T* __restrict__ x, const T* __restrict__ w,
                                              T* __restrict__ y, int32_t rows, int64_t n_out,
                                              int64_t k_len, int64_t ldx, int64_t ldw,
                                              int32_t ksplit) {
  constexpr int MAX_ROWS = 8;
  constexpr int VN = 16 / sizeof(T);
  typedef Pack<T, VN> VP;
  __shared__ float partial[8][NC][MAX_ROWS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int group = warp / ksplit, slice = warp - group * ksplit;
  const int64_t n0 = ((int64_t)blockIdx.x * (8 / ksplit) + group) * NC;
  const int64_t vecs = n0 < n_out ? k_len / VN : 0;  // a warp past the end only joins the sync
  float acc[NC][MAX_ROWS];
#pragma unroll
  for (int c = 0; c < NC; ++c)
#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) acc[c][m] = 0.0f;
  const VP* wrow[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const int64_t n = n0 + c < n_out ? n0 + c : n_out - 1;  // a partial last warp repeats
    wrow[c] = reinterpret_cast<const VP*>(w + n * ldw);
  }
#pragma unroll 4
  for (int64_t v = slice * 32 + lane; v < vecs; v += 32 * ksplit) {
    VP wv[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c) wv[c] = wrow[c][v];
#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) {
      if (m >= rows) break;
      const VP xv = reinterpret_cast<const VP*>(x + m * ldx)[v];
#pragma unroll
      for (int e = 0; e < VN; ++e) {
        const float xf = cast<float>(xv.v[e]);
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[c][m] = fmaf(cast<float>(wv[c].v[e]), xf, acc[c][m]);
      }
    }
  }
#pragma unroll
  for (int c = 0; c < NC; ++c) {
#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) {
      if (m >= rows) break;
      float a = acc[c][m];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
      acc[c][m] = a;
      if (ksplit > 1 && lane == 0) partial[warp][c][m] = a;
    }
  }
  if (ksplit > 1) {
    __syncthreads();
    if (slice != 0) return;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
#pragma unroll
      for (int m = 0; m < MAX_ROWS; ++m) {
        if (m >= rows) break;
        float a = acc[c][m];
        for (int t = 1; t < ksplit; ++t) a += partial[warp + t][c][m];
        acc[c][m] = a;
      }
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int c = 0; c < NC; ++c) {
#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) {
      if (m >= rows) break;
      if (n0 + c < n_out) y[m * n_out + n0 + c] = cast<T>(acc[c][m]);
    }
  }
}
