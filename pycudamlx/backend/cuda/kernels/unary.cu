// Unary elementwise kernels: out = Op(a), Op generated from the op table.

// ---- unary -----------------------------------------------------------------------------------

template <typename T, typename U>
PCM_DEVICE U apply_unary(T a) {
  return cast<U>(Op()(to_compute(a)));
}

template <typename T, typename U, int N>
__global__ void unary_contig(const T* __restrict__ a, U* __restrict__ out, int64_t n) {
  const int64_t packs = n / N;
  const Pack<T, N>* pa = reinterpret_cast<const Pack<T, N>*>(a);
  Pack<U, N>* po = reinterpret_cast<Pack<U, N>*>(out);
  PCM_GRID_STRIDE(p, packs) {
    Pack<T, N> va = pa[p];
    Pack<U, N> vo;
#pragma unroll
    for (int k = 0; k < N; ++k) vo.v[k] = apply_unary<T, U>(va.v[k]);
    po[p] = vo;
  }
  PCM_GRID_STRIDE(j, n - packs * N) { out[packs * N + j] = apply_unary<T, U>(a[packs * N + j]); }
}

template <typename T, typename U, typename I>
__global__ void unary_strided(const T* __restrict__ a, U* __restrict__ out, int64_t n,
                              Layout<1> L) {
  PCM_GRID_STRIDE(i, n) {
    I off[1];
    layout_offsets<I, 1>(L, (I)i, off);
    out[i] = apply_unary<T, U>(a[off[0]]);
  }
}

// Tiles: out (rows x cols, contiguous) from an operand laid out down columns (exp(a.T)).
struct ApplyUnary {
  template <typename T, typename U> PCM_DEVICE static U apply(T v) { return apply_unary<T, U>(v); }
};
template <typename T, typename U>
__global__ void unary_tiled(const T* __restrict__ a, U* __restrict__ out, int64_t rows,
                            int64_t cols, int64_t sa0, int64_t sa1) {
  tiled_map<T, U, ApplyUnary>(a, out, rows, cols, sa0, sa1);
}
