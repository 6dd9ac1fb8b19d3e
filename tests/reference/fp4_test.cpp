// The reference's FP4 kernels (numerics.md section 15) against a separate
// simple implementation written here: Philox-4x32-10 checked on Random123's
// known-answer vectors, E2M1 rounding by a nearest search over the value
// table, scales from the spec formulas, the Hadamard matrix built by
// Sylvester's recursion. Dequantize is exhaustive (every E2M1 code with
// every E8M0 and every E4M3 scale); stochastic rounding is checked bit for
// bit for fixed (seed, offset) and statistically for unbiasedness.
#include <octet/octet_random.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "reference_table.hpp"

namespace octet::test {
namespace {

constexpr double kE2M1[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// ---- The independent implementation -------------------------------------

// Philox-4x32-10 written from the paper's round function, 32x32 -> 64 via
// four 16-bit partial products (no 64-bit multiply).
void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint32_t a0 = a & 0xFFFF, a1 = a >> 16, b0 = b & 0xFFFF, b1 = b >> 16;
  const uint32_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint32_t mid = (p00 >> 16) + (p01 & 0xFFFF) + (p10 & 0xFFFF);
  *lo = (p00 & 0xFFFF) | (mid << 16);
  *hi = p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16);
}

struct Philox {
  uint32_t c[4];
  uint32_t k[2];
  void run() {
    for (int r = 0; r < 10; ++r) {
      if (r > 0) {
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
      }
      uint32_t hi0, lo0, hi1, lo1;
      mulhilo(0xD2511F53u, c[0], &hi0, &lo0);
      mulhilo(0xCD9E8D57u, c[2], &hi1, &lo1);
      const uint32_t n[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
      std::memcpy(c, n, sizeof c);
    }
  }
};

uint32_t bits_of(uint64_t seed, uint64_t offset, uint64_t index) {
  Philox p{{uint32_t(index / 4), uint32_t((index / 4) >> 32), uint32_t(offset), uint32_t(offset >> 32)},
           {uint32_t(seed), uint32_t(seed >> 32)}};
  p.run();
  return p.c[index % 4];
}

// Nearest E2M1 magnitude code, ties to the even code, saturating at 6.
uint8_t e2m1_nearest(double y) {
  const double a = std::fabs(y);
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(kE2M1[c] - a), db = std::fabs(kE2M1[best] - a);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  if (a >= 6.0) best = 7;
  return uint8_t((std::signbit(y) ? 8 : 0) | best);
}

// Stochastic: hi iff r < floor(fraction * 2^32), fraction exact in double.
uint8_t e2m1_stochastic(double y, uint32_t r) {
  const double a = std::fabs(y);
  int lo = 7;
  if (a < 6.0) {
    lo = 0;
    for (int c = 0; c < 7; ++c) {
      if (kE2M1[c] <= a) lo = c;
    }
    const double fraction = (a - kE2M1[lo]) / (kE2M1[lo + 1] - kE2M1[lo]);
    if (double(r) < std::floor(fraction * 4294967296.0)) ++lo;
  }
  return uint8_t((std::signbit(y) ? 8 : 0) | lo);
}

double e2m1_value(uint8_t code) { return (code & 8 ? -1.0 : 1.0) * kE2M1[code & 7]; }

// Sylvester: H1 = [1], H2n = [[H, H], [H, -H]].
std::vector<std::vector<int>> hadamard(int n) {
  std::vector<std::vector<int>> h{{1}};
  while (int(h.size()) < n) {
    const int s = int(h.size());
    std::vector<std::vector<int>> next(2 * s, std::vector<int>(2 * s));
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < s; ++j) {
        next[i][j] = next[i][j + s] = next[i + s][j] = h[i][j];
        next[i + s][j + s] = -h[i][j];
      }
    h = next;
  }
  return h;
}

struct Expected {
  std::vector<uint8_t> codes;  // one per element, unpacked
  std::vector<uint8_t> scales;
  float g = 1.0f;
};

struct Mode {
  const char* name;
  int32_t scaling_mode;
  int br, bc;
  bool nvfp4;
};
const Mode kMx{"mxfp4", OCTET_SCALING_MXFP4_1X32, 1, 32, false};
const Mode kNv{"nvfp4 1x16", OCTET_SCALING_NVFP4_1X16, 1, 16, true};
const Mode kNv2d{"nvfp4 16x16", OCTET_SCALING_NVFP4_16X16, 16, 16, true};

// y: the matrix to encode (already transposed / transformed), rows x cols.
Expected expect_quantize(const std::vector<float>& y, int rows, int cols, const Mode& m, int rounding, bool stochastic,
                         uint64_t seed, uint64_t offset) {
  Expected e;
  e.codes.assign(size_t(rows) * cols, 0);
  if (m.nvfp4) {
    float amax = 0.0f;
    for (float v : y) {
      if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
    }
    e.g = amax / 2688.0f;
    if (e.g == 0.0f) e.g = 1.0f;
  }
  for (int r0 = 0; r0 < rows; r0 += m.br) {
    for (int c0 = 0; c0 < cols; c0 += m.bc) {
      float amax = 0.0f;
      bool nan = false;
      for (int r = r0; r < std::min(rows, r0 + m.br); ++r) {
        for (int c = c0; c < std::min(cols, c0 + m.bc); ++c) {
          const float v = y[size_t(r) * cols + c];
          nan = nan || std::isnan(v);
          if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
        }
      }
      uint8_t scale = 0;
      double divisor = 0.0;
      if (m.nvfp4) {
        scale = nan ? 0x7F : fp8_expected_encode((amax / 6.0f) / e.g, kE4M3Spec, true);
        divisor = float(oracle_fp8_decode(scale, kE4M3Spec) * e.g);
      } else {
        int code = 0;
        if (amax != 0.0f && rounding == 0) {
          int ex = 0;
          const double mant = std::frexp(double(amax / 6.0f), &ex);
          code = std::min(254, std::max(0, (mant == 0.5 ? ex - 1 : ex) + 127));
        } else if (amax != 0.0f) {
          code = std::min(254, std::max(0, std::ilogb(amax) - 2 + 127));
        }
        scale = nan ? 0xFF : uint8_t(code);
        divisor = std::ldexp(1.0, code - 127);
      }
      e.scales.push_back(scale);
      for (int r = r0; r < std::min(rows, r0 + m.br); ++r)
        for (int c = c0; c < std::min(cols, c0 + m.bc); ++c) {
          const size_t i = size_t(r) * cols + c;
          const float v = y[i];
          uint8_t code;
          if (nan) {
            code = 0;
          } else if (std::isinf(v)) {
            code = v < 0 ? 0xF : 0x7;
          } else if (divisor == 0.0) {
            code = std::signbit(v) ? 8 : 0;
          } else {
            const float q = float(v / divisor);  // one correctly rounded division
            code = stochastic ? e2m1_stochastic(q, bits_of(seed, offset, i)) : e2m1_nearest(q);
          }
          e.codes[i] = code;
        }
    }
  }
  // Blocks were visited row-major over the grid, so e.scales is the grid.
  return e;
}

// Rows packed on their own bytes: row r at byte r * ceil(cols / 2).
uint8_t unpack(const std::vector<uint8_t>& packed, size_t i, size_t cols) {
  const size_t r = i / cols, c = i % cols, byte = r * ((cols + 1) / 2) + c / 2;
  return c % 2 == 0 ? packed[byte] & 0xF : packed[byte] >> 4;
}

// ---- The tests -------------------------------------------------------------

class Fp4Kernels : public ReferenceBackendTest {
 protected:
  struct Result {
    std::vector<uint8_t> packed, scales;
    size_t cols = 0;
    float g = -1.0f, amax = -1.0f;
    octet_quantize_statistics stats{};
  };
  Result quantize(TestMatrix& in, const Mode& m, bool transposed, int rounding, bool stochastic, uint64_t seed,
                  uint64_t offset, bool rht = false) {
    const int64_t rows = transposed ? in.cols : in.rows, cols = transposed ? in.rows : in.cols;
    Result res;
    res.packed.assign(size_t(rows * ((cols + 1) / 2)), 0xAA);
    res.cols = size_t(cols);
    res.scales.assign(size_t(((rows + m.br - 1) / m.br) * ((cols + m.bc - 1) / m.bc)), 0xAA);
    octet_fp4_quantize_args a{};
    a.struct_size = sizeof a;
    a.input = in.view();
    a.transposed = transposed;
    a.scaling_mode = m.scaling_mode;
    a.e8m0_rounding = rounding;
    a.stochastic_rounding = stochastic;
    a.seed = seed;
    a.offset = offset;
    a.rht = rht;
    a.rht_sign_mask = octet_rht_sign_mask(seed);
    a.out = res.packed.data();
    a.scale_inv_out = res.scales.data();
    a.tensor_scale_inv_out = m.nvfp4 ? &res.g : nullptr;
    a.amax_out = &res.amax;
    a.stats_out = &res.stats;
    expect_success(api_->fp4_quantize(context_, &a));
    return res;
  }
  static std::vector<float> encoded_matrix(const TestMatrix& in, bool transposed) {
    const int64_t rows = transposed ? in.cols : in.rows, cols = transposed ? in.rows : in.cols;
    std::vector<float> y(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) y[size_t(r * cols + c)] = transposed ? in.load(c, r) : in.load(r, c);
    return y;
  }
  void expect_matches(const Result& got, const Expected& want, const char* what) {
    ASSERT_EQ(got.scales, want.scales) << what;
    for (size_t i = 0; i < want.codes.size(); ++i) {
      ASSERT_EQ(unpack(got.packed, i, got.cols), want.codes[i]) << what << " element " << i;
    }
    if (got.cols % 2 == 1) {
      for (size_t r = 0; r < want.codes.size() / got.cols; ++r) {
        EXPECT_EQ(got.packed[r * ((got.cols + 1) / 2) + got.cols / 2] >> 4, 0) << what << ": pad nibble of row " << r;
      }
    }
  }
};

TEST(Fp4Random, PhiloxMatchesRandom123KnownAnswers) {
  struct Kat {
    uint32_t c[4], k[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& kat : kats) {
    uint32_t out[4];
    octet_philox4x32_10(kat.c, kat.k, out);
    Philox mine{{kat.c[0], kat.c[1], kat.c[2], kat.c[3]}, {kat.k[0], kat.k[1]}};
    mine.run();
    for (int w = 0; w < 4; ++w) {
      EXPECT_EQ(out[w], kat.out[w]) << w;
      EXPECT_EQ(mine.c[w], kat.out[w]) << w;
    }
  }
}

TEST(Fp4Random, ElementBitsFollowTheCounterLayout) {
  std::mt19937_64 rng(7);
  for (int t = 0; t < 2000; ++t) {
    const uint64_t seed = rng(), offset = t % 3 == 0 ? UINT64_MAX - t : rng(), index = rng() >> (t % 64);
    ASSERT_EQ(octet_random_bits(seed, offset, index), bits_of(seed, offset, index));
  }
  for (uint64_t seed : {0ull, 1ull, 0x123456789ABCDEFull}) {
    EXPECT_EQ(octet_rht_sign_mask(seed), bits_of(seed, UINT64_MAX, 0) & 0xFFFF);
  }
}

// Every E2M1 code with every E8M0 scale code (MXFP4) and with every E4M3
// scale code times several tensor scales (NVFP4), into FP32.
TEST_F(Fp4Kernels, DequantizeIsExhaustivelyExact) {
  for (const Mode* m : {&kMx, &kNv}) {
    std::vector<float> gs =
        m->nvfp4 ? std::vector<float>{1.0f, 3.0e-5f, 0.1f, 1.0e30f, 1.0e-40f} : std::vector<float>{1.0f};
    for (float g : gs) {
      const int rows = 256, cols = m->bc;  // row r: scale code r; columns: the 16 codes (twice for 1x32)
      std::vector<uint8_t> packed(size_t(rows * cols / 2));
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; c += 2) packed[size_t(r * cols + c) / 2] = uint8_t((c % 16) | (((c + 1) % 16) << 4));
      std::vector<uint8_t> scales(rows);
      for (int r = 0; r < rows; ++r) scales[r] = uint8_t(r);
      TestMatrix out(OCTET_DTYPE_FP32, rows, cols, cols);
      octet_fp4_dequantize_args a{};
      a.struct_size = sizeof a;
      a.input = packed.data();
      a.rows = rows;
      a.cols = cols;
      a.scaling_mode = m->scaling_mode;
      a.scale_inv = scales.data();
      a.tensor_scale_inv = m->nvfp4 ? &g : nullptr;
      a.output = out.view();
      expect_success(api_->fp4_dequantize(context_, &a));
      for (int r = 0; r < rows; ++r) {
        double x_scale;
        if (m->nvfp4) {
          x_scale = float(oracle_fp8_decode(uint8_t(r), kE4M3Spec) * double(g));
        } else {
          x_scale = r == 0xFF ? std::nan("") : std::ldexp(1.0, r - 127);
        }
        for (int c = 0; c < cols; ++c) {
          const float want = float(e2m1_value(uint8_t(c % 16)) * x_scale);
          const float got = out.load(r, c);
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << m->name << " scale " << r << " code " << c;
          } else {
            EXPECT_EQ(float_bits(got), float_bits(want)) << m->name << " g " << g << " scale " << r << " code " << c;
          }
        }
      }
    }
  }
}

