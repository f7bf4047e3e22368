// Sorting: MLX's order (ascending, stable, NaN last, -0.0 == 0.0) on order-preserving unsigned
// keys. Rows are contiguous (the launcher moves the sorted axis last and copies if needed).
//
// - block_sort<T, CAP>: one block per row of n <= CAP elements; a bitonic sort of (key, index)
//   pairs in shared memory (the index breaks ties, so the result is the stable order); padding
//   slots hold the largest key and indices >= n, so they land after every real element, NaN too.
// - radix_*: an LSD radix sort for longer rows, 8 bits per pass over (key, index) pairs:
//   radix_hist counts digits per tile of RadixCfg<T>::TILE keys, seg_scan turns the digit-major counts
//   into exclusive offsets (per row and digit), radix_scatter ranks each tile stably (each warp
//   a contiguous part with ballot-matched digit groups and its own digit counters), reorders the tile in shared
//   memory and writes it out in runs per digit.
//   The first pass computes keys from the input and the last one writes the outputs (values
//   gathered from the input and/or indices, sorted positions start..), so no separate passes.
// - searchsorted<T>: a binary search on keys per value.
// - unique_*: run flags on the sorted values, a scan, and the scatter of MLX's four outputs.

template <typename T> struct SortKey;

template <> struct SortKey<bool> {
  typedef uint8_t K;
  static PCM_DEVICE K get(bool v) { return v ? 1 : 0; }
};
template <> struct SortKey<uint8_t> {
  typedef uint8_t K;
  static PCM_DEVICE K get(uint8_t v) { return v; }
};
template <> struct SortKey<int8_t> {
  typedef uint8_t K;
  static PCM_DEVICE K get(int8_t v) { return (K)((uint8_t)v ^ 0x80u); }
};
template <> struct SortKey<uint16_t> {
  typedef uint16_t K;
  static PCM_DEVICE K get(uint16_t v) { return v; }
};
template <> struct SortKey<int16_t> {
  typedef uint16_t K;
  static PCM_DEVICE K get(int16_t v) { return (K)((uint16_t)v ^ 0x8000u); }
};
template <> struct SortKey<uint32_t> {
  typedef uint32_t K;
  static PCM_DEVICE K get(uint32_t v) { return v; }
};
template <> struct SortKey<int32_t> {
  typedef uint32_t K;
  static PCM_DEVICE K get(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
};
template <> struct SortKey<uint64_t> {
  typedef uint64_t K;
  static PCM_DEVICE K get(uint64_t v) { return v; }
};
template <> struct SortKey<int64_t> {
  typedef uint64_t K;
  static PCM_DEVICE K get(int64_t v) { return (uint64_t)v ^ 0x8000000000000000ull; }
};

PCM_DEVICE uint16_t half_key_bits(uint16_t b, uint16_t inf_bits) {
  if ((b & 0x7fffu) > inf_bits) return 0xffffu;  // NaN: last
  if (b == 0x8000u) b = 0;                        // -0.0 == 0.0
  return (b & 0x8000u) ? (uint16_t)~b : (uint16_t)(b | 0x8000u);
}
template <> struct SortKey<__half> {
  typedef uint16_t K;
  static PCM_DEVICE K get(__half v) { return half_key_bits(v.bits, 0x7c00u); }
};
template <> struct SortKey<__nv_bfloat16> {
  typedef uint16_t K;
  static PCM_DEVICE K get(__nv_bfloat16 v) { return half_key_bits(v.bits, 0x7f80u); }
};
PCM_DEVICE uint32_t float_key(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
template <> struct SortKey<float> {
  typedef uint32_t K;
  static PCM_DEVICE K get(float v) { return float_key(v); }
};
template <> struct SortKey<double> {
  typedef uint64_t K;
  static PCM_DEVICE K get(double v) {
    uint64_t u = (uint64_t)__double_as_longlong(v);
    if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return ~0ull;
    if (u == 0x8000000000000000ull) u = 0;
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  }
};
template <> struct SortKey<complex64_t> {  // a NaN in either part: NaN; else (real, imag)
  typedef uint64_t K;
  static PCM_DEVICE K get(complex64_t v) {
    if (v.re != v.re || v.im != v.im) return ~0ull;
    return ((uint64_t)float_key(v.re) << 32) | (uint64_t)float_key(v.im);
  }
};

// ---- block-local bitonic sort ---------------------------------------------------------------

template <typename T, int CAP>
__global__ void __launch_bounds__(CAP / 2) block_sort(const T* __restrict__ in,
                                                      T* __restrict__ out_val,
                                                      uint32_t* __restrict__ out_idx,
                                                      int64_t rows, int64_t n, int64_t m,
                                                      int64_t start) {
  typedef typename SortKey<T>::K K;
  __shared__ K skey[CAP];
  __shared__ uint32_t sidx[CAP];
  const int64_t row = blockIdx.x;
  if (row >= rows) return;
  const T* src = in + row * n;
  for (int i = threadIdx.x; i < CAP; i += blockDim.x) {
    if (i < n) {
      skey[i] = SortKey<T>::get(src[i]);
    } else {
      skey[i] = (K)~(K)0;
    }
    sidx[i] = (uint32_t)i;
  }
  __syncthreads();
  const int t = threadIdx.x;  // blockDim.x == CAP / 2: one compare-exchange per thread and step
  for (int size = 2; size <= CAP; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      const int p = 2 * t - (t & (stride - 1));
      const int q = p + stride;
      const K ka = skey[p], kb = skey[q];
      const uint32_t ia = sidx[p], ib = sidx[q];
      const bool greater = ka > kb || (ka == kb && ia > ib);
      const bool ascending = (p & size) == 0;
      if (greater == ascending) {
        skey[p] = kb;
        skey[q] = ka;
        sidx[p] = ib;
        sidx[q] = ia;
      }
      __syncthreads();
    }
  }
  const int64_t o = row * m;
  for (int j = t; j < m; j += blockDim.x) {
    const uint32_t i = sidx[j + start];
    if (out_idx) out_idx[o + j] = i;
    if (out_val) out_val[o + j] = src[i];
  }
}

// ---- scans --------------------------------------------------------------------------------

#define RADIX_THREADS 256

// Keys per thread and per tile of the radix passes: 16 for keys of up to 32 bits, 8 for 64-bit
// keys (the tile's keys and indices stay within 48 KiB of static shared memory).
template <typename T> struct RadixCfg {
  static const int ITEMS = sizeof(typename SortKey<T>::K) <= 4 ? 16 : 8;
  static const int TILE = RADIX_THREADS * ITEMS;
};

// Exclusive scan of one value per thread over a block of 256 threads (all must call it).
PCM_DEVICE uint32_t block_exclusive_scan256(uint32_t v, uint32_t* warp_tot) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t x = v;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) warp_tot[warp] = x;
  __syncthreads();
  uint32_t add = 0;
  for (int w = 0; w < warp; ++w) add += warp_tot[w];
  __syncthreads();
  return x - v + add;
}

