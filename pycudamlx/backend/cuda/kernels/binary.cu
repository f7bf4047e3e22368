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
