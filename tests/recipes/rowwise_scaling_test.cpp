// Per-row and per-column FP32 scaling (numerics.md section 16) through the C
// ABI on the embedded reference: the codes and scales of both usages, the
// dequantize and the GEMM with its epilogue scales against a plain model
// written here; the rowwise recipes (options, per-role formats, quantizer,
// checkpoints); and the refusals (a per-column operand used as stored, mixed
// modes, a backend that does not declare the mode).
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

bool message_has(const char* text) { return std::string(octet_last_error_message()).find(text) != std::string::npos; }

// The model's scale of one row or column (section 16, from section 11's rule):
// amax over the finite values, max(amax, eps); 1 when that is 0 or inf;
// fp8_max / amax, +inf becoming FLT_MAX; pow2: the largest power of two <= it.
float model_scale(const std::vector<float>& values, int32_t dtype, float eps, bool pow2) {
  double amax = 0.0;
  for (float v : values)
    if (std::isfinite(v)) amax = std::max(amax, double(std::fabs(v)));
  const float a = std::max(float(amax), eps);
  if (a == 0.0f || std::isinf(a)) return 1.0f;
  float s = fp8_max(dtype) / a;
  if (std::isinf(s)) s = FLT_MAX;
  if (pow2) {
    int e = 0;
    std::frexp(s, &e);
    s = std::ldexp(1.0f, e - 1);
  }
  return s;
}

struct Copy {
  std::vector<uint8_t> codes;  // rows x cols of the copy
  std::vector<float> scale_inv;
};

// One scale per row of m [rows, cols] (per_row) or per column (else).
Copy model_copy(const std::vector<float>& m, int64_t rows, int64_t cols, bool per_row, int32_t dtype, float eps,
                bool pow2) {
  Copy c;
  c.codes.resize(m.size());
  const int64_t lines = per_row ? rows : cols, length = per_row ? cols : rows;
  for (int64_t l = 0; l < lines; ++l) {
    std::vector<float> line;
    for (int64_t i = 0; i < length; ++i) line.push_back(per_row ? m[size_t(l * cols + i)] : m[size_t(i * cols + l)]);
    const float scale = model_scale(line, dtype, eps, pow2);
    c.scale_inv.push_back(1.0f / scale);
    for (int64_t i = 0; i < length; ++i) {
      const size_t at = per_row ? size_t(l * cols + i) : size_t(i * cols + l);
      c.codes[at] = fp8_encode_sat(m[at] * scale, dtype);
    }
  }
  return c;
}

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = x[size_t(r * cols + c)];
  return t;
}

// Rows and columns of every kind: zero, NaN among finite values, all-NaN,
// an infinity, subnormal, huge, ordinary.
std::vector<float> special_rows(int64_t rows, int64_t cols, uint32_t seed) {
  std::vector<float> x = random_values(size_t(rows * cols), 3.0f, seed);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float& v = x[size_t(r * cols + c)];
      switch (r % 8) {
        case 0:
          v = 0.0f;
          break;
        case 1:
          v = (c % 5 == 2) ? kNan : v * 1000.0f;
          break;
        case 2:
          v = kNan;
          break;
        case 3:
          v = (c % 7 == 1) ? -kInf : v;
          break;
        case 4:
          v = v * 1e-40f;
          break;
        case 5:
          v = v * 3e37f;
          break;
        default:
          break;
      }
    }
  return x;
}

void expect_copy(const octet_tensor* t, bool columnwise, const Copy& want, const std::string& where) {
  std::vector<uint8_t> codes =
      read_bytes(t, columnwise ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA, want.codes.size());
  std::vector<float> scales = read_floats(
      t, columnwise ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV, want.scale_inv.size());
  for (size_t i = 0; i < scales.size(); ++i) EXPECT_EQ(scales[i], want.scale_inv[i]) << where << " scale " << i;
  size_t bad = 0;
  for (size_t i = 0; i < codes.size(); ++i)
    if (codes[i] != want.codes[i] && ++bad < 5)
      ADD_FAILURE() << where << " element " << i << " got " << int(codes[i]) << " want " << int(want.codes[i]);
  EXPECT_EQ(bad, 0u) << where;
}