// The lanes of the warp whose ``d`` (0..511) equals this lane's, from 9 ballots: the hardware
// match.any is several times slower (one per ~50 cycles per SM on an H200, which made it most
// of a pass's time). Every lane must call it.
#ifndef SORT_HW_MATCH
#define SORT_HW_MATCH 2    // 0: ballots, 1: match.any, 2: match.any where digits are few (onesweep)
#endif
#ifndef ONESWEEP_FEW_DIGITS
#define ONESWEEP_FEW_DIGITS 8
#endif
#ifndef ONESWEEP_ABLATE
#define ONESWEEP_ABLATE 0  // tune_sort.py only (wrong results): 1 no look-back, 2 no digit
#endif                     // groups, 4 writes in tile order
PCM_DEVICE uint32_t match_digit(uint32_t d) {
  if (SORT_HW_MATCH == 1) return __match_any_sync(0xffffffffu, d);
  uint32_t m = 0xffffffffu;
#pragma unroll
  for (int b = 0; b < 9; ++b) {
    const uint32_t vote = __ballot_sync(0xffffffffu, (d >> b) & 1u);
    m &= ((d >> b) & 1u) ? vote : ~vote;
  }
  return m;
}

// Exclusive scan in place of each segment [b * seg, min(n, (b + 1) * seg)) of data (one block
// of 1024 threads per segment); totals[b] = the segment's sum.
__global__ void __launch_bounds__(1024) seg_scan(uint32_t* __restrict__ data,
                                                            uint32_t* __restrict__ totals,
                                                            int64_t n, int64_t seg) {
  __shared__ uint32_t warp_tot[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t b0 = (int64_t)blockIdx.x * seg;
  const int64_t end = n < b0 + seg ? n : b0 + seg;
  uint32_t carry = 0;
  for (int64_t base = b0; base < end; base += 1024) {
    const int64_t i = base + threadIdx.x;
    const uint32_t v = i < end ? data[i] : 0u;
    uint32_t x = v;
    for (int o = 1; o < 32; o <<= 1) {
      const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
      if (lane >= o) x += y;
    }
    if (lane == 31) warp_tot[warp] = x;
    __syncthreads();
    if (warp == 0) {
      uint32_t w = warp_tot[lane];
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += y;
      }
      warp_tot[lane] = w;  // inclusive
    }
    __syncthreads();
    const uint32_t before = warp ? warp_tot[warp - 1] : 0u;
    if (i < end) data[i] = carry + before + x - v;
    carry += warp_tot[31];
    __syncthreads();
  }
  if (threadIdx.x == 0) totals[blockIdx.x] = carry;
}

// The same for many short segments: one thread per segment, in order.
__global__ void seg_scan_serial(uint32_t* __restrict__ data, uint32_t* __restrict__ totals,
                                int64_t nseg, int64_t seg) {
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < nseg;
       b += (int64_t)gridDim.x * blockDim.x) {
    uint32_t* d = data + b * seg;
    uint32_t run = 0;
    for (int64_t i = 0; i < seg; ++i) {
      const uint32_t v = d[i];
      d[i] = run;
      run += v;
    }
    totals[b] = run;
  }
}

