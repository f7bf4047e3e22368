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

// Tiles: out (rows x cols, contiguous) from an operand laid out down columns (exp(a.T)): staged
// through shared memory so that reads and writes are both coalesced (binary.cu binary_tiled).
template <typename T, typename U>
__global__ void unary_tiled(const T* __restrict__ a, U* __restrict__ out, int64_t rows,
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
        if (i < rows && j < cols) out[i * cols + j] = apply_unary<T, U>(ta[r][c]);
      }
    }
  }
}