// Random matrices (ragged shapes, zero blocks, NaN and infinities, tiny
// blocks beside large ones), both usages, every mode and rounding.
TEST_F(Fp4Kernels, QuantizeMatchesTheSpec) {
  std::mt19937 rng(19);
  const int shapes[][2] = {{1, 1}, {3, 5}, {17, 33}, {32, 48}, {40, 70}};
  for (const auto& shape : shapes) {
    TestMatrix in(OCTET_DTYPE_FP32, shape[0], shape[1], shape[1] + 3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int r = 0; r < shape[0]; ++r)
      for (int c = 0; c < shape[1]; ++c) {
        float v = u(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
        const unsigned pick = rng() % 200;
        if (pick == 0) v = NAN;
        if (pick == 1) v = -INFINITY;
        if (pick == 2) v = 0.0f;
        if (r == 2) v = 0.0f;  // a zero row: zero blocks
        in.set_bits(r, c, float_bits(v));
      }
    for (const Mode* m : {&kMx, &kNv, &kNv2d}) {
      for (bool transposed : {false, true}) {
        for (int rounding : {0, 1}) {
          if (m->nvfp4 && rounding == 1) continue;
          for (bool stochastic : {false, true}) {
            const Result got = quantize(in, *m, transposed, rounding, stochastic, 42, 7);
            const Expected want = expect_quantize(encoded_matrix(in, transposed), transposed ? shape[1] : shape[0],
                                                  transposed ? shape[0] : shape[1], *m, rounding, stochastic, 42, 7);
            expect_matches(got, want, m->name);
            if (m->nvfp4) {
              EXPECT_EQ(float_bits(got.g), float_bits(want.g));
            }
          }
        }
      }
    }
  }
}

// Bit-reproducible for a fixed (seed, offset); another offset or seed gives
// other bits; and the mean of many stochastic roundings is the value.
TEST_F(Fp4Kernels, StochasticRoundingIsReproducibleAndUnbiased) {
  const int rows = 64, cols = 1024;
  const float values[] = {0.1f, 0.7f, 1.3f, 2.6f, 3.9f, 5.1f, -4.4f, 1.0e-6f};
  for (float v : values) {
    TestMatrix in(OCTET_DTYPE_FP32, rows, cols, cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) in.set_bits(r, c, float_bits(c % 32 == 0 ? 6.0f : v));  // X = 1
    const Result a = quantize(in, kMx, false, 0, true, 1234, 99);
    const Result b = quantize(in, kMx, false, 0, true, 1234, 99);
    const Result other_offset = quantize(in, kMx, false, 0, true, 1234, 100);
    const Result other_seed = quantize(in, kMx, false, 0, true, 1235, 99);
    EXPECT_EQ(a.packed, b.packed) << v;
    if (v != 1.0e-6f) {
      EXPECT_NE(a.packed, other_offset.packed) << v;
      EXPECT_NE(a.packed, other_seed.packed) << v;
    }
    double sum = 0.0;
    int n = 0;
    for (size_t i = 0; i < size_t(rows) * cols; ++i) {
      if (i % 32 == 0) continue;
      sum += e2m1_value(unpack(a.packed, i, a.cols));
      ++n;
    }
    // The two neighbours lo < |v| < hi: the mean's standard deviation is at
    // most (hi - lo) / 2 / sqrt(n); allow 5 of them.
    const double tolerance = 5.0 * 2.0 / 2.0 / std::sqrt(double(n));
    EXPECT_NEAR(sum / n, double(v), v == 1.0e-6f ? 1e-3 : tolerance) << v;
  }
}

// The transform is (H D) / 4 on each 16-element group of a row, summed in
// ascending order, and it preserves a dot product along the groups.
TEST_F(Fp4Kernels, HadamardTransformMatchesSylvester) {
  const auto h = hadamard(16);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  const int rows = 8, cols = 64;
  TestMatrix in(OCTET_DTYPE_FP32, cols, rows, rows);  // quantized transposed: rows x cols
  for (int r = 0; r < cols; ++r)
    for (int c = 0; c < rows; ++c) in.set_bits(r, c, float_bits(normal(rng)));
  const uint64_t seed = 0xC0FFEE;
  const uint32_t mask = bits_of(seed, UINT64_MAX, 0) & 0xFFFF;
  std::vector<float> x = encoded_matrix(in, true), y(x.size());
  for (int r = 0; r < rows; ++r)
    for (int g0 = 0; g0 < cols; g0 += 16)
      for (int i = 0; i < 16; ++i) {
        float sum = 0.0f;
        for (int j = 0; j < 16; ++j) {
          const int sign = h[i][j] * ((mask >> j) & 1 ? -1 : 1);
          sum += sign * x[size_t(r * cols + g0 + j)];
        }
        y[size_t(r * cols + g0 + i)] = sum * 0.25f;
      }
  for (const Mode* m : {&kNv, &kMx}) {
    const Result got = quantize(in, *m, true, 0, false, seed, 0, true);
    expect_matches(got, expect_quantize(y, rows, cols, *m, 0, false, seed, 0), m->name);
  }
  // Orthogonal: sum_k y_a[k] y_b[k] == sum_k x_a[k] x_b[k] (up to rounding).
  for (int a = 0; a + 1 < rows; ++a) {
    double dx = 0, dy = 0, norm = 0;
    for (int k = 0; k < cols; ++k) {
      dx += double(x[size_t(a * cols + k)]) * x[size_t((a + 1) * cols + k)];
      dy += double(y[size_t(a * cols + k)]) * y[size_t((a + 1) * cols + k)];
      norm += std::fabs(double(x[size_t(a * cols + k)]) * x[size_t((a + 1) * cols + k)]);
    }
    EXPECT_NEAR(dx, dy, 1e-5 * (norm + 1.0));
  }
  // A row length that is not a multiple of 16 is refused.
  TestMatrix odd(OCTET_DTYPE_FP32, 2, 24, 24);
  std::vector<uint8_t> out(24), scales(4);
  float g = 0;
  octet_fp4_quantize_args a{};
  a.struct_size = sizeof a;
  a.input = odd.view();
  a.scaling_mode = OCTET_SCALING_NVFP4_1X16;
  a.rht = 1;
  a.out = out.data();
  a.scale_inv_out = scales.data();
  a.tensor_scale_inv_out = &g;
  expect_failure(api_->fp4_quantize(context_, &a), OCTET_STATUS_INVALID_ARGUMENT, {"multiple of 16"});
}

// GEMM: the documented order, checked bit for bit, and the exact real
// product of the dequantized operands within the accumulation bound.
TEST_F(Fp4Kernels, GemmFollowsTheDocumentedOrder) {
  std::mt19937 rng(5);
  struct Case {
    const Mode *a, *b;
    int m, n, k;
  };
  const Case cases[] = {{&kMx, &kMx, 5, 7, 70}, {&kNv, &kNv2d, 9, 18, 48}, {&kNv2d, &kNv, 17, 3, 33}};
  for (const Case& cs : cases) {
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    TestMatrix a(OCTET_DTYPE_FP32, cs.m, cs.k, cs.k), b(OCTET_DTYPE_FP32, cs.n, cs.k, cs.k);
    for (TestMatrix* t : {&a, &b})
      for (int64_t r = 0; r < t->rows; ++r)
        for (int64_t c = 0; c < t->cols; ++c) t->set_bits(r, c, float_bits(u(rng) * std::ldexp(1.0f, int(rng() % 8))));
    const Result qa = quantize(a, *cs.a, false, 0, false, 0, 0), qb = quantize(b, *cs.b, false, 0, false, 0, 0);
    TestMatrix d(OCTET_DTYPE_FP32, cs.m, cs.n, cs.n);
    octet_fp4_gemm_args g{};
    g.struct_size = sizeof g;
    g.m = cs.m;
    g.n = cs.n;
    g.k = cs.k;
    g.a = qa.packed.data();
    g.b = qb.packed.data();
    g.a_scale_inv = qa.scales.data();
    g.b_scale_inv = qb.scales.data();
    g.a_tensor_scale_inv = &qa.g;
    g.b_tensor_scale_inv = &qb.g;
    g.a_scaling_mode = cs.a->scaling_mode;
    g.b_scaling_mode = cs.b->scaling_mode;
    g.alpha = 1.5f;
    g.d = d.view();
    expect_success(api_->fp4_gemm(context_, &g));
    const int bk = cs.a->bc, kb_count = (cs.k + bk - 1) / bk;
    auto scale = [&](const Result& q, const Mode& m, int row, int kb) {
      const uint8_t code = q.scales[size_t((row / m.br) * kb_count + kb)];
      return m.nvfp4 ? oracle_fp8_decode(code, kE4M3Spec) : oracle_e8m0_decode(code);
    };
    const float ga = cs.a->nvfp4 ? qa.g : 1.0f, gb = cs.a->nvfp4 ? qb.g : 1.0f;
    for (int i = 0; i < cs.m; ++i)
      for (int j = 0; j < cs.n; ++j) {
        float acc = 0.0f;
        double exact = 0.0, magnitude = 0.0;
        for (int kb = 0; kb < kb_count; ++kb) {
          double partial = 0.0;  // exact in double and in FP32
          for (int kk = kb * bk; kk < std::min(cs.k, (kb + 1) * bk); ++kk)
            partial += e2m1_value(unpack(qa.packed, size_t(i * cs.k + kk), size_t(cs.k))) *
                       e2m1_value(unpack(qb.packed, size_t(j * cs.k + kk), size_t(cs.k)));
          const double s = double(scale(qa, *cs.a, i, kb)) * scale(qb, *cs.b, j, kb);
          acc += float(partial * s);
          exact += partial * s;
          for (int kk = kb * bk; kk < std::min(cs.k, (kb + 1) * bk); ++kk)
            magnitude += std::fabs(e2m1_value(unpack(qa.packed, size_t(i * cs.k + kk), size_t(cs.k))) *
                                   e2m1_value(unpack(qb.packed, size_t(j * cs.k + kk), size_t(cs.k)))) *
                         s;
        }
        const float want = (1.5f * (ga * gb)) * acc;
        EXPECT_EQ(float_bits(d.load(i, j)), float_bits(want)) << cs.a->name << " " << i << "," << j;
        const double scaled_exact = exact * 1.5 * double(ga) * gb;
        const double bound = (cs.k * std::ldexp(1.0, -23) * magnitude + std::ldexp(1.0, -23) * std::fabs(exact)) * 1.5 *
                                 double(ga) * gb +
                             1e-30;
        EXPECT_LE(std::fabs(double(d.load(i, j)) - scaled_exact), 2 * bound);
      }
  }
  // MXFP4 with NVFP4 is refused, naming both modes.
  octet_fp4_gemm_args g{};
  g.struct_size = sizeof g;
  g.a_scaling_mode = OCTET_SCALING_MXFP4_1X32;
  g.b_scaling_mode = OCTET_SCALING_NVFP4_1X16;
  expect_failure(api_->fp4_gemm(context_, &g), OCTET_STATUS_INVALID_ARGUMENT, {"a_scaling_mode", "both NVFP4"});
}

// A NaN makes its block's scale the NaN code; other blocks are untouched and
// dequantize to their values; the tensor scale ignores NaN and infinity.
TEST_F(Fp4Kernels, NanBlocksAndInfinities) {
  TestMatrix in(OCTET_DTYPE_FP32, 1, 64, 64);
  for (int c = 0; c < 64; ++c) in.set_bits(0, c, float_bits(c < 32 ? 1000.0f : 3.0f));
  in.set_bits(0, 5, float_bits(NAN));
  in.set_bits(0, 40, float_bits(-INFINITY));
  for (const Mode* m : {&kMx, &kNv}) {
    const Result q = quantize(in, *m, false, 0, false, 0, 0);
    EXPECT_EQ(q.scales[0], m->nvfp4 ? 0x7F : 0xFF);
    EXPECT_EQ(unpack(q.packed, 40, q.cols), 0xF);  // -inf saturates to -6 * X
    EXPECT_EQ(q.amax, INFINITY);
    EXPECT_EQ(q.stats.nan_count, 1u);
    if (m->nvfp4) {
      EXPECT_EQ(q.g, 1000.0f / 2688.0f);
    }
    TestMatrix out(OCTET_DTYPE_FP32, 1, 64, 64);
    octet_fp4_dequantize_args d{};
    d.struct_size = sizeof d;
    d.input = q.packed.data();
    d.rows = 1;
    d.cols = 64;
    d.scaling_mode = m->scaling_mode;
    d.scale_inv = q.scales.data();
    d.tensor_scale_inv = &q.g;
    d.output = out.view();
    expect_success(api_->fp4_dequantize(context_, &d));
    EXPECT_TRUE(std::isnan(out.load(0, 0)));
    EXPECT_NEAR(out.load(0, 33), 3.0f, 0.5f);  // the finite neighbours of the infinity keep their values
  }
}

// numerics.md section 10: flushed_count counts finite non-zero inputs whose
// code is +0 or -0. E2M1's sign is bit 3, so -0 is 0x8.
TEST_F(Fp4Kernels, FlushedCountsPlusAndMinusZero) {
  TestMatrix in(OCTET_DTYPE_FP32, 1, 32, 32);
  for (int c = 0; c < 32; ++c) in.set_bits(0, c, float_bits(0.0f));
  in.set_bits(0, 0, float_bits(6.0f));   // the block's amax: MXFP4 scale 1, NVFP4 g * s = 1 per block
  in.set_bits(0, 1, float_bits(0.1f));   // |0.1 / X| < 0.25: +0
  in.set_bits(0, 2, float_bits(-0.1f));  // -0 (code 0x8)
  in.set_bits(0, 3, float_bits(-0.0f));  // zero in, not a flush
  in.set_bits(0, 17, float_bits(6.0f));  // NVFP4's second 1x16 block
  for (const Mode* m : {&kMx, &kNv}) {
    const Result q = quantize(in, *m, false, 0, false, 0, 0);
    EXPECT_EQ(unpack(q.packed, 1, q.cols), 0x0) << m->scaling_mode;
    EXPECT_EQ(unpack(q.packed, 2, q.cols), 0x8) << m->scaling_mode;
    EXPECT_EQ(q.stats.flushed_count, 2u) << m->scaling_mode;
    EXPECT_EQ(q.stats.saturated_count, 0u) << m->scaling_mode;
  }
}

// FNUZ has one zero (0x00); 0x80 is its NaN. A non-saturating quantize that
// overflows writes 0x80: a saturation, not a flush.
TEST_F(Fp4Kernels, FnuzOverflowToNanIsNotAFlush) {
  for (const int32_t dtype : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    TestMatrix in(OCTET_DTYPE_FP32, 1, 3, 3);
    in.set_bits(0, 0, float_bits(1e30f));    // beyond 240 and 57344: NaN without saturation
    in.set_bits(0, 1, float_bits(1e-30f));   // below the smallest subnormal: +0, a flush
    in.set_bits(0, 2, float_bits(-1e-30f));  // FNUZ has no -0: +0 (0x00), a flush
    std::vector<uint8_t> codes(3, 0xAA);
    const float scale = 1.0f;
    octet_quantize_args a{};
    a.struct_size = sizeof a;
    a.input = in.view();
    a.out_dtype = dtype;
    a.saturate = 0;
    a.scale = &scale;
    a.rowwise_out = codes.data();
    octet_quantize_statistics stats{};
    expect_success(api_->quantize_with_statistics(context_, &a, &stats));
    EXPECT_EQ(codes[0], 0x80) << dtype;
    EXPECT_EQ(codes[1], 0x00) << dtype;
    EXPECT_EQ(codes[2], 0x00) << dtype;
    EXPECT_EQ(stats.saturated_count, 1u) << dtype;
    EXPECT_EQ(stats.flushed_count, 2u) << dtype;
  }
}

}  // namespace
}  // namespace octet::test
