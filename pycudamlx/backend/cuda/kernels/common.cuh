// Shared definitions for every pycudamlx kernel module.
//
// Self-contained on purpose: no <cstdint>, no cuda_fp16.h / cuda_bf16.h. NVRTC has none of those
// built in (they come from NVIDIA's runtime wheel, whose version must then match NVRTC's), and
// leaving them out halves cold compile times. float16 and bfloat16 are 16-bit storage types that
// compute in float, converted with PTX instructions (half) or exact bit arithmetic (bfloat16).

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

#define PCM_MAX_DIMS 8
#define PCM_DEVICE __device__ __forceinline__

struct __align__(2) __half { uint16_t bits; };
struct __align__(2) __nv_bfloat16 { uint16_t bits; };
struct __align__(8) complex64_t {
  float re, im;
};

// ---- conversions through float --------------------------------------------------------------

PCM_DEVICE float half_to_float(__half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
PCM_DEVICE __half float_to_half(float f) {
  __half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
PCM_DEVICE float bf16_to_float(__nv_bfloat16 b) {
  return __uint_as_float(((uint32_t)b.bits) << 16);
}
PCM_DEVICE __nv_bfloat16 float_to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  __nv_bfloat16 b;
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a quiet NaN
    b.bits = (uint16_t)((u >> 16) | 0x40u);
  } else {                                 // round to nearest, ties to even
    u += 0x7fffu + ((u >> 16) & 1u);
    b.bits = (uint16_t)(u >> 16);
  }
  return b;
}

// compute_t<T>: the type arithmetic on T happens in (float for the 16-bit floats).
template <typename T> struct compute_type { typedef T type; };
template <> struct compute_type<__half> { typedef float type; };
template <> struct compute_type<__nv_bfloat16> { typedef float type; };

// to_compute / from_compute move between storage and compute types.
template <typename T> PCM_DEVICE typename compute_type<T>::type to_compute(T v) { return v; }
template <> PCM_DEVICE float to_compute<__half>(__half v) { return half_to_float(v); }
template <> PCM_DEVICE float to_compute<__nv_bfloat16>(__nv_bfloat16 v) { return bf16_to_float(v); }

// ---- casts between any two dtypes (MLX's rules) ----------------------------------------------

// A float converted to an integer, with MLX's CPU results where they are the same on every
// processor: NaN gives 0; for 8- and 16-bit targets the truncated value wraps modulo 2^bits when
// it lies in int32's range (the CPU converts through int32); otherwise values outside the
// target's range saturate (MLX's result there depends on the processor). [WLO, WHI) is the range
// converted through a signed 64-bit integer.
template <typename I> PCM_DEVICE I float_to_int(double v, I lo, I hi, double wlo, double whi) {
  if (v != v) return (I)0;
  v = trunc(v);
  if (v >= wlo && v < whi) return (I)(long long)v;
  if ((unsigned long long)hi > 9223372036854775807ULL && v >= 0.0 &&
      v < 18446744073709551616.0) {
    return (I)(unsigned long long)v;  // uint64 above int64's range
  }
  return v < 0.0 ? lo : hi;
}

template <typename To> struct Cast {
  template <typename From> PCM_DEVICE static To from(From v) { return (To)v; }
  PCM_DEVICE static To from(__half v) { return Cast<To>::from(half_to_float(v)); }
  PCM_DEVICE static To from(__nv_bfloat16 v) { return Cast<To>::from(bf16_to_float(v)); }
  PCM_DEVICE static To from(complex64_t v) { return Cast<To>::from(v.re); }
  PCM_DEVICE static To from(bool v) { return (To)(v ? 1 : 0); }
};
#define PCM_INT_CAST(I, LO, HI, WLO, WHI)                                                    \
  template <> struct Cast<I> {                                                                \
    template <typename From> PCM_DEVICE static I from(From v) { return (I)v; }                \
    PCM_DEVICE static I from(float v) { return float_to_int<I>((double)v, LO, HI, WLO, WHI); } \
    PCM_DEVICE static I from(double v) { return float_to_int<I>(v, LO, HI, WLO, WHI); }       \
    PCM_DEVICE static I from(__half v) { return from(half_to_float(v)); }                     \
    PCM_DEVICE static I from(__nv_bfloat16 v) { return from(bf16_to_float(v)); }              \
    PCM_DEVICE static I from(complex64_t v) { return from(v.re); }                            \
    PCM_DEVICE static I from(bool v) { return (I)(v ? 1 : 0); }                               \
  };
