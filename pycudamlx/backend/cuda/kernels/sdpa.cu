// mx.fast.scaled_dot_product_attention: fused attention with an online softmax (the scores
// never reach global memory).
//
// sdpa_tiled<T, D>: head dims Dk == Dv == D in {64, 80, 96, 128}, float16/bfloat16/float32.
//   A block of 4 warps takes 16 queries of one (batch, head); K and V move through shared memory
//   in tiles of 32 keys (converted to float once); lane l scores key l of the tile for the
//   warp's 4 queries, and owns output dims lane + 32a for the P @ V update.
// sdpa_generic<T>: any head dims (and float64): one warp per query, lane l scores key j0 + l
//   straight from global memory; grid.z splits the output dims in slices of 128.
//
// Semantics are MLX's (its fallback composition): scores = (q * scale) @ k^T; a boolean mask
// or the causal mask (lower-right aligned: key j is visible to query i when
// j <= i + Tk - Tq) replaces hidden scores with the dtype's lowest finite value (so a fully
// hidden row averages V); an additive mask is added (a row of -inf gives NaN); sinks are an
// extra logit per query head that takes probability mass but has no value row. Inputs are read
// through their strides (any layout); GQA maps query head h to key/value head h / (Hq / Hkv).

#define SDPA_FULL 0xffffffffu

struct SdpaArgs {
  int64_t qs[4], ks[4], vs[4], os[4], ms[4];  // element strides (batch, head, token, dim)
  double masked;                              // the score of a hidden key
  float scale;
  int32_t B, Hq, Hkv, Tq, Tk, Dk, Dv;
  int32_t mask_kind;                          // 0 none, 1 bool, 2 additive (dtype T)
  int32_t causal, has_sinks, bh_base;         // bh_base: first batch*head of this launch
  int32_t vec;                                // sdpa_mma: 16-byte loads of q (1), k (2), v (4)
  int32_t pad;
};

template <typename C> PCM_DEVICE C sdpa_warp_max(C v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(SDPA_FULL, v, o));
  return v;
}
template <typename C> PCM_DEVICE C sdpa_warp_sum(C v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(SDPA_FULL, v, o);
  return v;
}

// The mask applied to one score (i < Tq, j < Tk).
template <typename T, typename C>
PCM_DEVICE C sdpa_mask(C s, const void* mask, const SdpaArgs& a, int b, int h, int64_t i,
                       int64_t j) {
  if (a.causal && j > i + (int64_t)(a.Tk - a.Tq)) return (C)a.masked;
  if (a.mask_kind) {
    const int64_t off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + j * a.ms[3];
    if (a.mask_kind == 1) {
      if (!reinterpret_cast<const bool*>(mask)[off]) return (C)a.masked;
    } else {
      s += (C)to_compute(reinterpret_cast<const T*>(mask)[off]);
    }
  }
  return s;
}

