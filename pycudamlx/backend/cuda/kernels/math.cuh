// Elementwise math for the op table's expressions (backend/optable.py), included by the unary and
// binary kernel families after common.cuh.
//
// Every function is overloaded for the compute types the kernels use: bool, the eight integer
// types, float (float16 and bfloat16 compute in float), double and complex64_t. Where C++ leaves
// a result undefined (integer division by zero, INT_MIN / -1, shifts by the bit width or more,
// signed overflow) these helpers give numpy's result instead, which the CPU backend gives too.
// No headers: only CUDA's built-in math functions (sqrtf, expm1, erfinvf ...) are used.

// ---- integer traits ----------------------------------------------------------------------------

template <typename T> struct pcm_int_traits {
  static constexpr bool is_signed = ((T)-1) < (T)0;
  static constexpr int bits = 8 * (int)sizeof(T);
};
// The unsigned type integer arithmetic wraps in (no int promotion, no signed overflow).
template <int BYTES> struct pcm_wide_t { typedef uint32_t type; };
template <> struct pcm_wide_t<8> { typedef uint64_t type; };
// The unsigned type of the same width (a shift count is read through it: negative -> huge).
template <int BYTES> struct pcm_same_unsigned_t;
template <> struct pcm_same_unsigned_t<1> { typedef uint8_t type; };
template <> struct pcm_same_unsigned_t<2> { typedef uint16_t type; };
template <> struct pcm_same_unsigned_t<4> { typedef uint32_t type; };
template <> struct pcm_same_unsigned_t<8> { typedef uint64_t type; };

// ---- constants -------------------------------------------------------------------------------

template <typename F> PCM_DEVICE F pcm_inf();
template <> PCM_DEVICE float pcm_inf<float>() { return __int_as_float(0x7f800000); }
template <> PCM_DEVICE double pcm_inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

// ---- real math overloads (float and double) --------------------------------------------------

#define PCM_REAL1(NAME, F32, F64)                                   \
  PCM_DEVICE float NAME(float x) { return F32(x); }                 \
  PCM_DEVICE double NAME(double x) { return F64(x); }
#define PCM_REAL2(NAME, F32, F64)                                   \
  PCM_DEVICE float NAME(float x, float y) { return F32(x, y); }     \
  PCM_DEVICE double NAME(double x, double y) { return F64(x, y); }

PCM_REAL1(pcm_sqrt, sqrtf, sqrt)
PCM_REAL1(pcm_exp, expf, exp)
PCM_REAL1(pcm_expm1, expm1f, expm1)
PCM_REAL1(pcm_log, logf, log)
PCM_REAL1(pcm_log2, log2f, log2)
PCM_REAL1(pcm_log10, log10f, log10)
PCM_REAL1(pcm_log1p, log1pf, log1p)
PCM_REAL1(pcm_sin, sinf, sin)
PCM_REAL1(pcm_cos, cosf, cos)
PCM_REAL1(pcm_tan, tanf, tan)
PCM_REAL1(pcm_sinh, sinhf, sinh)
PCM_REAL1(pcm_cosh, coshf, cosh)
PCM_REAL1(pcm_tanh, tanhf, tanh)
PCM_REAL1(pcm_asin, asinf, asin)
PCM_REAL1(pcm_acos, acosf, acos)
PCM_REAL1(pcm_atan, atanf, atan)
PCM_REAL1(pcm_asinh, asinhf, asinh)
PCM_REAL1(pcm_acosh, acoshf, acosh)
PCM_REAL1(pcm_atanh, atanhf, atanh)
PCM_REAL1(pcm_erf, erff, erf)
PCM_REAL1(pcm_erfinv, erfinvf, erfinv)
PCM_REAL1(pcm_floor, floorf, floor)
PCM_REAL1(pcm_ceil, ceilf, ceil)
PCM_REAL1(pcm_trunc, truncf, trunc)
PCM_REAL1(pcm_rint, rintf, rint)
PCM_REAL1(pcm_fabs, fabsf, fabs)
PCM_REAL2(pcm_atan2, atan2f, atan2)
PCM_REAL2(pcm_pow, powf, pow)
PCM_REAL2(pcm_fmod, fmodf, fmod)
PCM_REAL2(pcm_hypot, hypotf, hypot)
PCM_REAL2(pcm_copysign, copysignf, copysign)
#undef PCM_REAL1
#undef PCM_REAL2

