// Reductions, arg-reductions, scans, softmax and median. After common.cuh + math.cuh.
//
// The launcher (backend/cuda/reduce.py) views every reduction as one of two shapes of a
// contiguous array: rows (reduce the innermost `len` elements of each of `rows` rows) or columns
// (reduce the middle axis of (outer, len, inner)). Other axis sets are permuted into rows by a
// copy first. A long reduction is split over `splits` blocks that write accumulator partials:
// for rows, the last block of a row to finish (a per-row counter it resets) combines them in the
// same launch; for columns, reduce_partials does in a second launch. Partials are always
// combined in index order, so results are deterministic.
//
// A reduction variant is (OP, MAP, FIN): each element x is mapped to the accumulator type A by
// MAP (with `c`, a per-output value computed by an earlier pass: the mean for var, the max for
// logsumexp), combined with OP, and the accumulator becomes the output by FIN.

#define RED_SUM 0
#define RED_PROD 1
#define RED_MAX 2
#define RED_MIN 3
#define RED_AND 4
#define RED_OR 5
#define RED_LOGADD 6

#define MAP_CAST 0     // A(x)
#define MAP_SQDEV 1    // |x - c|^2       (var, std)
#define MAP_EXPDEV 2   // exp(x - c)      (logsumexp)
#define MAP_NONZERO 3  // x != 0 ? 1 : 0  (count_nonzero)
#define MAP_TRUTH 4    // bool(x)         (all, any)

#define FIN_NONE 0     // U(acc)
#define FIN_SCALE 1    // U(acc * scale)         (mean, var)
#define FIN_SQRT 2     // U(sqrt(acc * scale))   (std)
#define FIN_LOGADD 3   // U(log(acc) + c)        (logsumexp)
#define FIN_FINITE 4   // U(acc finite ? acc : 0) (logsumexp's shift)

// ---- identities ------------------------------------------------------------------------------

template <typename A> struct red_limits {  // integers
  PCM_DEVICE static A lowest() {
    if constexpr ((A)(-1) < (A)0) return (A)((A)1 << (sizeof(A) * 8 - 1));
    else return (A)0;
  }
  PCM_DEVICE static A highest() {
    if constexpr ((A)(-1) < (A)0) return (A)~((A)1 << (sizeof(A) * 8 - 1));
    else return (A)~(A)0;
  }
};
template <> struct red_limits<bool> {
  PCM_DEVICE static bool lowest() { return false; }
  PCM_DEVICE static bool highest() { return true; }
};
template <> struct red_limits<float> {
  PCM_DEVICE static float lowest() { return -pcm_inf<float>(); }
  PCM_DEVICE static float highest() { return pcm_inf<float>(); }
};
template <> struct red_limits<double> {
  PCM_DEVICE static double lowest() { return -pcm_inf<double>(); }
  PCM_DEVICE static double highest() { return pcm_inf<double>(); }
};
template <> struct red_limits<complex64_t> {
  PCM_DEVICE static complex64_t lowest() {
    return make_complex(-pcm_inf<float>(), -pcm_inf<float>());
  }
  PCM_DEVICE static complex64_t highest() {
    return make_complex(pcm_inf<float>(), pcm_inf<float>());
  }
};

template <int OP, typename A> PCM_DEVICE A red_identity() {
  if constexpr (OP == RED_SUM) return cast<A>(0);
  else if constexpr (OP == RED_PROD) return cast<A>(1);
  else if constexpr (OP == RED_MAX) return red_limits<A>::lowest();
  else if constexpr (OP == RED_MIN) return red_limits<A>::highest();
  else if constexpr (OP == RED_AND) return (A) true;
  else if constexpr (OP == RED_OR) return (A) false;
  else return cast<A>(-pcm_inf<float>());
}

template <int OP, typename A> PCM_DEVICE A red_apply(A a, A b) {
  if constexpr (OP == RED_SUM) return a + b;
  else if constexpr (OP == RED_PROD) return a * b;
  else if constexpr (OP == RED_MAX) return pcm_max(a, b);
  else if constexpr (OP == RED_MIN) return pcm_min(a, b);
  else if constexpr (OP == RED_AND) return (A)(a && b);
  else if constexpr (OP == RED_OR) return (A)(a || b);
  else return pcm_logaddexp(a, b);
}

// ---- warp and block primitives ---------------------------------------------------------------

template <typename A> PCM_DEVICE A red_shfl_xor(A v, int mask) {
  if constexpr (sizeof(A) == 8) {
    union { A a; unsigned long long u; } w;
    w.a = v;
    w.u = __shfl_xor_sync(0xffffffffu, w.u, mask);
    return w.a;
  } else {
    union { A a; unsigned int u; } w;
    w.u = 0;
    w.a = v;
    w.u = __shfl_xor_sync(0xffffffffu, w.u, mask);
    return w.a;
  }
}

