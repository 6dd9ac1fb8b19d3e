// The cpu plugin's FP4 kernels (plugin ABI 1.4; numerics.md section 15)
// against the reference's table and an independent double-precision sum:
// - quantize: codes, scales, tensor scale, amax and statistics bit for bit
//   with the reference for every mode and option (both usages, the Hadamard
//   transform, stochastic rounding with several seeds and offsets, RCEIL and
//   FLOOR), FP32/BF16/FP16 inputs with padded rows, shapes with tails that
//   are not multiples of 16 or 32, NaN, infinities, zero and tiny blocks;
// - dequantize: bit for bit over every scale code;
// - GEMM: MXFP4 and NVFP4 (1x16 and 16x16 in every mix), m = 1 (the decode
//   kernel) and larger, k, m, n tails, within numerics.md section 8's bound
//   of a double-precision sum written here from the spec's value tables,
//   and agreeing with the reference in NaN-ness; MXFP4 scales outside the
//   range the BF16 kernel folds take the exact path, bit for bit.
// This executable links the reference library (the oracle) and opens the cpu
// plugin with dlopen; ctest also runs it at the portable level.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet_backend.h>
#include <octet/octet_random.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "octet_reference/reference_backend.h"

namespace {

struct Table {
  const octet_backend_api* api = nullptr;
  octet_backend_context* ctx = nullptr;
  octet_host_services host{};
  octet_backend_caps caps{};
  std::vector<std::string> errors;
};

void record(void* data, int32_t, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message);
}

octet_backend_entry_fn cpu_entry() {
  void* handle = dlopen(OCTET_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "cannot open %s: %s\n", OCTET_CPU_PLUGIN_PATH, dlerror());
    std::abort();
  }
  return reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
}

void open_table(Table& t, octet_backend_entry_fn entry) {
  ASSERT_NE(entry, nullptr);
  ASSERT_EQ(entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &t.api), OCTET_STATUS_SUCCESS);
  t.host.struct_size = sizeof t.host;
  t.host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  t.host.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  t.host.report_error = record;
  t.host.host_data = &t.errors;
  t.caps.struct_size = sizeof t.caps;
  ASSERT_EQ(t.api->initialize(&t.host, &t.caps), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(t.api->context_create(nullptr, &t.ctx), OCTET_STATUS_SUCCESS);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

size_t esize(int32_t dtype) { return dtype == OCTET_DTYPE_FP32 ? 4 : 2; }

// FP32 -> BF16 / FP16 bits by round to nearest even (test-side, for inputs).
uint16_t to_bf16(float x) {
  const uint32_t u = bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// An input matrix of `dtype` with rows padded to ld; values written from FP32
// (BF16 by its rounding; FP16 with the compiler's _Float16 conversion).
struct Input {
  std::vector<unsigned char> bytes;
  octet_matrix_view view{};
  Input(int32_t dtype, int64_t rows, int64_t cols, int64_t ld, const std::vector<float>& values) {
    bytes.assign(static_cast<size_t>(std::max<int64_t>(rows, 1) * ld) * esize(dtype) + 8, 0xA5);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = values[static_cast<size_t>(r * cols + c)];
        unsigned char* p = bytes.data() + static_cast<size_t>(r * ld + c) * esize(dtype);
        if (dtype == OCTET_DTYPE_FP32) {
          std::memcpy(p, &v, 4);
        } else if (dtype == OCTET_DTYPE_BF16) {
          const uint16_t h = to_bf16(v);
          std::memcpy(p, &h, 2);
        } else {
          const _Float16 h = static_cast<_Float16>(v);
          std::memcpy(p, &h, 2);
        }
      }
    }
    view = octet_matrix_view{bytes.data(), dtype, 0, rows, cols, ld};
  }
};