template <typename T, int D>
__global__ void __launch_bounds__(128)
sdpa_tiled(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
           const void* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
           SdpaArgs a) {
  constexpr int NW = 4, QW = 4, BQ = NW * QW, BK = 32, A = (D + 31) / 32, DP = D + 1;
  __shared__ float Qs[BQ][D];
  __shared__ float Ks[BK][DP];
  __shared__ float Vs[BK][DP];
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int bh = a.bh_base + blockIdx.y;
  const int b = bh / a.Hq, h = bh - b * a.Hq;
  const int hk = h / (a.Hq / a.Hkv);
  const int64_t i0 = (int64_t)blockIdx.x * BQ;
  const T* qb = q + b * a.qs[0] + h * a.qs[1];
  const T* kb = k + b * a.ks[0] + hk * a.ks[1];
  const T* vb = v + b * a.vs[0] + hk * a.vs[1];

  for (int e = tid; e < BQ * D; e += NW * 32) {
    const int r = e / D, d = e - r * D;
    const int64_t i = i0 + r;
    Qs[r][d] = i < a.Tq ? to_compute(qb[i * a.qs[2] + d * a.qs[3]]) * a.scale : 0.0f;
  }

  float m[QW], l[QW], acc[QW][A];
  const float sink = a.has_sinks ? (float)to_compute(sinks[h]) : NEG_INF;
#pragma unroll
  for (int qq = 0; qq < QW; ++qq) {
    m[qq] = sink;
    l[qq] = a.has_sinks ? 1.0f : 0.0f;
#pragma unroll
    for (int x = 0; x < A; ++x) acc[qq][x] = 0.0f;
  }

  const int64_t koff = (int64_t)a.Tk - a.Tq;
  int64_t kend = a.Tk;
  // Causal: keys past the block's last visible key score exp(lowest - max) = 0 exactly, so they
  // are skipped, unless a row of the block sees no key at all (it then averages every key).
  if (a.causal && i0 + koff >= 0) {
    const int64_t last = i0 + BQ - 1 + koff + 1;
    if (last < kend) kend = last;
  }

  for (int64_t j0 = 0; j0 < kend; j0 += BK) {
    __syncthreads();
    for (int e = tid; e < BK * D; e += NW * 32) {
      const int r = e / D, d = e - r * D;
      const int64_t j = j0 + r;
      const bool ok = j < a.Tk;
      Ks[r][d] = ok ? to_compute(kb[j * a.ks[2] + d * a.ks[3]]) : 0.0f;
      Vs[r][d] = ok ? to_compute(vb[j * a.vs[2] + d * a.vs[3]]) : 0.0f;
    }
    __syncthreads();

    float s[QW];
#pragma unroll
    for (int qq = 0; qq < QW; ++qq) s[qq] = 0.0f;
#pragma unroll 8
    for (int d = 0; d < D; ++d) {
      const float kv = Ks[lane][d];
#pragma unroll
      for (int qq = 0; qq < QW; ++qq) s[qq] += Qs[warp * QW + qq][d] * kv;
    }
    const int64_t j = j0 + lane;
    float p[QW];
#pragma unroll
    for (int qq = 0; qq < QW; ++qq) {
      const int64_t i = i0 + warp * QW + qq;
      float sc = s[qq];
      if (j >= a.Tk) {
        sc = NEG_INF;
      } else if (i < a.Tq) {
        sc = sdpa_mask<T, float>(sc, mask, a, b, h, i, j);
      }
      const float mt = sdpa_warp_max(sc);
      const float mn = fmaxf(m[qq], mt);
      float alpha, pj;
      if (mn == NEG_INF) {
        alpha = 1.0f;
        pj = 0.0f;
      } else {
        alpha = expf(m[qq] - mn);
        pj = expf(sc - mn);
      }
      l[qq] = l[qq] * alpha + sdpa_warp_sum(pj);
      m[qq] = mn;
#pragma unroll
      for (int x = 0; x < A; ++x) acc[qq][x] *= alpha;
      p[qq] = pj;
    }
    const int64_t rem = a.Tk - j0;
    const int jn = rem < BK ? (int)rem : BK;
    for (int jj = 0; jj < jn; ++jj) {
      float vv[A];
#pragma unroll
      for (int x = 0; x < A; ++x) {
        const int d = lane + 32 * x;
        vv[x] = d < D ? Vs[jj][d] : 0.0f;
      }
#pragma unroll
      for (int qq = 0; qq < QW; ++qq) {
        const float pj = __shfl_sync(SDPA_FULL, p[qq], jj);
#pragma unroll
        for (int x = 0; x < A; ++x) acc[qq][x] += pj * vv[x];
      }
    }
  }

#pragma unroll
  for (int qq = 0; qq < QW; ++qq) {
    const int64_t i = i0 + warp * QW + qq;
    if (i >= a.Tq) continue;
    T* orow = out + b * a.os[0] + h * a.os[1] + i * a.os[2];
#pragma unroll
    for (int x = 0; x < A; ++x) {  // l == 0 (every score -inf) gives NaN, as MLX
      const int d = lane + 32 * x;
      if (d < D) orow[d * a.os[3]] = cast<T>(acc[qq][x] / l[qq]);
    }
  }
}

#define SDPA_GA 4

