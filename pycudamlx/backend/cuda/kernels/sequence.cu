// Generated sequences and masks: arange, linspace, tri/eye masks, tril/triu selection, window
// functions, a strided fill, and the diagonal sum behind trace. Every kernel writes a contiguous
// output (fill_strided and tri_select take a strided operand through a Layout).

// ---- arange ----------------------------------------------------------------------------------

// Integer dtypes: out[i] = start + i * step in T's own modular arithmetic (MLX's result for
// steps that wrap, such as a negative step into an unsigned dtype). The arithmetic runs in
// uint64 (no signed-overflow UB) and truncates, which is the two's-complement wrap.
template <typename T>
__global__ void arange_int(T* __restrict__ out, int64_t n, uint64_t start, uint64_t step) {
  PCM_GRID_STRIDE(i, n) { out[i] = (T)(start + (uint64_t)i * step); }
}

// Floating and complex dtypes: out[i] = start + i * step computed in double, rounded once.
template <typename T>
__global__ void arange_float(T* __restrict__ out, int64_t n, double start, double step) {
  PCM_GRID_STRIDE(i, n) { out[i] = cast<T>(start + (double)i * step); }
}

// ---- linspace --------------------------------------------------------------------------------

// MLX's formula, in float32 without contraction: t = i / den; out = (1 - t) * start + t * stop.
template <typename T>
__global__ void linspace(T* __restrict__ out, int64_t n, float start, float stop, float den) {
  PCM_GRID_STRIDE(i, n) {
    float v;
    if (den == 0.0f) {
      v = start;
    } else {
      float t = __fdiv_rn((float)i, den);
      float tb = __fsub_rn(1.0f, t);
      v = __fadd_rn(__fmul_rn(tb, start), __fmul_rn(t, stop));
    }
    out[i] = cast<T>(v);
  }
}

// float64 output: the same formula in double (MLX computes float64 linspaces in float64).
template <typename T>
__global__ void linspace_d(T* __restrict__ out, int64_t n, double start, double stop,
                           double den) {
  PCM_GRID_STRIDE(i, n) {
    double v;
    if (den == 0.0) {
      v = start;
    } else {
      double t = __ddiv_rn((double)i, den);
      double tb = __dsub_rn(1.0, t);
      v = __dadd_rn(__dmul_rn(tb, start), __dmul_rn(t, stop));
    }
    out[i] = cast<T>(v);
  }
}

// ---- tri / eye masks -------------------------------------------------------------------------

// out[r, c] = (c - r <= k) for tri (mode 0), (c - r == k) for eye (mode 1); out is rows x cols.
template <typename T>
__global__ void tri_mask(T* __restrict__ out, int64_t n, int64_t cols, int64_t k, int32_t mode) {
  PCM_GRID_STRIDE(i, n) {
    int64_t r = i / cols;
    int64_t c = i - r * cols;
    bool keep = mode == 0 ? (c - r <= k) : (c - r == k);
    out[i] = cast<T>(keep);
  }
}

// tril (lower = 1: keep c - r <= k) and triu (lower = 0: keep c - r >= k) of a strided input
// whose last two dimensions are rows x cols; out is contiguous.
template <typename T, typename I>
__global__ void tri_select(const T* __restrict__ x, T* __restrict__ out, int64_t n, Layout<1> L,
                           int64_t rows, int64_t cols, int64_t k, int32_t lower) {
  PCM_GRID_STRIDE(i, n) {
    int64_t c = i % cols;
    int64_t r = (i / cols) % rows;
    bool keep = lower ? (c - r <= k) : (c - r >= k);
    if (keep) {
      I off[1];
      layout_offsets<I, 1>(L, (I)i, off);
      out[i] = x[off[0]];
    } else {
      out[i] = cast<T>(0);
    }
  }
}

// ---- strided fill ----------------------------------------------------------------------------

// out[layout(i)] = value for a strided destination view (pad borders, eye's diagonal).
template <typename T, typename I>
__global__ void fill_strided(T* __restrict__ out, T value, int64_t n, Layout<1> L) {
  PCM_GRID_STRIDE(i, n) {
    I off[1];
    layout_offsets<I, 1>(L, (I)i, off);
    out[off[0]] = value;
  }
}

// ---- window functions (float32 output) --------------------------------------------------------

// numpy's formulas evaluated in double and rounded once: 0 hanning, 1 hamming, 2 blackman,
// 3 bartlett. M == 1 gives 1.
__global__ void window(float* __restrict__ out, int64_t m, int32_t kind) {
  const double pi = 3.141592653589793238462643383279502884;
  PCM_GRID_STRIDE(i, m) {
    double v;
    if (m == 1) {
      v = 1.0;
    } else {
      double d = (double)(m - 1);
      double nn = (double)(2 * i + 1 - m);  // numpy's n = arange(1 - M, M, 2)
      if (kind == 0) {
        v = 0.5 + 0.5 * cos(pi * nn / d);
      } else if (kind == 1) {
        v = 0.54 + 0.46 * cos(pi * nn / d);
      } else if (kind == 2) {
        v = 0.42 + 0.5 * cos(pi * nn / d) + 0.08 * cos(2.0 * pi * nn / d);
      } else {
        v = nn <= 0.0 ? 1.0 + nn / d : 1.0 - nn / d;
      }
    }
    out[i] = (float)v;
  }
}

// ---- diagonal sum (trace) --------------------------------------------------------------------

template <typename U> struct acc_type { typedef float type; };
template <> struct acc_type<double> { typedef double type; };
template <> struct acc_type<complex64_t> { typedef complex64_t type; };
template <> struct acc_type<bool> { typedef int64_t type; };
template <> struct acc_type<int8_t> { typedef int64_t type; };
template <> struct acc_type<int16_t> { typedef int64_t type; };
template <> struct acc_type<int32_t> { typedef int64_t type; };
template <> struct acc_type<int64_t> { typedef int64_t type; };
template <> struct acc_type<uint8_t> { typedef uint64_t type; };
template <> struct acc_type<uint16_t> { typedef uint64_t type; };
template <> struct acc_type<uint32_t> { typedef uint64_t type; };
template <> struct acc_type<uint64_t> { typedef uint64_t type; };

// out[i] = sum_j U(x[outer(i) + j * dstride]) for j < len: each element converted to the output
// dtype first (trace's dtype= casts before summing), accumulated in a wide type.
template <typename T, typename U, typename I>
__global__ void diag_sum(const T* __restrict__ x, U* __restrict__ out, int64_t n, Layout<1> L,
                         int64_t len, int64_t dstride) {
  typedef typename acc_type<U>::type A;
  PCM_GRID_STRIDE(i, n) {
    I off[1];
    layout_offsets<I, 1>(L, (I)i, off);
    A acc = cast<A>(0);
    const T* p = x + off[0];
    for (int64_t j = 0; j < len; ++j) acc = acc + cast<A>(cast<U>(p[j * dstride]));
    out[i] = cast<U>(acc);
  }
}