// data[i] += offsets[i / seg]
__global__ void add_offsets(uint32_t* __restrict__ data,
                                       const uint32_t* __restrict__ offsets, int64_t n,
                                       int64_t seg) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    data[i] += offsets[i / seg];
  }
}

// ---- LSD radix sort -------------------------------------------------------------------------

// The key of element e of a row: computed from the input in the first pass (FIRST), read from
// the previous pass's keys otherwise.
template <typename T, bool FIRST>
PCM_DEVICE typename SortKey<T>::K radix_key(const void* src, int64_t e) {
  typedef typename SortKey<T>::K K;
  if (FIRST) return SortKey<T>::get(((const T*)src)[e]);
  return ((const K*)src)[e];
}

// A value of up to 4 bytes carried through the passes in place of its index (a sort that
// wants values only), so the last pass writes it without gathering from the input.
template <typename T> PCM_DEVICE uint32_t value_bits(T v) {
  const unsigned char* p = (const unsigned char*)&v;
  uint32_t u = 0;
#pragma unroll
  for (int i = 0; i < (int)sizeof(T) && i < 4; ++i) u |= (uint32_t)p[i] << (8 * i);
  return u;
}
template <typename T> PCM_DEVICE T bits_value(uint32_t u) {
  T v;
  unsigned char* q = (unsigned char*)&v;
#pragma unroll
  for (int i = 0; i < (int)sizeof(T); ++i) q[i] = i < 4 ? (unsigned char)(u >> (8 * i)) : 0;
  return v;
}

// hist[(row * 256 + digit) * tiles + tile] = count of digit in the tile (grid: rows * tiles).
// src: the input (FIRST) or the keys, rows of n.
template <typename T, bool FIRST>
__global__ void __launch_bounds__(RADIX_THREADS) radix_hist(const void* __restrict__ src,
                                                            uint32_t* __restrict__ hist,
                                                            int64_t n, int shift,
                                                            int64_t tiles) {
  typedef typename SortKey<T>::K K;
  const int RADIX_ITEMS = RadixCfg<T>::ITEMS;
  const int RADIX_TILE = RadixCfg<T>::TILE;
  __shared__ uint32_t h[256];
  h[threadIdx.x] = 0;
  __syncthreads();
  const int64_t row = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const int64_t base = tile * RADIX_TILE;
  const int64_t off = row * n;
#pragma unroll
  for (int c = 0; c < RADIX_ITEMS; ++c) {
    const int64_t e = base + c * RADIX_THREADS + threadIdx.x;
    if (e < n) {
      const K k = radix_key<T, FIRST>(src, off + e);
      atomicAdd(&h[(uint32_t)(k >> shift) & 255u], 1u);
    }
  }
  __syncthreads();
  hist[(row * 256 + threadIdx.x) * tiles + tile] = h[threadIdx.x];
}