PCM_INT_CAST(int8_t, (int8_t)-128, (int8_t)127, -2147483648.0, 2147483648.0)
PCM_INT_CAST(int16_t, (int16_t)-32768, (int16_t)32767, -2147483648.0, 2147483648.0)
PCM_INT_CAST(int32_t, (int32_t)(-2147483647 - 1), (int32_t)2147483647, -2147483648.0, 2147483648.0)
PCM_INT_CAST(int64_t, (int64_t)(-9223372036854775807LL - 1), (int64_t)9223372036854775807LL,
             -9223372036854775808.0, 9223372036854775808.0)
PCM_INT_CAST(uint8_t, (uint8_t)0, (uint8_t)255, -2147483648.0, 2147483648.0)
PCM_INT_CAST(uint16_t, (uint16_t)0, (uint16_t)65535, -2147483648.0, 2147483648.0)
PCM_INT_CAST(uint32_t, (uint32_t)0, (uint32_t)4294967295U, 0.0, 4294967296.0)
PCM_INT_CAST(uint64_t, (uint64_t)0, (uint64_t)18446744073709551615ULL, 0.0,
             9223372036854775808.0)
#undef PCM_INT_CAST

template <> struct Cast<bool> {
  template <typename From> PCM_DEVICE static bool from(From v) { return v != (From)0; }
  PCM_DEVICE static bool from(__half v) { return half_to_float(v) != 0.0f; }
  PCM_DEVICE static bool from(__nv_bfloat16 v) { return bf16_to_float(v) != 0.0f; }
  PCM_DEVICE static bool from(complex64_t v) { return v.re != 0.0f || v.im != 0.0f; }
  PCM_DEVICE static bool from(bool v) { return v; }
};
template <> struct Cast<__half> {
  template <typename From> PCM_DEVICE static __half from(From v) { return float_to_half((float)v); }
  PCM_DEVICE static __half from(double v) {  // via float: double rounding is what MLX does too
    return float_to_half((float)v);
  }
  PCM_DEVICE static __half from(__half v) { return v; }
  PCM_DEVICE static __half from(__nv_bfloat16 v) { return float_to_half(bf16_to_float(v)); }
  PCM_DEVICE static __half from(complex64_t v) { return float_to_half(v.re); }
  PCM_DEVICE static __half from(bool v) { return float_to_half(v ? 1.0f : 0.0f); }
};
template <> struct Cast<__nv_bfloat16> {
  template <typename From> PCM_DEVICE static __nv_bfloat16 from(From v) {
    return float_to_bf16((float)v);
  }
  PCM_DEVICE static __nv_bfloat16 from(__half v) { return float_to_bf16(half_to_float(v)); }
  PCM_DEVICE static __nv_bfloat16 from(__nv_bfloat16 v) { return v; }
  PCM_DEVICE static __nv_bfloat16 from(complex64_t v) { return float_to_bf16(v.re); }
  PCM_DEVICE static __nv_bfloat16 from(bool v) { return float_to_bf16(v ? 1.0f : 0.0f); }
};
template <> struct Cast<complex64_t> {
  template <typename From> PCM_DEVICE static complex64_t from(From v) {
    complex64_t c; c.re = (float)v; c.im = 0.0f; return c;
  }
  PCM_DEVICE static complex64_t from(__half v) { return from(half_to_float(v)); }
  PCM_DEVICE static complex64_t from(__nv_bfloat16 v) { return from(bf16_to_float(v)); }
  PCM_DEVICE static complex64_t from(complex64_t v) { return v; }
  PCM_DEVICE static complex64_t from(bool v) { return from(v ? 1.0f : 0.0f); }
};

template <typename To, typename From> PCM_DEVICE To cast(From v) { return Cast<To>::from(v); }

// ---- complex arithmetic ----------------------------------------------------------------------