// ---- predicates --------------------------------------------------------------------------------

template <typename T> PCM_DEVICE bool pcm_isnan(T) { return false; }  // bool and integers
PCM_DEVICE bool pcm_isnan(float x) { return x != x; }
PCM_DEVICE bool pcm_isnan(double x) { return x != x; }
PCM_DEVICE bool pcm_isnan(complex64_t z) { return z.re != z.re || z.im != z.im; }

template <typename T> PCM_DEVICE bool pcm_isinf(T) { return false; }
PCM_DEVICE bool pcm_isinf(float x) { return x == pcm_inf<float>() || x == -pcm_inf<float>(); }
PCM_DEVICE bool pcm_isinf(double x) { return x == pcm_inf<double>() || x == -pcm_inf<double>(); }
PCM_DEVICE bool pcm_isinf(complex64_t z) { return pcm_isinf(z.re) || pcm_isinf(z.im); }

template <typename T> PCM_DEVICE bool pcm_isposinf(T) { return false; }
PCM_DEVICE bool pcm_isposinf(float x) { return x == pcm_inf<float>(); }
PCM_DEVICE bool pcm_isposinf(double x) { return x == pcm_inf<double>(); }
// MLX compares with complex(inf, 0).
PCM_DEVICE bool pcm_isposinf(complex64_t z) { return z.re == pcm_inf<float>() && z.im == 0.0f; }

template <typename T> PCM_DEVICE bool pcm_isneginf(T) { return false; }
PCM_DEVICE bool pcm_isneginf(float x) { return x == -pcm_inf<float>(); }
PCM_DEVICE bool pcm_isneginf(double x) { return x == -pcm_inf<double>(); }
PCM_DEVICE bool pcm_isneginf(complex64_t z) { return z.re == -pcm_inf<float>() && z.im == 0.0f; }

template <typename T> PCM_DEVICE bool pcm_isfinite(T x) { return !pcm_isnan(x) && !pcm_isinf(x); }

// Truth value (logical ops on any dtype).
template <typename T> PCM_DEVICE bool pcm_truthy(T x) { return x != (T)0; }
PCM_DEVICE bool pcm_truthy(bool x) { return x; }
PCM_DEVICE bool pcm_truthy(complex64_t z) { return z.re != 0.0f || z.im != 0.0f; }

// ---- complex64 ---------------------------------------------------------------------------------

PCM_DEVICE complex64_t pcm_times_i(complex64_t z) { return make_complex(-z.im, z.re); }
PCM_DEVICE complex64_t pcm_times_minus_i(complex64_t z) { return make_complex(z.im, -z.re); }

// Smith's division; a zero divisor gives the infinities numpy and std::complex give.
PCM_DEVICE complex64_t pcm_div(complex64_t a, complex64_t b) {
  float br = fabsf(b.re), bi = fabsf(b.im);
  if (br >= bi) {
    if (br == 0.0f && bi == 0.0f) return make_complex(a.re / br, a.im / br);
    float r = b.im / b.re, d = b.re + b.im * r;
    return make_complex((a.re + a.im * r) / d, (a.im - a.re * r) / d);
  }
  float r = b.re / b.im, d = b.re * r + b.im;
  return make_complex((a.re * r + a.im) / d, (a.im * r - a.re) / d);
}
template <typename T> PCM_DEVICE T pcm_div(T a, T b) { return a / b; }

PCM_DEVICE float pcm_abs_c(complex64_t z) { return hypotf(z.re, z.im); }

PCM_DEVICE complex64_t pcm_sqrt(complex64_t z) {
  float x = z.re, y = z.im;
  if (x == 0.0f && y == 0.0f) return make_complex(0.0f, y);
  if (pcm_isinf(y)) return make_complex(pcm_inf<float>(), y);
  float t = sqrtf(0.5f * fabsf(x) + 0.5f * hypotf(x, y));
  if (x >= 0.0f) return make_complex(t, y / (2.0f * t));
  return make_complex(fabsf(y) / (2.0f * t), copysignf(t, y));
}

