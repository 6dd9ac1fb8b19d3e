// MXFP8 and float8 block scaling (numerics.md section 11): scale codes and
// element codes of every block kind, ragged shapes, both usages, the
// dequantize, and the block-scaled GEMM, against plain models written here.
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

struct Model {
  std::vector<uint8_t> codes;      // rows x cols
  std::vector<uint8_t> mx_scales;  // grid, MXFP8
  std::vector<float> scale_inv;    // grid, FP32 blocks
};

// Block amax: max |x| over the block's finite elements (0 when it has none).
float block_amax(const std::vector<float>& x, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  float amax = 0.0f;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) {
      const float v = x[size_t(r * cols + c)];
      if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
    }
  return amax;
}

uint8_t model_mx_code(float amax, int32_t dtype, int rounding) {
  if (amax == 0.0f) return 0x00;
  int e;
  int exponent;
  if (rounding == OCTET_MX_ROUND_RCEIL) {
    const float q = amax / fp8_max(dtype);
    if (q == 0.0f) return 0x00;  // finite non-zero amax whose quotient underflows: smallest scale
    if (std::isinf(q)) return 0xFE;
    const double m = std::frexp(double(q), &e);  // q = m * 2^e, m in [0.5, 1)
    exponent = m == 0.5 ? e - 1 : e;             // ceil(log2 q)
  } else {
    std::frexp(double(amax), &e);
    exponent = (e - 1) - (dtype == OCTET_DTYPE_E4M3 ? 8 : 15);  // floor(log2 amax) - emax
  }
  return uint8_t(std::min(254, std::max(0, exponent + 127)));
}

float model_fp32_scale(float amax, int32_t dtype, float eps, bool pow2) {
  amax = std::max(amax, eps);
  if (std::isinf(amax) || amax == 0.0f) return 1.0f;
  float s = fp8_max(dtype) / amax;
  if (std::isinf(s)) s = FLT_MAX;
  if (pow2) s = float(std::pow(2.0, std::floor(std::log2(double(s)))));
  return s;
}

// x: rows x cols; blocks br x bc over it; mx selects the scale kind.
Model model_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t br, int64_t bc, bool mx,
                     int32_t dtype, int rounding, float eps, bool pow2) {
  Model m;
  m.codes.resize(x.size());
  const int64_t gr = (rows + br - 1) / br, gc = (cols + bc - 1) / bc;
  for (int64_t R = 0; R < gr; ++R)
    for (int64_t C = 0; C < gc; ++C) {
      const int64_t r0 = R * br, r1 = std::min(rows, r0 + br), c0 = C * bc, c1 = std::min(cols, c0 + bc);
      const float amax = block_amax(x, cols, r0, r1, c0, c1);
      uint8_t code = 0;
      float scale = 1.0f;
      if (mx) {
        code = model_mx_code(amax, dtype, rounding);
        m.mx_scales.push_back(code);
      } else {
        scale = model_fp32_scale(amax, dtype, eps, pow2);
        m.scale_inv.push_back(1.0f / scale);
      }
      const float X = float(std::ldexp(1.0, int(code) - 127));
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const float v = x[size_t(r * cols + c)];
          m.codes[size_t(r * cols + c)] = fp8_encode_sat(mx ? v / X : v * scale, dtype);
        }
    }
  return m;
}

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = x[size_t(r * cols + c)];
  return t;
}

// Rows of 32-element runs of different kinds, so that both usages see
// zero, NaN, inf, subnormal and power-of-two blocks.
std::vector<float> special_blocks(int64_t rows, int64_t cols, uint32_t seed) {
  std::vector<float> x = random_values(size_t(rows * cols), 2.0f, seed);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float& v = x[size_t(r * cols + c)];
      switch ((r + c / 32) % 8) {
        case 0: v = 0.0f; break;                                     // zero block
        case 1: v = (c % 7 == 3) ? -448.0f : v; break;               // amax = fp8_max exactly
        case 2: v = (c % 5 == 1) ? 1.0f : v * 0.01f; break;          // amax a power of two
        case 3: v = v * 1e-39f; break;                               // subnormal block
        case 4:
          v = (c % 9 == 4) ? kNan : v;
          break;  // NaN among finite values
        case 5:
          v = (c % 11 == 2) ? -kInf : v;
          break;                                                     // -inf among finite values
        case 6: v = v * 3e37f; break;                                // huge block
        default: break;                                              // ordinary
      }
    }
  return x;
}