// Values with blocks of very different magnitudes, and specials sprinkled.
std::vector<float> make_values(int64_t rows, int64_t cols, std::mt19937& rng, bool specials) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int band = static_cast<int>((r / 3 + c / 16) % 7);
      static const int kExponents[7] = {0, 4, -6, 9, -20, 2, -3};
      v[static_cast<size_t>(r * cols + c)] = normal(rng) * std::ldexp(1.0f, kExponents[band]);
    }
  }
  if (specials && !v.empty()) {
    const size_t n = v.size();
    v[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    v[rng() % n] = std::numeric_limits<float>::infinity();
    v[rng() % n] = -std::numeric_limits<float>::infinity();
    v[rng() % n] = 0.0f;
    v[rng() % n] = -0.0f;
    v[rng() % n] = 1e-30f;
    v[rng() % n] = -3e4f;
    // A row segment of zeros and one of tiny values (E8M0 code 0, an NVFP4
    // scale that flushes).
    for (size_t i = 0; i < std::min<size_t>(n, 40); ++i) v[i] = 0.0f;
    for (size_t i = n / 2; i < std::min<size_t>(n, n / 2 + 20); ++i) v[i] = 1e-38f * static_cast<float>(i % 3);
  }
  return v;
}

struct Quantized {
  std::vector<uint8_t> codes, scales;
  float g = -1.0f, amax = -1.0f;
  octet_quantize_statistics stats{};
  int32_t status = 0;
};

Quantized quantize(Table& t, const octet_matrix_view& in, int32_t mode, bool transposed, int32_t rounding, bool sr,
                   uint64_t seed, uint64_t offset, bool rht) {
  const int64_t rows = transposed ? in.cols : in.rows, cols = transposed ? in.rows : in.cols;
  const int64_t br = mode == OCTET_SCALING_NVFP4_16X16 ? 16 : 1, bc = mode == OCTET_SCALING_MXFP4_1X32 ? 32 : 16;
  Quantized q;
  q.codes.assign(static_cast<size_t>(rows * ((cols + 1) / 2)) + 1, 0xEE);  // garbage the kernel overwrites
  q.scales.assign(static_cast<size_t>(((rows + br - 1) / br) * ((cols + bc - 1) / bc)) + 1, 0xEE);
  octet_fp4_quantize_args a{};
  a.struct_size = sizeof a;
  a.input = in;
  a.transposed = transposed ? 1 : 0;
  a.scaling_mode = mode;
  a.e8m0_rounding = rounding;
  a.stochastic_rounding = sr ? 1 : 0;
  a.seed = seed;
  a.offset = offset;
  a.rht = rht ? 1 : 0;
  a.rht_sign_mask = octet_rht_sign_mask(seed);
  a.out = q.codes.data();
  a.scale_inv_out = q.scales.data();
  a.tensor_scale_inv_out = mode == OCTET_SCALING_MXFP4_1X32 ? nullptr : &q.g;
  a.amax_out = &q.amax;
  a.stats_out = &q.stats;
  q.status = t.api->fp4_quantize(t.ctx, &a);
  return q;
}

class CpuFp4 : public ::testing::Test {
 protected:
  void SetUp() override {
    open_table(ref, octet_reference_backend_entry);
    open_table(cpu, cpu_entry());
    ASSERT_NE(cpu.api->fp4_quantize, nullptr);
    ASSERT_NE(cpu.api->fp4_dequantize, nullptr);
    ASSERT_NE(cpu.api->fp4_gemm, nullptr);
  }
  Table ref, cpu;
};

const int32_t kModes[3] = {OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_16X16};

TEST_F(CpuFp4, CapabilitiesDeclareTheFp4Modes) {
  const uint32_t fp4 = OCTET_SCALING_MXFP4_1X32 | OCTET_SCALING_NVFP4_1X16 | OCTET_SCALING_NVFP4_16X16;
  EXPECT_EQ(cpu.caps.scaling_modes & fp4, fp4);
  EXPECT_NE(cpu.caps.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1), 0u);
}

void expect_same(const Quantized& want, const Quantized& got, const std::string& where) {
  ASSERT_EQ(want.status, OCTET_STATUS_SUCCESS) << where;
  ASSERT_EQ(got.status, OCTET_STATUS_SUCCESS) << where;
  ASSERT_EQ(want.codes.size(), got.codes.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.codes.size(); ++i) {
    if (want.codes[i] != got.codes[i] && bad++ < 3) {
      ADD_FAILURE() << where << ": code byte " << i << " ref " << int(want.codes[i]) << " cpu " << int(got.codes[i]);
    }
  }
  for (size_t i = 0; i < want.scales.size(); ++i) {
    if (want.scales[i] != got.scales[i] && bad++ < 6) {
      ADD_FAILURE() << where << ": scale " << i << " ref " << int(want.scales[i]) << " cpu " << int(got.scales[i]);
    }
  }
  EXPECT_EQ(bad, 0u) << where;
  EXPECT_EQ(bits(want.g), bits(got.g)) << where;
  EXPECT_EQ(bits(want.amax), bits(got.amax)) << where;
  EXPECT_EQ(want.stats.nan_count, got.stats.nan_count) << where;
  EXPECT_EQ(want.stats.saturated_count, got.stats.saturated_count) << where;
  EXPECT_EQ(want.stats.flushed_count, got.stats.flushed_count) << where;
  EXPECT_EQ(bits(want.stats.amax), bits(got.stats.amax)) << where;
}

