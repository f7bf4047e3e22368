// mx.fast row kernels: rms_norm, layer_norm (one block per row, warp-shuffle block reductions,
// 16-byte loads, up to NORM_CACHE packs per thread kept in registers between the passes) and
// rope (one thread per rotated pair or copied tail element; the offset is read on the device
// when it comes as an array).
//
// Numerics follow MLX: the normalisation is computed in float32 (also for float64 inputs, as
// MLX's fallback does), rounded to the output dtype, then multiplied by the weight and added to
// the bias in the output dtype.

#define NORM_CACHE 4
#define PCM_FULL_MASK 0xffffffffu
// Pack<T, N> (common.cuh): N elements moved as one aligned load or store.


PCM_DEVICE float warp_sum_f(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(PCM_FULL_MASK, v, o);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32); every thread gets the total.
PCM_DEVICE float block_sum_f(float v, float* red) {
  v = warp_sum_f(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // red may still be read by the previous reduction
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nw = blockDim.x >> 5;
    float t = lane < nw ? red[lane] : 0.0f;
    t = warp_sum_f(t);
    if (lane == 0) red[0] = t;
  }
  __syncthreads();
  return red[0];
}

// One pack of outputs: round_T(v), then * weight and + bias in T (MLX's fallback order).
// Weight and bias are read as packs too (the launcher checks their alignment).
template <typename T, int VEC>
PCM_DEVICE Pack<T, VEC> norm_finish(const float* v, const T* w, const T* b, int64_t i,
                                    int flags) {
  typedef Pack<T, VEC> P;
  P o, wv, bv;
  if (flags & 1) wv = reinterpret_cast<const P*>(w)[i];
  if (flags & 2) bv = reinterpret_cast<const P*>(b)[i];
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    T y = cast<T>(v[e]);
    if (flags & 1) y = cast<T>(to_compute(y) * to_compute(wv.v[e]));
    if (flags & 2) y = cast<T>(to_compute(y) + to_compute(bv.v[e]));
    o.v[e] = y;
  }
  return o;
}

// flags: 1 = weight, 2 = bias. LN: layer norm (mean and centred variance), else rms norm.
// n % VEC == 0 and every row 16-byte aligned when VEC > 1 (the launcher checks).
template <typename T, int VEC, bool LN>
__global__ void norm_rows(const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ b, T* __restrict__ out, int64_t rows, int64_t n,
                          float eps, int flags) {
  __shared__ float red[32];
  typedef Pack<T, VEC> P;
  const int64_t nv = n / VEC;
  const float fn = (float)n;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const P* xr = reinterpret_cast<const P*>(x + row * n);
    P* orow = reinterpret_cast<P*>(out + row * n);
    P c[NORM_CACHE];  // kept in storage form: half the registers of float for 16-bit types
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NORM_CACHE; ++k) {
      const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
      if (i < nv) {
        c[k] = xr[i];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float f = cast<float>(c[k].v[e]);
          s += LN ? f : f * f;
        }
      }
    }
    for (int64_t i = threadIdx.x + (int64_t)NORM_CACHE * blockDim.x; i < nv; i += blockDim.x) {
      P p = xr[i];
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const float f = cast<float>(p.v[e]);
        s += LN ? f : f * f;
      }
    }
    s = block_sum_f(s, red);
    float mean = 0.0f, inv;
    if (LN) {
      mean = s / fn;
      float q = 0.0f;
#pragma unroll
      for (int k = 0; k < NORM_CACHE; ++k) {
        const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
        if (i < nv) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const float d = cast<float>(c[k].v[e]) - mean;
            q += d * d;
          }
        }
      }
      for (int64_t i = threadIdx.x + (int64_t)NORM_CACHE * blockDim.x; i < nv;
           i += blockDim.x) {
        P p = xr[i];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float d = cast<float>(p.v[e]) - mean;
          q += d * d;
        }
      }
      q = block_sum_f(q, red);
      inv = 1.0f / sqrtf(q / fn + eps);
    } else {
      inv = 1.0f / sqrtf(s / fn + eps);
    }
#pragma unroll
    for (int k = 0; k < NORM_CACHE; ++k) {
      const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
      if (i < nv) {
        float y[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) y[e] = (cast<float>(c[k].v[e]) - mean) * inv;
        orow[i] = norm_finish<T, VEC>(y, w, b, i, flags);
      }
    }
    for (int64_t i = threadIdx.x + (int64_t)NORM_CACHE * blockDim.x; i < nv; i += blockDim.x) {
      P p = xr[i];
      float y[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e) y[e] = (cast<float>(p.v[e]) - mean) * inv;
      orow[i] = norm_finish<T, VEC>(y, w, b, i, flags);
    }
  }
}

// Rotary embedding of a contiguous (B, H, T, D) view. Each row (b, h, t) has W = dims/2 +
// (D - dims) work items: a rotated pair for j < dims/2, a copied element after that.
// offs: int32 offsets on the device (stride off_stride per batch entry), or null for off_const.
// freqs: float32 frequencies (null: base**(-j/half), from log_base_over_half).
template <typename T>
__global__ void rope(const T* __restrict__ x, T* __restrict__ out,
                     const int32_t* __restrict__ offs, const float* __restrict__ freqs,
                     int64_t total, int64_t HT, int64_t T_, int64_t D, int dims, int off_const,
                     int off_stride, float scale, float log_base_over_half, int traditional) {
  typedef typename compute_type<T>::type C;
  const int half = dims / 2;
  const int64_t W = (int64_t)half + (D - dims);
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = idx / W;
    const int j = (int)(idx - row * W);
    const T* xr = x + row * D;
    T* orow = out + row * D;
    if (j < half) {
      const int64_t t = row % T_;
      const int64_t bi = row / HT;
      const int off = offs ? offs[bi * off_stride] : off_const;
      const float pos = ((float)t + (float)off) * scale;
      const float inv_freq =
          freqs ? 1.0f / freqs[j] : expf((float)(-j) * log_base_over_half);
      const float theta = pos * inv_freq;
      const C cs = (C)cosf(theta), sn = (C)sinf(theta);
      const int i1 = traditional ? 2 * j : j;
      const int i2 = traditional ? 2 * j + 1 : j + half;
      const C x1 = (C)to_compute(xr[i1]), x2 = (C)to_compute(xr[i2]);
      orow[i1] = cast<T>(x1 * cs - x2 * sn);
      orow[i2] = cast<T>(x1 * sn + x2 * cs);
    } else {
      const int64_t col = dims + (j - half);
      orow[col] = xr[col];
    }
  }
}