struct BlockCase {
  int32_t mode;
  int64_t rows, cols;
};

void check_block_quantize(const BlockCase& bc, int32_t dtype, int rounding, float eps, int pow2) {
  Context ctx = make_context();
  const bool mx = bc.mode == OCTET_SCALING_MXFP8_1X32;
  const int64_t br = bc.mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
  const int64_t bk = mx ? 32 : 128;
  std::vector<float> x = special_blocks(bc.rows, bc.cols, uint32_t(bc.rows * 31 + bc.cols));
  Tensor in = make_fp32(ctx.get(), bc.rows, bc.cols, x);
  Tensor out = make_tensor(ctx.get(), dtype, bc.rows, bc.cols, OCTET_USAGE_BOTH, bc.mode);
  octet_recipe* r = nullptr;
  int32_t role = bc.mode == OCTET_SCALING_BLOCK_128X128 ? OCTET_ROLE_WEIGHT : OCTET_ROLE_INPUT;
  int32_t format = dtype == OCTET_DTYPE_E4M3 ? OCTET_FORMAT_E4M3 : OCTET_FORMAT_E5M2;
  if (mx) {
    octet_mxfp8_options o;
    ASSERT_EQ(octet_mxfp8_options_init(&o), OCTET_STATUS_SUCCESS);
    o.rounding = rounding;
    o.format = format;
    ASSERT_EQ(octet_recipe_create_mxfp8(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  } else {
    octet_block_scaling_options o;
    ASSERT_EQ(octet_block_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
    o.amax_epsilon = eps;
    o.power_of_two_scales = pow2;
    o.format = format;
    ASSERT_EQ(octet_recipe_create_block(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  }
  Recipe recipe(r);
  Quantizer q = make_quantizer(recipe.get(), role);
  octet_quantize_stats stats{};
  stats.struct_size = sizeof(stats);
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, &stats), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  const std::string where = "mode " + std::to_string(bc.mode) + " " + std::to_string(bc.rows) + "x" +
                            std::to_string(bc.cols) + " dtype " + std::to_string(dtype) + " rounding " +
                            std::to_string(rounding) + " pow2 " + std::to_string(pow2);

  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_tensor_get_info(out.get(), &info), OCTET_STATUS_SUCCESS);
  // Padding rule: the grid is ceil(rows / br) x ceil(cols / bc), nothing padded is stored.
  const size_t grid_row = size_t(((bc.rows + br - 1) / br) * ((bc.cols + bk - 1) / bk));
  const size_t grid_col = size_t(((bc.cols + br - 1) / br) * ((bc.rows + bk - 1) / bk));
  const size_t scale_bytes = mx ? 1 : 4;
  EXPECT_EQ(info.rowwise_scale_inv_bytes, grid_row * scale_bytes) << where;
  EXPECT_EQ(info.columnwise_scale_inv_bytes, grid_col * scale_bytes) << where;
  EXPECT_EQ(info.has_columnwise_data, 1) << where;

  for (bool columnwise : {false, true}) {
    const std::vector<float> src = columnwise ? transpose(x, bc.rows, bc.cols) : x;
    const int64_t rows = columnwise ? bc.cols : bc.rows, cols = columnwise ? bc.rows : bc.cols;
    Model m = model_quantize(src, rows, cols, br, bk, mx, dtype, rounding, eps, pow2 != 0);
    std::vector<uint8_t> codes = read_bytes(
        out.get(), columnwise ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA, src.size());
    const int32_t scale_component = columnwise ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV;
    if (mx) {
      std::vector<uint8_t> scales = read_bytes(out.get(), scale_component, m.mx_scales.size());
      for (size_t i = 0; i < scales.size(); ++i) EXPECT_EQ(scales[i], m.mx_scales[i]) << where << " block " << i;
    } else {
      std::vector<float> scales = read_floats(out.get(), scale_component, m.scale_inv.size());
      for (size_t i = 0; i < scales.size(); ++i) EXPECT_EQ(scales[i], m.scale_inv[i]) << where << " block " << i;
    }
    size_t bad = 0;
    for (size_t i = 0; i < codes.size(); ++i)
      if (codes[i] != m.codes[i] && ++bad < 5) ADD_FAILURE() << where << (columnwise ? " columnwise" : " rowwise")
                                                             << " element " << i << " value " << src[i] << " got "
                                                             << int(codes[i]) << " want " << int(m.codes[i]);
    EXPECT_EQ(bad, 0u) << where;
  }
  EXPECT_EQ(stats.total_count, x.size());
  EXPECT_GT(stats.nan_count, 0u);
}

TEST(Mxfp8, ScaleCodesAndElementsForEveryBlockKindBothRoundings) {
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)})
    for (int rounding : {int(OCTET_MX_ROUND_RCEIL), int(OCTET_MX_ROUND_FLOOR)})
      for (BlockCase c : {BlockCase{OCTET_SCALING_MXFP8_1X32, 16, 64}, BlockCase{OCTET_SCALING_MXFP8_1X32, 5, 70},
                          BlockCase{OCTET_SCALING_MXFP8_1X32, 33, 31}})
        check_block_quantize(c, dtype, rounding, 0.0f, 0);
}