PCM_DEVICE complex64_t pcm_exp(complex64_t z) {
  float e = expf(z.re);
  if (z.im == 0.0f) return make_complex(e, z.im);
  float s, c;
  sincosf(z.im, &s, &c);
  return make_complex(e * c, e * s);
}

PCM_DEVICE complex64_t pcm_log(complex64_t z) {
  float h = hypotf(z.re, z.im);
  float lr = (h > 0.71f && h < 1.73f) ? 0.5f * log1pf((z.re - 1.0f) * (z.re + 1.0f) + z.im * z.im)
                                      : logf(h);
  return make_complex(lr, atan2f(z.im, z.re));
}
PCM_DEVICE complex64_t pcm_log2(complex64_t z) {
  complex64_t l = pcm_log(z);
  return make_complex(l.re / 0.69314718055994530942f, l.im / 0.69314718055994530942f);
}
PCM_DEVICE complex64_t pcm_log10(complex64_t z) {
  complex64_t l = pcm_log(z);
  return make_complex(l.re / 2.30258509299404568402f, l.im / 2.30258509299404568402f);
}
// MLX's formula (accurate near z = 0).
PCM_DEVICE complex64_t pcm_log1p(complex64_t z) {
  float x = z.re, y = z.im;
  float theta = atan2f(y, x + 1.0f);
  if (hypotf(x, y) < 0.5f) {
    float r = x * (2.0f + x) + y * y;
    if (r == 0.0f) return make_complex(x, theta);
    return make_complex(0.5f * log1pf(r), theta);
  }
  return make_complex(logf(hypotf(x + 1.0f, y)), theta);
}

PCM_DEVICE complex64_t pcm_sin(complex64_t z) {
  float s, c;
  sincosf(z.re, &s, &c);
  if (z.im == 0.0f) return make_complex(s, c * z.im);
  return make_complex(s * coshf(z.im), c * sinhf(z.im));
}
PCM_DEVICE complex64_t pcm_cos(complex64_t z) {
  float s, c;
  sincosf(z.re, &s, &c);
  if (z.im == 0.0f) return make_complex(c, -s * z.im);
  return make_complex(c * coshf(z.im), -s * sinhf(z.im));
}
PCM_DEVICE complex64_t pcm_sinh(complex64_t z) {
  float s, c;
  sincosf(z.im, &s, &c);
  if (z.im == 0.0f) return make_complex(sinhf(z.re), z.im);
  return make_complex(sinhf(z.re) * c, coshf(z.re) * s);
}
PCM_DEVICE complex64_t pcm_cosh(complex64_t z) {
  float s, c;
  sincosf(z.im, &s, &c);
  if (z.im == 0.0f) return make_complex(coshf(z.re), z.im * z.re);
  return make_complex(coshf(z.re) * c, sinhf(z.re) * s);
}
// Kahan's formulation; saturates cleanly for large |re|.
PCM_DEVICE complex64_t pcm_tanh(complex64_t z) {
  float x = z.re, y = z.im;
  if (fabsf(x) > 15.0f) {
    float s, c;
    sincosf(y, &s, &c);
    return make_complex(copysignf(1.0f, x), 4.0f * s * c * expf(-2.0f * fabsf(x)));
  }
  float t = tanf(y), b = 1.0f + t * t, s = sinhf(x), rho = sqrtf(1.0f + s * s);
  float d = 1.0f + b * s * s;
  return make_complex(b * rho * s / d, t / d);
}
PCM_DEVICE complex64_t pcm_tan(complex64_t z) {
  return pcm_times_minus_i(pcm_tanh(pcm_times_i(z)));
}