template <typename T>
__global__ void __launch_bounds__(128)
sdpa_generic(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
             const void* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
             SdpaArgs a) {
  typedef typename compute_type<T>::type C;
  const C NEG_INF = (C)(-__int_as_float(0x7f800000));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t i = (int64_t)blockIdx.x * 4 + warp;
  if (i >= a.Tq) return;  // a whole warp leaves together; no block barrier below
  const int bh = a.bh_base + blockIdx.y;
  const int b = bh / a.Hq, h = bh - b * a.Hq;
  const int hk = h / (a.Hq / a.Hkv);
  const int d0 = blockIdx.z * 32 * SDPA_GA;
  const T* qr = q + b * a.qs[0] + h * a.qs[1] + i * a.qs[2];
  const T* kb = k + b * a.ks[0] + hk * a.ks[1];
  const T* vb = v + b * a.vs[0] + hk * a.vs[1];

  C m = a.has_sinks ? (C)to_compute(sinks[h]) : NEG_INF;
  C l = a.has_sinks ? (C)1 : (C)0;
  C acc[SDPA_GA];
#pragma unroll
  for (int x = 0; x < SDPA_GA; ++x) acc[x] = (C)0;

  for (int64_t j0 = 0; j0 < a.Tk; j0 += 32) {
    const int64_t j = j0 + lane;
    C s = NEG_INF;
    if (j < a.Tk) {
      const T* kr = kb + j * a.ks[2];
      C dot = (C)0;
      for (int d = 0; d < a.Dk; ++d)
        dot += (C)to_compute(qr[d * a.qs[3]]) * (C)to_compute(kr[d * a.ks[3]]);
      s = sdpa_mask<T, C>(dot * (C)a.scale, mask, a, b, h, i, j);
    }
    const C mt = sdpa_warp_max(s);
    const C mn = m > mt ? m : mt;
    C alpha, p;
    if (mn == NEG_INF) {
      alpha = (C)1;
      p = (C)0;
    } else {
      alpha = exp(m - mn);
      p = exp(s - mn);
    }
    l = l * alpha + sdpa_warp_sum(p);
    m = mn;
    const int64_t rem = a.Tk - j0;
    const int jn = rem < 32 ? (int)rem : 32;
#pragma unroll
    for (int x = 0; x < SDPA_GA; ++x) acc[x] *= alpha;
    for (int jj = 0; jj < jn; ++jj) {
      const C pj = __shfl_sync(SDPA_FULL, p, jj);
      const T* vr = vb + (j0 + jj) * a.vs[2];
#pragma unroll
      for (int x = 0; x < SDPA_GA; ++x) {
        const int d = d0 + lane + 32 * x;
        if (d < a.Dv) acc[x] += pj * (C)to_compute(vr[d * a.vs[3]]);
      }
    }
  }
  T* orow = out + b * a.os[0] + h * a.os[1] + i * a.os[2];
#pragma unroll
  for (int x = 0; x < SDPA_GA; ++x) {
    const int d = d0 + lane + 32 * x;
    if (d < a.Dv) orow[d * a.os[3]] = cast<T>(acc[x] / l);
  }
}

// ---- decode: a few queries against many keys (flash-decoding) --------------------------------
//
// sdpa_split<T, A, R>: grid (splits, B * Hkv, ceil(G * Tq / R)) with G = Hq / Hkv, 128 threads.
// Block (s, b * Hkv + hk, z) takes rows z*R .. z*R + R - 1 of the G * Tq queries that read kv
// head hk (row r: query head hk * G + r / Tq, token r % Tq), so a GQA group reads each key once,
// and keys [s * chunk, (s + 1) * chunk) of Tk, so one sequence fills the GPU. Lane l holds dims
// l + 32x (x < A) of q, k and v (coalesced rows in any layout); warp w scores SDPA_DU keys at a
// time (loads issued before use) and keeps an online softmax per row; the 4 warps merge in
// shared memory. One split: the block applies the sink and writes the output; more: it writes
// (max, sum, unnormalised output) per row to ``part`` and sdpa_combine merges the splits.
// Hidden keys score a.masked, as in the kernels above, so results follow the same rules.

#define SDPA_DU 4