TEST(Mxfp8, ScaleCodeRulesOnSingleBlocks) {
  // One block per row: amax chosen to hit the rounding boundaries exactly.
  Context ctx = make_context();
  const std::vector<float> amaxes = {448.0f, 448.0f * 1.0000001f, 896.0f, 1.0f, 0.0f, 1e-40f, 3e38f,
                                     std::ldexp(1.0f, -130), 57344.0f, 7.0f,
                                     std::ldexp(1.0f, -149), 1e-44f};  // quotients underflow to 0
  std::vector<float> x(amaxes.size() * 32, 0.0f);
  for (size_t r = 0; r < amaxes.size(); ++r) x[r * 32 + 5] = -amaxes[r];
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)})
    for (int rounding : {0, 1}) {
      octet_mxfp8_options o;
      ASSERT_EQ(octet_mxfp8_options_init(&o), OCTET_STATUS_SUCCESS);
      EXPECT_EQ(o.rounding, int32_t(OCTET_MX_ROUND_RCEIL));  // documented default
      o.rounding = rounding;
      o.format = dtype == OCTET_DTYPE_E4M3 ? OCTET_FORMAT_E4M3 : OCTET_FORMAT_E5M2;
      octet_recipe* r = nullptr;
      ASSERT_EQ(octet_recipe_create_mxfp8(&o, &r), OCTET_STATUS_SUCCESS);
      Recipe recipe(r);
      Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
      Tensor in = make_fp32(ctx.get(), int64_t(amaxes.size()), 32, x);
      Tensor out = make_tensor(ctx.get(), dtype, int64_t(amaxes.size()), 32, OCTET_USAGE_ROWWISE,
                               OCTET_SCALING_MXFP8_1X32);
      ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
                OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      std::vector<uint8_t> scales = read_bytes(out.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, amaxes.size());
      for (size_t i = 0; i < amaxes.size(); ++i)
        EXPECT_EQ(scales[i], model_mx_code(amaxes[i], dtype, rounding))
            << "amax " << amaxes[i] << " dtype " << dtype << " rounding " << rounding;
      // Hand-checked anchors of the rule: RCEIL E4M3 448 -> 2^0; 896 -> 2^1;
      // FLOOR E4M3 448 -> 2^(8-8).
      if (dtype == OCTET_DTYPE_E4M3) {
        EXPECT_EQ(scales[0], 127);
        EXPECT_EQ(scales[2], 128);
        EXPECT_EQ(scales[4], 0);  // zero block
      }
      // Tiny non-zero blocks get the smallest scale, never the NaN code, and
      // their elements stay numbers.
      EXPECT_EQ(scales[10], 0);
      EXPECT_EQ(scales[11], 0);
      std::vector<uint8_t> codes = read_bytes(out.get(), OCTET_COMPONENT_DATA, x.size());
      for (size_t i = 10 * 32; i < 12 * 32; ++i)
        EXPECT_NE(codes[i] & 0x7F, 0x7F) << "element " << i << " became NaN";
    }
}