template <typename A> PCM_DEVICE A red_shfl_up(A v, int delta) {
  if constexpr (sizeof(A) == 8) {
    union { A a; unsigned long long u; } w;
    w.a = v;
    w.u = __shfl_up_sync(0xffffffffu, w.u, delta);
    return w.a;
  } else {
    union { A a; unsigned int u; } w;
    w.u = 0;
    w.a = v;
    w.u = __shfl_up_sync(0xffffffffu, w.u, delta);
    return w.a;
  }
}

// A load that bypasses the SM's L1 (another block of this launch wrote *p): through a
// volatile integer of A's size, as volatile A would need volatile members.
template <typename A> PCM_DEVICE A red_load_volatile(const A* p) {
  if constexpr (sizeof(A) == 8) {
    union { A a; unsigned long long u; } w;
    w.u = *reinterpret_cast<const volatile unsigned long long*>(p);
    return w.a;
  } else if constexpr (sizeof(A) == 4) {
    union { A a; unsigned int u; } w;
    w.u = *reinterpret_cast<const volatile unsigned int*>(p);
    return w.a;
  } else if constexpr (sizeof(A) == 2) {
    union { A a; unsigned short u; } w;
    w.u = *reinterpret_cast<const volatile unsigned short*>(p);
    return w.a;
  } else {
    static_assert(sizeof(A) == 1, "accumulators are 1, 2, 4 or 8 bytes");
    union { A a; unsigned char u; } w;
    w.u = *reinterpret_cast<const volatile unsigned char*>(p);
    return w.a;
  }
}

template <int OP, typename A> PCM_DEVICE A warp_reduce(A v) {
#pragma unroll
  for (int m = 16; m; m >>= 1) v = red_apply<OP>(v, red_shfl_xor(v, m));
  return v;
}

// The reduction of v over the block, returned to every thread. blockDim.x is a multiple of 32.
template <int OP, typename A> PCM_DEVICE A block_allreduce(A v) {
  __shared__ A red_smem[33];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_reduce<OP>(v);
  __syncthreads();  // red_smem may still be read by a previous call
  if (lane == 0) red_smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    A w = lane < nw ? red_smem[lane] : red_identity<OP, A>();
    w = warp_reduce<OP>(w);
    if (lane == 0) red_smem[32] = w;
  }
  __syncthreads();
  return red_smem[32];
}

// ---- reductions ------------------------------------------------------------------------------

template <typename A> PCM_DEVICE A red_sqabs(A d) { return d * d; }
PCM_DEVICE float red_sqabs(complex64_t d) { return d.re * d.re + d.im * d.im; }

template <int MAP, typename A, typename W, typename T> PCM_DEVICE A red_map(T x, W c) {
  if constexpr (MAP == MAP_CAST) return cast<A>(x);
  else if constexpr (MAP == MAP_SQDEV) return cast<A>(red_sqabs(cast<W>(x) - c));
  else if constexpr (MAP == MAP_EXPDEV) return cast<A>(pcm_exp(cast<W>(x) - c));
  else if constexpr (MAP == MAP_NONZERO) return (A)(cast<bool>(x) ? 1 : 0);
  else return (A)cast<bool>(x);
}

template <int FIN, typename U, typename A, typename W> PCM_DEVICE U red_finish(A acc, W c,
                                                                              double scale) {
  typedef typename compute_type<U>::type F;
  if constexpr (FIN == FIN_NONE) return cast<U>(acc);
  else if constexpr (FIN == FIN_SCALE) return cast<U>(cast<F>(acc) * cast<F>(scale));
  else if constexpr (FIN == FIN_SQRT) return cast<U>(pcm_sqrt(cast<F>(acc) * cast<F>(scale)));
  else if constexpr (FIN == FIN_LOGADD) return cast<U>(pcm_log(cast<F>(acc)) + cast<F>(c));
  else {
    F f = cast<F>(acc);
    return cast<U>(pcm_isfinite(f) ? f : cast<F>(0));
  }
}

template <typename T> struct red_is_complex { static const bool value = false; };
template <> struct red_is_complex<complex64_t> { static const bool value = true; };

// Median arithmetic: double for float64, float otherwise; K is the key type.
template <typename F0> struct med_types { typedef float type; typedef uint32_t key; };
template <> struct med_types<double> { typedef double type; typedef uint64_t key; };
template <> struct med_types<complex64_t> { typedef complex64_t type; typedef uint64_t key; };

template <typename T> struct red_vec { static const int N = sizeof(T) >= 16 ? 1 : 16 / sizeof(T); };