template <typename T, int A, int R>
__global__ void __launch_bounds__(128)
sdpa_split(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
           const void* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
           SdpaArgs a, float* __restrict__ part, int32_t chunk) {
  __shared__ float sm_m[4][R], sm_l[4][R];
  __shared__ float sm_acc[4][R][A * 32];
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int bhk = blockIdx.y;
  const int b = bhk / a.Hkv, hk = bhk - b * a.Hkv;
  const int G = a.Hq / a.Hkv, rows = G * a.Tq;
  const int r0 = blockIdx.z * R;
  const T* kb = k + b * a.ks[0] + hk * a.ks[1];
  const T* vb = v + b * a.vs[0] + hk * a.vs[1];

  float qv[R][A], m[R], l[R], acc[R][A];
  int hr[R];
  int64_t ir[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int rr = r0 + r < rows ? r0 + r : rows - 1;  // rows past the end repeat the last
    hr[r] = hk * G + rr / a.Tq;
    ir[r] = rr % a.Tq;
    const T* qr = q + b * a.qs[0] + hr[r] * a.qs[1] + ir[r] * a.qs[2];
#pragma unroll
    for (int x = 0; x < A; ++x) {
      const int d = lane + 32 * x;
      qv[r][x] = d < a.Dk ? to_compute(qr[d * a.qs[3]]) * a.scale : 0.0f;
      acc[r][x] = 0.0f;
    }
    m[r] = NEG_INF;
    l[r] = 0.0f;
  }
  const int nr = rows - r0 < R ? rows - r0 : R;

  const int64_t j_begin = (int64_t)blockIdx.x * chunk;
  const int64_t j_end = j_begin + chunk < a.Tk ? j_begin + chunk : a.Tk;
  for (int64_t j0 = j_begin + warp * SDPA_DU; j0 < j_end; j0 += 4 * SDPA_DU) {
    float kk[SDPA_DU][A], vv[SDPA_DU][A];
#pragma unroll
    for (int u = 0; u < SDPA_DU; ++u) {
      const int64_t j = j0 + u;
      const bool ok = j < j_end;
      const T* kr = kb + (ok ? j : j_begin) * a.ks[2];
      const T* vr = vb + (ok ? j : j_begin) * a.vs[2];
#pragma unroll
      for (int x = 0; x < A; ++x) {
        const int d = lane + 32 * x;
        kk[u][x] = d < a.Dk ? to_compute(kr[d * a.ks[3]]) : 0.0f;
        vv[u][x] = d < a.Dv ? to_compute(vr[d * a.vs[3]]) : 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= nr) break;
      float s[SDPA_DU];
      float mx = m[r];
#pragma unroll
      for (int u = 0; u < SDPA_DU; ++u) {
        float dot = 0.0f;
#pragma unroll
        for (int x = 0; x < A; ++x) dot += qv[r][x] * kk[u][x];
        dot = sdpa_warp_sum(dot);
        const int64_t j = j0 + u;
        s[u] = j < j_end ? sdpa_mask<T, float>(dot, mask, a, b, hr[r], ir[r], j) : NEG_INF;
        mx = fmaxf(mx, s[u]);
      }
      if (mx == NEG_INF) continue;  // nothing seen yet: the state stays empty
      const float alpha = expf(m[r] - mx);
      float p[SDPA_DU], ps = 0.0f;
#pragma unroll
      for (int u = 0; u < SDPA_DU; ++u) {
        p[u] = expf(s[u] - mx);
        ps += p[u];
      }
      l[r] = l[r] * alpha + ps;
      m[r] = mx;
#pragma unroll
      for (int x = 0; x < A; ++x) {
        float o = acc[r][x] * alpha;
#pragma unroll
        for (int u = 0; u < SDPA_DU; ++u) o += p[u] * vv[u][x];
        acc[r][x] = o;
      }
    }
  }

#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (lane == 0) {
      sm_m[warp][r] = m[r];
      sm_l[warp][r] = l[r];
    }
#pragma unroll
    for (int x = 0; x < A; ++x) sm_acc[warp][r][lane + 32 * x] = acc[r][x];
  }
  __syncthreads();
  const bool one = gridDim.x == 1;
  const int64_t NR = (int64_t)a.B * a.Hq * a.Tq;
  for (int e = threadIdx.x; e < nr * A * 32; e += 128) {
    const int r = e / (A * 32), d = e - r * (A * 32);
    float M = NEG_INF;
#pragma unroll
    for (int w = 0; w < 4; ++w) M = fmaxf(M, sm_m[w][r]);
    float L = 0.0f, O = 0.0f;
    if (M != NEG_INF) {
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const float c = sm_m[w][r] == NEG_INF ? 0.0f : expf(sm_m[w][r] - M);
        L += sm_l[w][r] * c;
        O += sm_acc[w][r][d] * c;
      }
    }
    const int rr = r0 + r, h = hk * G + rr / a.Tq;
    const int64_t i = rr % a.Tq;
    if (one) {
      if (d >= a.Dv) continue;
      if (a.has_sinks) {
        const float sk = to_compute(sinks[h]);
        const float M2 = fmaxf(M, sk);
        const float c = M == NEG_INF ? 0.0f : expf(M - M2);
        L = L * c + expf(sk - M2);
        O *= c;
      }
      out[b * a.os[0] + h * a.os[1] + i * a.os[2] + d * a.os[3]] = cast<T>(O / L);
    } else {
      const int64_t row = ((int64_t)b * a.Hq + h) * a.Tq + i;
      const int64_t slot = (int64_t)blockIdx.x * NR + row;
      if (d == 0) {
        part[slot] = M;
        part[gridDim.x * NR + slot] = L;
      }
      if (d < a.Dv) part[2 * gridDim.x * NR + slot * a.Dv + d] = O;
    }
  }
}