TEST(BlockScaling, Fp32ScalesRaggedShapesBothBlockShapes) {
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)})
    for (int pow2 : {0, 1})
      for (float eps : {0.0f, 1e-2f})
        for (BlockCase c : {BlockCase{OCTET_SCALING_BLOCK_1X128, 3, 200}, BlockCase{OCTET_SCALING_BLOCK_1X128, 130, 64},
                            BlockCase{OCTET_SCALING_BLOCK_128X128, 130, 260},
                            BlockCase{OCTET_SCALING_BLOCK_128X128, 20, 129}})
          check_block_quantize(c, dtype, 0, eps, pow2);
}

TEST(BlockScaling, DequantizeAppliesTheBlockScales) {
  Context ctx = make_context();
  for (int32_t mode : {int32_t(OCTET_SCALING_MXFP8_1X32), int32_t(OCTET_SCALING_BLOCK_1X128),
                       int32_t(OCTET_SCALING_BLOCK_128X128)}) {
    const int64_t rows = 131, cols = 70;
    std::vector<float> x = random_values(size_t(rows * cols), 5.0f, 9);
    Tensor in = make_fp32(ctx.get(), rows, cols, x);
    for (uint32_t usage : {uint32_t(OCTET_USAGE_ROWWISE), uint32_t(OCTET_USAGE_COLUMNWISE)}) {
      Tensor q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, rows, cols, usage, mode);
      ASSERT_EQ(octet_quantize(ctx.get(), in.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      Tensor back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, rows, cols);
      ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      const bool col = usage == OCTET_USAGE_COLUMNWISE;
      const bool mx = mode == OCTET_SCALING_MXFP8_1X32;
      const int64_t br = mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1, bk = mx ? 32 : 128;
      const std::vector<float> src = col ? transpose(x, rows, cols) : x;
      const int64_t r_ = col ? cols : rows, c_ = col ? rows : cols;
      Model m = model_quantize(src, r_, c_, br, bk, mx, OCTET_DTYPE_E4M3, 0, 0.0f, false);
      std::vector<float> got = read_floats(back.get(), OCTET_COMPONENT_DATA, x.size());
      const int64_t gc = (c_ + bk - 1) / bk;
      for (int64_t r = 0; r < r_; ++r)
        for (int64_t c = 0; c < c_; ++c) {
          const size_t block = size_t((r / br) * gc + c / bk);
          const float s = mx ? float(std::ldexp(1.0, int(m.mx_scales[block]) - 127)) : m.scale_inv[block];
          const float want = float(fp8_value(m.codes[size_t(r * c_ + c)], OCTET_DTYPE_E4M3)) * s;
          const size_t at = col ? size_t(c * cols + r) : size_t(r * cols + c);
          ASSERT_EQ(got[at], want) << "mode " << mode << " usage " << usage << " at " << r << "," << c;
        }
    }
  }
}

