// Rows for the scaling recipes (ABI 1.1): every recipe quantizes through a
// quantizer on the target and is compared, bit for bit, with expectations
// the CLI computes itself from docs/numerics.md and the scalar codecs of
// octet.h; block-scaled GEMMs are checked against a double-precision sum of
// the target's own quantized operands under the bound of numerics.md.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>

#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

struct RecipeDeleter {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
  void operator()(octet_quantizer* q) const { octet_quantizer_destroy(q); }
};
using RecipePtr = std::unique_ptr<octet_recipe, RecipeDeleter>;
using QuantizerPtr = std::unique_ptr<octet_quantizer, RecipeDeleter>;

constexpr int64_t kRows = 67, kCols = 150;  // ragged for 32 and 128 blocks

// The largest finite value of an FP8 format (numerics.md section 1).
float fp8_max(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 ? 448.0f : dtype == OCTET_DTYPE_E4M3FNUZ ? 240.0f : 57344.0f;
}

float current_scale(float amax, float fp8max, float eps, bool pow2) {
  amax = std::fmax(amax, eps);
  if (std::isnan(amax) || std::isinf(amax) || amax == 0.0f) return 1.0f;
  float s = fp8max / amax;
  if (std::isinf(s)) s = FLT_MAX;
  if (pow2) {
    uint32_t b;
    std::memcpy(&b, &s, 4);
    b &= 0xFF800000u;
    std::memcpy(&s, &b, 4);
  }
  return s;
}

// Expected block quantization of x [rows, cols] (numerics.md section 11).
void host_blocks(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t br, int64_t bc, bool mx,
                 int32_t dtype, int32_t rounding, float eps, bool pow2, std::vector<uint8_t>* codes,
                 std::vector<uint8_t>* scales) {
  // Each block's scale comes from the largest |x| of its finite elements.
  codes->assign(x.size(), 0);
  scales->clear();
  for (int64_t r0 = 0; r0 < rows; r0 += br)
    for (int64_t c0 = 0; c0 < cols; c0 += bc) {
      const int64_t r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const float v = x[size_t(r * cols + c)];
          if (std::isfinite(v)) amax = std::fmax(amax, std::fabs(v));
        }
      uint8_t code = 0;
      float scale = 1.0f;
      if (mx) {
        if (amax == 0.0f) {
          code = 0;
        } else if (rounding == OCTET_MX_ROUND_RCEIL) {
          const float quotient = amax / fp8_max(dtype);  // underflow to 0: smallest scale
          code = quotient == 0.0f ? 0 : octet_e8m0_encode(quotient, OCTET_E8M0_ROUND_CEIL);
        } else {
          const int e = std::ilogb(amax) - (dtype == OCTET_DTYPE_E4M3 ? 8 : 15) + 127;
          code = uint8_t(std::min(254, std::max(0, e)));
        }
        scales->push_back(code);
      } else {
        scale = current_scale(amax, fp8_max(dtype), eps, pow2);
        const float inv = 1.0f / scale;
        const uint8_t* b = reinterpret_cast<const uint8_t*>(&inv);
        scales->insert(scales->end(), b, b + 4);
      }
      const float divisor = octet_e8m0_decode(code);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const float v = x[size_t(r * cols + c)];
          (*codes)[size_t(r * cols + c)] = octet_fp8_encode(mx ? v / divisor : v * scale, dtype, 1);
        }
    }
}

std::string first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const char* what) {
  if (got.size() != want.size()) return std::string(what) + ": size differs";
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return std::string(what) + "[" + std::to_string(i) + "] is " + hex_code(got[i], 2) + ", expected " +
             hex_code(want[i], 2);
  return "";
}

std::vector<uint8_t> read_component(const octet::Tensor& t, int32_t component, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  octet::check(octet_tensor_copy_to_host(t.get(), component, out.data(), bytes));
  return out;
}

octet::Tensor make_quantized(octet::Context& ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages,
                             int32_t mode) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages, mode);
}

std::vector<float> inputs(uint64_t seed, float spread) {
  std::mt19937_64 rng(seed);
  std::vector<float> x = uniform_floats(size_t(kRows * kCols), rng, -spread, spread);
  // A zero block, a block with one NaN among finite values and a subnormal
  // block for the block recipes.
  for (int64_t c = 0; c < 32; ++c) x[size_t(c)] = 0.0f;
  x[size_t(2 * kCols + 40)] = std::nanf("");
  for (int64_t c = 64; c < 96; ++c) x[size_t(4 * kCols + c)] *= 1e-40f;
  return x;
}