// sdpa_combine<T>: one block per query row merges sdpa_split's partials over ``splits`` (and the
// sink), then writes the normalised row. Rows whose every score is -inf give 0/0 = NaN, as MLX.
template <typename T>
__global__ void __launch_bounds__(128)
sdpa_combine(const float* __restrict__ part, const T* __restrict__ sinks, T* __restrict__ out,
             SdpaArgs a, int32_t splits) {
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int64_t NR = (int64_t)a.B * a.Hq * a.Tq;
  const int64_t row = blockIdx.x;
  const int64_t i = row % a.Tq;
  const int64_t bh = row / a.Tq;
  const int h = (int)(bh % a.Hq), b = (int)(bh / a.Hq);
  float M = NEG_INF;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, part[s * NR + row]);
  float sk = NEG_INF;
  if (a.has_sinks) {
    sk = to_compute(sinks[h]);
    M = fmaxf(M, sk);
  }
  float L = 0.0f;
  if (M != NEG_INF) {
    for (int s = 0; s < splits; ++s) {
      const float ms = part[s * NR + row];
      if (ms != NEG_INF) L += part[(splits + s) * NR + row] * expf(ms - M);
    }
    if (a.has_sinks) L += expf(sk - M);
  }
  const float* acc = part + 2 * splits * NR;
  T* orow = out + b * a.os[0] + h * a.os[1] + i * a.os[2];
  for (int d = threadIdx.x; d < a.Dv; d += blockDim.x) {
    float O = 0.0f;
    if (M != NEG_INF) {
      for (int s = 0; s < splits; ++s) {
        const float ms = part[s * NR + row];
        if (ms != NEG_INF) O += acc[(s * NR + row) * a.Dv + d] * expf(ms - M);
      }
    }
    orow[d * a.os[3]] = cast<T>(O / L);
  }
}

// ---- tensor cores (sm_80+): 16-bit q, k, v; Dk == Dv == D in {64, 80, 96, 128} -------------
//
// sdpa_mma<T, D>: FlashAttention-2's forward pass on mma.sync.m16n8k16 (float32 accumulate).
// A block of 4 warps takes 64 queries of one (batch, head); each warp owns 16 query rows. K and
// V move through shared memory in tiles of 64 keys (16-byte loads when the head dim is
// contiguous and aligned). S = Q K^T stays in registers (the accumulator layout of 8 n-tiles),
// the online softmax works on rows shared by the 4 lanes of a quad, and P is re-packed straight
// into A fragments for P V. Row sums stay per lane until the end (one quad reduction).