// Rows: one block per row (split over `splits` blocks when long), or one warp per row
// (warp_rows != 0) for short rows. vec != 0: the row start is 16-byte aligned and len is a
// multiple of the pack width, so every thread moves 16 bytes per load, four loads in flight.
template <typename T, typename U, typename A, typename W, int OP, int MAP, int FIN>
__global__ void __launch_bounds__(512) reduce_row(const T* __restrict__ x, U* __restrict__ out, A* __restrict__ part,
                           const W* __restrict__ aux, unsigned int* __restrict__ done,
                           int64_t rows, int64_t len, int64_t splits,
                           int32_t warp_rows, int32_t vec, double scale) {
  int64_t row, lo, hi;
  int tid, nt;
  if (warp_rows) {
    row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;  // the whole warp leaves together
    lo = 0;
    hi = len;
    tid = threadIdx.x & 31;
    nt = 32;
  } else {
    row = (int64_t)blockIdx.x / splits;
    int64_t s = (int64_t)blockIdx.x - row * splits;
    int64_t chunk = (len + splits - 1) / splits;
    chunk = (chunk + 15) & ~(int64_t)15;  // a multiple of every pack width
    lo = s * chunk;
    hi = lo + chunk < len ? lo + chunk : len;
    if (lo > hi) lo = hi;
    tid = threadIdx.x;
    nt = blockDim.x;
  }
  W c = aux != nullptr ? aux[row] : cast<W>(0);
  A acc = red_identity<OP, A>();
  const T* p = x + row * len;
  constexpr int N = red_vec<T>::N;
  if (vec && N > 1) {
    typedef Pack<T, N> P;
    const P* pp = reinterpret_cast<const P*>(p);
    int64_t i = lo / N + tid, end = hi / N;
    A acc1 = red_identity<OP, A>();
    for (; i + 3 * (int64_t)nt < end; i += 4 * (int64_t)nt) {
      P a0 = pp[i], a1 = pp[i + nt], a2 = pp[i + 2 * nt], a3 = pp[i + 3 * nt];
#pragma unroll
      for (int k = 0; k < N; ++k) {
        acc = red_apply<OP>(acc, red_map<MAP, A>(a0.v[k], c));
        acc1 = red_apply<OP>(acc1, red_map<MAP, A>(a1.v[k], c));
        acc = red_apply<OP>(acc, red_map<MAP, A>(a2.v[k], c));
        acc1 = red_apply<OP>(acc1, red_map<MAP, A>(a3.v[k], c));
      }
    }
    for (; i < end; i += nt) {
      P a0 = pp[i];
#pragma unroll
      for (int k = 0; k < N; ++k) acc = red_apply<OP>(acc, red_map<MAP, A>(a0.v[k], c));
    }
    acc = red_apply<OP>(acc, acc1);
  } else {
    for (int64_t i = lo + tid; i < hi; i += nt) acc = red_apply<OP>(acc, red_map<MAP, A>(p[i], c));
  }
  if (warp_rows) {
    acc = warp_reduce<OP>(acc);
    if (tid == 0) out[row] = red_finish<FIN, U>(acc, c, scale);
    return;
  }
  acc = block_allreduce<OP>(acc);
  if (splits == 1) {
    if (threadIdx.x == 0) out[row] = red_finish<FIN, U>(acc, c, scale);
    return;
  }
  // Split: write the partial; with `done` (zeroed per-row counters), the row's last block to
  // arrive combines the partials: no second launch.
  __shared__ bool red_last;
  if (threadIdx.x == 0) {
    part[blockIdx.x] = acc;
    red_last = false;
    if (done != nullptr) {
      __threadfence();  // the partial is visible device-wide before the count says so
      red_last = atomicAdd(done + row, 1u) == (unsigned int)(splits - 1);
    }
  }
  __syncthreads();
  if (!red_last) return;
  __threadfence();
  acc = red_identity<OP, A>();
  const A* pr = part + row * splits;
  for (int64_t i = tid; i < splits; i += nt) acc = red_apply<OP>(acc, red_load_volatile(pr + i));
  acc = block_allreduce<OP>(acc);
  if (threadIdx.x == 0) {
    out[row] = red_finish<FIN, U>(acc, c, scale);
    done[row] = 0u;  // ready for the next launch on this stream
  }
}

// The second pass of a split reduction: one block per output reduces its `splits` partials.
template <typename U, typename A, typename W, int OP, int FIN>
__global__ void __launch_bounds__(256) reduce_partials(const A* __restrict__ part, U* __restrict__ out,
                                const W* __restrict__ aux, int64_t rows, int64_t splits,
                                double scale) {
  int64_t row = blockIdx.x;
  A acc = red_identity<OP, A>();
  for (int64_t i = threadIdx.x; i < splits; i += blockDim.x) {
    acc = red_apply<OP>(acc, part[row * splits + i]);
  }
  acc = block_allreduce<OP>(acc);
  if (threadIdx.x == 0) {
    W c = aux != nullptr ? aux[row] : cast<W>(0);
    out[row] = red_finish<FIN, U>(acc, c, scale);
  }
}