// One stable scatter pass over (key, index) pairs. hist holds the exclusive offset of each
// (row, digit, tile) among the row's keys of that digit; totals[row * 256 + digit] the row's
// count of each digit. FIRST: keys come from the input ``src`` (indices are positions); else
// from ``src``/``iin``. LAST: instead of keys and indices, sorted positions start.. of each row
// go to out_val (the input's values) and/or out_idx (rows of m = n - start). carry_value
// (values only, sizeof(T) <= 4): the uint32 payload is the value's bits, not its index.
template <typename T, bool FIRST, bool LAST>
__global__ void __launch_bounds__(RADIX_THREADS) radix_scatter(
    const void* __restrict__ src, const uint32_t* __restrict__ iin,
    typename SortKey<T>::K* __restrict__ kout, uint32_t* __restrict__ iout,
    const T* __restrict__ in, T* __restrict__ out_val, uint32_t* __restrict__ out_idx,
    const uint32_t* __restrict__ hist, const uint32_t* __restrict__ totals, int64_t n,
    int shift, int64_t tiles, int64_t start, int carry_value) {
  typedef typename SortKey<T>::K K;
  const int RADIX_ITEMS = RadixCfg<T>::ITEMS;
  const int RADIX_TILE = RadixCfg<T>::TILE;
  __shared__ K skey[RadixCfg<T>::TILE];
  __shared__ uint32_t sidx[RadixCfg<T>::TILE];
  __shared__ uint32_t wcount[RADIX_THREADS / 32][256];
  __shared__ uint32_t gbase[256];
  __shared__ uint32_t lstart[256];
  __shared__ uint32_t warp_tot[RADIX_THREADS / 32];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int64_t row = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const int64_t base = tile * RADIX_TILE;
  const int count = (int)(n - base < RADIX_TILE ? n - base : (int64_t)RADIX_TILE);
  const int64_t off = row * n;

  const uint32_t digit_start = block_exclusive_scan256(totals[row * 256 + t], warp_tot);
  gbase[t] = digit_start + hist[(row * 256 + t) * tiles + tile];
#pragma unroll
  for (int w = 0; w < RADIX_THREADS / 32; ++w) wcount[w][t] = 0;
  __syncthreads();

  // Warp w ranks tile elements [w * 32 * ITEMS, (w + 1) * 32 * ITEMS) in order, 32 at a time,
  // with its own digit counters (no block barrier until every element is ranked): equal digits
  // in one step are found with match_digit, and their group leader bumps the warp's counter.
  K key[RADIX_ITEMS];
  uint32_t id[RADIX_ITEMS];
  uint32_t rank[RADIX_ITEMS];
  const uint32_t lt_mask = (1u << lane) - 1u;
  const int wbase = warp * 32 * RADIX_ITEMS;
#pragma unroll
  for (int c = 0; c < RADIX_ITEMS; ++c) {
    const int e = wbase + c * 32 + lane;
    const bool valid = e < count;
    uint32_t d = 256u;  // invalid lanes: a digit of their own, never counted
    if (valid) {
      if (FIRST) {
        const T v = ((const T*)src)[off + base + e];
        key[c] = SortKey<T>::get(v);
        id[c] = carry_value ? value_bits<T>(v) : (uint32_t)(base + e);
      } else {
        key[c] = ((const K*)src)[off + base + e];
        id[c] = iin[off + base + e];
      }
      d = (uint32_t)(key[c] >> shift) & 255u;
    }
    const uint32_t peers = match_digit(d);
    const int leader = __ffs(peers) - 1;
    uint32_t before = 0;
    if (valid && lane == leader) before = wcount[warp][d];
    before = __shfl_sync(0xffffffffu, before, leader);
    rank[c] = before + __popc(peers & lt_mask);
    if (valid && lane == leader) wcount[warp][d] = before + __popc(peers);
    __syncwarp();
  }
  __syncthreads();
  // Digit t: each warp's start within the digit, then the digit's start within the tile.
  uint32_t run = 0;
#pragma unroll
  for (int w = 0; w < RADIX_THREADS / 32; ++w) {
    const uint32_t v = wcount[w][t];
    wcount[w][t] = run;
    run += v;
  }
  lstart[t] = block_exclusive_scan256(run, warp_tot);
  __syncthreads();
#pragma unroll
  for (int c = 0; c < RADIX_ITEMS; ++c) {
    if (wbase + c * 32 + lane < count) {
      const uint32_t d = (uint32_t)(key[c] >> shift) & 255u;
      const uint32_t p = lstart[d] + wcount[warp][d] + rank[c];
      skey[p] = key[c];
      sidx[p] = id[c];
    }
  }
  __syncthreads();
  const int64_t m = n - start;
  for (int s = t; s < count; s += RADIX_THREADS) {
    const K k = skey[s];
    const uint32_t d = (uint32_t)(k >> shift) & 255u;
    const int64_t g = (int64_t)gbase[d] + (s - (int64_t)lstart[d]);
    if (LAST) {
      if (g >= start) {
        const uint32_t i = sidx[s];
        if (carry_value) {
          out_val[row * m + g - start] = bits_value<T>(i);
        } else {
          if (out_idx) out_idx[row * m + g - start] = i;
          if (out_val) out_val[row * m + g - start] = in[off + i];
        }
      }
    } else {
      kout[off + g] = k;
      iout[off + g] = sidx[s];
    }
  }
}

// ---- onesweep radix sort (values only, 4-byte keys) -------------------------------------------
//
// For a sort that wants values only, the key can carry the value itself if the key map is a
// bijection: OrderKey<T> (for float a total order: -0.0 just below 0.0, NaNs last, so a value is
// recovered from its key and no index travels with it). The passes, after Adinets & Merrill's
// "Onesweep" (2022): onesweep_upsweep reads the input once for all four digit histograms; each
// onesweep_pass then ranks a tile, finds every digit's global offset by a decoupled look-back over
// the tiles before it (tiles are numbered in the order blocks start, so a block only ever waits on
// a block that runs) and scatters the tile in runs per digit. The bijection orders equal floats
// by bits (-0.0 before 0.0, NaNs by payload) where MLX's stable sort keeps the input order: for a
// row holding both zeros or any NaN, onesweep_fix rewrites the zero and NaN runs in input order.

// (overridable for scripts/tune_sort.py; sorting.py's ONESWEEP_TILE/UP_TILES must match)
#ifndef ONESWEEP_ITEMS
#define ONESWEEP_ITEMS 16
#endif
#ifndef ONESWEEP_MIN_BLOCKS
#define ONESWEEP_MIN_BLOCKS 4                   // per SM: at most 64 registers
#endif
#ifndef ONESWEEP_UP_TILES
#define ONESWEEP_UP_TILES 4                     // tiles per upsweep block
#endif
#ifndef ONESWEEP_UP_MATCH
#define ONESWEEP_UP_MATCH 0                     // key bytes the upsweep counts per equal group
#endif
#ifndef ONESWEEP_LOOKBACK
#define ONESWEEP_LOOKBACK 2                     // status words read at once in the look-back
#endif
#ifndef ONESWEEP_SLEEP
#define ONESWEEP_SLEEP 0                        // ns a look-back waits before reading again
#endif
#define ONESWEEP_TILE (RADIX_THREADS * ONESWEEP_ITEMS)
#define LOOKBACK_AGGREGATE (1u << 30)           // status word: the tile's own digit count
#define LOOKBACK_PREFIX (2u << 30)              // status word: the count through this tile
#define LOOKBACK_VALUE 0x3fffffffu