template <typename T> struct MmaOp;
template <> struct MmaOp<__half> {
  static PCM_DEVICE void run(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
  static PCM_DEVICE uint32_t pack(float lo, float hi) {
    return (uint32_t)float_to_half(lo).bits | ((uint32_t)float_to_half(hi).bits << 16);
  }
};
template <> struct MmaOp<__nv_bfloat16> {
  static PCM_DEVICE void run(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
  static PCM_DEVICE uint32_t pack(float lo, float hi) {
    return (uint32_t)float_to_bf16(lo).bits | ((uint32_t)float_to_bf16(hi).bits << 16);
  }
};

#if __CUDA_ARCH__ >= 800
// 16 bytes global -> shared without passing through registers (zeros when !valid).
PCM_DEVICE void sdpa_cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}
PCM_DEVICE void sdpa_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> PCM_DEVICE void sdpa_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
#endif

// rows x D tile of 16-bit values from global (strides st: token, dim) into shared (row pitch
// P), rows t0 + r with t0 + r >= T_ zero-filled. With ``vec`` (sd == 1, every row start 16-byte
// aligned) the copy is issued asynchronously (cp.async, sm_80+) and completes at a later
// sdpa_cp_wait; otherwise it is done when this returns.
template <int ROWS, int D, int P>
PCM_DEVICE void sdpa_load_tile(uint16_t (*dst)[P], const uint16_t* src, int64_t t0, int64_t T_,
                               int64_t st, int64_t sd, bool vec) {
  if (vec) {
#if __CUDA_ARCH__ >= 800
    constexpr int C8 = D / 8;
    for (int e = threadIdx.x; e < ROWS * C8; e += 128) {
      const int r = e / C8, c = (e - r * C8) * 8;
      const int64_t t = t0 + r;
      const bool ok = t < T_;
      sdpa_cp_async16(&dst[r][c], src + (ok ? t : t0) * st + c, ok);
    }
#endif
  } else {
    for (int e = threadIdx.x; e < ROWS * D; e += 128) {
      const int r = e / D, c = e - r * D;
      const int64_t t = t0 + r;
      dst[r][c] = t < T_ ? src[t * st + c * sd] : (uint16_t)0;
    }
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(128)
sdpa_mma(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
         const void* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
         SdpaArgs a) {
#if __CUDA_ARCH__ >= 800
  constexpr int BQ = 64, BK = 64, P = D + 8, KS = D / 16, NT = BK / 8, DT = D / 8;
  __shared__ __align__(16) uint16_t Ks[BK][P];
  __shared__ __align__(16) uint16_t Vs[BK][P];
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, tig = lane & 3;
  const int bh = a.bh_base + blockIdx.y;
  const int b = bh / a.Hq, h = bh - b * a.Hq;
  const int hk = h / (a.Hq / a.Hkv);
  const int64_t i0 = (int64_t)blockIdx.x * BQ;
  const uint16_t* qb = reinterpret_cast<const uint16_t*>(q) + b * a.qs[0] + h * a.qs[1];
  const uint16_t* kb = reinterpret_cast<const uint16_t*>(k) + b * a.ks[0] + hk * a.ks[1];
  const uint16_t* vb = reinterpret_cast<const uint16_t*>(v) + b * a.vs[0] + hk * a.vs[1];

  // Q fragments, staged through Ks.
  sdpa_load_tile<BQ, D, P>(Ks, qb + i0 * a.qs[2], 0, a.Tq - i0, a.qs[2], a.qs[3], a.vec & 1);
  sdpa_cp_commit();
  sdpa_cp_wait<0>();
  __syncthreads();
  uint32_t qf[KS][4];
  const int r0 = warp * 16 + g;
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    const int c = kk * 16 + tig * 2;
    qf[kk][0] = *reinterpret_cast<const uint32_t*>(&Ks[r0][c]);
    qf[kk][1] = *reinterpret_cast<const uint32_t*>(&Ks[r0 + 8][c]);
    qf[kk][2] = *reinterpret_cast<const uint32_t*>(&Ks[r0][c + 8]);
    qf[kk][3] = *reinterpret_cast<const uint32_t*>(&Ks[r0 + 8][c + 8]);
  }

  float o[DT][4];
#pragma unroll
  for (int x = 0; x < DT; ++x) o[x][0] = o[x][1] = o[x][2] = o[x][3] = 0.0f;
  const float sink = a.has_sinks ? to_compute(sinks[h]) : NEG_INF;
  float m[2] = {sink, sink};
  // per-lane partial row sums; the sink's exp(sink - m) = 1 is counted once, by lane tig 0
  float l[2];
  l[0] = l[1] = (a.has_sinks && tig == 0) ? 1.0f : 0.0f;
  const int64_t rows[2] = {i0 + r0, i0 + r0 + 8};

  const int64_t koff = (int64_t)a.Tk - a.Tq;
  int64_t kend = a.Tk;
  if (a.causal && i0 + koff >= 0) {
    const int64_t last = i0 + BQ + koff;
    if (last < kend) kend = last;
  }

  // Pipeline: K(j+1) loads while P V(j) computes, V(j) loads while S(j) and the softmax do.
  // Copy groups are committed in the order K0, V0, K1, V1, ...
  __syncthreads();  // every warp holds its Q fragments: Ks may be overwritten
  sdpa_load_tile<BK, D, P>(Ks, kb, 0, a.Tk, a.ks[2], a.ks[3], a.vec & 2);
  sdpa_cp_commit();
  sdpa_load_tile<BK, D, P>(Vs, vb, 0, a.Tk, a.vs[2], a.vs[3], a.vec & 4);
  sdpa_cp_commit();
  for (int64_t j0 = 0; j0 < kend; j0 += BK) {
    sdpa_cp_wait<1>();  // K(j) has landed (V(j) may still be in flight)
    __syncthreads();

    float s[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&Ks[nt * 8 + g][kk * 16 + tig * 2]);
        const uint32_t b1 =
            *reinterpret_cast<const uint32_t*>(&Ks[nt * 8 + g][kk * 16 + 8 + tig * 2]);
        MmaOp<T>::run(s[nt], qf[kk], b0, b1);
      }
    }

    __syncthreads();  // every warp is done with K(j)
    const bool more = j0 + BK < kend;
    if (more) sdpa_load_tile<BK, D, P>(Ks, kb, j0 + BK, a.Tk, a.ks[2], a.ks[3], a.vec & 2);
    sdpa_cp_commit();  // an empty group when there is no next tile keeps the count simple

    // Masks only where they can act: a mask array, the last (partial) key tile, or a tile
    // that crosses the causal diagonal of some row of the block.
    const bool masked = a.mask_kind != 0 || j0 + BK > a.Tk ||
                        (a.causal && j0 + BK - 1 > i0 + koff);
    float mt[2] = {NEG_INF, NEG_INF};
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float sc = s[nt][e] * a.scale;
        if (masked) {
          const int64_t i = rows[e >> 1];
          const int64_t j = j0 + nt * 8 + tig * 2 + (e & 1);
          if (j >= a.Tk) {
            sc = NEG_INF;
          } else if (i < a.Tq) {
            sc = sdpa_mask<T, float>(sc, mask, a, b, h, i, j);
          }
        }
        s[nt][e] = sc;
        mt[e >> 1] = fmaxf(mt[e >> 1], sc);
      }
    }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mt[r] = fmaxf(mt[r], __shfl_xor_sync(SDPA_FULL, mt[r], 1));
      mt[r] = fmaxf(mt[r], __shfl_xor_sync(SDPA_FULL, mt[r], 2));
      const float mn = fmaxf(m[r], mt[r]);
      alpha[r] = mn == NEG_INF ? 1.0f : expf(m[r] - mn);
      m[r] = mn;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float mn = m[e >> 1];
        const float p = mn == NEG_INF ? 0.0f : expf(s[nt][e] - mn);
        s[nt][e] = p;
        l[e >> 1] += p;
      }
    }
