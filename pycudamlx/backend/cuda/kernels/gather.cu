// Gather and scatter with index arrays: integer-array indexing (x[idx], x[i, :, j]), take,
// take_along_axis, put_along_axis, x.at[idx].add/..., dynamic slices (mx.slice /
// mx.slice_update with array start indices) and their updates.
//
// One iteration space (the gather's output, the scatter's update) of up to PCM_MAX_DIMS
// dimensions. For each element, the source/destination offset is the strided offset of the
// iteration index plus, for each index array k, idx_k[its own strided offset] * axis_stride[k].
// Index values are read as IdxT (int32 or int64). A negative value gets axis_size[k] added once
// (Python's wrap; axis_size 0 disables it); then either it is clamped to [0, clamp_hi[k]]
// (gathers, dynamic slices: never out of bounds) or, in the scatter's skip mode, an element
// whose index falls outside [0, axis_size[k]) is not written (and, in the gather's fill mode,
// reads 0 instead: take past the end gives 0, never memory outside the source).

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

// out (contiguous) [i] = src[offset(i)]; with ``fill``, elements whose index is out of range
// (after one negative wrap) are 0 instead of clamped.
template <typename T, typename IdxT, typename I>
__global__ void gather(const T* __restrict__ src, T* __restrict__ out, int64_t n, IndexArgs A,
                       int32_t fill) {
  PCM_GRID_STRIDE(i, n) {
    I main, upd, idx[PCM_MAX_INDEX];
    index_offsets<I>(A, (I)i, main, upd, idx);
    int64_t term;
    if (index_term<IdxT, I>(A, idx, fill != 0, term)) {
      out[i] = src[(int64_t)main + term];
    } else {
      out[i] = T{};
    }
  }
}

// take of a contiguous source viewed as [outer][size][inner] along its middle axis with a
// contiguous index array of nidx elements, into a contiguous [outer][nidx][inner] output.
// An index is wrapped once when negative; one still outside [0, size) gives 0.
template <typename IdxT>
PCM_DEVICE bool take_index(IdxT raw, int64_t size, int64_t& j) {
  j = (int64_t)raw;
  if (j < 0) j += size;
  return j >= 0 && j < size;
}

// inner == 1, outer == 1 (mx.take(src, idx), x[idx] on a 1-D x): V indices per thread, read
// with one vector load when ``V`` > 1 (the host checks the alignment), their V source loads
// issued before any is used, and one vector store of the results.
template <typename T, typename IdxT, int V>
__global__ void take_flat(const T* __restrict__ src, const IdxT* __restrict__ idx,
                          T* __restrict__ out, int64_t n, int64_t size) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x * V;
  for (int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * V; base < n;
       base += step) {
    if (V > 1 && base + V <= n) {
      Pack<IdxT, V> iv = *reinterpret_cast<const Pack<IdxT, V>*>(idx + base);
      Pack<T, V> ov;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        int64_t j;
        bool ok = take_index<IdxT>(iv.v[k], size, j);
        ov.v[k] = ok ? src[j] : T{};
      }
      *reinterpret_cast<Pack<T, V>*>(out + base) = ov;
    } else {
      for (int k = 0; k < V && base + k < n; ++k) {
        int64_t j;
        bool ok = take_index<IdxT>(idx[base + k], size, j);
        out[base + k] = ok ? src[j] : T{};
      }
    }
  }
}