template <typename T> struct OrderKey;
template <> struct OrderKey<uint32_t> {
  static PCM_DEVICE uint32_t get(uint32_t v) { return v; }
  static PCM_DEVICE uint32_t value(uint32_t k) { return k; }
};
template <> struct OrderKey<int32_t> {
  static PCM_DEVICE uint32_t get(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
  static PCM_DEVICE int32_t value(uint32_t k) { return (int32_t)(k ^ 0x80000000u); }
};
template <> struct OrderKey<float> {
  // the usual sign flip puts negative NaNs (keys 0..0x7ffffe) first: move them to the top
  static PCM_DEVICE uint32_t get(float f) {
    const uint32_t u = __float_as_uint(f);
    const uint32_t k = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return k < 0x7fffffu ? k + 0xff800001u : k - 0x7fffffu;
  }
  static PCM_DEVICE float value(uint32_t k) {
    k = k >= 0xff800001u ? k - 0xff800001u : k + 0x7fffffu;
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
  }
};

// What onesweep_fix needs to know of a value: bit 0 zero, 1 NaN, 2 negative zero, 3 negative
// (neither zero nor NaN). Nothing for the integer types.
#define CLASS_ZERO 1u
#define CLASS_NAN 2u
#define CLASS_NEG_ZERO 4u
#define CLASS_NEG 8u
template <typename T> PCM_DEVICE uint32_t float_class(T) { return 0u; }
template <> PCM_DEVICE uint32_t float_class<float>(float v) {
  if (v != v) return CLASS_NAN;
  if (v == 0.0f) return (__float_as_uint(v) >> 31) ? CLASS_ZERO | CLASS_NEG_ZERO : CLASS_ZERO;
  return v < 0.0f ? CLASS_NEG : 0u;
}

// hist[(row * 4 + pass) * 256 + digit] += the row's count of digit in key byte ``pass`` (hist
// zeroed by the launcher; grid: rows * ceil(tiles / ONESWEEP_UP_TILES)). For float, also
// tile_counts[row * tiles + tile] = zeros | NaNs << 16 and row_stats[row * 4 + ...] += negative
// (non-zero, non-NaN) values, zeros, negative zeros, NaNs, for onesweep_fix.
template <typename T>
__global__ void __launch_bounds__(RADIX_THREADS) onesweep_upsweep(
    const T* __restrict__ in, uint32_t* __restrict__ hist, uint32_t* __restrict__ tile_counts,
    uint32_t* __restrict__ row_stats, int64_t n, int64_t tiles) {
  __shared__ uint32_t h[4][256];
  __shared__ uint32_t stats[4];
  __shared__ uint32_t tile_zn;
  const int t = threadIdx.x, lane = t & 31;
  const int64_t chunks = (tiles + ONESWEEP_UP_TILES - 1) / ONESWEEP_UP_TILES;
  const int64_t row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
#pragma unroll
  for (int p = 0; p < 4; ++p) h[p][t] = 0;
  if (t < 4) stats[t] = 0;
  const T* src = in + row * n;
  const int64_t tile_end = (chunk + 1) * ONESWEEP_UP_TILES < tiles ? (chunk + 1) * ONESWEEP_UP_TILES
                                                                   : tiles;
  for (int64_t tile = chunk * ONESWEEP_UP_TILES; tile < tile_end; ++tile) {
    if (t == 0) tile_zn = 0;
    __syncthreads();
    uint32_t zn = 0, neg = 0, negzero = 0;
#pragma unroll 4
    for (int c = 0; c < ONESWEEP_ITEMS; ++c) {
      const int64_t e = tile * ONESWEEP_TILE + c * RADIX_THREADS + t;
      const bool valid = e < n;
      const T v = valid ? src[e] : (T)0;
      const uint32_t k = OrderKey<T>::get(v);
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const uint32_t d = (k >> (8 * p)) & 255u;
        if (ONESWEEP_UP_MATCH & (1 << p)) {
          // a byte that many keys share (a float's top byte): one add per group of equal digits
          const uint32_t peers = match_digit(valid ? d : 256u);
          if (valid && lane == __ffs(peers) - 1) atomicAdd(&h[p][d], __popc(peers));
        } else if (valid) {
          atomicAdd(&h[p][d], 1u);
        }
      }
      if (valid) {
        const uint32_t cls = float_class<T>(v);
        zn += (cls & CLASS_ZERO) + ((cls & CLASS_NAN) << 15);
        negzero += (cls >> 2) & 1u;
        neg += cls >> 3;
      }
    }
    if (tile_counts) {
      for (int o = 16; o > 0; o >>= 1) {
        zn += __shfl_down_sync(0xffffffffu, zn, o);
        neg += __shfl_down_sync(0xffffffffu, neg, o);
        negzero += __shfl_down_sync(0xffffffffu, negzero, o);
      }
      if (lane == 0 && (zn | neg | negzero)) {
        atomicAdd(&tile_zn, zn);
        atomicAdd(&stats[0], neg);
        atomicAdd(&stats[1], zn & 0xffffu);
        atomicAdd(&stats[2], negzero);
        atomicAdd(&stats[3], zn >> 16);
      }
      __syncthreads();
      if (t == 0) tile_counts[row * tiles + tile] = tile_zn;
    }
  }
  __syncthreads();
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    if (h[p][t]) atomicAdd(&hist[(row * 4 + p) * 256 + t], h[p][t]);
  }
  if (tile_counts && t < 4 && stats[t]) atomicAdd(&row_stats[row * 4 + t], stats[t]);
}