// Inverse functions after Kahan ("Branch cuts for complex elementary functions").
PCM_DEVICE float pcm_asinh_real(float x) { return asinhf(x); }
PCM_DEVICE complex64_t pcm_asin(complex64_t z) {
  complex64_t s1 = pcm_sqrt(make_complex(1.0f - z.re, -z.im));
  complex64_t s2 = pcm_sqrt(make_complex(1.0f + z.re, z.im));
  return make_complex(atan2f(z.re, s1.re * s2.re - s1.im * s2.im),
                      asinhf(s1.re * s2.im - s1.im * s2.re));
}
PCM_DEVICE complex64_t pcm_acos(complex64_t z) {
  complex64_t s1 = pcm_sqrt(make_complex(1.0f - z.re, -z.im));
  complex64_t s2 = pcm_sqrt(make_complex(1.0f + z.re, z.im));
  return make_complex(2.0f * atan2f(s1.re, s2.re), asinhf(s2.re * s1.im - s2.im * s1.re));
}
PCM_DEVICE complex64_t pcm_asinh(complex64_t z) {
  return pcm_times_minus_i(pcm_asin(pcm_times_i(z)));
}
PCM_DEVICE complex64_t pcm_acosh(complex64_t z) {
  complex64_t s1 = pcm_sqrt(make_complex(z.re - 1.0f, z.im));
  complex64_t s2 = pcm_sqrt(make_complex(z.re + 1.0f, z.im));
  return make_complex(asinhf(s1.re * s2.re + s1.im * s2.im), 2.0f * atan2f(s1.im, s2.re));
}
PCM_DEVICE complex64_t pcm_atanh(complex64_t z) {
  complex64_t p = pcm_log1p(z);
  complex64_t m = pcm_log1p(make_complex(-z.re, -z.im));
  return make_complex(0.5f * (p.re - m.re), 0.5f * (p.im - m.im));
}
PCM_DEVICE complex64_t pcm_atan(complex64_t z) {
  return pcm_times_minus_i(pcm_atanh(pcm_times_i(z)));
}

// a ** b = exp(b * log(a)) (MLX's std::pow; 0 ** 0 is nan).
PCM_DEVICE complex64_t pcm_pow(complex64_t a, complex64_t b) { return pcm_exp(b * pcm_log(a)); }

// Lexicographic order (real part, then imaginary), as MLX and numpy order complex numbers.
PCM_DEVICE bool pcm_gt(complex64_t a, complex64_t b) {
  return a.re > b.re || (a.re == b.re && a.im > b.im);
}
PCM_DEVICE bool pcm_ge(complex64_t a, complex64_t b) {
  return a.re > b.re || (a.re == b.re && a.im >= b.im);
}
PCM_DEVICE bool pcm_lt(complex64_t a, complex64_t b) {
  return a.re < b.re || (a.re == b.re && a.im < b.im);
}
PCM_DEVICE bool pcm_le(complex64_t a, complex64_t b) {
  return a.re < b.re || (a.re == b.re && a.im <= b.im);
}

// ---- op helpers over every compute type --------------------------------------------------------

// Wrapping negation (INT_MIN stays INT_MIN; unsigned wraps).
template <typename T> PCM_DEVICE T pcm_neg(T a) {
  typedef typename pcm_wide_t<sizeof(T)>::type W;
  return (T)(W(0) - (W)a);
}
PCM_DEVICE float pcm_neg(float a) { return -a; }
PCM_DEVICE double pcm_neg(double a) { return -a; }
PCM_DEVICE complex64_t pcm_neg(complex64_t a) { return -a; }

template <typename T> PCM_DEVICE T pcm_abs(T a) {
  if constexpr (pcm_int_traits<T>::is_signed) {
    return a < 0 ? pcm_neg(a) : a;
  } else {
    return a;
  }
}
PCM_DEVICE bool pcm_abs(bool a) { return a; }
PCM_DEVICE float pcm_abs(float a) { return fabsf(a); }
PCM_DEVICE double pcm_abs(double a) { return fabs(a); }
PCM_DEVICE float pcm_abs(complex64_t a) { return pcm_abs_c(a); }

// Wrapping product (signed overflow is defined here).
template <typename T> PCM_DEVICE T pcm_mul(T a, T b) {
  typedef typename pcm_wide_t<sizeof(T)>::type W;
  return (T)((W)a * (W)b);
}
PCM_DEVICE bool pcm_mul(bool a, bool b) { return a && b; }
PCM_DEVICE float pcm_mul(float a, float b) { return a * b; }
PCM_DEVICE double pcm_mul(double a, double b) { return a * b; }
PCM_DEVICE complex64_t pcm_mul(complex64_t a, complex64_t b) { return a * b; }