#pragma unroll
    for (int x = 0; x < DT; ++x) {
      o[x][0] *= alpha[0];
      o[x][1] *= alpha[0];
      o[x][2] *= alpha[1];
      o[x][3] *= alpha[1];
    }
    sdpa_cp_wait<1>();  // V(j) has landed (K(j+1) may still be in flight)
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t pa[4];
      pa[0] = MmaOp<T>::pack(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = MmaOp<T>::pack(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = MmaOp<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = MmaOp<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      const int kr = kk * 16 + tig * 2;
#pragma unroll
      for (int x = 0; x < DT; ++x) {
        const int c = x * 8 + g;
        const uint32_t b0 = (uint32_t)Vs[kr][c] | ((uint32_t)Vs[kr + 1][c] << 16);
        const uint32_t b1 = (uint32_t)Vs[kr + 8][c] | ((uint32_t)Vs[kr + 9][c] << 16);
        MmaOp<T>::run(o[x], pa, b0, b1);
      }
    }
    __syncthreads();  // every warp is done with V(j)
    if (more) sdpa_load_tile<BK, D, P>(Vs, vb, j0 + BK, a.Tk, a.vs[2], a.vs[3], a.vec & 4);
    sdpa_cp_commit();
  }
  sdpa_cp_wait<0>();

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(SDPA_FULL, l[r], 1);
    l[r] += __shfl_xor_sync(SDPA_FULL, l[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = rows[r];
    if (i >= a.Tq) continue;
    T* orow = out + b * a.os[0] + h * a.os[1] + i * a.os[2];
#pragma unroll
    for (int x = 0; x < DT; ++x) {  // l == 0 (every score -inf) gives NaN, as MLX
      const int c = x * 8 + tig * 2;
      orow[c * a.os[3]] = cast<T>(o[x][2 * r] / l[r]);
      orow[(c + 1) * a.os[3]] = cast<T>(o[x][2 * r + 1] / l[r]);
    }
  }
#else
  __trap();  // built for an architecture without these tensor-core instructions
#endif
}