// Per-tensor recipes: quantize through a quantizer, compare scale and codes.
void per_tensor_row(const ValidationRun& run, const std::string& name, RecipePtr recipe, uint64_t seed,
                    int32_t role = OCTET_ROLE_INPUT) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      int32_t dtype = 0, mode = 0;
      octet::check(octet_recipe_tensor_format(recipe.get(), role, &dtype, &mode));
      const float max_finite = fp8_max(dtype);
      QuantizerPtr q;
      octet_quantizer* raw = nullptr;
      octet::check(octet_quantizer_create(recipe.get(), role, &raw));
      q.reset(raw);
      octet_quantizer_info info{};
      info.struct_size = sizeof(info);
      float running_max = 0.0f;
      for (int step = 0; step < 3; ++step) {
        std::vector<float> x = inputs(seed + uint64_t(step), 4.0f * float(step + 1));
        octet::check(octet_quantizer_get_info(q.get(), &info));
        HostArray in = encode_array(OCTET_DTYPE_FP32, {kRows, kCols}, x);
        octet::Tensor tin = upload_plain(*run.context, in);
        octet::Tensor out = make_quantized(*run.context, dtype, kRows, kCols, OCTET_USAGE_ROWWISE, mode);
        octet_recipe_info ri{};
        ri.struct_size = sizeof(ri);
        octet::check(octet_recipe_get_info(recipe.get(), &ri));
        float amax = 0.0f;
        for (float v : x) amax = std::fmax(amax, std::fabs(v));
        running_max = std::fmax(running_max, amax);
        const float scale = ri.kind == OCTET_RECIPE_CURRENT ? current_scale(amax, max_finite, 0.0f, false) : info.scale;
        octet::check(octet_quantizer_quantize(run.context->get(), q.get(), tin.get(), out.get(), nullptr, nullptr));
        std::vector<uint8_t> want(x.size());
        for (size_t i = 0; i < x.size(); ++i) want[i] = octet_fp8_encode(x[i] * scale, dtype, 1);
        check.exact(first_difference(read_component(out, OCTET_COMPONENT_DATA, x.size()), want, "codes"));
        octet::check(octet_quantizer_update_scale(q.get()));
        if (ri.kind == OCTET_RECIPE_DELAYED) {
          // Defaults: margin 0, interval 1, MAX over a window longer than this run.
          octet::check(octet_quantizer_get_info(q.get(), &info));
          const float expected = max_finite / running_max;
          if (info.scale != expected)
            check.exact("delayed scale after step " + std::to_string(step) + " is " + std::to_string(info.scale) +
                        ", expected " + std::to_string(expected));
        }
      }
    });
  });
}

// The block of one stored copy [rows, cols] of a tensor of `mode`
// (numerics.md sections 11 and 15): per-row blocks span the copy's row,
// per-column ones (the rowwise copy only) its column.
void block_shape(int32_t mode, bool columnwise, int64_t rows, int64_t cols, int64_t* br, int64_t* bc) {
  *br = mode == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
  *bc = mode == OCTET_SCALING_MXFP8_1X32 ? 32 : 128;
  if (mode == OCTET_SCALING_PER_ROW || (mode == OCTET_SCALING_PER_COLUMN && columnwise)) *bc = cols;
  if (mode == OCTET_SCALING_PER_COLUMN && !columnwise) {
    *br = rows;
    *bc = 1;
  }
}

// Compares both stored copies of `out` (quantized from x [kRows, kCols])
// with host_blocks.
void check_copies(RowCheck& check, const octet::Tensor& out, const std::vector<float>& x, int32_t mode, int32_t dtype,
                  bool mx, int32_t rounding, float eps, bool pow2) {
  for (bool columnwise : {false, true}) {
    std::vector<float> src = x;
    int64_t rows = kRows, cols = kCols;
    if (columnwise) {
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kCols; ++c) src[size_t(c * kRows + r)] = x[size_t(r * kCols + c)];
      std::swap(rows, cols);
    }
    int64_t br = 1, bc = 1;
    block_shape(mode, columnwise, rows, cols, &br, &bc);
    std::vector<uint8_t> codes, scales;
    host_blocks(src, rows, cols, br, bc, mx, dtype, rounding, eps, pow2, &codes, &scales);
    check.exact(first_difference(
        read_component(out, columnwise ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA, codes.size()), codes,
        columnwise ? "columnwise codes" : "rowwise codes"));
    check.exact(first_difference(
        read_component(out, columnwise ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV,
                       scales.size()),
        scales, columnwise ? "columnwise scales" : "rowwise scales"));
  }
}

