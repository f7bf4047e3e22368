// Many device-to-device copies in one launch: a CUDA graph's inputs in and outputs out
// (backend/cuda/graphs.py), so a replay costs one table upload and one graph launch instead of
// a driver call per array. Entry e = blockIdx.y of ``table`` is (dst, src, bytes); zero bytes
// skips it. 16-byte vectors where dst, src and bytes allow, else 4-byte words, else bytes.

__global__ void __launch_bounds__(256) copy_many(const unsigned long long* __restrict__ table) {
  const unsigned long long* e = table + 3 * blockIdx.y;
  const unsigned long long dst = e[0], src = e[1], n = e[2];
  const unsigned long long start = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  if (((dst | src | n) & 15) == 0) {
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4* s = reinterpret_cast<const uint4*>(src);
    for (unsigned long long i = start; i < n / 16; i += step) d[i] = s[i];
  } else if (((dst | src | n) & 3) == 0) {
    unsigned int* d = reinterpret_cast<unsigned int*>(dst);
    const unsigned int* s = reinterpret_cast<const unsigned int*>(src);
    for (unsigned long long i = start; i < n / 4; i += step) d[i] = s[i];
  } else {
    unsigned char* d = reinterpret_cast<unsigned char*>(dst);
    const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
    for (unsigned long long i = start; i < n; i += step) d[i] = s[i];
  }
}