// Columns: reduce axis 1 of a contiguous (outer, len, inner) array. A block is 32 columns by
// blockDim.y (<= 8) walkers of the reduced axis, so each load of a warp is 32 neighbours; the
// walkers combine in shared memory. Long axes split over `splits` blocks (partials, as rows).
template <typename T, typename U, typename A, typename W, int OP, int MAP, int FIN>
__global__ void __launch_bounds__(256) reduce_cols(const T* __restrict__ x, U* __restrict__ out, A* __restrict__ part,
                            const W* __restrict__ aux, int64_t outer, int64_t len, int64_t inner,
                            int64_t splits, double scale) {
  __shared__ A cols_smem[8][33];
  int64_t ntiles = (inner + 31) / 32;
  int64_t b = blockIdx.x;
  int64_t s = b % splits;
  b /= splits;
  int64_t tile = b % ntiles;
  int64_t o = b / ntiles;
  int64_t i = tile * 32 + threadIdx.x;
  int64_t chunk = (len + splits - 1) / splits;
  int64_t lo = s * chunk;
  int64_t hi = lo + chunk < len ? lo + chunk : len;
  bool valid = i < inner;
  int64_t oi = o * inner + i;
  W c = (aux != nullptr && valid) ? aux[oi] : cast<W>(0);
  A acc = red_identity<OP, A>();
  if (valid) {
    const T* p = x + o * len * inner + i;
    for (int64_t r = lo + threadIdx.y; r < hi; r += blockDim.y) {
      acc = red_apply<OP>(acc, red_map<MAP, A>(p[r * inner], c));
    }
  }
  cols_smem[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && valid) {
    for (int k = 1; k < (int)blockDim.y; ++k) acc = red_apply<OP>(acc, cols_smem[k][threadIdx.x]);
    if (splits > 1) part[oi * splits + s] = acc;
    else out[oi] = red_finish<FIN, U>(acc, c, scale);
  }
}

// ---- argmax / argmin -------------------------------------------------------------------------

PCM_DEVICE bool arg_gt(complex64_t a, complex64_t b) { return pcm_gt(a, b); }
PCM_DEVICE bool arg_lt(complex64_t a, complex64_t b) { return pcm_lt(a, b); }
template <typename V> PCM_DEVICE bool arg_gt(V a, V b) { return a > b; }
template <typename V> PCM_DEVICE bool arg_lt(V a, V b) { return a < b; }

// Whether (a, ia) wins over (b, ib): the larger (smaller) value, the first NaN, the first
// index on ties; an index of -1 is "nothing yet".
template <bool IS_MAX, typename V> PCM_DEVICE bool arg_wins(V a, int64_t ia, V b, int64_t ib) {
  if (ib < 0) return true;
  if (ia < 0) return false;
  bool na = pcm_isnan(a), nb = pcm_isnan(b);
  if (na || nb) return na && nb ? ia < ib : na;
  if (a == b) return ia < ib;
  return IS_MAX ? arg_gt(a, b) : arg_lt(a, b);
}

template <bool IS_MAX, typename V> PCM_DEVICE void arg_warp(V& v, int64_t& idx) {
#pragma unroll
  for (int m = 16; m; m >>= 1) {
    V ov = red_shfl_xor(v, m);
    int64_t oi = red_shfl_xor(idx, m);
    if (arg_wins<IS_MAX>(ov, oi, v, idx)) {
      v = ov;
      idx = oi;
    }
  }
}