// Per-row / per-column quantize without a recipe (octet_quantize's
// defaults: epsilon 0, no power-of-two rounding).
void axiswise_row(const ValidationRun& run, const std::string& name, int32_t mode, int32_t dtype) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      std::vector<float> x = inputs(run.seed + 90, 30.0f);
      octet::Tensor tin = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, {kRows, kCols}, x));
      octet::Tensor out = make_quantized(*run.context, dtype, kRows, kCols, OCTET_USAGE_BOTH, mode);
      octet::check(octet_quantize(run.context->get(), tin.get(), out.get(), nullptr));
      check_copies(check, out, x, mode, dtype, false, 0, 0.0f, false);
    });
  });
}

void block_row(const ValidationRun& run, const std::string& name, RecipePtr recipe, int32_t role, bool mx,
               int32_t rounding, bool pow2, float eps = 0.0f) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      int32_t dtype = 0, mode = 0;
      octet::check(octet_recipe_tensor_format(recipe.get(), role, &dtype, &mode));
      octet_quantizer* raw = nullptr;
      octet::check(octet_quantizer_create(recipe.get(), role, &raw));
      QuantizerPtr q(raw);
      std::vector<float> x = inputs(run.seed, 30.0f);
      octet::Tensor tin = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, {kRows, kCols}, x));
      octet::Tensor out = make_quantized(*run.context, dtype, kRows, kCols, OCTET_USAGE_BOTH, mode);
      octet::check(octet_quantizer_quantize(run.context->get(), q.get(), tin.get(), out.get(), nullptr, nullptr));
      check_copies(check, out, x, mode, dtype, mx, rounding, eps, pow2);
    });
  });
}

// The FP8 dtypes and transposes of a block-scaled GEMM's operands. A
// transposed operand is stored [k, outer] (the GEMM reads its columnwise
// copy); one used as stored is [outer, k] (its rowwise copy).
struct BlockGemmOperands {
  int32_t dtype_a = OCTET_DTYPE_E4M3, dtype_b = OCTET_DTYPE_E4M3;
  bool trans_a = false, trans_b = false;
};

