// Binary elementwise kernels: out = Op(a, b), Op generated from the op table; contiguous with
// optional scalar operands, or strided with broadcasting (stride 0) and negative strides.

// ---- binary ----------------------------------------------------------------------------------

template <typename T, typename U>
PCM_DEVICE U apply_binary(T a, T b) {
  return cast<U>(Op()(to_compute(a), to_compute(b)));
}

// SA / SB = 1 when that operand is a single element broadcast over the whole output.
template <typename T, typename U, int N, int SA, int SB>
__global__ void binary_contig(const T* __restrict__ a, const T* __restrict__ b,
                              U* __restrict__ out, int64_t n) {
  const int64_t packs = n / N;
  const T sa = SA ? a[0] : T();
  const T sb = SB ? b[0] : T();
  const Pack<T, N>* pa = reinterpret_cast<const Pack<T, N>*>(a);
  const Pack<T, N>* pb = reinterpret_cast<const Pack<T, N>*>(b);
  Pack<U, N>* po = reinterpret_cast<Pack<U, N>*>(out);
  PCM_GRID_STRIDE(p, packs) {
    Pack<T, N> va, vb;
    if (!SA) va = pa[p];
    if (!SB) vb = pb[p];
    Pack<U, N> vo;
#pragma unroll
    for (int k = 0; k < N; ++k) vo.v[k] = apply_binary<T, U>(SA ? sa : va.v[k], SB ? sb : vb.v[k]);
    po[p] = vo;
  }
  PCM_GRID_STRIDE(j, n - packs * N) {
    const int64_t i = packs * N + j;
    out[i] = apply_binary<T, U>(SA ? sa : a[i], SB ? sb : b[i]);
  }
}

template <typename T, typename U, typename I>
__global__ void binary_strided(const T* __restrict__ a, const T* __restrict__ b,
                               U* __restrict__ out, int64_t n, Layout<2> L) {
  PCM_GRID_STRIDE(i, n) {
    I off[2];
    layout_offsets<I, 2>(L, (I)i, off);
    out[i] = apply_binary<T, U>(a[off[0]], b[off[1]]);
  }
}

// Rows: out is (rows x cols), contiguous; each operand's stride along a row is 1 (IA / IB = 1) or
// 0 (one value per row), and its row starts come from the outer layout L. Broadcasts such as
// a + row, a + col[:, None] and batched versions of them run at contiguous speed this way.
// With N > 1, cols and every row start are multiples of the pack.
template <typename T, typename U, int N, int IA, int IB>
__global__ void binary_rows(const T* __restrict__ a, const T* __restrict__ b,
                            U* __restrict__ out, int64_t cols, int64_t rows, Layout<2> L) {
  const int64_t packs = cols / N;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    int64_t off[2];
    row_offsets<2>(L, r, off);
    const T* ar = a + off[0];
    const T* br = b + off[1];
    const T sa = IA ? T() : ar[0];
    const T sb = IB ? T() : br[0];
    const Pack<T, N>* pa = reinterpret_cast<const Pack<T, N>*>(ar);
    const Pack<T, N>* pb = reinterpret_cast<const Pack<T, N>*>(br);
    Pack<U, N>* po = reinterpret_cast<Pack<U, N>*>(out + r * cols);
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < packs;
         p += (int64_t)gridDim.x * blockDim.x) {
      Pack<T, N> va, vb;
      if (IA) va = pa[p];
      if (IB) vb = pb[p];
      Pack<U, N> vo;
#pragma unroll
      for (int k = 0; k < N; ++k)
        vo.v[k] = apply_binary<T, U>(IA ? va.v[k] : sa, IB ? vb.v[k] : sb);
      po[p] = vo;
    }
  }
}

// Tiles: out is (rows x cols), contiguous; an operand whose elements are closer together down a
// column than along a row (a.T + b) is staged through a shared-memory tile (TA / TB = 1), read
// down columns and written along rows, so its reads and out's writes are both coalesced.
template <typename T, typename U, int TA, int TB>
__global__ void binary_tiled(const T* __restrict__ a, const T* __restrict__ b,
                             U* __restrict__ out, int64_t rows, int64_t cols, int64_t sa0,
                             int64_t sa1, int64_t sb0, int64_t sb1) {
  enum { TILE = TileSide<T>::value };
  __shared__ T ta[TA ? TILE : 1][TILE + 1];
  __shared__ T tb[TB ? TILE : 1][TILE + 1];
  const int64_t j0 = (int64_t)blockIdx.x * TILE;
  for (int64_t i0 = (int64_t)blockIdx.y * TILE; i0 < rows; i0 += (int64_t)gridDim.y * TILE) {
    __syncthreads();
    if (TA) load_tile_down_columns<T, TILE>(ta, a, sa0, sa1, i0, j0, rows, cols);
    if (TB) load_tile_down_columns<T, TILE>(tb, b, sb0, sb1, i0, j0, rows, cols);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / 8; ++k) {
#pragma unroll
      for (int m = 0; m < TILE / 32; ++m) {
        const int r = threadIdx.y + 8 * k, c = threadIdx.x + 32 * m;
        const int64_t i = i0 + r, j = j0 + c;
        if (i < rows && j < cols) {
          const T va = TA ? ta[r][c] : a[i * sa0 + j * sa1];
          const T vb = TB ? tb[r][c] : b[i * sb0 + j * sb1];
          out[i * cols + j] = apply_binary<T, U>(va, vb);
        }
      }
    }
  }
}