TEST(RowwiseScaling, QuantizeBothModesBothUsagesMatchTheModel) {
  Context ctx = make_context();
  struct Shape {
    int64_t rows, cols;
  };
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)})
    for (int32_t mode : {int32_t(OCTET_SCALING_PER_ROW), int32_t(OCTET_SCALING_PER_COLUMN)})
      for (Shape s : {Shape{16, 70}, Shape{1, 1}, Shape{9, 257}, Shape{300, 3}}) {
        const std::string where = "mode " + std::to_string(mode) + " dtype " + std::to_string(dtype) + " " +
                                  std::to_string(s.rows) + "x" + std::to_string(s.cols);
        std::vector<float> x = special_rows(s.rows, s.cols, uint32_t(s.rows * 7 + s.cols));
        Tensor in = make_fp32(ctx.get(), s.rows, s.cols, x);
        Tensor out = make_tensor(ctx.get(), dtype, s.rows, s.cols, OCTET_USAGE_BOTH, mode);
        ASSERT_EQ(octet_quantize(ctx.get(), in.get(), out.get(), nullptr), OCTET_STATUS_SUCCESS)
            << octet_last_error_message();
        octet_tensor_info info{};
        info.struct_size = sizeof(info);
        ASSERT_EQ(octet_tensor_get_info(out.get(), &info), OCTET_STATUS_SUCCESS);
        const bool per_row = mode == OCTET_SCALING_PER_ROW;
        EXPECT_EQ(info.scaling_mode, mode) << where;
        EXPECT_EQ(info.block_rows, per_row ? 1 : s.rows) << where;
        EXPECT_EQ(info.block_cols, per_row ? s.cols : 1) << where;
        EXPECT_EQ(info.rowwise_scale_inv_bytes, uint64_t(per_row ? s.rows : s.cols) * 4) << where;
        EXPECT_EQ(info.columnwise_scale_inv_bytes, uint64_t(s.cols) * 4) << where;
        // Rowwise copy: per row (PER_ROW) or per column (PER_COLUMN) of x as stored.
        expect_copy(out.get(), false, model_copy(x, s.rows, s.cols, per_row, dtype, 0.0f, false), where + " rowwise");
        // Columnwise copy (x^T): one scale per row of x^T in both modes.
        expect_copy(out.get(), true, model_copy(transpose(x, s.rows, s.cols), s.cols, s.rows, true, dtype, 0.0f, false),
                    where + " columnwise");
      }
}

// A NaN or an infinity in a row leaves the finite values' scale: a row of
// 1000s with one NaN dequantizes to 1000s (numerics.md 11's rule, section 16).
TEST(RowwiseScaling, NanInARowLosesNoFiniteValue) {
  Context ctx = make_context();
  std::vector<float> x(64, 1000.0f);
  x[5] = kNan;
  x[9] = kInf;
  Tensor in = make_fp32(ctx.get(), 1, 64, x);
  Tensor q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 64, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_ROW);
  ASSERT_EQ(octet_quantize(ctx.get(), in.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Tensor back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 1, 64);
  ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  std::vector<float> y = read_floats(back.get(), OCTET_COMPONENT_DATA, 64);
  EXPECT_TRUE(std::isnan(y[5]));
  // +inf saturates to max finite: 448 * scale_inv, the row's finite amax
  // (within FP32 rounding of 448 * (1 / (448 / 1000))).
  EXPECT_NEAR(y[9], 1000.0f, 1e-3f);
  EXPECT_NEAR(y[0], 1000.0f, 1e-3f);
}

