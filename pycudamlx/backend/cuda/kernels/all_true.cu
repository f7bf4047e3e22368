// all() of a contiguous bool array: out[0] (filled with true by the launcher) becomes false when
// any element is false. Every writer stores the same value, so the race is benign.

__global__ void all_true(const bool* __restrict__ x, bool* __restrict__ out,
                         int64_t n) {
  bool ok = true;
  PCM_GRID_STRIDE(i, n) {
    if (!x[i]) {
      ok = false;
      break;
    }
  }
  if (!ok) *out = false;
}