void block_gemm_row(const ValidationRun& run, const std::string& name, int32_t mode_a, int32_t mode_b,
                    const BlockGemmOperands& ops = {}) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      const int64_t m = 9, n = 130, k = 200;
      std::mt19937_64 rng(run.seed);
      std::vector<float> xa = uniform_floats(size_t(m * k), rng, -3, 3), xb = uniform_floats(size_t(n * k), rng, -1, 1);
      const std::vector<int64_t> shape_a = ops.trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
      const std::vector<int64_t> shape_b = ops.trans_b ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k};
      octet::Tensor ha = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, shape_a, xa));
      octet::Tensor hb = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, shape_b, xb));
      const uint32_t usage_a = ops.trans_a ? OCTET_USAGE_COLUMNWISE : OCTET_USAGE_ROWWISE;
      const uint32_t usage_b = ops.trans_b ? OCTET_USAGE_COLUMNWISE : OCTET_USAGE_ROWWISE;
      octet::Tensor qa = make_quantized(*run.context, ops.dtype_a, shape_a[0], shape_a[1], usage_a, mode_a);
      octet::Tensor qb = make_quantized(*run.context, ops.dtype_b, shape_b[0], shape_b[1], usage_b, mode_b);
      octet::check(octet_quantize(run.context->get(), ha.get(), qa.get(), nullptr));
      octet::check(octet_quantize(run.context->get(), hb.get(), qb.get(), nullptr));
      octet::Tensor d = octet::Tensor::create(*run.context, OCTET_DTYPE_FP32, {m, n});
      octet_gemm_options o;
      octet::check(octet_gemm_options_init(&o));
      o.trans_a = ops.trans_a ? 1 : 0;
      o.trans_b = ops.trans_b ? 1 : 0;
      octet::check(octet_gemm(run.context->get(), qa.get(), qb.get(), d.get(), &o));
      const bool mx = mode_a == OCTET_SCALING_MXFP8_1X32;
      const bool axiswise = mode_a == OCTET_SCALING_PER_ROW || mode_a == OCTET_SCALING_PER_COLUMN;
      const int64_t bk = mx ? 32 : axiswise ? k : 128, kb = (k + bk - 1) / bk;
      const int64_t brb = mode_b == OCTET_SCALING_BLOCK_128X128 ? 128 : 1;
      const size_t sz = mx ? 1 : 4;
      // The K-contiguous copies the GEMM reads, [outer, k].
      auto data = [](bool trans) { return trans ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA; };
      auto grid = [](bool trans) {
        return trans ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV;
      };
      std::vector<uint8_t> ca = read_component(qa, data(ops.trans_a), size_t(m * k));
      std::vector<uint8_t> cb = read_component(qb, data(ops.trans_b), size_t(n * k));
      std::vector<uint8_t> sa = read_component(qa, grid(ops.trans_a), size_t(m * kb) * sz);
      std::vector<uint8_t> sb = read_component(qb, grid(ops.trans_b), size_t((n + brb - 1) / brb * kb) * sz);
      auto scale = [&](const std::vector<uint8_t>& s, size_t i) {
        if (mx) return double(octet_e8m0_decode(s[i]));
        float f;
        std::memcpy(&f, &s[i * 4], 4);
        return double(f);
      };
      std::vector<float> got(size_t(m * n));
      octet::check(octet_tensor_copy_to_host(d.get(), OCTET_COMPONENT_DATA, got.data(), got.size() * 4));
      double worst_error = 0, worst_bound = 1, worst_ratio = -1;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const double s = scale(sa, size_t(i * kb + kk / bk)) * scale(sb, size_t((j / brb) * kb + kk / bk));
            const double p = double(octet_fp8_decode(ca[size_t(i * k + kk)], ops.dtype_a)) *
                             double(octet_fp8_decode(cb[size_t(j * k + kk)], ops.dtype_b)) * s;
            exact += p;
            magnitude += std::fabs(p);
          }
          const double error = std::fabs(double(got[size_t(i * n + j)]) - exact);
          const double bound = double(k) * std::ldexp(1.0, -23) * magnitude + std::ldexp(std::fabs(exact), -23);
          const double ratio = bound > 0 ? error / bound : (error > 0 ? 1e300 : 0);
          if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst_error = error;
            worst_bound = bound;
          }
        }
      check.bounded(worst_error, worst_bound);
    });
  });
}

// Runs one octet_recipe_create_* call (the status is checked before the
// handle is read).
template <typename Create>
RecipePtr make(Create&& create) {
  octet_recipe* r = nullptr;
  octet::check(create(&r));
  return RecipePtr(r);
}

// The FNUZ formats (numerics.md section 1: scaled exactly as the OCP ones,
// 240 the largest E4M3FNUZ value) in the per-row, per-column and FP32-block
// modes and their GEMMs; "unsupported" on a backend that does not declare
// them. MXFP8 takes OCP elements only.
void check_fnuz_blocks(const ValidationRun& run) {
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3FNUZ), int32_t(OCTET_DTYPE_E5M2FNUZ)}) {
    const std::string f = std::string(" ") + octet_dtype_name(dtype);
    axiswise_row(run, "quantize per-row" + f, OCTET_SCALING_PER_ROW, dtype);
    axiswise_row(run, "quantize per-column" + f, OCTET_SCALING_PER_COLUMN, dtype);
    octet_block_scaling_options bo;
    octet_block_scaling_options_init(&bo);
    bo.format = dtype == OCTET_DTYPE_E4M3FNUZ ? OCTET_FORMAT_E4M3FNUZ : OCTET_FORMAT_E5M2FNUZ;
    block_row(run, "recipe block 1x128" + f, make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }),
              OCTET_ROLE_INPUT, false, 0, false);
    block_row(run, "recipe block 128x128" + f,
              make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }), OCTET_ROLE_WEIGHT, false, 0,
              false);
  }
  // HYBRID_FNUZ: E5M2FNUZ for the gradient role; power-of-two scales.
  octet_block_scaling_options bo;
  octet_block_scaling_options_init(&bo);
  bo.format = OCTET_FORMAT_HYBRID_FNUZ;
  bo.power_of_two_scales = 1;
  block_row(run, "recipe block 1x128 pow2 hybrid_fnuz gradient",
            make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }), OCTET_ROLE_GRADIENT, false, 0,
            true);
  octet_rowwise_scaling_options ro;
  octet_rowwise_scaling_options_init(&ro);
  ro.format = OCTET_FORMAT_E4M3FNUZ;
  block_row(run, "recipe rowwise e4m3fnuz", make([&](octet_recipe** r) { return octet_recipe_create_rowwise(&ro, r); }),
            OCTET_ROLE_INPUT, false, 0, ro.power_of_two_scales != 0, ro.amax_epsilon);
  BlockGemmOperands e4m3fnuz;
  e4m3fnuz.dtype_a = e4m3fnuz.dtype_b = OCTET_DTYPE_E4M3FNUZ;
  block_gemm_row(run, "gemm block 1x128 x 128x128 e4m3fnuz", OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_128X128,
                 e4m3fnuz);
  block_gemm_row(run, "gemm per-row e4m3fnuz", OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_ROW, e4m3fnuz);
  BlockGemmOperands mixed = e4m3fnuz;  // E5M2FNUZ x E4M3FNUZ, per-row x per-column
  mixed.dtype_a = OCTET_DTYPE_E5M2FNUZ;
  mixed.trans_b = true;
  block_gemm_row(run, "gemm per-row x per-column e5m2fnuz x e4m3fnuz", OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_COLUMN,
                 mixed);
  BlockGemmOperands transposed = e4m3fnuz;
  transposed.trans_a = transposed.trans_b = true;
  block_gemm_row(run, "gemm per-column transposed e4m3fnuz", OCTET_SCALING_PER_COLUMN, OCTET_SCALING_PER_COLUMN,
                 transposed);
}

}  // namespace