PCM_DEVICE complex64_t make_complex(float re, float im) { complex64_t c; c.re = re; c.im = im; return c; }
PCM_DEVICE complex64_t operator+(complex64_t a, complex64_t b) { return make_complex(a.re + b.re, a.im + b.im); }
PCM_DEVICE complex64_t operator-(complex64_t a, complex64_t b) { return make_complex(a.re - b.re, a.im - b.im); }
PCM_DEVICE complex64_t operator-(complex64_t a) { return make_complex(-a.re, -a.im); }
PCM_DEVICE complex64_t operator*(complex64_t a, complex64_t b) {
  return make_complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
PCM_DEVICE complex64_t operator/(complex64_t a, complex64_t b) {
  float d = b.re * b.re + b.im * b.im;
  return make_complex((a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d);
}
PCM_DEVICE bool operator==(complex64_t a, complex64_t b) { return a.re == b.re && a.im == b.im; }
PCM_DEVICE bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }

// ---- layouts ---------------------------------------------------------------------------------

// Shape and element strides of up to PCM_MAX_DIMS dimensions for NARGS operands, passed by value.
// Strides may be 0 (broadcast) or negative (flipped views); offsets are applied to the pointers.
template <int NARGS> struct Layout {
  int64_t shape[PCM_MAX_DIMS];
  int64_t strides[NARGS][PCM_MAX_DIMS];
  int32_t ndim;
};

// Element offsets of linear (row-major) index i in each operand. I is int32_t when every extent
// and offset fits, which makes the division chain several times cheaper.
template <typename I, int NARGS>
PCM_DEVICE void layout_offsets(const Layout<NARGS>& L, I i, I (&off)[NARGS]) {
#pragma unroll
  for (int k = 0; k < NARGS; ++k) off[k] = 0;
  for (int d = L.ndim - 1; d >= 0; --d) {
    I extent = (I)L.shape[d];
    I q = i / extent;
    I r = i - q * extent;
#pragma unroll
    for (int k = 0; k < NARGS; ++k) off[k] += r * (I)L.strides[k][d];
    i = q;
  }
}

// N elements of T, aligned so one load or store moves them (16 bytes for float x 4).
template <typename T, int N> struct __align__(sizeof(T) * N) Pack { T v[N]; };

// A grid-stride loop over [0, n).
#define PCM_GRID_STRIDE(i, n)                                                                 \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                   \
       i += (int64_t)gridDim.x * blockDim.x)

// ---- row and tile launches --------------------------------------------------------------------

// Side of the square tiles that transposed reads go through (shared memory, blockDim (32, 8)):
// 64 for elements of up to 4 bytes, 32 above, so that two tiles stay within 48 KiB.
template <typename T> struct TileSide { enum { value = sizeof(T) <= 4 ? 64 : 32 }; };

// Every thread of a (32, 8) block reads its share of the TILE x TILE block of x whose top-left
// output element is (i0, j0), walking down columns (consecutive lanes take consecutive i), and
// stores it transposed: tile[c][r] = x(i0 + c, j0 + r). All loads are issued before the first
// store so that each thread has TILE * TILE / 256 of them in flight at once.
template <typename T, int TILE>
PCM_DEVICE void load_tile_down_columns(T (*tile)[TILE + 1], const T* __restrict__ x,
                                       int64_t s0, int64_t s1, int64_t i0, int64_t j0,
                                       int64_t rows, int64_t cols) {
  T v[TILE / 8][TILE / 32];
#pragma unroll
  for (int k = 0; k < TILE / 8; ++k) {
#pragma unroll
    for (int m = 0; m < TILE / 32; ++m) {
      const int64_t i = i0 + threadIdx.x + 32 * m, j = j0 + threadIdx.y + 8 * k;
      v[k][m] = (i < rows && j < cols) ? x[i * s0 + j * s1] : T();
    }
  }
#pragma unroll
  for (int k = 0; k < TILE / 8; ++k) {
#pragma unroll
    for (int m = 0; m < TILE / 32; ++m) tile[threadIdx.x + 32 * m][threadIdx.y + 8 * k] = v[k][m];
  }
}

// out (rows x cols, contiguous) = F::template apply<T, U>(x) for a source x laid out down
// columns (x.T): staged through a tile so that reads and writes are both coalesced. The body of
// unary_tiled and copy_tiled, which differ in F only.
template <typename T, typename U, typename F>
PCM_DEVICE void tiled_map(const T* __restrict__ a, U* __restrict__ out, int64_t rows,
                          int64_t cols, int64_t sa0, int64_t sa1) {
  enum { TILE = TileSide<T>::value };
  __shared__ T ta[TILE][TILE + 1];
  const int64_t j0 = (int64_t)blockIdx.x * TILE;
  for (int64_t i0 = (int64_t)blockIdx.y * TILE; i0 < rows; i0 += (int64_t)gridDim.y * TILE) {
    __syncthreads();
    load_tile_down_columns<T, TILE>(ta, a, sa0, sa1, i0, j0, rows, cols);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / 8; ++k) {
#pragma unroll
      for (int m = 0; m < TILE / 32; ++m) {
        const int r = threadIdx.y + 8 * k, c = threadIdx.x + 32 * m;
        const int64_t i = i0 + r, j = j0 + c;
        if (i < rows && j < cols) out[i * cols + j] = F::template apply<T, U>(ta[r][c]);
      }
    }
  }
}

// The element offsets of row ``row``'s start in each operand (rows of a 2-D launch: one
// multiplication per operand, the common case; deeper outer layouts divide).
template <int NARGS>
PCM_DEVICE void row_offsets(const Layout<NARGS>& L, int64_t row, int64_t (&off)[NARGS]) {
  if (L.ndim == 1) {
#pragma unroll
    for (int k = 0; k < NARGS; ++k) off[k] = row * L.strides[k][0];
  } else {
    layout_offsets<int64_t, NARGS>(L, row, off);
  }
}