// One pass over key byte ``pass``: FIRST reads the input and makes keys, LAST writes the values
// of sorted positions start.. of each row (rows of m = n - start) to out_val, the others write
// keys to kout. status: rows * tiles * 256 words, zeroed; counter: this pass's tile counter,
// zeroed. Grid: rows * tiles blocks.
template <typename T, bool FIRST, bool LAST>
__global__ void __launch_bounds__(RADIX_THREADS, ONESWEEP_MIN_BLOCKS) onesweep_pass(
    const void* __restrict__ src, uint32_t* __restrict__ kout, T* __restrict__ out_val,
    const uint32_t* __restrict__ hist, uint32_t* status, uint32_t* __restrict__ counter,
    int64_t n, int pass, int64_t tiles, int64_t start) {
  __shared__ uint32_t skey[ONESWEEP_TILE];
  __shared__ uint32_t wcount[RADIX_THREADS / 32][256];
  __shared__ uint32_t gbase[256];
  __shared__ uint32_t lstart[256];
  __shared__ uint32_t warp_tot[RADIX_THREADS / 32];
  __shared__ uint32_t tile_id;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int shift = 8 * pass;
  if (t == 0) tile_id = atomicAdd(counter, 1u);
#pragma unroll
  for (int w = 0; w < RADIX_THREADS / 32; ++w) wcount[w][t] = 0;
  __syncthreads();
  const int64_t id = tile_id;
  const int64_t row = id / tiles, tile = id % tiles;
  const int64_t base = tile * ONESWEEP_TILE;
  const int count = (int)(n - base < ONESWEEP_TILE ? n - base : (int64_t)ONESWEEP_TILE);
  const int64_t off = row * n;

  // match.any takes longer the more distinct digits a warp holds; where the row's keys share
  // few digits (a float's top byte), it beats the 9 ballots of match_digit. "Few": the row's
  // effective number of digits, total^2 / sum of squared counts (256 for uniform digits).
  const uint32_t row_count = hist[(row * 4 + pass) * 256 + t];
  bool few_digits = false;
  if (SORT_HW_MATCH == 2) {
    float c = (float)row_count, c2 = c * c;
    for (int o = 16; o > 0; o >>= 1) {
      c += __shfl_down_sync(0xffffffffu, c, o);
      c2 += __shfl_down_sync(0xffffffffu, c2, o);
    }
    __shared__ float red_c[RADIX_THREADS / 32], red_c2[RADIX_THREADS / 32];
    if (lane == 0) { red_c[warp] = c; red_c2[warp] = c2; }
    __syncthreads();
    float total = 0.0f, squares = 0.0f;
#pragma unroll
    for (int w = 0; w < RADIX_THREADS / 32; ++w) { total += red_c[w]; squares += red_c2[w]; }
    few_digits = total * total <= (float)ONESWEEP_FEW_DIGITS * squares;
  }
  uint32_t key[ONESWEEP_ITEMS];
  uint32_t rank[ONESWEEP_ITEMS];
  const uint32_t lt_mask = (1u << lane) - 1u;
  const int wbase = warp * 32 * ONESWEEP_ITEMS;
#pragma unroll
  for (int c = 0; c < ONESWEEP_ITEMS; ++c) {
    const int e = wbase + c * 32 + lane;
    if (e < count) {
      key[c] = FIRST ? OrderKey<T>::get(((const T*)src)[off + base + e])
                     : ((const uint32_t*)src)[off + base + e];
    }
  }
  // Rank as radix_scatter does: each warp its contiguous part in order, matched groups.
#pragma unroll
  for (int c = 0; c < ONESWEEP_ITEMS; ++c) {
    const bool valid = wbase + c * 32 + lane < count;
    const uint32_t d = valid ? (key[c] >> shift) & 255u : 256u;
    const uint32_t peers = (ONESWEEP_ABLATE & 2) ? 1u << lane
                           : few_digits ? __match_any_sync(0xffffffffu, d) : match_digit(d);
    const int leader = __ffs(peers) - 1;
    uint32_t before = 0;
    if (valid && lane == leader) before = wcount[warp][d];
    before = __shfl_sync(0xffffffffu, before, leader);
    rank[c] = before + __popc(peers & lt_mask);
    if (valid && lane == leader) wcount[warp][d] = before + __popc(peers);
    __syncwarp();
  }
  __syncthreads();
  uint32_t run = 0;  // digit t's count in this tile; each warp's start within the digit
#pragma unroll
  for (int w = 0; w < RADIX_THREADS / 32; ++w) {
    const uint32_t v = wcount[w][t];
    wcount[w][t] = run;
    run += v;
  }
  // Publish this tile's count of digit t, then add up the tiles before it: their counts until
  // one that has published its running total (a prefix).
  volatile uint32_t* st = status;
  uint32_t* mine = status + id * 256 + t;
  if (tile == 0) {
    *(volatile uint32_t*)mine = LOOKBACK_PREFIX | run;
  } else {
    *(volatile uint32_t*)mine = LOOKBACK_AGGREGATE | run;
  }
  // ONESWEEP_LOOKBACK statuses are read at once: the tiles that start together all look back
  // at the same time, and a walk of one dependent load per tile would take hundreds of them.
  uint32_t before = 0;
  if (tile > 0 && !(ONESWEEP_ABLATE & 1)) {
    const int64_t first = id - tile;  // the row's tile 0, which always holds a prefix
    int64_t j = id - 1;
    bool done = false;
    while (!done) {
      uint32_t s[ONESWEEP_LOOKBACK];
#pragma unroll
      for (int w = 0; w < ONESWEEP_LOOKBACK; ++w) {
        s[w] = j - w >= first ? st[(j - w) * 256 + t] : LOOKBACK_PREFIX;
      }
#pragma unroll
      for (int w = 0; w < ONESWEEP_LOOKBACK; ++w) {
        if (!done) {
          if (s[w] == 0) {  // not published yet (that tile runs): read again from here,
            if (ONESWEEP_SLEEP) __nanosleep(ONESWEEP_SLEEP);  // without flooding L2
            break;
          }
          before += s[w] & LOOKBACK_VALUE;
          done = (s[w] & LOOKBACK_PREFIX) != 0;
          --j;
        }
      }
    }
    *(volatile uint32_t*)mine = LOOKBACK_PREFIX | (before + run);
  }
  const uint32_t digit_start = block_exclusive_scan256(row_count, warp_tot);
  gbase[t] = digit_start + before;
  lstart[t] = block_exclusive_scan256(run, warp_tot);
  __syncthreads();
#pragma unroll
  for (int c = 0; c < ONESWEEP_ITEMS; ++c) {
    if (wbase + c * 32 + lane < count) {
      const uint32_t d = (key[c] >> shift) & 255u;
      skey[lstart[d] + wcount[warp][d] + rank[c]] = key[c];
    }
  }
  __syncthreads();
  const int64_t m = n - start;
  for (int s = t; s < count; s += RADIX_THREADS) {
    const uint32_t k = skey[s];
    const uint32_t d = (k >> shift) & 255u;
    const int64_t g = (int64_t)gbase[d] + (s - (int64_t)lstart[d]);
    if (LAST) {
      if (g >= start) out_val[row * m + g - start] = OrderKey<T>::value(k);
    } else if (ONESWEEP_ABLATE & 4) {
      kout[off + base + s] = k;
    } else {
      kout[off + g] = k;
    }
  }
}