// The block GEMM in the documented order: per k-block partial sums in
// ascending k, times sa*sb, added into an FP32 accumulator; then alpha.
TEST(BlockScaling, BlockGemmMatchesTheDocumentedOrder) {
  Context ctx = make_context();
  struct GemmCase {
    int32_t mode_a, mode_b;
    int64_t m, n, k;
    int trans_a, trans_b;
  };
  for (GemmCase g : {GemmCase{OCTET_SCALING_MXFP8_1X32, OCTET_SCALING_MXFP8_1X32, 5, 7, 70, 0, 0},
                     GemmCase{OCTET_SCALING_MXFP8_1X32, OCTET_SCALING_MXFP8_1X32, 4, 3, 64, 1, 1},
                     GemmCase{OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_128X128, 6, 130, 300, 0, 0},
                     GemmCase{OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_1X128, 3, 5, 129, 1, 0}}) {
    const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
    const int64_t b_rows = g.trans_b ? g.k : g.n, b_cols = g.trans_b ? g.n : g.k;
    std::vector<float> xa = random_values(size_t(g.m * g.k), 3.0f, 1), xb = random_values(size_t(g.n * g.k), 0.5f, 2);
    Tensor ha = make_fp32(ctx.get(), a_rows, a_cols, xa), hb = make_fp32(ctx.get(), b_rows, b_cols, xb);
    Tensor qa = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, a_rows, a_cols, OCTET_USAGE_BOTH, g.mode_a);
    Tensor qb = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, b_rows, b_cols, OCTET_USAGE_BOTH, g.mode_b);
    ASSERT_EQ(octet_quantize(ctx.get(), ha.get(), qa.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    ASSERT_EQ(octet_quantize(ctx.get(), hb.get(), qb.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    Tensor d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, g.m, g.n);
    octet_gemm_options o{};
    o.struct_size = sizeof(o);
    o.trans_a = g.trans_a;
    o.trans_b = g.trans_b;
    o.alpha = 0.75f;
    ASSERT_EQ(octet_gemm(ctx.get(), qa.get(), qb.get(), d.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();

    // The K-contiguous operands as the library stored them (verified above).
    const bool mx = g.mode_a == OCTET_SCALING_MXFP8_1X32;
    const int64_t bk = mx ? 32 : 128, kb_count = (g.k + bk - 1) / bk;
    auto operand = [&](const octet_tensor* t, bool trans, int64_t outer, int32_t mode, std::vector<float>* scales) {
      std::vector<uint8_t> codes = read_bytes(t, trans ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA,
                                              size_t(outer * g.k));
      const int64_t br = mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
      const size_t n_scales = size_t(((outer + br - 1) / br) * kb_count);
      int32_t comp = trans ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV;
      if (mx) {
        for (uint8_t c : read_bytes(t, comp, n_scales)) scales->push_back(float(std::ldexp(1.0, int(c) - 127)));
      } else {
        *scales = read_floats(t, comp, n_scales);
      }
      return codes;
    };
    std::vector<float> sa, sb;
    std::vector<uint8_t> ca = operand(qa.get(), g.trans_a != 0, g.m, g.mode_a, &sa);
    std::vector<uint8_t> cb = operand(qb.get(), g.trans_b != 0, g.n, g.mode_b, &sb);
    const int64_t bra = g.mode_a == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
    const int64_t brb = g.mode_b == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
    std::vector<float> got = read_floats(d.get(), OCTET_COMPONENT_DATA, size_t(g.m * g.n));
    double worst = 0.0;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float acc = 0.0f;
        double exact = 0.0;
        for (int64_t kb = 0; kb < kb_count; ++kb) {
          float partial = 0.0f;
          double partial_d = 0.0;
          for (int64_t kk = kb * bk; kk < std::min(g.k, (kb + 1) * bk); ++kk) {
            const double p = fp8_value(ca[size_t(i * g.k + kk)], OCTET_DTYPE_E4M3) *
                             fp8_value(cb[size_t(j * g.k + kk)], OCTET_DTYPE_E4M3);
            partial = partial + float(p);
            partial_d += p;
          }
          const float s = sa[size_t((i / bra) * kb_count + kb)] * sb[size_t((j / brb) * kb_count + kb)];
          acc = acc + partial * s;
          exact += partial_d * double(s);
        }
        const float want = 0.75f * acc;
        ASSERT_EQ(got[size_t(i * g.n + j)], want) << "case m" << g.m << " n" << g.n << " k" << g.k << " at " << i << "," << j;
        worst = std::max(worst, std::fabs(0.75 * exact - double(want)));
      }
    EXPECT_LT(worst, 1e-2);
  }
}

TEST(BlockScaling, MixedOrUnsupportedOperandsAreRefused) {
  Context ctx = make_context();
  Tensor a = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  Tensor b = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_ROWWISE, OCTET_SCALING_BLOCK_1X128);
  Tensor p = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_ROWWISE);
  Tensor d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 4);
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(octet_last_error_message()).find("MXFP8 with MXFP8"), std::string::npos);
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), p.get(), d.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  // The rowwise-only MXFP8 tensor cannot serve a transposed use.
  octet_gemm_options o{};
  o.struct_size = sizeof(o);
  o.trans_a = 1;
  Tensor d2 = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 64, 3);
  Tensor a2 = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 3, 4, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), a2.get(), d2.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("columnwise usage"), std::string::npos);
  // Per-tensor components do not exist on a block tensor.
  float s = 0.0f;
  EXPECT_EQ(octet_tensor_copy_to_host(a.get(), OCTET_COMPONENT_SCALE_INV, &s, 4), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("per block"), std::string::npos);
}

}  // namespace
}  // namespace recipes_test
