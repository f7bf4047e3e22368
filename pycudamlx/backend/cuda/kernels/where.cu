// Select kernel: out = c ? a : b, with broadcasting.

// ---- where (select) --------------------------------------------------------------------------

template <typename T, typename I>
__global__ void where_strided(const bool* __restrict__ c, const T* __restrict__ a,
                              const T* __restrict__ b, T* __restrict__ out, int64_t n,
                              Layout<3> L) {
  PCM_GRID_STRIDE(i, n) {
    I off[3];
    layout_offsets<I, 3>(L, (I)i, off);
    out[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}