TEST(RowwiseScaling, DequantizeAppliesEachCopysScales) {
  Context ctx = make_context();
  const int64_t rows = 11, cols = 37;
  std::vector<float> x = random_values(size_t(rows * cols), 5.0f, 8);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[size_t(r * cols + c)] *= std::ldexp(1.0f, int(r) - 5 + int(c % 3));
  for (int32_t mode : {int32_t(OCTET_SCALING_PER_ROW), int32_t(OCTET_SCALING_PER_COLUMN)})
    for (uint32_t usage : {uint32_t(OCTET_USAGE_ROWWISE), uint32_t(OCTET_USAGE_COLUMNWISE)}) {
      Tensor in = make_fp32(ctx.get(), rows, cols, x);
      Tensor q = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, rows, cols, usage, mode);
      ASSERT_EQ(octet_quantize(ctx.get(), in.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      Tensor back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, rows, cols);
      ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      std::vector<float> got = read_floats(back.get(), OCTET_COMPONENT_DATA, x.size());
      const bool columnwise = usage == OCTET_USAGE_COLUMNWISE;
      const bool per_row_copy = columnwise || mode == OCTET_SCALING_PER_ROW;
      const std::vector<float> src = columnwise ? transpose(x, rows, cols) : x;
      const int64_t cr = columnwise ? cols : rows, cc = columnwise ? rows : cols;
      Copy m = model_copy(src, cr, cc, per_row_copy, OCTET_DTYPE_E4M3, 0.0f, false);
      for (int64_t r = 0; r < cr; ++r)
        for (int64_t c = 0; c < cc; ++c) {
          const size_t at = size_t(r * cc + c);
          const float want =
              float(fp8_value(m.codes[at], OCTET_DTYPE_E4M3)) * m.scale_inv[size_t(per_row_copy ? r : c)];
          const size_t got_at = columnwise ? size_t(c * cols + r) : at;
          ASSERT_EQ(got[got_at], want) << "mode " << mode << " usage " << usage << " at " << r << "," << c;
        }
    }
}

// D[i,j] = alpha * (0 + P[i,j] * (sa[i] * sb[j])), P summed in ascending k in
// FP32: numerics.md section 16's GEMM, for every layout.
TEST(RowwiseScaling, GemmAppliesRowScalesInItsEpilogue) {
  Context ctx = make_context();
  struct GemmCase {
    int32_t mode_a, mode_b;
    int64_t m, n, k;
    int trans_a, trans_b;
  };
  const int32_t row = OCTET_SCALING_PER_ROW, column = OCTET_SCALING_PER_COLUMN;
  for (GemmCase g :
       {GemmCase{row, row, 5, 7, 70, 0, 0}, GemmCase{row, row, 4, 3, 129, 1, 0}, GemmCase{row, row, 6, 9, 33, 0, 1},
        GemmCase{row, row, 3, 5, 200, 1, 1}, GemmCase{column, column, 7, 4, 50, 1, 1},
        GemmCase{row, column, 8, 6, 31, 0, 1}, GemmCase{column, row, 2, 2, 1, 1, 0}}) {
    const std::string where = "case m" + std::to_string(g.m) + " n" + std::to_string(g.n) + " k" + std::to_string(g.k) +
                              " trans " + std::to_string(g.trans_a) + std::to_string(g.trans_b);
    const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
    const int64_t b_rows = g.trans_b ? g.k : g.n, b_cols = g.trans_b ? g.n : g.k;
    std::vector<float> xa = random_values(size_t(g.m * g.k), 3.0f, 11), xb = random_values(size_t(g.n * g.k), 0.5f, 12);
    for (size_t i = 0; i < xa.size(); ++i) xa[i] *= std::ldexp(1.0f, int(i % 9) - 4);
    Tensor ha = make_fp32(ctx.get(), a_rows, a_cols, xa), hb = make_fp32(ctx.get(), b_rows, b_cols, xb);
    Tensor qa = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, a_rows, a_cols, OCTET_USAGE_BOTH, g.mode_a);
    Tensor qb = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, b_rows, b_cols, OCTET_USAGE_BOTH, g.mode_b);
    ASSERT_EQ(octet_quantize(ctx.get(), ha.get(), qa.get(), nullptr), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    ASSERT_EQ(octet_quantize(ctx.get(), hb.get(), qb.get(), nullptr), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    Tensor d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, g.m, g.n);
    octet_gemm_options o;
    ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
    o.trans_a = g.trans_a;
    o.trans_b = g.trans_b;
    o.alpha = 0.75f;
    ASSERT_EQ(octet_gemm(ctx.get(), qa.get(), qb.get(), d.get(), &o), OCTET_STATUS_SUCCESS)
        << where << ": " << octet_last_error_message();
    // The K-contiguous operand [outer, K] and its per-row scales, from the
    // model (the quantize itself was checked above).
    auto model = [&](const std::vector<float>& x, int64_t rows, int64_t cols, bool trans) {
      return trans ? model_copy(transpose(x, rows, cols), cols, rows, true, OCTET_DTYPE_E4M3, 0.0f, false)
                   : model_copy(x, rows, cols, true, OCTET_DTYPE_E4M3, 0.0f, false);
    };
    const Copy ca = model(xa, a_rows, a_cols, g.trans_a != 0), cb = model(xb, b_rows, b_cols, g.trans_b != 0);
    std::vector<float> got = read_floats(d.get(), OCTET_COMPONENT_DATA, size_t(g.m * g.n));
    double worst = 0.0;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float partial = 0.0f;
        double exact = 0.0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          const double p = fp8_value(ca.codes[size_t(i * g.k + kk)], OCTET_DTYPE_E4M3) *
                           fp8_value(cb.codes[size_t(j * g.k + kk)], OCTET_DTYPE_E4M3);
          partial = partial + float(p);
          exact += p;
        }
        const float s = ca.scale_inv[size_t(i)] * cb.scale_inv[size_t(j)];
        const float want = 0.75f * (0.0f + partial * s);
        ASSERT_EQ(got[size_t(i * g.n + j)], want) << where << " at " << i << "," << j;
        // Against the exact double product of the unquantized values' codes.
        worst = std::max(worst, std::fabs(0.75 * exact * double(s) - double(want)) / (1.0 + std::fabs(double(want))));
      }
    EXPECT_LT(worst, 1e-5) << where;
  }
}