// The (value, index) winner over the block, in thread 0.
template <bool IS_MAX, typename V> PCM_DEVICE void arg_block(V& best, int64_t& bi) {
  __shared__ V arg_v[32];
  __shared__ int64_t arg_i[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  arg_warp<IS_MAX>(best, bi);
  if (lane == 0) {
    arg_v[warp] = best;
    arg_i[warp] = bi;
  }
  __syncthreads();
  if (warp == 0) {
    best = lane < nw ? arg_v[lane] : cast<V>(0);
    bi = lane < nw ? arg_i[lane] : -1;
    arg_warp<IS_MAX>(best, bi);
  }
}

// argmax/argmin of contiguous rows: a warp per row (warp_rows) or a block per row; a long row
// splits over `splits` blocks that write (value, index) partials for arg_partials.
template <typename T, bool IS_MAX>
__global__ void __launch_bounds__(1024) arg_row(
    const T* __restrict__ x, uint32_t* __restrict__ out, int64_t rows, int64_t len,
    int32_t warp_rows, int64_t splits, typename compute_type<T>::type* __restrict__ part_v,
    int64_t* __restrict__ part_i) {
  typedef typename compute_type<T>::type V;
  int64_t row, lo, hi;
  int tid, nt;
  if (warp_rows) {
    row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    tid = threadIdx.x & 31;
    nt = 32;
    lo = 0;
    hi = len;
  } else {
    row = (int64_t)blockIdx.x / splits;
    int64_t chunk = (len + splits - 1) / splits;
    lo = ((int64_t)blockIdx.x - row * splits) * chunk;
    hi = lo + chunk < len ? lo + chunk : len;
    tid = threadIdx.x;
    nt = blockDim.x;
  }
  const T* p = x + row * len;
  V best = cast<V>(0);
  int64_t bi = -1;
  for (int64_t i = lo + tid; i < hi; i += nt) {
    V v = to_compute(p[i]);
    if (arg_wins<IS_MAX>(v, i, best, bi)) {
      best = v;
      bi = i;
    }
  }
  if (warp_rows) {
    arg_warp<IS_MAX>(best, bi);
  } else {
    arg_block<IS_MAX>(best, bi);
  }
  if (tid != 0) return;
  if (splits > 1) {
    part_v[blockIdx.x] = best;
    part_i[blockIdx.x] = bi;
  } else {
    out[row] = (uint32_t)(bi < 0 ? 0 : bi);
  }
}

// The second pass of a split argmax/argmin: one block per row combines its partials.
template <typename T, bool IS_MAX>
__global__ void __launch_bounds__(256) arg_partials(
    const typename compute_type<T>::type* __restrict__ part_v,
    const int64_t* __restrict__ part_i, uint32_t* __restrict__ out, int64_t rows,
    int64_t splits) {
  typedef typename compute_type<T>::type V;
  int64_t row = blockIdx.x;
  V best = cast<V>(0);
  int64_t bi = -1;
  for (int64_t k = threadIdx.x; k < splits; k += blockDim.x) {
    V v = part_v[row * splits + k];
    int64_t i = part_i[row * splits + k];
    if (i >= 0 && arg_wins<IS_MAX>(v, i, best, bi)) {
      best = v;
      bi = i;
    }
  }
  arg_block<IS_MAX>(best, bi);
  if (threadIdx.x == 0) out[row] = (uint32_t)(bi < 0 ? 0 : bi);
}

// argmax/argmin along axis 1 of (outer, len, inner): a thread per output walks the axis.
template <typename T, bool IS_MAX>
__global__ void __launch_bounds__(256) arg_cols(const T* __restrict__ x, uint32_t* __restrict__ out, int64_t outer,
                         int64_t len, int64_t inner) {
  typedef typename compute_type<T>::type V;
  PCM_GRID_STRIDE(k, outer * inner) {
    int64_t o = k / inner, i = k - o * inner;
    const T* p = x + o * len * inner + i;
    V best = cast<V>(0);
    int64_t bi = -1;
    for (int64_t r = 0; r < len; ++r) {
      V v = to_compute(p[r * inner]);
      if (arg_wins<IS_MAX>(v, r, best, bi)) {
        best = v;
        bi = r;
      }
    }
    out[k] = (uint32_t)(bi < 0 ? 0 : bi);
  }
}

// ---- scans -----------------------------------------------------------------------------------

// Inclusive or exclusive, forward or reverse scan of contiguous rows. A block scans one chunk
// of `chunk_len` elements (in scan order) of one row: the block walks it in tiles of
// blockDim.x * 4 elements (4 consecutive per thread, a warp shuffle scan, then a scan of the
// warp totals) and carries the running total between tiles. Short rows are one chunk. Long
// rows take three phases: scan_totals reduces every chunk, scan_row scans those totals
// (exclusive), and scan_row scans each chunk again starting from its carry_in.
template <typename T, int OP>
__global__ void __launch_bounds__(1024) scan_row(
    const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t len, int32_t reverse,
    int32_t inclusive, int64_t chunk_len, const typename compute_type<T>::type* __restrict__ carry_in) {
  typedef typename compute_type<T>::type A;
  constexpr int ITEMS = 4;
  __shared__ A scan_smem[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  int64_t chunks = (len + chunk_len - 1) / chunk_len;
  int64_t row = (int64_t)blockIdx.x / chunks;
  int64_t lo = ((int64_t)blockIdx.x - row * chunks) * chunk_len;
  int64_t hi = lo + chunk_len < len ? lo + chunk_len : len;
  const T* p = x + row * len;
  T* q = out + row * len;
  A carry = carry_in != nullptr ? carry_in[blockIdx.x] : red_identity<OP, A>();
  for (int64_t base = lo; base < hi; base += (int64_t)blockDim.x * ITEMS) {
    A v[ITEMS];
    int64_t start = base + (int64_t)threadIdx.x * ITEMS;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      int64_t j = start + k;
      v[k] = j < hi ? to_compute(p[reverse ? len - 1 - j : j]) : red_identity<OP, A>();
    }
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] = red_apply<OP>(v[k - 1], v[k]);
    A incl = v[ITEMS - 1];
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      A y = red_shfl_up(incl, o);
      if (lane >= o) incl = red_apply<OP>(y, incl);
    }
    if (lane == 31) scan_smem[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      A w = lane < nw ? scan_smem[lane] : red_identity<OP, A>();
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        A y = red_shfl_up(w, o);
        if (lane >= o) w = red_apply<OP>(y, w);
      }
      scan_smem[lane] = w;
    }
    __syncthreads();
    A before = carry;
    if (warp > 0) before = red_apply<OP>(before, scan_smem[warp - 1]);
    A prev = red_shfl_up(incl, 1);
    if (lane > 0) before = red_apply<OP>(before, prev);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      int64_t j = start + k;
      if (j < hi) {
        A r = inclusive ? red_apply<OP>(before, v[k])
                        : (k == 0 ? before : red_apply<OP>(before, v[k - 1]));
        q[reverse ? len - 1 - j : j] = cast<T>(r);
      }
    }
    carry = red_apply<OP>(carry, scan_smem[nw - 1]);
    __syncthreads();
  }
}

