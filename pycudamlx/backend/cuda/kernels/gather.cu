// Gather and scatter with index arrays: integer-array indexing (x[idx], x[i, :, j]), dynamic
// slices (mx.slice / mx.slice_update with array start indices) and their updates.
//
// One iteration space (the gather's output, the scatter's update) of up to PCM_MAX_DIMS
// dimensions. For each element, the source/destination offset is the strided offset of the
// iteration index plus, for each index array k, idx_k[its own strided offset] * axis_stride[k].
// Index values are read as IdxT (int32 or int64). A negative value gets axis_size[k] added once
// (Python's wrap; axis_size 0 disables it); then either it is clamped to [0, clamp_hi[k]]
// (gathers, dynamic slices: never out of bounds) or, in the scatter's skip mode, an element
// whose index falls outside [0, axis_size[k]) is not written.

#define PCM_MAX_INDEX 8

struct IndexArgs {
  int64_t shape[PCM_MAX_DIMS];                     // iteration shape
  int64_t strides[PCM_MAX_DIMS];                   // gather: source; scatter: destination
  int64_t upd_strides[PCM_MAX_DIMS];               // scatter: update (0 broadcasts)
  int64_t idx_strides[PCM_MAX_INDEX][PCM_MAX_DIMS];
  int64_t idx_ptrs[PCM_MAX_INDEX];                 // element 0 of each index view
  int64_t axis_strides[PCM_MAX_INDEX];
  int64_t axis_sizes[PCM_MAX_INDEX];
  int64_t clamp_hi[PCM_MAX_INDEX];
  int32_t ndim;
  int32_t nidx;
};

// Offsets of iteration index i: the main operand's, the update's, and each index array's.
template <typename I>
PCM_DEVICE void index_offsets(const IndexArgs& A, I i, I& main, I& upd, I (&idx)[PCM_MAX_INDEX]) {
  main = 0;
  upd = 0;
#pragma unroll
  for (int k = 0; k < PCM_MAX_INDEX; ++k) idx[k] = 0;
  for (int d = A.ndim - 1; d >= 0; --d) {
    I extent = (I)A.shape[d];
    I q = i / extent;
    I r = i - q * extent;
    main += r * (I)A.strides[d];
    upd += r * (I)A.upd_strides[d];
#pragma unroll
    for (int k = 0; k < PCM_MAX_INDEX; ++k) {
      if (k < A.nidx) idx[k] += r * (I)A.idx_strides[k][d];
    }
    i = q;
  }
}

// The offset contributed by the index arrays; false when an index is out of range (skip mode).
template <typename IdxT, typename I>
PCM_DEVICE bool index_term(const IndexArgs& A, const I (&idx)[PCM_MAX_INDEX], bool skip,
                           int64_t& term) {
  term = 0;
#pragma unroll
  for (int k = 0; k < PCM_MAX_INDEX; ++k) {
    if (k < A.nidx) {
      int64_t v = (int64_t)reinterpret_cast<const IdxT*>(A.idx_ptrs[k])[idx[k]];
      if (v < 0) v += A.axis_sizes[k];
      if (skip) {
        if (v < 0 || v >= A.axis_sizes[k]) return false;
      } else {
        v = v < 0 ? 0 : (v > A.clamp_hi[k] ? A.clamp_hi[k] : v);
      }
      term += v * A.axis_strides[k];
    }
  }
  return true;
}

// out (contiguous) [i] = src[offset(i)].
template <typename T, typename IdxT, typename I>
__global__ void gather(const T* __restrict__ src, T* __restrict__ out, int64_t n, IndexArgs A) {
  PCM_GRID_STRIDE(i, n) {
    I main, upd, idx[PCM_MAX_INDEX];
    index_offsets<I>(A, (I)i, main, upd, idx);
    int64_t term;
    index_term<IdxT, I>(A, idx, false, term);
    out[i] = src[(int64_t)main + term];
  }
}

// Scatter pass 1 (duplicate indices: the last update wins, as on MLX's CPU): every update
// element claims its destination with atomicMax of (its iteration index + 1).
template <typename IdxT, typename I, typename W>
__global__ void scatter_claim(W* __restrict__ winner, int64_t n, IndexArgs A, int32_t skip) {
  PCM_GRID_STRIDE(i, n) {
    I main, upd, idx[PCM_MAX_INDEX];
    index_offsets<I>(A, (I)i, main, upd, idx);
    int64_t term;
    if (!index_term<IdxT, I>(A, idx, skip != 0, term)) continue;
    atomicMax(winner + ((int64_t)main + term), (W)(i + 1));
  }
}

// Scatter pass 2: write the update where this element won (or always, without a winner array).
template <typename T, typename IdxT, typename I, typename W>
__global__ void scatter_write(const T* __restrict__ upd_p, T* __restrict__ dst,
                              const W* __restrict__ winner, int64_t n, IndexArgs A, int32_t skip) {
  PCM_GRID_STRIDE(i, n) {
    I main, upd, idx[PCM_MAX_INDEX];
    index_offsets<I>(A, (I)i, main, upd, idx);
    int64_t term;
    if (!index_term<IdxT, I>(A, idx, skip != 0, term)) continue;
    int64_t off = (int64_t)main + term;
    if (winner != nullptr && winner[off] != (W)(i + 1)) continue;
    dst[off] = upd_p[upd];
  }
}