// MLX's stable order for the zeros and NaNs of a float row (a no-op for rows with no NaN and
// zeros of one sign): each tile writes its zeros and NaNs, in input order, into the zero run
// (after the row's negative values) and the NaN run (the row's end). Grid: rows * tiles.
template <typename T>
__global__ void __launch_bounds__(RADIX_THREADS) onesweep_fix(
    const T* __restrict__ in, T* __restrict__ out_val, const uint32_t* __restrict__ tile_counts,
    const uint32_t* __restrict__ row_stats, int64_t n, int64_t tiles, int64_t start) {
  __shared__ uint32_t warp_tot[RADIX_THREADS / 32];
  __shared__ uint32_t red[RADIX_THREADS / 32];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int64_t row = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const uint32_t neg = row_stats[row * 4], zeros = row_stats[row * 4 + 1];
  const uint32_t negzero = row_stats[row * 4 + 2], nans = row_stats[row * 4 + 3];
  if (nans == 0 && (negzero == 0 || negzero == zeros)) return;
  const uint32_t mine = tile_counts[row * tiles + tile];
  if (mine == 0) return;
  // zeros (low 16 bits) and NaNs (high) in this row's tiles before this one; totals up to
  // 2^30 each, so the two are summed apart
  uint32_t zb = 0, nb = 0;
  for (int64_t j = t; j < tile; j += RADIX_THREADS) {
    const uint32_t c = tile_counts[row * tiles + j];
    zb += c & 0xffffu;
    nb += c >> 16;
  }
  for (int o = 16; o > 0; o >>= 1) {
    zb += __shfl_down_sync(0xffffffffu, zb, o);
    nb += __shfl_down_sync(0xffffffffu, nb, o);
  }
  if (lane == 0) { red[warp] = zb; warp_tot[warp] = nb; }
  __syncthreads();
  zb = 0;
  nb = 0;
#pragma unroll
  for (int w = 0; w < RADIX_THREADS / 32; ++w) { zb += red[w]; nb += warp_tot[w]; }
  __syncthreads();
  // this thread's ONESWEEP_ITEMS consecutive elements, ranked by a block scan
  const int64_t base = tile * ONESWEEP_TILE + (int64_t)t * ONESWEEP_ITEMS;
  const T* src = in + row * n;
  uint32_t nz = 0, nn = 0;
  for (int c = 0; c < ONESWEEP_ITEMS; ++c) {
    if (base + c < n) {
      const uint32_t cls = float_class<T>(src[base + c]);
      nz += cls & CLASS_ZERO;
      nn += (cls & CLASS_NAN) >> 1;
    }
  }
  uint32_t rz = block_exclusive_scan256(nz, warp_tot);
  uint32_t rn = block_exclusive_scan256(nn, warp_tot);
  const int64_t m = n - start;
  for (int c = 0; c < ONESWEEP_ITEMS; ++c) {
    if (base + c < n) {
      const T v = src[base + c];
      const uint32_t cls = float_class<T>(v);
      if (cls & (CLASS_ZERO | CLASS_NAN)) {
        const int64_t g = (cls & CLASS_NAN) ? (n - nans) + nb + rn++ : (int64_t)neg + zb + rz++;
        if (g >= start) out_val[row * m + g - start] = v;
      }
    }
  }
}