// Phase 1 of a long-row scan: the total of each chunk (in scan order) of each row.
template <typename T, int OP>
__global__ void __launch_bounds__(1024) scan_totals(
    const T* __restrict__ x, typename compute_type<T>::type* __restrict__ totals, int64_t rows,
    int64_t len, int32_t reverse, int64_t chunk_len) {
  typedef typename compute_type<T>::type A;
  int64_t chunks = (len + chunk_len - 1) / chunk_len;
  int64_t row = (int64_t)blockIdx.x / chunks;
  int64_t lo = ((int64_t)blockIdx.x - row * chunks) * chunk_len;
  int64_t hi = lo + chunk_len < len ? lo + chunk_len : len;
  const T* p = x + row * len;
  A acc = red_identity<OP, A>();
  for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    acc = red_apply<OP>(acc, to_compute(p[reverse ? len - 1 - j : j]));
  }
  acc = block_allreduce<OP>(acc);
  if (threadIdx.x == 0) totals[blockIdx.x] = acc;
}

// Scan along axis 1 of (outer, len, inner): a thread per column walks the axis (coalesced
// across the columns of a warp).
template <typename T, int OP>
__global__ void __launch_bounds__(256) scan_cols(const T* __restrict__ x, T* __restrict__ out, int64_t outer,
                          int64_t len, int64_t inner, int32_t reverse, int32_t inclusive) {
  typedef typename compute_type<T>::type A;
  PCM_GRID_STRIDE(k, outer * inner) {
    int64_t o = k / inner, i = k - o * inner;
    const T* p = x + o * len * inner + i;
    T* q = out + o * len * inner + i;
    A acc = red_identity<OP, A>();
    for (int64_t r = 0; r < len; ++r) {
      int64_t j = reverse ? len - 1 - r : r;
      A v = to_compute(p[j * inner]);
      if (inclusive) {
        acc = red_apply<OP>(acc, v);
        q[j * inner] = cast<T>(acc);
      } else {
        q[j * inner] = cast<T>(acc);
        acc = red_apply<OP>(acc, v);
      }
    }
  }
}

// ---- softmax ---------------------------------------------------------------------------------

template <typename F> struct sm_state { F m, s; };

template <typename F> PCM_DEVICE F sm_lowest() { return red_limits<F>::lowest(); }

// exp(a - m) that is 0 for a == m == -inf (instead of exp(NaN)).
template <typename F> PCM_DEVICE F sm_scaled(F a, F m) {
  return (a == m && a == -pcm_inf<F>()) ? F(1) : pcm_exp(a - m);
}

template <typename F> PCM_DEVICE void sm_combine(F& m, F& s, F m2, F s2) {
  F mn = pcm_max(m, m2);
  if (mn == -pcm_inf<F>()) {
    s = s + s2;
  } else {
    s = s * sm_scaled(m, mn) + s2 * sm_scaled(m2, mn);
  }
  m = mn;
}