TEST(RowwiseScaling, RefusedOperandsNameTheRule) {
  Context ctx = make_context();
  Tensor col = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_BOTH, OCTET_SCALING_PER_COLUMN);
  Tensor row = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_BOTH, OCTET_SCALING_PER_ROW);
  Tensor blk = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_BOTH, OCTET_SCALING_BLOCK_1X128);
  Tensor per_tensor = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 64, OCTET_USAGE_BOTH);
  Tensor d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, 4, 4);
  // A per-column operand used as stored: its scales run along K.
  EXPECT_EQ(octet_gemm(ctx.get(), col.get(), row.get(), d.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("per-column scaled and used as stored")) << octet_last_error_message();
  EXPECT_EQ(octet_gemm(ctx.get(), row.get(), col.get(), d.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("tensor 'b' is per-column")) << octet_last_error_message();
  // Per-row with 1x128 blocks or per-tensor: no common epilogue.
  EXPECT_EQ(octet_gemm(ctx.get(), row.get(), blk.get(), d.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  EXPECT_TRUE(message_has("per-row/per-column with per-row/per-column")) << octet_last_error_message();
  EXPECT_EQ(octet_gemm(ctx.get(), per_tensor.get(), row.get(), d.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  // An FP8 D is per-tensor only.
  Tensor d8 = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 4, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(octet_gemm(ctx.get(), row.get(), row.get(), d8.get(), nullptr), OCTET_STATUS_UNSUPPORTED);
  // Per-tensor components do not exist on an axiswise tensor.
  float s = 0.0f;
  EXPECT_EQ(octet_tensor_copy_to_host(row.get(), OCTET_COMPONENT_SCALE_INV, &s, 4), OCTET_STATUS_INVALID_ARGUMENT);
  // A caller's scale grid entry must be finite and > 0.
  std::vector<float> bad(4, 1.0f);
  bad[2] = -1.0f;
  EXPECT_EQ(octet_tensor_copy_from_host(row.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, bad.data(), 16),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("per-row scale_inv grid")) << octet_last_error_message();
  // The quantize of an axiswise tensor always saturates.
  Tensor in = make_fp32(ctx.get(), 4, 64, random_values(256, 1.0f, 3));
  octet_quantize_options qo;
  ASSERT_EQ(octet_quantize_options_init(&qo), OCTET_STATUS_SUCCESS);
  qo.saturate = 0;
  EXPECT_EQ(octet_quantize(ctx.get(), in.get(), row.get(), &qo), OCTET_STATUS_INVALID_ARGUMENT);
}

// --- the rowwise recipes ---------------------------------------------------

TEST(RowwiseRecipe, DefaultsOptionsAndFormats) {
  octet_rowwise_scaling_options o;
  ASSERT_EQ(octet_rowwise_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o.struct_size, sizeof(o));
  EXPECT_EQ(o.format, OCTET_FORMAT_E4M3);
  EXPECT_EQ(o.amax_epsilon, 1e-12f);
  EXPECT_EQ(o.power_of_two_scales, 1);
  EXPECT_EQ(o.high_precision_wgrad, 0);
  for (int hp : {0, 1}) {
    o.high_precision_wgrad = hp;
    octet_recipe* raw = nullptr;
    ASSERT_EQ(octet_recipe_create_rowwise(&o, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    Recipe r(raw);
    octet_recipe_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_recipe_get_info(r.get(), &info), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(info.kind, OCTET_RECIPE_ROWWISE);
    EXPECT_EQ(info.override_wgrad, hp);
    EXPECT_EQ(info.override_fprop, 0);
    EXPECT_EQ(info.override_dgrad, 0);
    for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
      int32_t dtype = 0, mode = 0;
      ASSERT_EQ(octet_recipe_tensor_format(r.get(), role, &dtype, &mode), OCTET_STATUS_SUCCESS);
      EXPECT_EQ(dtype, OCTET_DTYPE_E4M3);
      EXPECT_EQ(mode, OCTET_SCALING_PER_ROW);
    }
  }
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_rowwise(nullptr, &raw), OCTET_STATUS_SUCCESS);
  octet_recipe_destroy(raw);
  octet_rowwise_scaling_options bad = o;
  bad.high_precision_wgrad = 2;
  EXPECT_EQ(octet_recipe_create_rowwise(&bad, &raw), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("options->high_precision_wgrad (2) must be 0 or 1"));
  bad = o;
  bad.amax_epsilon = -1.0f;
  EXPECT_EQ(octet_recipe_create_rowwise(&bad, &raw), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("options->amax_epsilon"));
  bad = o;
  bad.format = 9;
  EXPECT_EQ(octet_recipe_create_rowwise(&bad, &raw), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("options->format"));
  // A caller built before high_precision_wgrad existed gets 0.
  bad = o;
  bad.high_precision_wgrad = 7;
  bad.struct_size = offsetof(octet_rowwise_scaling_options, high_precision_wgrad);
  ASSERT_EQ(octet_recipe_create_rowwise(&bad, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Recipe old(raw);
  octet_recipe_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_recipe_get_info(old.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info.override_wgrad, 0);
}

// A quantizer of the recipe: epsilon and power-of-two scales per row, both
// usages; its checkpoint saves and loads, and a block recipe's refuses it.
TEST(RowwiseRecipe, QuantizerUsesEpsilonAndPowerOfTwoAndCheckpointsRoundTrip) {
  Context ctx = make_context();
  octet_rowwise_scaling_options o;
  ASSERT_EQ(octet_rowwise_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.amax_epsilon = 0.5f;  // large, so that it shows in small rows
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_rowwise(&o, &raw), OCTET_STATUS_SUCCESS);
  Recipe recipe(raw);
  const int64_t rows = 12, cols = 45;
  std::vector<float> x = special_rows(rows, cols, 5);
  for (int64_t c = 0; c < cols; ++c) x[size_t(6 * cols + c)] = 0.01f * float(c % 3);  // amax below epsilon
  Tensor in = make_fp32(ctx.get(), rows, cols, x);
  Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, rows, cols, OCTET_USAGE_BOTH, OCTET_SCALING_PER_ROW);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  expect_copy(out.get(), false, model_copy(x, rows, cols, true, OCTET_DTYPE_E4M3, 0.5f, true), "recipe rowwise");
  expect_copy(out.get(), true, model_copy(transpose(x, rows, cols), cols, rows, true, OCTET_DTYPE_E4M3, 0.5f, true),
              "recipe columnwise");
  for (float s : read_floats(out.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, size_t(rows))) {
    int e = 0;
    EXPECT_EQ(std::frexp(s, &e), 0.5f) << s << " is not a power of two";
  }
  // A per-column output is refused: the recipe quantizes per row.
  Tensor wrong = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, rows, cols, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_COLUMN);
  EXPECT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), wrong.get(), nullptr, nullptr),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("per-row")) << octet_last_error_message();

  std::vector<uint8_t> bytes = save(q.get());
  ASSERT_FALSE(bytes.empty());
  Quantizer fresh = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  ASSERT_EQ(octet_quantizer_load(fresh.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  EXPECT_EQ(save(fresh.get()), bytes);
  octet_quantizer_info a{}, b{};
  a.struct_size = b.struct_size = sizeof(a);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &a), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_get_info(fresh.get(), &b), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(a.recipe_kind, OCTET_RECIPE_ROWWISE);
  EXPECT_EQ(b.recipe_kind, OCTET_RECIPE_ROWWISE);
  EXPECT_EQ(a.amax, b.amax);
  EXPECT_EQ(a.scale, b.scale);
  // The saved state is the rowwise recipe's: a block recipe's quantizer refuses it.
  ASSERT_EQ(octet_recipe_create_block(nullptr, &raw), OCTET_STATUS_SUCCESS);
  Recipe block(raw);
  Quantizer other = make_quantizer(block.get(), OCTET_ROLE_INPUT);
  EXPECT_EQ(octet_quantizer_load(other.get(), bytes.data(), bytes.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("rowwise scaling state")) << octet_last_error_message();
}

#ifdef OCTET_TEST_TEMPLATE_PLUGIN
// The template plugin declares per-tensor scaling only: axiswise tensors and
// the rowwise recipe are refused there with the mode and the backend named.
TEST(RowwiseCapabilities, TemplatePluginRefusesAxiswiseModesAndTheRecipe) {
  ASSERT_TRUE(load_backend("template", OCTET_TEST_TEMPLATE_PLUGIN));
  Context ctx = make_context("template");
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = OCTET_DTYPE_E4M3;
  d.ndim = 2;
  d.shape[0] = 4;
  d.shape[1] = 64;
  d.usages = OCTET_USAGE_ROWWISE;
  for (int32_t mode : {int32_t(OCTET_SCALING_PER_ROW), int32_t(OCTET_SCALING_PER_COLUMN)}) {
    d.scaling_mode = mode;
    octet_tensor* t = nullptr;
    EXPECT_EQ(octet_tensor_create(ctx.get(), &d, &t), OCTET_STATUS_UNSUPPORTED);
    EXPECT_TRUE(message_has(mode == OCTET_SCALING_PER_ROW ? "does not declare the scaling mode per-row"
                                                          : "does not declare the scaling mode per-column"))
        << octet_last_error_message();
    EXPECT_EQ(t, nullptr);
  }
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_rowwise(nullptr, &raw), OCTET_STATUS_SUCCESS);
  Recipe recipe(raw);
  octet_linear_options lo;
  ASSERT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
  lo.in_features = 64;
  lo.out_features = 16;
  lo.recipe = recipe.get();
  octet_layer* layer = nullptr;
  EXPECT_EQ(octet_layer_create_linear(ctx.get(), &lo, &layer), OCTET_STATUS_UNSUPPORTED);
  EXPECT_TRUE(message_has("rowwise scaling recipe scales its input role with per-row")) << octet_last_error_message();
  EXPECT_EQ(layer, nullptr);
}
#endif

}  // namespace
}  // namespace recipes_test
