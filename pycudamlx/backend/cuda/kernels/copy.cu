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
// (contiguous(a.T), astype of a transpose), through shared memory as binary.cu binary_tiled.
template <typename T, typename U>
__global__ void copy_tiled(const T* __restrict__ a, U* __restrict__ out, int64_t rows,
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
        if (i < rows && j < cols) out[i * cols + j] = cast<U>(ta[r][c]);
      }
    }
  }
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
