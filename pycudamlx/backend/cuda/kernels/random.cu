// mx.random: MLX's counter-based threefry2x32-20 bits, the fused uniform draw, and the small
// kernels the samplers need (argmax along an axis, a bitonic argsort of bits, the inverse CDF of
// one categorical distribution).
//
// Bits layout (MLX's RandomBits): an output of B bytes is W = ceil(B / 4) 32-bit words; with
// half = W / 2 and odd = W % 2, counter pair (i, i + half + odd) gives words i and
// i + half + odd for i < half, and an odd W takes word `half` from the pair (half, 0). Counters
// are 32-bit (they wrap as MLX's do). Words are stored little-endian and cut to B bytes.

// ---- threefry2x32, 20 rounds -----------------------------------------------------------------

PCM_DEVICE uint32_t pcm_rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

PCM_DEVICE void threefry2x32(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  x0 += ks[0];
  x1 += ks[1];
#pragma unroll
  for (int i = 0; i < 5; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      x0 += x1;
      x1 = pcm_rotl(x1, rot[i % 2][j]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + (uint32_t)(i + 1);
  }
}

// Store word w of the stream; the last word may be cut short by the byte count.
PCM_DEVICE void store_word(uint8_t* out, int64_t nbytes, int64_t w, uint32_t v) {
  int64_t at = 4 * w;
  if (at + 4 <= nbytes) {
    reinterpret_cast<uint32_t*>(out)[w] = v;
  } else {
    for (int64_t b = 0; at + b < nbytes; ++b) out[at + b] = (uint8_t)(v >> (8 * b));
  }
}

// Raw bits: nbytes bytes from the key at key[0], key[kstride].
__global__ void random_bits(const uint32_t* __restrict__ key, int64_t kstride,
                                       uint8_t* __restrict__ out, int64_t nbytes) {
  const uint32_t k0 = key[0], k1 = key[kstride];
  const int64_t words = (nbytes + 3) / 4;
  const int64_t half = words / 2, odd = words % 2;
  PCM_GRID_STRIDE(i, half + odd) {
    uint32_t x0 = (uint32_t)i, x1;
    if (i < half) {
      x1 = (uint32_t)(i + half + odd);
      threefry2x32(k0, k1, x0, x1);
      store_word(out, nbytes, i, x0);
      store_word(out, nbytes, i + half + odd, x1);
    } else {
      x1 = 0;
      threefry2x32(k0, k1, x0, x1);
      store_word(out, nbytes, half, x0);
    }
  }
}

// ---- uniform ---------------------------------------------------------------------------------

// MLX's uniform for one word: min(float(bits) / (2^32 - 1), upper), cast to T; then (affine)
// range * u + low, each operation rounded in T (no contraction into an FMA).
template <typename T>
PCM_DEVICE T uniform_value(uint32_t bits, float low, float range, float upper, int affine) {
  float u = __fdiv_rn(__uint2float_rn(bits), 4294967295.0f);
  u = fminf(u, upper);
  T t = cast<T>(u);
  if (!affine) return t;
  T p = cast<T>(__fmul_rn(range, (float)to_compute(t)));
  return cast<T>(__fadd_rn((float)to_compute(p), low));
}

template <typename T>
__global__ void random_uniform(const uint32_t* __restrict__ key, int64_t kstride,
                               T* __restrict__ out, int64_t n, float low, float range,
                               float upper, int affine) {
  const uint32_t k0 = key[0], k1 = key[kstride];
  const int64_t half = n / 2, odd = n % 2;
  PCM_GRID_STRIDE(i, half + odd) {
    uint32_t x0 = (uint32_t)i, x1;
    if (i < half) {
      x1 = (uint32_t)(i + half + odd);
      threefry2x32(k0, k1, x0, x1);
      out[i] = uniform_value<T>(x0, low, range, upper, affine);
      out[i + half + odd] = uniform_value<T>(x1, low, range, upper, affine);
    } else {
      x1 = 0;
      threefry2x32(k0, k1, x0, x1);
      out[half] = uniform_value<T>(x0, low, range, upper, affine);
    }
  }
}

// ---- normal ----------------------------------------------------------------------------------

// MLX's normal with scalar loc/scale: u = uniform(nextafter(-1, 0), 1) in float32,
// out = loc + applied * T(erfinv(u)), applied = T(sqrt(2)) * T(scale); each step rounded in T
// (float16/bfloat16 compute in float), the same erfinv as the unary kernel (erfinvf).
template <typename T> struct NormalMath {
  typedef float F;
  PCM_DEVICE static F mul(F a, F b) { return __fmul_rn(a, b); }
  PCM_DEVICE static F add(F a, F b) { return __fadd_rn(a, b); }
};
template <> struct NormalMath<double> {
  typedef double F;
  PCM_DEVICE static F mul(F a, F b) { return __dmul_rn(a, b); }
  PCM_DEVICE static F add(F a, F b) { return __dadd_rn(a, b); }
};

template <typename T>
PCM_DEVICE T normal_value(uint32_t bits, float low, float range, float upper, double applied,
                          double loc, int has_loc) {
  typedef NormalMath<T> M;
  typedef typename M::F F;
  const float u = uniform_value<float>(bits, low, range, upper, 1);
  const T e = cast<T>(erfinvf(u));
  T r = cast<T>(M::mul((F)applied, (F)to_compute(e)));
  if (has_loc) r = cast<T>(M::add((F)loc, (F)to_compute(r)));
  return r;
}

template <typename T>
__global__ void random_normal(const uint32_t* __restrict__ key, int64_t kstride,
                              T* __restrict__ out, int64_t n, float low, float range,
                              float upper, double applied, double loc, int has_loc) {
  const uint32_t k0 = key[0], k1 = key[kstride];
  const int64_t half = n / 2, odd = n % 2;
  PCM_GRID_STRIDE(i, half + odd) {
    uint32_t x0 = (uint32_t)i, x1;
    if (i < half) {
      x1 = (uint32_t)(i + half + odd);
      threefry2x32(k0, k1, x0, x1);
      out[i] = normal_value<T>(x0, low, range, upper, applied, loc, has_loc);
      out[i + half + odd] = normal_value<T>(x1, low, range, upper, applied, loc, has_loc);
    } else {
      x1 = 0;
      threefry2x32(k0, k1, x0, x1);
      out[half] = normal_value<T>(x0, low, range, upper, applied, loc, has_loc);
    }
  }
}

// ---- randint ---------------------------------------------------------------------------------

// MLX 0.32.4's randint with scalar bounds: u = uniform(low, high) in float32, out =
// max(min(T(floor(u)), hi1), lo) with hi1 = T(high - 1) and lo = T(low) computed on the host.
template <typename T>
PCM_DEVICE T randint_value(uint32_t bits, float low, float range, float upper, int affine, T hi1,
                           T lo) {
  const float u = uniform_value<float>(bits, low, range, upper, affine);
  T v = cast<T>(floorf(u));
  v = v < hi1 ? v : hi1;
  return v > lo ? v : lo;
}

template <typename T>
__global__ void random_randint(const uint32_t* __restrict__ key, int64_t kstride,
                               T* __restrict__ out, int64_t n, float low, float range,
                               float upper, int affine, int64_t hi1_bits, int64_t lo_bits) {
  const uint32_t k0 = key[0], k1 = key[kstride];
  const T hi1 = (T)hi1_bits, lo = (T)lo_bits;
  const int64_t half = n / 2, odd = n % 2;
  PCM_GRID_STRIDE(i, half + odd) {
    uint32_t x0 = (uint32_t)i, x1;
    if (i < half) {
      x1 = (uint32_t)(i + half + odd);
      threefry2x32(k0, k1, x0, x1);
      out[i] = randint_value<T>(x0, low, range, upper, affine, hi1, lo);
      out[i + half + odd] = randint_value<T>(x1, low, range, upper, affine, hi1, lo);
    } else {
      x1 = 0;
      threefry2x32(k0, k1, x0, x1);
      out[half] = randint_value<T>(x0, low, range, upper, affine, hi1, lo);
    }
  }
}

// ---- bernoulli -------------------------------------------------------------------------------

// MLX's bernoulli with a scalar p: bits < p * nextafter(2^32 - 1, inf), compared in float32
// (the bits converted with rounding, as the uint32 -> float32 promotion does) or, for a
// float64 p, in float64. thr is that product, computed on the host in the comparison dtype.
__global__ void random_bernoulli(const uint32_t* __restrict__ key, int64_t kstride,
                                 bool* __restrict__ out, int64_t n, double thr, int in_double) {
  const uint32_t k0 = key[0], k1 = key[kstride];
  const float thr_f = (float)thr;
  const int64_t half = n / 2, odd = n % 2;
  PCM_GRID_STRIDE(i, half + odd) {
    uint32_t x0 = (uint32_t)i, x1;
    x1 = i < half ? (uint32_t)(i + half + odd) : 0u;
    threefry2x32(k0, k1, x0, x1);
    if (in_double) {
      out[i] = (double)x0 < thr;
      if (i < half) out[i + half + odd] = (double)x1 < thr;
    } else {
      out[i] = __uint2float_rn(x0) < thr_f;
      if (i < half) out[i + half + odd] = __uint2float_rn(x1) < thr_f;
    }
  }
}

// ---- argmax along an axis (categorical) ------------------------------------------------------

// x is contiguous (outer, k, inner); out[o * inner + i] = first index of the maximum over k
// (a NaN wins, the first one, as numpy's argmax).
template <typename T>
__global__ void argmax_axis(const T* __restrict__ x, uint32_t* __restrict__ out, int64_t outer,
                            int64_t k, int64_t inner) {
  PCM_GRID_STRIDE(j, outer * inner) {
    const int64_t o = j / inner, i = j - o * inner;
    const T* p = x + o * k * inner + i;
    T best = p[0];
    uint32_t arg = 0;
    bool best_nan = best != best;
    for (int64_t t = 1; t < k && !best_nan; ++t) {
      T v = p[t * inner];
      if (v != v) {
        best_nan = true;
        arg = (uint32_t)t;
      } else if (v > best) {
        best = v;
        arg = (uint32_t)t;
      }
    }
    out[j] = arg;
  }
}

// ---- argsort of 32-bit bits (permutation) ----------------------------------------------------

// keys[i] = bits[i] << 32 | i (unique, so any sort is the stable argsort); padding sorts last.
__global__ void bitonic_init(const uint32_t* __restrict__ bits,
                                        uint64_t* __restrict__ keys, int64_t n, int64_t p) {
  PCM_GRID_STRIDE(i, p) {
    keys[i] = i < n ? (((uint64_t)bits[i]) << 32) | (uint64_t)i : ~0ull;
  }
}

// One compare-exchange pass of a bitonic sort over p (a power of two) keys.
__global__ void bitonic_step(uint64_t* __restrict__ keys, int64_t p, int64_t j,
                                        int64_t k) {
  PCM_GRID_STRIDE(i, p) {
    const int64_t l = i ^ j;
    if (l > i) {
      const uint64_t a = keys[i], b = keys[l];
      const bool up = (i & k) == 0;
      if ((a > b) == up) {
        keys[i] = b;
        keys[l] = a;
      }
    }
  }
}

// The passes with j < 2 * blockDim.x run inside one block in shared memory.
__global__ void bitonic_local(uint64_t* __restrict__ keys, int64_t p, int64_t k,
                                         int64_t jmax) {
  extern __shared__ uint64_t tile[];
  const int64_t span = 2 * (int64_t)blockDim.x;
  const int64_t base = (int64_t)blockIdx.x * span;
  for (int64_t t = threadIdx.x; t < span; t += blockDim.x) tile[t] = keys[base + t];
  __syncthreads();
  for (int64_t j = jmax; j > 0; j >>= 1) {
    for (int64_t t = threadIdx.x; t < span; t += blockDim.x) {
      const int64_t l = t ^ j;
      if (l > t) {
        const uint64_t a = tile[t], b = tile[l];
        const bool up = ((base + t) & k) == 0;
        if ((a > b) == up) {
          tile[t] = b;
          tile[l] = a;
        }
      }
    }
    __syncthreads();
  }
  for (int64_t t = threadIdx.x; t < span; t += blockDim.x) keys[base + t] = tile[t];
}

__global__ void bitonic_extract(const uint64_t* __restrict__ keys,
                                           uint32_t* __restrict__ out, int64_t n) {
  PCM_GRID_STRIDE(i, n) { out[i] = (uint32_t)(keys[i] & 0xffffffffull); }
}

// ---- one categorical distribution by its inverse CDF -----------------------------------------

// cdf = cumsum(exp(v - max(v))) in float32, accumulated in order (one thread: the order is
// MLX's and numpy's sequential scan).
__global__ void categorical_cdf(const float* __restrict__ v, float* __restrict__ cdf,
                                           int64_t n) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float m = v[0];
  for (int64_t i = 1; i < n; ++i) m = fmaxf(m, v[i]);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    acc = __fadd_rn(acc, expf(__fsub_rn(v[i], m)));
    cdf[i] = acc;
  }
}

// out[j] = min(upper_bound(cdf, u[j] * cdf[n - 1]), n - 1).
__global__ void categorical_search(const float* __restrict__ cdf,
                                              const float* __restrict__ u,
                                              uint32_t* __restrict__ out, int64_t n, int64_t m) {
  PCM_GRID_STRIDE(j, m) {
    const float t = __fmul_rn(u[j], cdf[n - 1]);
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (cdf[mid] <= t) lo = mid + 1; else hi = mid;
    }
    out[j] = (uint32_t)(lo < n - 1 ? lo : n - 1);
  }
}