// General [outer][nidx][inner] take, moving V elements (16 bytes where the rows allow) per
// step: consecutive threads copy consecutive packs of a row, so each row is read and written
// with full-width coalesced accesses.
template <typename T, typename IdxT, typename I, int V>
__global__ void take_rows(const T* __restrict__ src, const IdxT* __restrict__ idx,
                          T* __restrict__ out, int64_t total, int64_t nidx, int64_t size,
                          int64_t inner) {
  const Pack<T, V>* s = reinterpret_cast<const Pack<T, V>*>(src);
  Pack<T, V>* o = reinterpret_cast<Pack<T, V>*>(out);
  PCM_GRID_STRIDE(e, total) {
    I q = (I)e / (I)inner;
    I r = (I)e - q * (I)inner;
    I row = q / (I)nidx;
    I k = q - row * (I)nidx;
    int64_t j;
    if (take_index<IdxT>(idx[k], size, j)) {
      o[e] = s[((int64_t)row * size + j) * inner + (int64_t)r];
    } else {
      o[e] = Pack<T, V>{};
    }
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

// ---- scatters that combine (x.at[idx].add / multiply / maximum / minimum) ---------------------
//
// Every update element is applied atomically, so duplicate indices combine: native atomicAdd
// for float, double and 32/64-bit integers, atomicMax/Min for 32/64-bit integers, and a
// compare-and-swap loop on the enclosing aligned 32-bit word (8-bit and 16-bit types) or on the
// element's own word otherwise. Scatter outputs are fresh allocations whose size is a multiple
// of 512 bytes, so the enclosing word of any element lies inside the allocation.

PCM_DEVICE bool scatter_less(complex64_t a, complex64_t b) {
  return a.re < b.re || (a.re == b.re && a.im < b.im);
}
template <typename T> PCM_DEVICE bool scatter_less(T a, T b) {
  return to_compute(a) < to_compute(b);
}

// The combining functions, as MLX's CPU scatter applies them: max keeps the current value only
// when it is strictly greater (so a NaN update wins and a NaN current value is replaced).
struct ScatterAdd {
  template <typename T> PCM_DEVICE static T apply(T o, T u) {
    return cast<T>(to_compute(o) + to_compute(u));
  }
};
struct ScatterProd {
  template <typename T> PCM_DEVICE static T apply(T o, T u) {
    return cast<T>(to_compute(o) * to_compute(u));
  }
};
struct ScatterMax {
  template <typename T> PCM_DEVICE static T apply(T o, T u) { return scatter_less(u, o) ? o : u; }
};
struct ScatterMin {
  template <typename T> PCM_DEVICE static T apply(T o, T u) { return scatter_less(o, u) ? o : u; }
};
template <> PCM_DEVICE bool ScatterAdd::apply<bool>(bool o, bool u) { return o || u; }
template <> PCM_DEVICE bool ScatterProd::apply<bool>(bool o, bool u) { return o && u; }
template <> PCM_DEVICE complex64_t ScatterAdd::apply<complex64_t>(complex64_t o, complex64_t u) {
  return o + u;
}
template <> PCM_DEVICE complex64_t ScatterProd::apply<complex64_t>(complex64_t o, complex64_t u) {
  return o * u;
}

template <typename W, typename T> PCM_DEVICE W bits_of(T v) {
  W w = 0;
  const unsigned char* s = reinterpret_cast<const unsigned char*>(&v);
  unsigned char* d = reinterpret_cast<unsigned char*>(&w);
#pragma unroll
  for (int k = 0; k < (int)sizeof(T); ++k) d[k] = s[k];
  return w;
}
template <typename T, typename W> PCM_DEVICE T from_bits(W w) {
  T v;
  const unsigned char* s = reinterpret_cast<const unsigned char*>(&w);
  unsigned char* d = reinterpret_cast<unsigned char*>(&v);
#pragma unroll
  for (int k = 0; k < (int)sizeof(T); ++k) d[k] = s[k];
  return v;
}

template <typename Op, typename T> struct AtomicApply {
  PCM_DEVICE static void run(T* p, T u) {
    if constexpr (sizeof(T) == 8) {
      unsigned long long* w = reinterpret_cast<unsigned long long*>(p);
      unsigned long long old = *w, assumed;
      do {
        assumed = old;
        unsigned long long nb =
            bits_of<unsigned long long>(Op::apply(from_bits<T>(assumed), u));
        if (nb == assumed) break;
        old = atomicCAS(w, assumed, nb);
      } while (old != assumed);
    } else if constexpr (sizeof(T) == 4) {
      unsigned int* w = reinterpret_cast<unsigned int*>(p);
      unsigned int old = *w, assumed;
      do {
        assumed = old;
        unsigned int nb = bits_of<unsigned int>(Op::apply(from_bits<T>(assumed), u));
        if (nb == assumed) break;
        old = atomicCAS(w, assumed, nb);
      } while (old != assumed);
    } else {
      unsigned long long addr = reinterpret_cast<unsigned long long>(p);
      unsigned int* w = reinterpret_cast<unsigned int*>(addr & ~3ULL);
      const unsigned int shift = (unsigned int)(addr & 3ULL) * 8u;
      const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
      unsigned int old = *w, assumed;
      do {
        assumed = old;
        T cur = from_bits<T>((assumed & mask) >> shift);
        unsigned int nv = bits_of<unsigned int>(Op::apply(cur, u));
        unsigned int nb = (assumed & ~mask) | ((nv << shift) & mask);
        if (nb == assumed) break;
        old = atomicCAS(w, assumed, nb);
      } while (old != assumed);
    }
  }
};
#define PCM_NATIVE_ATOMIC(OP, T, CALL, WT)                                             \
  template <> struct AtomicApply<OP, T> {                                              \
    PCM_DEVICE static void run(T* p, T u) { CALL(reinterpret_cast<WT*>(p), (WT)u); }   \
  };
PCM_NATIVE_ATOMIC(ScatterAdd, float, atomicAdd, float)
PCM_NATIVE_ATOMIC(ScatterAdd, double, atomicAdd, double)
PCM_NATIVE_ATOMIC(ScatterAdd, int32_t, atomicAdd, int)
PCM_NATIVE_ATOMIC(ScatterAdd, uint32_t, atomicAdd, unsigned int)
PCM_NATIVE_ATOMIC(ScatterAdd, int64_t, atomicAdd, unsigned long long)
PCM_NATIVE_ATOMIC(ScatterAdd, uint64_t, atomicAdd, unsigned long long)
PCM_NATIVE_ATOMIC(ScatterMax, int32_t, atomicMax, int)
PCM_NATIVE_ATOMIC(ScatterMax, uint32_t, atomicMax, unsigned int)
PCM_NATIVE_ATOMIC(ScatterMax, int64_t, atomicMax, long long)
PCM_NATIVE_ATOMIC(ScatterMax, uint64_t, atomicMax, unsigned long long)
PCM_NATIVE_ATOMIC(ScatterMin, int32_t, atomicMin, int)
PCM_NATIVE_ATOMIC(ScatterMin, uint32_t, atomicMin, unsigned int)
PCM_NATIVE_ATOMIC(ScatterMin, int64_t, atomicMin, long long)
PCM_NATIVE_ATOMIC(ScatterMin, uint64_t, atomicMin, unsigned long long)
#undef PCM_NATIVE_ATOMIC

// dst[offset(i)] = Op(dst[offset(i)], upd[i's offset]) for every in-range update element.
template <typename T, typename IdxT, typename I, typename Op>
__global__ void scatter_reduce(const T* __restrict__ upd_p, T* __restrict__ dst, int64_t n,
                               IndexArgs A) {
  PCM_GRID_STRIDE(i, n) {
    I main, upd, idx[PCM_MAX_INDEX];
    index_offsets<I>(A, (I)i, main, upd, idx);
    int64_t term;
    if (!index_term<IdxT, I>(A, idx, true, term)) continue;
    AtomicApply<Op, T>::run(dst + ((int64_t)main + term), upd_p[upd]);
  }
}
