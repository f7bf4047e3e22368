import mlx.core as mx

# integer division and remainder follow Python's sign rules (floor)
a = mx.array([7, -7, 7, -7, 0, 5], dtype=mx.int32)
b = mx.array([2, 2, -2, -2, 3, 5], dtype=mx.int32)
print("floordiv", (a // b).tolist(), mx.floor_divide(a, b).dtype)
print("remainder", (a % b).tolist(), mx.remainder(a, b).tolist())
print("divmod", [t.tolist() for t in mx.divmod(a, b)])
print("true div", (a / b).dtype, " ".join(f"{v:.4f}" for v in (a / b).tolist()))
print("float floordiv", (mx.array([7.5, -7.5]) // 2).tolist(), (mx.array([7.5, -7.5]) % 2).tolist())
print("float mod neg", (mx.array([5.0, -5.0]) % -3).tolist())
print("int8 div", (mx.array([-128, 127, -1], dtype=mx.int8) // mx.array([3, -4, 2], dtype=mx.int8)).tolist())
print("uint div", (mx.array([200, 7], dtype=mx.uint8) // mx.array([3, 2], dtype=mx.uint8)).tolist(),
      (mx.array([200, 7], dtype=mx.uint8) % 3).tolist())

# overflow wraps around
i8 = mx.array([120, -120, 100], dtype=mx.int8)
print("int8 wrap", (i8 + mx.array(10, dtype=mx.int8)).tolist(), (i8 * 2).dtype, (i8 * mx.array(2, dtype=mx.int8)).tolist())
u8 = mx.array([250, 3], dtype=mx.uint8)
print("uint8 wrap", (u8 + mx.array(10, dtype=mx.uint8)).tolist(), (u8 - mx.array(5, dtype=mx.uint8)).tolist())
i32 = mx.array([2 ** 31 - 1], dtype=mx.int32)
print("int32 wrap", (i32 + 1).tolist(), (i32 * 2).tolist())
print("negate", (-mx.array([-128], dtype=mx.int8)).tolist(), mx.abs(mx.array([-128], dtype=mx.int8)).tolist())
u32 = mx.array([0], dtype=mx.uint32)
print("uint32 wrap", (u32 - 1).tolist(), (u32 - 1).dtype)
print("int sum", mx.array([100, 100, 100], dtype=mx.int8).sum().dtype, mx.array([100, 100, 100], dtype=mx.int8).sum().item())
print("uint8 sum", mx.array([200, 200], dtype=mx.uint8).sum().dtype, mx.array([200, 200], dtype=mx.uint8).sum().item())
print("int prod", mx.array([1000, 1000, 1000, 1000], dtype=mx.int32).prod().item())
print("astype", mx.array([3.0, 255.7]).astype(mx.uint8).tolist(),
      mx.array([3.9, -3.9, 2.5]).astype(mx.int32).tolist())

# bitwise ops and shifts
x = mx.array([0b1100, 0b1010, -1, 255], dtype=mx.int32)
y = mx.array([0b1010, 0b0110, 7, 1], dtype=mx.int32)
print("and or xor", (x & y).tolist(), (x | y).tolist(), (x ^ y).tolist())
print("invert", (~x).tolist(), mx.bitwise_invert(mx.array([0, 255], dtype=mx.uint8)).tolist())
print("shifts", (x << 2).tolist(), (x >> 1).tolist(), mx.left_shift(mx.array([1], dtype=mx.uint8), 7).tolist())
print("shift uint8 overflow", (mx.array([129], dtype=mx.uint8) << mx.array([1], dtype=mx.uint8)).tolist())
print("neg right shift", (mx.array([-16, -1], dtype=mx.int32) >> 2).tolist())
print("bool bitwise", (mx.array([True, False]) & mx.array([True, True])).dtype, (mx.array([True, False]) ^ True).tolist())
# popcount via shifts
v = mx.array([0, 1, 7, 255, 1023], dtype=mx.uint32)
pc = mx.zeros_like(v)
for s in range(11):
    pc = pc + ((v >> s) & 1)
print("popcount", pc.tolist(), pc.dtype)
# xorshift PRNG in uint32
st = mx.array([2463534242, 12345, 1], dtype=mx.uint32)
for _ in range(5):
    st = st ^ (st << 13)
    st = st ^ (st >> 17)
    st = st ^ (st << 5)
print("xorshift", st.tolist())
print("gcd-ish", mx.maximum(mx.array([12, 18]), mx.array([8, 24])).tolist(), mx.minimum(mx.array([-3], dtype=mx.int8), 2).dtype)
print("int pow", (mx.array([2, 3, -2], dtype=mx.int32) ** 3).tolist(), (mx.array([2, 3]) ** mx.array([10, 2])).dtype)
print("int64", (mx.array([2 ** 40], dtype=mx.int64) * 3).tolist(), mx.array([5], dtype=mx.int64) // -2)

# complex arithmetic
z = mx.array([1 + 2j, -3 + 0.5j, 0 - 1j, 2 + 0j])
w = mx.array([0.5 - 1j, 1 + 1j, 2 + 0j, -1 - 1j])
print("complex", z.dtype, (z * w).dtype)
prod = z * w
print("mul", " ".join(f"{v.real:.4f}{v.imag:+.4f}j" for v in prod.tolist()))
quot = z / w
print("div", " ".join(f"{v.real:.4f}{v.imag:+.4f}j" for v in quot.tolist()))
print("abs", " ".join(f"{v:.4f}" for v in mx.abs(z).tolist()), mx.abs(z).dtype)
ang = mx.arctan2(mx.imag(z), mx.real(z))
print("angle", " ".join(f"{v:.4f}" for v in ang.tolist()))
print("conj", " ".join(f"{v.imag:.1f}" for v in mx.conj(z).tolist()), (z * mx.conj(z)).real.tolist())
polar = mx.abs(z) * mx.exp(1j * ang.astype(mx.complex64))
print("polar round trip", bool(mx.allclose(polar, z, atol=1e-5).item()))
ez = mx.exp(z)
print("exp", " ".join(f"{v.real:.4f}{v.imag:+.4f}j" for v in ez.tolist()[:2]))
print("sqrt", " ".join(f"{v.real:.4f}{v.imag:+.4f}j" for v in mx.sqrt(z).tolist()[:3]))
print("promote", (z + 1).dtype, (mx.array([1.0]) + 1j).dtype, (mx.array([1], dtype=mx.int32) * z[:1]).dtype)
print("sum", z.sum().item(), mx.mean(z).item())
print("matmul", (z.reshape(2, 2) @ w.reshape(2, 2)).tolist()[0][0])
roots = mx.exp(2j * 3.14159265 * mx.arange(8) / 8)
print("roots of unity", f"{mx.abs(roots.sum()).item() < 1e-5}", f"{mx.abs(roots ** 8 - 1).max().item() < 1e-4}")

# fft round trips
sig = mx.random.normal((64,), key=mx.random.key(2))
F = mx.fft.fft(sig)
print("fft", F.dtype, F.shape, f"{mx.abs(mx.fft.ifft(F).real - sig).max().item() < 1e-5}")
print("parseval", f"{(mx.abs(F) ** 2).sum().item() / 64:.4f}", f"{(sig ** 2).sum().item():.4f}")
print("hermitian", f"{mx.abs(F[1:] - mx.conj(F[1:][::-1])).max().item() < 1e-4}")
R = mx.fft.rfft(sig)
print("rfft", R.shape, f"{mx.abs(mx.fft.irfft(R) - sig).max().item() < 1e-5}")
F2 = mx.fft.fft2(sig.reshape(8, 8).astype(mx.complex64))
print("fft2", f"{mx.abs(mx.fft.ifft2(F2) - sig.reshape(8, 8)).max().item() < 1e-5}", f"{mx.abs(F2).sum().item():.3f}")
print("fftn", mx.fft.fftn(sig.reshape(4, 4, 4)).shape, f"{mx.abs(mx.fft.ifftn(mx.fft.fftn(sig.reshape(4, 4, 4))).real - sig.reshape(4, 4, 4)).max().item() < 1e-5}")
print("fft pad", mx.fft.fft(sig, n=80).shape, mx.fft.fft(sig, n=32).shape, mx.fft.irfft(R, n=64).dtype)
# circular cross-correlation peak finds a shift
shifted = mx.roll(sig, 5)
xc = mx.fft.ifft(mx.fft.fft(shifted) * mx.conj(mx.fft.fft(sig))).real
print("shift found", mx.argmax(xc).item())