// ---- searchsorted ---------------------------------------------------------------------------

template <typename T>
__global__ void searchsorted(const T* __restrict__ seq, int64_t sstride, int64_t m,
                             const T* __restrict__ vals, uint32_t* __restrict__ out, int64_t n,
                             int right) {
  typedef typename SortKey<T>::K K;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n;
       j += (int64_t)gridDim.x * blockDim.x) {
    const K v = SortKey<T>::get(vals[j]);
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      const int64_t mid = (lo + hi) >> 1;
      const K s = SortKey<T>::get(seq[mid * sstride]);
      if (right ? (s <= v) : (s < v)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[j] = (uint32_t)lo;
  }
}

// ---- unique ---------------------------------------------------------------------------------

// Equality as MLX's unique sees it: NaN never equals NaN, -0.0 equals 0.0.
template <typename T> PCM_DEVICE bool same_value(T a, T b) { return a == b; }
template <> PCM_DEVICE bool same_value<__half>(__half a, __half b) {
  return half_to_float(a) == half_to_float(b);
}
template <> PCM_DEVICE bool same_value<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return bf16_to_float(a) == bf16_to_float(b);
}
template <> PCM_DEVICE bool same_value<complex64_t>(complex64_t a, complex64_t b) {
  return a.re == b.re && a.im == b.im;
}

template <typename T> PCM_DEVICE uint32_t run_start(const T* s, int64_t i) {
  return (i == 0 || !same_value<T>(s[i], s[i - 1])) ? 1u : 0u;
}

template <typename T>
__global__ void unique_flags(const T* __restrict__ s, uint32_t* __restrict__ flags, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    flags[i] = run_start<T>(s, i);
  }
}

// s: sorted values, idx: their positions in the input, ex: exclusive scan of the run flags.
template <typename T>
__global__ void unique_scatter(const T* __restrict__ s, const uint32_t* __restrict__ idx,
                               const uint32_t* __restrict__ ex, T* __restrict__ values,
                               uint32_t* __restrict__ index, uint32_t* __restrict__ inverse,
                               int32_t* __restrict__ counts, int64_t n, int64_t size) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t f = run_start<T>(s, i);
    const int64_t g = (int64_t)ex[i] + f - 1;
    inverse[idx[i]] = size > 0 ? (uint32_t)(g < size - 1 ? g : size - 1) : 0u;
    if (g < size) {
      if (f) {
        values[g] = s[i];
        index[g] = idx[i];
      }
      atomicAdd(&counts[g], 1);
    }
  }
}

// Entries nuniq.. of values hold the fill (or values[0]), of index index[0] (or 0).
template <typename T>
__global__ void unique_pad(T* __restrict__ values, uint32_t* __restrict__ index,
                           const uint32_t* __restrict__ nuniq_ptr, const T* __restrict__ fill,
                           int64_t size) {
  const int64_t nuniq = nuniq_ptr ? (int64_t)*nuniq_ptr : 0;
  for (int64_t g = nuniq + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < size;
       g += (int64_t)gridDim.x * blockDim.x) {
    values[g] = fill ? *fill : values[0];
    index[g] = nuniq ? index[0] : 0u;
  }
}