TEST_F(CpuFp4, QuantizeMatchesTheReferenceBitForBit) {
  std::mt19937 rng(11);
  struct Shape {
    int64_t rows, cols;
  };
  // {200, 400}: past two grains of elements, so split among threads
  // (dispatch/parallel_policy.hpp); the others run on one.
  const Shape shapes[] = {{1, 1},    {3, 17},  {5, 33},   {16, 16}, {17, 48},
                          {33, 100}, {40, 64}, {20, 257}, {48, 32}, {200, 400}};
  const uint64_t seeds[] = {1, 0xDEADBEEF12345678ull};
  int checked = 0;
  for (const Shape& s : shapes) {
    for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      const std::vector<float> values = make_values(s.rows, s.cols, rng, true);
      const Input in(dtype, s.rows, s.cols, s.cols + 3, values);
      for (int32_t mode : kModes) {
        for (bool transposed : {false, true}) {
          const int64_t cols_out = transposed ? s.rows : s.cols;
          for (bool rht : {false, true}) {
            if (rht && cols_out % 16 != 0) continue;
            for (bool sr : {false, true}) {
              for (int32_t rounding : {0, 1}) {
                if (rounding == 1 && mode != OCTET_SCALING_MXFP4_1X32) continue;
                for (uint64_t seed : seeds) {
                  if (!sr && !rht && seed != seeds[0]) continue;
                  const uint64_t offset = seed % 5;
                  const std::string where = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " dtype " +
                                            std::to_string(dtype) + " mode " + std::to_string(mode) + " t" +
                                            std::to_string(transposed) + " rht" + std::to_string(rht) + " sr" +
                                            std::to_string(sr) + " r" + std::to_string(rounding) + " seed " +
                                            std::to_string(seed);
                  expect_same(quantize(ref, in.view, mode, transposed, rounding, sr, seed, offset, rht),
                              quantize(cpu, in.view, mode, transposed, rounding, sr, seed, offset, rht), where);
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// Shapes large enough for the threaded paths, and values on every rounding
// boundary of E2M1 (ties of nearest even, the saturation threshold 7).
TEST_F(CpuFp4, QuantizeLargeAndBoundaryValuesMatchTheReference) {
  std::mt19937 rng(12);
  std::vector<float> values = make_values(160, 1024, rng, true);
  const float boundaries[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 7.0f, 6.0f, 6.5f, 0.2499f, 4.99f};
  for (size_t i = 2000; i < 8000; ++i) {
    values[i] = boundaries[i % 12] * ((i / 12) % 2 ? -1.0f : 1.0f) * ((i / 24) % 3 == 0 ? 1.0f : 0.5f);
  }
  const Input in(OCTET_DTYPE_FP32, 160, 1024, 1024, values);
  // Every E2M1 tie and the saturation threshold land exactly: each 16-block
  // holds 6 (MXFP4 RCEIL and FLOOR scale 1), and the matrix amax is 2688
  // (NVFP4 g = 1, block scale 1).
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.5f, 7.0f, 0.5f, 3.0f};
  std::vector<float> tie_values(32 * 256);
  for (size_t i = 0; i < tie_values.size(); ++i) {
    tie_values[i] = i % 16 == 0 ? 6.0f : ties[(i / 16 + i) % 11] * ((i / 7) % 2 ? -1.0f : 1.0f);
  }
  tie_values[17 * 256 + 48] = 2688.0f;
  // A block whose NVFP4 scale flushes to 0 holding an infinity (the
  // infinity saturates, the rest are +-0), and one holding a NaN.
  for (size_t c = 0; c < 16; ++c) tie_values[5 * 256 + c] = (c % 2 ? -1e-30f : 1e-30f);
  tie_values[5 * 256 + 3] = -std::numeric_limits<float>::infinity();
  tie_values[6 * 256 + 40] = std::numeric_limits<float>::quiet_NaN();
  const Input tie_in(OCTET_DTYPE_FP32, 32, 256, 256, tie_values);
  for (int32_t mode : kModes) {
    for (int32_t rounding : {0, 1}) {
      const Quantized want = quantize(ref, tie_in.view, mode, false, rounding, false, 5, 0, false);
      expect_same(want, quantize(cpu, tie_in.view, mode, false, rounding, false, 5, 0, false),
                  "ties mode " + std::to_string(mode) + " r" + std::to_string(rounding));
      expect_same(quantize(ref, tie_in.view, mode, false, rounding, true, 5, 0, false),
                  quantize(cpu, tie_in.view, mode, false, rounding, true, 5, 0, false),
                  "ties stochastic mode " + std::to_string(mode) + " r" + std::to_string(rounding));
      if (rounding == 1 && mode == OCTET_SCALING_MXFP4_1X32) {
        EXPECT_GT(want.stats.saturated_count, 0u);
      }
    }
  }
  for (int32_t mode : kModes) {
    for (bool transposed : {false, true}) {
      for (bool sr : {false, true}) {
        for (bool rht : {false, true}) {
          const std::string where = "large mode " + std::to_string(mode) + " t" + std::to_string(transposed) + " sr" +
                                    std::to_string(sr) + " rht" + std::to_string(rht);
          expect_same(quantize(ref, in.view, mode, transposed, 0, sr, 77, 3, rht),
                      quantize(cpu, in.view, mode, transposed, 0, sr, 77, 3, rht), where);
        }
      }
    }
  }
}

TEST_F(CpuFp4, QuantizeRefusesBadArgumentsLikeTheReference) {
  const std::vector<float> values(4 * 20, 1.0f);
  const Input in(OCTET_DTYPE_FP32, 4, 20, 20, values);
  Quantized q = quantize(cpu, in.view, 12345, false, 0, false, 1, 0, false);
  EXPECT_EQ(q.status, OCTET_STATUS_INVALID_ARGUMENT);
  q = quantize(cpu, in.view, OCTET_SCALING_NVFP4_1X16, false, 0, false, 1, 0, true);  // 20 % 16 != 0
  EXPECT_EQ(q.status, OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_FALSE(cpu.errors.empty());
  EXPECT_NE(cpu.errors.back().find("multiple of 16"), std::string::npos) << cpu.errors.back();
  q = quantize(cpu, in.view, OCTET_SCALING_MXFP4_1X32, false, 2, false, 1, 0, false);
  EXPECT_EQ(q.status, OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cpu.errors.back().find("e8m0_rounding"), std::string::npos) << cpu.errors.back();
}

TEST_F(CpuFp4, DequantizeMatchesTheReferenceForEveryScaleCode) {
  std::mt19937 rng(13);
  for (int32_t mode : kModes) {
    const int64_t br = mode == OCTET_SCALING_NVFP4_16X16 ? 16 : 1, bc = mode == OCTET_SCALING_MXFP4_1X32 ? 32 : 16;
    const int64_t rows = 37, cols = 16 * 32 + 7;  // 16x16: 3 block rows; every row a tail
    std::vector<uint8_t> codes(static_cast<size_t>(rows * ((cols + 1) / 2)));
    for (auto& c : codes) c = static_cast<uint8_t>(rng());
    const int64_t grid = ((rows + br - 1) / br) * ((cols + bc - 1) / bc);
    std::vector<uint8_t> scales(static_cast<size_t>(grid));
    for (int64_t i = 0; i < grid; ++i) scales[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 7 + 3);  // all codes
    for (float g : {1.0f, 0.0123f, 3e-7f}) {
      for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
        std::vector<std::vector<unsigned char>> outs;
        for (Table* t : {&ref, &cpu}) {
          std::vector<unsigned char> out(static_cast<size_t>(rows * (cols + 1)) * esize(dtype), 0x5A);
          octet_fp4_dequantize_args a{};
          a.struct_size = sizeof a;
          a.input = codes.data();
          a.rows = rows;
          a.cols = cols;
          a.scaling_mode = mode;
          a.scale_inv = scales.data();
          a.tensor_scale_inv = mode == OCTET_SCALING_MXFP4_1X32 ? nullptr : &g;
          a.output = octet_matrix_view{out.data(), dtype, 0, rows, cols, cols + 1};
          ASSERT_EQ(t->api->fp4_dequantize(t->ctx, &a), OCTET_STATUS_SUCCESS);
          outs.push_back(out);
        }
        EXPECT_EQ(outs[0], outs[1]) << "mode " << mode << " dtype " << dtype << " g " << g;
      }
    }
  }
}

// ---- GEMM -----------------------------------------------------------------

// The spec's value tables (numerics.md sections 1, 2, 5), written here.
double e2m1(uint8_t code) {
  static const double kV[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return (code & 0x8) ? -kV[code & 7] : kV[code & 7];
}
double e4m3(uint8_t code) {
  if ((code & 0x7F) == 0x7F) return std::nan("");
  const int e = (code >> 3) & 0xF, m = code & 7;
  const double v = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return (code & 0x80) ? -v : v;
}
double e8m0(uint8_t code) { return code == 0xFF ? std::nan("") : std::ldexp(1.0, int(code) - 127); }

struct Operand {
  Quantized q;
  int32_t mode;
  int64_t rows, k;
  double value(int64_t r, int64_t c) const {
    const uint8_t byte = q.codes[static_cast<size_t>(r * ((k + 1) / 2) + c / 2)];
    return e2m1(c % 2 ? uint8_t(byte >> 4) : uint8_t(byte & 0xF));
  }
  double scale(int64_t r, int64_t kb) const {
    const int64_t br = mode == OCTET_SCALING_NVFP4_16X16 ? 16 : 1, bk = mode == OCTET_SCALING_MXFP4_1X32 ? 32 : 16;
    const uint8_t s = q.scales[static_cast<size_t>((r / br) * ((k + bk - 1) / bk) + kb)];
    return mode == OCTET_SCALING_MXFP4_1X32 ? e8m0(s) : e4m3(s);
  }
};

Operand make_operand(Table& t, int32_t mode, int64_t rows, int64_t k, std::mt19937& rng) {
  const std::vector<float> values = make_values(rows, k, rng, false);
  const Input in(OCTET_DTYPE_FP32, rows, k, k, values);
  Operand op{quantize(t, in.view, mode, false, 0, false, 1, 0, false), mode, rows, k};
  return op;
}

struct GemmOut {
  std::vector<float> d;
  int32_t status;
};

GemmOut run_gemm(Table& t, const Operand& a, const Operand& b, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                 const std::vector<float>& d0, const std::vector<float>* bias, bool gelu) {
  GemmOut out{d0, 0};
  octet_fp4_gemm_args g{};
  g.struct_size = sizeof g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.q.codes.data();
  g.b = b.q.codes.data();
  g.a_scale_inv = a.q.scales.data();
  g.b_scale_inv = b.q.scales.data();
  g.a_tensor_scale_inv = &a.q.g;
  g.b_tensor_scale_inv = &b.q.g;
  g.a_scaling_mode = a.mode;
  g.b_scaling_mode = b.mode;
  g.alpha = alpha;
  g.beta = beta;
  g.d = octet_matrix_view{out.d.data(), OCTET_DTYPE_FP32, 0, m, n, n};
  if (bias != nullptr) g.bias = octet_matrix_view{const_cast<float*>(bias->data()), OCTET_DTYPE_FP32, 0, 1, n, n};
  g.epilogue = gelu ? OCTET_EPILOGUE_GELU : OCTET_EPILOGUE_NONE;
  out.status = t.api->fp4_gemm(t.ctx, &g);
  return out;
}

// cpu's D against sum over kb of partial * (sa * sb) in double, within
// k * 2^-23 * sum |terms| * |alpha ga gb| (+ the final scaling's and the
// beta/bias terms' roundings); NaN exactly where the reference has NaN.
void check_gemm(Table& ref, Table& cpu, const Operand& a, const Operand& b, int64_t m, int64_t n, int64_t k,
                float alpha, float beta, bool with_bias, const std::string& where) {
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 7 + k));
  std::normal_distribution<float> normal;
  std::vector<float> d0(static_cast<size_t>(m * n)), bias(static_cast<size_t>(n));
  for (auto& v : d0) v = normal(rng);
  for (auto& v : bias) v = normal(rng);
  const GemmOut want = run_gemm(ref, a, b, m, n, k, alpha, beta, d0, with_bias ? &bias : nullptr, false);
  const GemmOut got = run_gemm(cpu, a, b, m, n, k, alpha, beta, d0, with_bias ? &bias : nullptr, false);
  ASSERT_EQ(want.status, OCTET_STATUS_SUCCESS) << where;
  ASSERT_EQ(got.status, OCTET_STATUS_SUCCESS) << where << (cpu.errors.empty() ? "" : cpu.errors.back());
  const int64_t bk = a.mode == OCTET_SCALING_MXFP4_1X32 ? 32 : 16, kbs = (k + bk - 1) / bk;
  const bool nv = a.mode != OCTET_SCALING_MXFP4_1X32;
  const double gs = double(alpha) * (nv ? double(a.q.g) * b.q.g : 1.0);
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0.0, magnitude = 0.0;
      for (int64_t kb = 0; kb < kbs; ++kb) {
        const double s = a.scale(i, kb) * b.scale(j, kb);
        for (int64_t kk = kb * bk; kk < std::min(k, (kb + 1) * bk); ++kk) {
          const double p = a.value(i, kk) * b.value(j, kk) * s;
          exact += p;
          magnitude += std::fabs(p);
        }
      }
      const size_t at = static_cast<size_t>(i * n + j);
      double expect = gs * exact + double(beta) * d0[at] + (with_bias ? double(bias[static_cast<size_t>(j)]) : 0.0);
      const double bound = (double(k) * magnitude + 4.0 * std::fabs(exact)) * std::ldexp(1.0, -23) * std::fabs(gs) +
                           4.0 * std::ldexp(1.0, -23) * (std::fabs(expect) + std::fabs(beta * d0[at]) + 1.0) + 1e-30;
      const float w = want.d[at], c = got.d[at];
      if (std::isnan(w) || std::isnan(expect)) {
        if (!std::isnan(c) && bad++ < 5) ADD_FAILURE() << where << " (" << i << "," << j << ") want NaN, cpu " << c;
        continue;
      }
      if (!(std::fabs(double(c) - expect) <= bound) && bad++ < 5) {
        ADD_FAILURE() << where << " (" << i << "," << j << ") cpu " << c << " exact " << expect << " ref " << w
                      << " bound " << bound;
      }
    }
  }
  EXPECT_EQ(bad, 0) << where;
}

TEST_F(CpuFp4, GemmIsWithinTheBoundForEveryModeMixAndShape) {
  std::mt19937 rng(14);
  struct Mix {
    int32_t a, b;
  };
  const Mix mixes[] = {{OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_MXFP4_1X32},
                       {OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_16X16},
                       {OCTET_SCALING_NVFP4_16X16, OCTET_SCALING_NVFP4_1X16},
                       {OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_1X16}};
  struct Shape {
    int64_t m, n, k;
  };
  // {2, 1100, 1000} (decode kernel, over 512 KiB of weights) and
  // {40, 300, 512} (blocked, over two grains of flops) split among threads
  // (dispatch/parallel_policy.hpp); the others run on one.
  const Shape shapes[] = {{1, 1, 16},  {1, 70, 300},    {1, 33, 17},   {3, 40, 513},   {8, 64, 256},
                          {9, 50, 48}, {13, 31, 31},    {64, 96, 512}, {100, 70, 100}, {25, 130, 1000},
                          {2, 2, 1},   {2, 1100, 1000}, {40, 300, 512}};
  for (const Mix& mix : mixes) {
    for (const Shape& s : shapes) {
      const Operand a = make_operand(cpu, mix.a, s.m, s.k, rng), b = make_operand(cpu, mix.b, s.n, s.k, rng);
      const std::string where = "modes " + std::to_string(mix.a) + "x" + std::to_string(mix.b) + " m" +
                                std::to_string(s.m) + " n" + std::to_string(s.n) + " k" + std::to_string(s.k);
      check_gemm(ref, cpu, a, b, s.m, s.n, s.k, 1.0f, 0.0f, false, where);
      check_gemm(ref, cpu, a, b, s.m, s.n, s.k, 0.75f, 0.5f, true, where + " beta bias");
    }
  }
}

// The decode shape with long k, threaded.
TEST_F(CpuFp4, GemmDecodeShapeIsWithinTheBound) {
  std::mt19937 rng(15);
  for (int32_t mode : {OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_NVFP4_1X16}) {
    const int32_t bmode = mode == OCTET_SCALING_MXFP4_1X32 ? mode : OCTET_SCALING_NVFP4_16X16;
    const Operand a = make_operand(cpu, mode, 2, 4096, rng), b = make_operand(cpu, bmode, 300, 4096, rng);
    check_gemm(ref, cpu, a, b, 1, 300, 4096, 1.0f, 0.0f, false, "decode m1 mode " + std::to_string(mode));
    check_gemm(ref, cpu, a, b, 2, 300, 4096, 1.0f, 0.0f, false, "decode m2 mode " + std::to_string(mode));
  }
}

// NaN block scales give NaN outputs where they reach; MXFP4 scales outside
// the folded range (2^-127, 2^127 with non-zero codes) take the exact path,
// whose bits are the reference's.
TEST_F(CpuFp4, GemmNanScalesAndExtremeMxScales) {
  std::mt19937 rng(16);
  for (int64_t m : {int64_t{1}, int64_t{20}}) {
    const int64_t n = 40, k = 96;
    Operand a = make_operand(cpu, OCTET_SCALING_MXFP4_1X32, m, k, rng);
    Operand b = make_operand(cpu, OCTET_SCALING_MXFP4_1X32, n, k, rng);
    b.q.scales[5] = 0xFF;  // row 1, k-block 2: NaN
    check_gemm(ref, cpu, a, b, m, n, k, 1.0f, 0.0f, false, "nan scale m" + std::to_string(m));
    a.q.scales[0] = 0x00;  // 2^-127 on non-zero codes
    b.q.scales[9] = 0xFE;  // 2^127
    const GemmOut want = run_gemm(ref, a, b, m, n, k, 1.0f, 0.0f, std::vector<float>(size_t(m * n)), nullptr, false);
    const GemmOut got = run_gemm(cpu, a, b, m, n, k, 1.0f, 0.0f, std::vector<float>(size_t(m * n)), nullptr, false);
    ASSERT_EQ(got.status, OCTET_STATUS_SUCCESS);
    for (size_t i = 0; i < want.d.size(); ++i)
      ASSERT_EQ(bits(want.d[i]), bits(got.d[i])) << "extreme m" << m << " " << i;
    Operand an = make_operand(cpu, OCTET_SCALING_NVFP4_1X16, m, k, rng);
    Operand bn = make_operand(cpu, OCTET_SCALING_NVFP4_16X16, n, k, rng);
    an.q.scales[1] = 0x7F;  // NaN
    check_gemm(ref, cpu, an, bn, m, n, k, 1.0f, 0.0f, false, "nvfp4 nan scale m" + std::to_string(m));
  }
}

TEST_F(CpuFp4, GemmGeluAndBf16OutputAgreeWithTheReference) {
  std::mt19937 rng(17);
  const int64_t m = 20, n = 48, k = 160;
  const Operand a = make_operand(cpu, OCTET_SCALING_NVFP4_1X16, m, k, rng);
  const Operand b = make_operand(cpu, OCTET_SCALING_NVFP4_16X16, n, k, rng);
  const std::vector<float> d0(static_cast<size_t>(m * n), 0.0f);
  const GemmOut want = run_gemm(ref, a, b, m, n, k, 0.01f, 0.0f, d0, nullptr, true);
  const GemmOut got = run_gemm(cpu, a, b, m, n, k, 0.01f, 0.0f, d0, nullptr, true);
  ASSERT_EQ(got.status, OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < want.d.size(); ++i) {
    EXPECT_NEAR(got.d[i], want.d[i], 1e-4 * (1.0 + std::fabs(want.d[i]))) << i;
  }
  // Mixing MXFP4 with NVFP4 is refused.
  const Operand mx = make_operand(cpu, OCTET_SCALING_MXFP4_1X32, n, k, rng);
  EXPECT_EQ(run_gemm(cpu, a, mx, m, n, k, 1.0f, 0.0f, d0, nullptr, false).status, OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cpu.errors.back().find("both NVFP4"), std::string::npos) << cpu.errors.back();
}

}  // namespace
