// Quantized matrix-vector products (affine mode, transposed weights): the decode step of a
// quantized model, y = x @ dequantize(w).T for a few rows of x, in one pass over the packed
// weights instead of dequantizing them to a dense matrix first. After common.cuh.
//
// w is (N, K * BITS / 32) uint32, BITS in {2, 4, 8}: value k of row n is bits
// [BITS * (k % PER_WORD), ...) of word k / PER_WORD, as MLX packs them; scales and biases are
// (N, K / group_size). A warp owns NC consecutive output columns; each lane reads 16 bytes of
// each column's packed row at a time (PER_VEC values, all in one group since group_size is a
// multiple of PER_VEC) and the matching PER_VEC values of each row of x, which it reuses for
// the NC columns. Per group: s * sum(q * x) + b * sum(x), in float; the lanes' sums meet in a
// warp shuffle. x, scales, biases and y share the dtype T. As gemv.cu, a narrow product splits
// K over ``ksplit`` warps of a block (8 warps; ksplit divides 8) that meet in shared memory, so
// enough warps stream the packed weight.

template <typename T, int BITS, int NC>
__global__ void __launch_bounds__(256) qmv_affine(const T* __restrict__ x,
                                                  const uint32_t* __restrict__ w,
                                                  const T* __restrict__ scales,
                                                  const T* __restrict__ biases,
                                                  T* __restrict__ y, int32_t rows, int64_t n_out,
                                                  int64_t k_len, int32_t group_size,
                                                  int32_t ksplit) {
  constexpr int PER_WORD = 32 / BITS;
  constexpr int PER_VEC = 4 * PER_WORD;
  constexpr unsigned int MASK = (1u << BITS) - 1u;
  constexpr int MAX_ROWS = 8;
  constexpr int XN = 16 / sizeof(T);  // elements of x per 16-byte load
  typedef Pack<T, XN> XP;
  __shared__ float partial[8][NC][MAX_ROWS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int group = warp / ksplit, slice = warp - group * ksplit;
  const int64_t n0 = ((int64_t)blockIdx.x * (8 / ksplit) + group) * NC;
  const int64_t words_per_row = k_len / PER_WORD;
  const int64_t groups = k_len / group_size;
  const int64_t vecs = n0 < n_out ? k_len / PER_VEC : 0;  // past the end: only the sync
  float acc[NC][MAX_ROWS];
#pragma unroll
  for (int c = 0; c < NC; ++c)
#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) acc[c][m] = 0.0f;
  for (int64_t v = slice * 32 + lane; v < vecs; v += 32 * ksplit) {
    uint4 q[NC];
    float s[NC], b[NC];
    const int64_t g = v * PER_VEC / group_size;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int64_t n = n0 + c < n_out ? n0 + c : n_out - 1;  // a partial last warp repeats
      q[c] = reinterpret_cast<const uint4*>(w + n * words_per_row)[v];
      s[c] = cast<float>(scales[n * groups + g]);
      b[c] = cast<float>(biases[n * groups + g]);
    }
#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) {
      if (m >= rows) break;
      const XP* xp = reinterpret_cast<const XP*>(x + m * k_len + v * PER_VEC);
      float qx[NC], sx = 0.0f;
#pragma unroll
      for (int c = 0; c < NC; ++c) qx[c] = 0.0f;
#pragma unroll
      for (int p = 0; p < PER_VEC / XN; ++p) {
        const XP xv = xp[p];
#pragma unroll
        for (int e = 0; e < XN; ++e) {
          const int k = p * XN + e;  // 0 .. PER_VEC-1 within the 16-byte weight vector
          const float xf = cast<float>(xv.v[e]);
          sx += xf;
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            const unsigned int word = k / PER_WORD == 0 ? q[c].x : k / PER_WORD == 1 ? q[c].y
                                      : k / PER_WORD == 2 ? q[c].z : q[c].w;
            const float qv = (float)((word >> (BITS * (k % PER_WORD))) & MASK);
            qx[c] = fmaf(qv, xf, qx[c]);
          }
        }
      }
#pragma unroll
      for (int c = 0; c < NC; ++c) acc[c][m] += s[c] * qx[c] + b[c] * sx;
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

// Dequantize affine-packed rows (BITS in {2, 4, 8}) into T: one thread per 32-bit word, whose
// PER_WORD values share one group (group_size is a multiple of PER_WORD). scale * q + bias
// rounded in float32 as two steps (no fma), as the op composition on the CPU computes it, then
// once to T: the prefill path multiplies the result in a GEMM of x's dtype.
template <typename T, int BITS>
__global__ void __launch_bounds__(256) dequantize_affine(const uint32_t* __restrict__ w,
                                                         const T* __restrict__ scales,
                                                         const T* __restrict__ biases,
                                                         T* __restrict__ out, int64_t words,
                                                         int64_t k_len, int32_t group_size) {
  constexpr int PER_WORD = 32 / BITS;
  constexpr unsigned int MASK = (1u << BITS) - 1u;
  const int64_t words_per_row = k_len / PER_WORD;
  const int64_t groups = k_len / group_size;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / words_per_row;
    const int64_t k0 = (i - row * words_per_row) * PER_WORD;
    const int64_t g = row * groups + k0 / group_size;
    const float s = cast<float>(scales[g]), b = cast<float>(biases[g]);
    const unsigned int word = w[i];
    Pack<T, PER_WORD> p;
#pragma unroll
    for (int j = 0; j < PER_WORD; ++j) {
      const float q = (float)((word >> (BITS * j)) & MASK);
      p.v[j] = cast<T>(__fadd_rn(__fmul_rn(s, q), b));
    }
    *reinterpret_cast<Pack<T, PER_WORD>*>(out + row * k_len + k0) = p;
  }
}