// Softmax of each contiguous row (F = float for float16/bfloat16/float32, double, complex64).
// Rows of up to nt * SM_EPT elements are read once and kept in registers (SM_EPT per thread: on
// the H200 32 per thread in 256-thread blocks ran 8,192-wide float32 rows at 3.99 TB/s, 8 per
// thread in 1,024-thread blocks at 2.81-3.71); longer rows take an online
// max/sum pass, then a second read that writes. One warp per row (warp_rows) for short rows.
// Elements of a row each thread keeps in registers (8 for double: its exp needs registers).
template <typename T> struct sm_ept {
  static const int value = sizeof(typename compute_type<T>::type) >= 8 ? 8 : 32;
};

// The row maximum may skip NaNs (fmax: one instruction instead of a NaN test and a select):
// a NaN anywhere in the row still makes the sum, so every output, NaN, as the formula does.
PCM_DEVICE float sm_fmax(float a, float b) { return fmaxf(a, b); }
PCM_DEVICE double sm_fmax(double a, double b) { return fmax(a, b); }

// FULL: the row is exactly PK packs per thread, so no load or store needs a bounds test.
template <typename T, int N, bool FULL>
PCM_DEVICE void softmax_cached(const T* __restrict__ p, T* __restrict__ q, int64_t len, int tid,
                               int nt, bool warp_rows) {
  typedef typename compute_type<T>::type F;
  constexpr int PK = sm_ept<T>::value / N > 0 ? sm_ept<T>::value / N : 1;
  typedef Pack<T, N> P;
  const P* pp = reinterpret_cast<const P*>(p);
  P* qp = reinterpret_cast<P*>(q);
  int64_t npk = len / N;
  F v[PK][N];
  F m = sm_lowest<F>();
#pragma unroll
  for (int k = 0; k < PK; ++k) {
    int64_t j = (int64_t)k * nt + tid;
    if (FULL || j < npk) {
      P a = pp[j];
#pragma unroll
      for (int e = 0; e < N; ++e) {
        v[k][e] = to_compute(a.v[e]);
        m = sm_fmax(m, v[k][e]);
      }
    }
  }
  m = warp_rows ? warp_reduce<RED_MAX>(m) : block_allreduce<RED_MAX>(m);
  if (m == -pcm_inf<F>()) m = F(0);
  F s = F(0);
#pragma unroll
  for (int k = 0; k < PK; ++k) {
    int64_t j = (int64_t)k * nt + tid;
    if (FULL || j < npk) {
#pragma unroll
      for (int e = 0; e < N; ++e) {
        v[k][e] = pcm_exp(v[k][e] - m);
        s += v[k][e];
      }
    }
  }
  s = warp_rows ? warp_reduce<RED_SUM>(s) : block_allreduce<RED_SUM>(s);
#pragma unroll
  for (int k = 0; k < PK; ++k) {
    int64_t j = (int64_t)k * nt + tid;
    if (FULL || j < npk) {
      P a;
#pragma unroll
      for (int e = 0; e < N; ++e) a.v[e] = cast<T>(v[k][e] / s);
      qp[j] = a;
    }
  }
}

template <typename T>
PCM_DEVICE void softmax_complex(const T* __restrict__ p, T* __restrict__ q, int64_t len, int tid,
                                int nt, bool warp_rows) {
  complex64_t s = make_complex(0.0f, 0.0f);
  for (int64_t j = tid; j < len; j += nt) s = s + pcm_exp(to_compute(p[j]));
  s = warp_rows ? warp_reduce<RED_SUM>(s) : block_allreduce<RED_SUM>(s);
  for (int64_t j = tid; j < len; j += nt) q[j] = pcm_div(pcm_exp(to_compute(p[j])), s);
}

template <typename T>
PCM_DEVICE void softmax_online(const T* __restrict__ p, T* __restrict__ q, int64_t len, int tid,
                               int nt, bool warp_rows) {
  typedef typename compute_type<T>::type F;
  F m = sm_lowest<F>(), s = F(0);
  for (int64_t j = tid; j < len; j += nt) {
    F y = to_compute(p[j]);
    sm_combine(m, s, y, F(1));
  }
  // combine (m, s) over the threads: the max first, then the rescaled sums
  // (a row of -inf only gives NaN, exp(-inf - -inf), as the unfused formula does)
  F gm = warp_rows ? warp_reduce<RED_MAX>(m) : block_allreduce<RED_MAX>(m);
  F part = gm == -pcm_inf<F>() ? s : s * pcm_exp(m - gm);
  F gs = warp_rows ? warp_reduce<RED_SUM>(part) : block_allreduce<RED_SUM>(part);
  for (int64_t j = tid; j < len; j += nt) q[j] = cast<T>(pcm_exp(F(to_compute(p[j])) - gm) / gs);
}

// One kernel per strategy, so each gets its own registers (one kernel holding all three spilled
// in the cached path): SM_PACKS rows of up to nt * SM_EPT elements cached as 16-byte packs (row
// and pointers 16-byte aligned), SM_SCALARS the same element by element, SM_ONLINE any length
// (and every complex row).
#define SM_PACKS 0
#define SM_SCALARS 1
#define SM_ONLINE 2