void check_recipes(const ValidationRun& run) {
  per_tensor_row(run, "recipe delayed", make([&](octet_recipe** r) { return octet_recipe_create_delayed(nullptr, r); }),
                 run.seed);
  per_tensor_row(run, "recipe current", make([&](octet_recipe** r) { return octet_recipe_create_current(nullptr, r); }),
                 run.seed + 10);
  octet_static_scaling_options so;
  octet_static_scaling_options_init(&so);
  so.scale = 4.0f;
  per_tensor_row(run, "recipe static", make([&](octet_recipe** r) { return octet_recipe_create_static(&so, r); }),
                 run.seed + 20);
  // Every format: the defaults above are HYBRID (E4M3 for the input role);
  // HYBRID's gradient role is E5M2, and E4M3 / E5M2 formats store every role
  // in that dtype.
  per_tensor_row(run, "recipe delayed hybrid gradient",
                 make([&](octet_recipe** r) { return octet_recipe_create_delayed(nullptr, r); }), run.seed + 30,
                 OCTET_ROLE_GRADIENT);
  octet_delayed_scaling_options dlo;
  octet_delayed_scaling_options_init(&dlo);
  dlo.format = OCTET_FORMAT_E4M3;
  per_tensor_row(run, "recipe delayed e4m3 gradient",
                 make([&](octet_recipe** r) { return octet_recipe_create_delayed(&dlo, r); }), run.seed + 40,
                 OCTET_ROLE_GRADIENT);
  octet_current_scaling_options cuo;
  octet_current_scaling_options_init(&cuo);
  cuo.format = OCTET_FORMAT_E5M2;
  per_tensor_row(run, "recipe current e5m2",
                 make([&](octet_recipe** r) { return octet_recipe_create_current(&cuo, r); }), run.seed + 50);
  per_tensor_row(run, "recipe current hybrid gradient",
                 make([&](octet_recipe** r) { return octet_recipe_create_current(nullptr, r); }), run.seed + 60,
                 OCTET_ROLE_GRADIENT);
  so.format = OCTET_FORMAT_E5M2;
  per_tensor_row(run, "recipe static e5m2", make([&](octet_recipe** r) { return octet_recipe_create_static(&so, r); }),
                 run.seed + 70);
  so.format = OCTET_FORMAT_HYBRID;
  per_tensor_row(run, "recipe static hybrid gradient",
                 make([&](octet_recipe** r) { return octet_recipe_create_static(&so, r); }), run.seed + 80,
                 OCTET_ROLE_GRADIENT);
  for (int32_t rounding : {int32_t(OCTET_MX_ROUND_RCEIL), int32_t(OCTET_MX_ROUND_FLOOR)}) {
    octet_mxfp8_options mo;
    octet_mxfp8_options_init(&mo);
    mo.rounding = rounding;
    block_row(run, rounding == OCTET_MX_ROUND_RCEIL ? "recipe mxfp8 rceil" : "recipe mxfp8 floor",
              make([&](octet_recipe** r) { return octet_recipe_create_mxfp8(&mo, r); }), OCTET_ROLE_INPUT, true,
              rounding, false);
  }
  for (int pow2 : {0, 1}) {
    octet_block_scaling_options bo;
    octet_block_scaling_options_init(&bo);
    bo.power_of_two_scales = pow2;
    block_row(run, pow2 ? "recipe block 1x128 pow2" : "recipe block 1x128",
              make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }), OCTET_ROLE_INPUT, false, 0,
              pow2 != 0);
    block_row(run, pow2 ? "recipe block 128x128 pow2" : "recipe block 128x128",
              make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }), OCTET_ROLE_WEIGHT, false, 0,
              pow2 != 0);
  }
  for (int32_t format : {int32_t(OCTET_FORMAT_E5M2), int32_t(OCTET_FORMAT_HYBRID)}) {
    const std::string f = format == OCTET_FORMAT_E5M2 ? " e5m2" : " hybrid gradient";
    const int32_t role = format == OCTET_FORMAT_E5M2 ? OCTET_ROLE_INPUT : OCTET_ROLE_GRADIENT;  // both E5M2
    octet_mxfp8_options mo;
    octet_mxfp8_options_init(&mo);
    mo.format = format;
    block_row(run, "recipe mxfp8 rceil" + f, make([&](octet_recipe** r) { return octet_recipe_create_mxfp8(&mo, r); }),
              role, true, OCTET_MX_ROUND_RCEIL, false);
    octet_block_scaling_options bo;
    octet_block_scaling_options_init(&bo);
    bo.format = format;
    block_row(run, "recipe block 1x128" + f, make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }),
              role, false, 0, false);
    if (format == OCTET_FORMAT_E5M2)
      block_row(run, "recipe block 128x128" + f,
                make([&](octet_recipe** r) { return octet_recipe_create_block(&bo, r); }), OCTET_ROLE_WEIGHT, false, 0,
                false);
  }
  block_gemm_row(run, "gemm mxfp8", OCTET_SCALING_MXFP8_1X32, OCTET_SCALING_MXFP8_1X32);
  block_gemm_row(run, "gemm block 1x128 x 128x128", OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_128X128);
  // Per-row and per-column scaling (numerics.md section 16).
  for (int32_t dtype : {int32_t(OCTET_DTYPE_E4M3), int32_t(OCTET_DTYPE_E5M2)}) {
    const std::string f = dtype == OCTET_DTYPE_E4M3 ? " e4m3" : " e5m2";
    axiswise_row(run, "quantize per-row" + f, OCTET_SCALING_PER_ROW, dtype);
    axiswise_row(run, "quantize per-column" + f, OCTET_SCALING_PER_COLUMN, dtype);
  }
  for (int hp_wgrad : {0, 1}) {
    octet_rowwise_scaling_options ro;
    octet_rowwise_scaling_options_init(&ro);
    ro.high_precision_wgrad = hp_wgrad;
    block_row(run, hp_wgrad ? "recipe rowwise hp wgrad" : "recipe rowwise",
              make([&](octet_recipe** r) { return octet_recipe_create_rowwise(&ro, r); }),
              hp_wgrad ? OCTET_ROLE_GRADIENT : OCTET_ROLE_INPUT, false, 0, ro.power_of_two_scales != 0,
              ro.amax_epsilon);
  }
  block_gemm_row(run, "gemm per-row", OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_ROW);
  BlockGemmOperands transposed;
  transposed.trans_a = transposed.trans_b = true;
  block_gemm_row(run, "gemm per-row transposed", OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_ROW, transposed);
  block_gemm_row(run, "gemm per-column transposed", OCTET_SCALING_PER_COLUMN, OCTET_SCALING_PER_COLUMN, transposed);
  // Mixed: A per-row used as stored (its rowwise copy), B per-column used
  // transposed (its columnwise copy): one scale per row of each copy read.
  BlockGemmOperands mixed;
  mixed.trans_b = true;
  block_gemm_row(run, "gemm per-row x per-column", OCTET_SCALING_PER_ROW, OCTET_SCALING_PER_COLUMN, mixed);
  check_fnuz_blocks(run);
}

}  // namespace octet_cli