// sign: 0 for zero and NaN (MLX), x / |x| for complex.
template <typename T> PCM_DEVICE T pcm_sign(T a) {
  if constexpr (pcm_int_traits<T>::is_signed) {
    return (T)((a > 0) - (a < 0));
  } else {
    return (T)(a != 0);
  }
}
PCM_DEVICE bool pcm_sign(bool a) { return a; }
PCM_DEVICE float pcm_sign(float a) { return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : 0.0f); }
PCM_DEVICE double pcm_sign(double a) { return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : 0.0); }
PCM_DEVICE complex64_t pcm_sign(complex64_t a) {
  if (a.re == 0.0f && a.im == 0.0f) return a;
  float r = pcm_abs_c(a);
  return make_complex(a.re / r, a.im / r);
}

// round half to even (floor, ceil, trunc and round are the identity on integers and bool).
template <typename T> PCM_DEVICE T pcm_round(T a) { return a; }
PCM_DEVICE float pcm_round(float a) { return rintf(a); }
PCM_DEVICE double pcm_round(double a) { return rint(a); }
PCM_DEVICE complex64_t pcm_round(complex64_t a) { return make_complex(rintf(a.re), rintf(a.im)); }
template <typename T> PCM_DEVICE T pcm_floor_op(T a) { return a; }
PCM_DEVICE float pcm_floor_op(float a) { return floorf(a); }
PCM_DEVICE double pcm_floor_op(double a) { return floor(a); }
template <typename T> PCM_DEVICE T pcm_ceil_op(T a) { return a; }
PCM_DEVICE float pcm_ceil_op(float a) { return ceilf(a); }
PCM_DEVICE double pcm_ceil_op(double a) { return ceil(a); }
template <typename T> PCM_DEVICE T pcm_trunc_op(T a) { return a; }
PCM_DEVICE float pcm_trunc_op(float a) { return truncf(a); }
PCM_DEVICE double pcm_trunc_op(double a) { return trunc(a); }

// Python's floor division; x // 0 == 0 and INT_MIN // -1 == INT_MIN (numpy's results).
template <typename T> PCM_DEVICE T pcm_floordiv(T a, T b) {
  if (b == 0) return (T)0;
  if constexpr (pcm_int_traits<T>::is_signed) {
    if (b == (T)-1) return pcm_neg(a);
    T q = (T)(a / b);
    if ((T)(a % b) != 0 && ((a < 0) != (b < 0))) q = (T)(q - 1);
    return q;
  } else {
    return (T)(a / b);
  }
}
PCM_DEVICE bool pcm_floordiv(bool a, bool b) { return a && b; }

