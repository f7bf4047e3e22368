// Copy/cast and fill kernels: contiguous (N elements per 16-byte load), strided source,
// and strided source plus strided destination.

// ---- copy and cast ---------------------------------------------------------------------------

template <typename T, typename U, int N>
__global__ void copy_contig(const T* __restrict__ a, U* __restrict__ out, int64_t n) {
  const int64_t packs = n / N;
  const Pack<T, N>* pa = reinterpret_cast<const Pack<T, N>*>(a);
  Pack<U, N>* po = reinterpret_cast<Pack<U, N>*>(out);
  PCM_GRID_STRIDE(p, packs) {
    Pack<T, N> va = pa[p];
    Pack<U, N> vo;
#pragma unroll
    for (int k = 0; k < N; ++k) vo.v[k] = cast<U>(va.v[k]);
    po[p] = vo;
  }
  PCM_GRID_STRIDE(j, n - packs * N) { out[packs * N + j] = cast<U>(a[packs * N + j]); }
}

// Strided source, contiguous destination (contiguous(), astype of a view, broadcast_to + copy).
template <typename T, typename U, typename I>
__global__ void copy_strided(const T* __restrict__ a, U* __restrict__ out, int64_t n,
                             Layout<1> L) {
  PCM_GRID_STRIDE(i, n) {
    I off[1];
    layout_offsets<I, 1>(L, (I)i, off);
    out[i] = cast<U>(a[off[0]]);
  }
}

// Strided source and strided destination (slice updates, writes into views).
template <typename T, typename U, typename I>
__global__ void copy_general(const T* __restrict__ a, U* __restrict__ out, int64_t n,
                             Layout<2> L) {
  PCM_GRID_STRIDE(i, n) {
    I off[2];
    layout_offsets<I, 2>(L, (I)i, off);
    out[off[1]] = cast<U>(a[off[0]]);
  }
}

// Tiles: a contiguous (rows x cols) destination from a source laid out down columns
// (contiguous(a.T), astype of a transpose).
struct CastTo {
  template <typename T, typename U> PCM_DEVICE static U apply(T v) { return cast<U>(v); }
};
template <typename T, typename U>
__global__ void copy_tiled(const T* __restrict__ a, U* __restrict__ out, int64_t rows,
                           int64_t cols, int64_t sa0, int64_t sa1) {
  tiled_map<T, U, CastTo>(a, out, rows, cols, sa0, sa1);
}

// ---- fill ------------------------------------------------------------------------------------

template <typename T, int N>
__global__ void fill(T* __restrict__ out, T value, int64_t n) {
  const int64_t packs = n / N;
  Pack<T, N>* po = reinterpret_cast<Pack<T, N>*>(out);
  Pack<T, N> vv;
#pragma unroll
  for (int k = 0; k < N; ++k) vv.v[k] = value;
  PCM_GRID_STRIDE(p, packs) { po[p] = vv; }
  PCM_GRID_STRIDE(j, n - packs * N) { out[packs * N + j] = value; }
}