template <typename T, int MODE>
__global__ void __launch_bounds__(1024) softmax_row(const T* __restrict__ x, T* __restrict__ out,
                                                    int64_t rows, int64_t len,
                                                    int32_t warp_rows) {
  int64_t row;
  int tid, nt;
  if (warp_rows) {
    row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    tid = threadIdx.x & 31;
    nt = 32;
  } else {
    row = blockIdx.x;
    tid = threadIdx.x;
    nt = blockDim.x;
  }
  const T* p = x + row * len;
  T* q = out + row * len;
  if constexpr (red_is_complex<T>::value) {
    softmax_complex(p, q, len, tid, nt, warp_rows);
  } else if constexpr (MODE == SM_PACKS) {
    constexpr int N = red_vec<T>::N > 8 ? 8 : red_vec<T>::N;
    if (len == (int64_t)nt * sm_ept<T>::value) {
      softmax_cached<T, N, true>(p, q, len, tid, nt, warp_rows);
    } else {
      softmax_cached<T, N, false>(p, q, len, tid, nt, warp_rows);
    }
  } else if constexpr (MODE == SM_SCALARS) {
    softmax_cached<T, 1, false>(p, q, len, tid, nt, warp_rows);
  } else {
    softmax_online(p, q, len, tid, nt, warp_rows);
  }
}

// ---- median ----------------------------------------------------------------------------------

// Order-preserving unsigned keys of float / double / complex64 (lexicographic, as numpy sorts
// complex); NaNs are counted apart.
PCM_DEVICE uint32_t med_key32(float v) {
  uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
PCM_DEVICE float med_value32(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
PCM_DEVICE uint32_t med_key(float v) { return med_key32(v); }
PCM_DEVICE uint64_t med_key(double v) {
  uint64_t u = (uint64_t)__double_as_longlong(v);
  return (u & 0x8000000000000000ULL) ? ~u : (u | 0x8000000000000000ULL);
}
PCM_DEVICE uint64_t med_key(complex64_t v) {
  return ((uint64_t)med_key32(v.re) << 32) | (uint64_t)med_key32(v.im);
}
template <typename F> PCM_DEVICE F med_value(typename med_types<F>::key k);
template <> PCM_DEVICE float med_value<float>(uint32_t k) { return med_value32(k); }
template <> PCM_DEVICE double med_value<double>(uint64_t k) {
  return __longlong_as_double((long long)((k & 0x8000000000000000ULL)
                                              ? (k & 0x7fffffffffffffffULL) : ~k));
}
template <> PCM_DEVICE complex64_t med_value<complex64_t>(uint64_t k) {
  return make_complex(med_value32((uint32_t)(k >> 32)), med_value32((uint32_t)k));
}

// The k-th smallest key of a row: bit by bit from the top, keep the lower half while it holds
// more than k keys. One block per row, one counting pass per key bit.
template <typename T, typename F, typename K>
PCM_DEVICE K med_select(const T* __restrict__ p, int64_t len, int64_t k) {
  K result = 0;
  for (int b = (int)sizeof(K) * 8 - 1; b >= 0; --b) {
    K trial = result | (((K)1 << b) - 1);
    int64_t cnt = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      cnt += med_key(cast<F>(to_compute(p[j]))) <= trial ? 1 : 0;
    }
    cnt = block_allreduce<RED_SUM>(cnt);
    if (cnt <= k) result |= (K)1 << b;
  }
  return result;
}

// The median of each contiguous row (NaN if the row holds one), into U.
template <typename T, typename U>
__global__ void __launch_bounds__(256) median_row(const T* __restrict__ x, U* __restrict__ out, int64_t rows,
                           int64_t len) {
  typedef typename compute_type<U>::type F0;
  typedef typename med_types<F0>::type F;
  typedef typename med_types<F0>::key K;
  int64_t row = blockIdx.x;
  const T* p = x + row * len;
  int64_t nans = 0;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    nans += pcm_isnan(cast<F>(to_compute(p[j]))) ? 1 : 0;
  }
  nans = block_allreduce<RED_SUM>(nans);
  F r;
  if (nans > 0 || len == 0) {
    r = cast<F>(__int_as_float(0x7fc00000));
  } else {
    F a = med_value<F>(med_select<T, F, K>(p, len, (len - 1) / 2));
    F b = (len % 2) ? a : med_value<F>(med_select<T, F, K>(p, len, len / 2));
    r = (a + b) / cast<F>(2.0f);
  }
  if (threadIdx.x == 0) out[row] = cast<U>(r);
}