// Python's remainder (the sign of the divisor); x % 0 == 0 for integers (numpy's result).
template <typename T> PCM_DEVICE T pcm_remainder(T a, T b) {
  if (b == 0) return (T)0;
  if constexpr (pcm_int_traits<T>::is_signed) {
    if (b == (T)-1) return (T)0;
    T r = (T)(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    return r;
  } else {
    return (T)(a % b);
  }
}
PCM_DEVICE bool pcm_remainder(bool, bool) { return false; }
PCM_DEVICE float pcm_remainder(float a, float b) {
  float r = fmodf(a, b);
  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;
  return r;
}
PCM_DEVICE double pcm_remainder(double a, double b) {
  double r = fmod(a, b);
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
  return r;
}

// Integer power by squaring with wrapping; a negative exponent gives 0 (MLX).
template <typename T> PCM_DEVICE T pcm_power(T base, T exp) {
  typedef typename pcm_wide_t<sizeof(T)>::type W;
  if constexpr (pcm_int_traits<T>::is_signed) {
    if (exp < 0) return (T)0;
  }
  W res = 1, b = (W)base, e = (W)exp;
  while (e) {
    if (e & 1) res *= b;
    e >>= 1;
    b *= b;
  }
  return (T)res;
}
PCM_DEVICE bool pcm_power(bool a, bool b) { return a || !b; }
PCM_DEVICE float pcm_power(float a, float b) { return powf(a, b); }
PCM_DEVICE double pcm_power(double a, double b) { return pow(a, b); }
PCM_DEVICE complex64_t pcm_power(complex64_t a, complex64_t b) { return pcm_pow(a, b); }

// Shifts with numpy's results for counts outside [0, bits): 0, or -1 for negative signed a >>.
template <typename T> PCM_DEVICE T pcm_shl(T a, T b) {
  typedef typename pcm_same_unsigned_t<sizeof(T)>::type U;
  typedef typename pcm_wide_t<sizeof(T)>::type W;
  if ((U)b >= (U)pcm_int_traits<T>::bits) return (T)0;
  return (T)((W)a << (W)(U)b);
}
template <typename T> PCM_DEVICE T pcm_shr(T a, T b) {
  typedef typename pcm_same_unsigned_t<sizeof(T)>::type U;
  if ((U)b >= (U)pcm_int_traits<T>::bits) {
    if constexpr (pcm_int_traits<T>::is_signed) {
      return a < 0 ? (T)-1 : (T)0;
    } else {
      return (T)0;
    }
  }
  return (T)(a >> (U)b);
}

// NaN-propagating maximum / minimum (a NaN in b wins, then one in a), as MLX.
template <typename T> PCM_DEVICE T pcm_max(T a, T b) {
  if (pcm_isnan(b)) return b;
  if (pcm_isnan(a)) return a;
  return a > b ? a : b;
}
template <typename T> PCM_DEVICE T pcm_min(T a, T b) {
  if (pcm_isnan(b)) return b;
  if (pcm_isnan(a)) return a;
  return a < b ? a : b;
}
PCM_DEVICE bool pcm_max(bool a, bool b) { return a || b; }
PCM_DEVICE bool pcm_min(bool a, bool b) { return a && b; }
PCM_DEVICE complex64_t pcm_max(complex64_t a, complex64_t b) {
  if (pcm_isnan(b)) return b;
  if (pcm_isnan(a)) return a;
  return pcm_gt(a, b) ? a : b;
}
PCM_DEVICE complex64_t pcm_min(complex64_t a, complex64_t b) {
  if (pcm_isnan(b)) return b;
  if (pcm_isnan(a)) return a;
  return pcm_lt(a, b) ? a : b;
}

// log(exp(a) + exp(b)), MLX's formulation.
template <typename F> PCM_DEVICE F pcm_logaddexp(F a, F b) {
  F hi = pcm_max(a, b), lo = pcm_min(a, b);
  if (lo == -pcm_inf<F>() || hi == pcm_inf<F>()) return hi;
  return hi + pcm_log1p(pcm_exp(lo - hi));
}
PCM_DEVICE complex64_t pcm_logaddexp(complex64_t a, complex64_t b) {
  complex64_t hi = pcm_max(a, b), lo = pcm_min(a, b);
  if ((lo.re == -pcm_inf<float>() && lo.im == 0.0f) ||
      (hi.re == pcm_inf<float>() && hi.im == 0.0f)) {
    return hi;
  }
  return hi + pcm_log1p(pcm_exp(lo - hi));
}

// 1 / (1 + exp(-x)), MLX's formulation (no overflow for large |x|).
template <typename F> PCM_DEVICE F pcm_sigmoid(F x) {
  F y = F(1) / (F(1) + pcm_exp(pcm_fabs(x)));
  return x < F(0) ? y : F(1) - y;
}

template <typename F> PCM_DEVICE F pcm_rsqrt(F x) { return F(1) / pcm_sqrt(x); }
PCM_DEVICE complex64_t pcm_rsqrt(complex64_t x) {
  return pcm_div(make_complex(1.0f, 0.0f), pcm_sqrt(x));
}
template <typename F> PCM_DEVICE F pcm_reciprocal(F x) { return F(1) / x; }
PCM_DEVICE complex64_t pcm_reciprocal(complex64_t x) {
  return pcm_div(make_complex(1.0f, 0.0f), x);
}

// x == y, or both NaN (array_equal(..., equal_nan=True)).
template <typename T> PCM_DEVICE bool pcm_equal_nan(T a, T b) {
  return a == b || (pcm_isnan(a) && pcm_isnan(b));
}

// real / imag / conj over every dtype (the identity, zeros, the identity for non-complex).
template <typename T> PCM_DEVICE T pcm_real(T a) { return a; }
PCM_DEVICE float pcm_real(complex64_t a) { return a.re; }
template <typename T> PCM_DEVICE T pcm_imag(T) { return (T)0; }
PCM_DEVICE float pcm_imag(complex64_t a) { return a.im; }
template <typename T> PCM_DEVICE T pcm_conj(T a) { return a; }
PCM_DEVICE complex64_t pcm_conj(complex64_t a) { return make_complex(a.re, -a.im); }
