// FP4 tensors through the users' ABI (numerics.md section 15): E2M1 storage
// (packed sizes, scale grids, memory accounting), quantize / dequantize /
// GEMM on the reference, the stream rule of stochastic rounding (rowwise
// offset, columnwise offset + 1), and the refusals. The reference's bits
// are checked against a separate implementation in
// tests/reference/fp4_test.cpp; here expectations are decoded from the
// copied-out components with the public scalar codecs, and the GEMM is
// compared with a double-precision product of those decoded operands.
#include <cmath>
#include <cstring>
#include <vector>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

using testing::HasSubstr;

std::string last_error() { return octet_last_error_message(); }

TensorPtr make_fp4(octet_context* ctx, std::vector<int64_t> shape, int32_t mode, uint32_t usages) {
  return make_tensor(ctx, OCTET_DTYPE_E2M1, shape, usages, mode);
}

octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS);
  return info;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct ModeShape {
  int32_t mode;
  int64_t br, bc;
  int32_t scale_dtype;
  bool nvfp4;
};
const ModeShape kModes[] = {{OCTET_SCALING_MXFP4_1X32, 1, 32, OCTET_DTYPE_E8M0, false},
                            {OCTET_SCALING_NVFP4_1X16, 1, 16, OCTET_DTYPE_E4M3, true},
                            {OCTET_SCALING_NVFP4_16X16, 16, 16, OCTET_DTYPE_E4M3, true}};

TEST(Fp4Tensors, ReferenceDeclaresTheFp4Capabilities) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  octet_backend_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_context_get_info(ctx.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_NE(info.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1), 0u);
  for (const ModeShape& m : kModes) EXPECT_NE(info.scaling_modes & uint32_t(m.mode), 0u) << m.mode;
  for (uint32_t f : {OCTET_FEATURE_FP4_QUANTIZE, OCTET_FEATURE_FP4_GEMM, OCTET_FEATURE_STOCHASTIC_ROUNDING,
                     OCTET_FEATURE_HADAMARD_TRANSFORM})
    EXPECT_NE(info.features & f, 0u) << f;
}

// Packed codes, one byte per block scale, two FP32 tensor scales (NVFP4)
// plus the AMAX, all counted as quantized copies.
TEST(Fp4Tensors, SizesAndMemoryAccounting) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  const int64_t rows = 33, cols = 48;
  for (const ModeShape& m : kModes) {
    TensorPtr t = make_fp4(ctx.get(), {rows, cols}, m.mode, OCTET_USAGE_BOTH);
    const octet_tensor_info info = info_of(t.get());
    // Each row on its own bytes: 33 rows of 24 bytes, 48 rows of 17.
    const uint64_t codes = uint64_t(rows * (cols / 2)), columnwise_codes = uint64_t(cols * ((rows + 1) / 2));
    EXPECT_EQ(info.rowwise_bytes, codes);
    EXPECT_EQ(info.columnwise_bytes, columnwise_codes);
    EXPECT_EQ(info.block_rows, m.br);
    EXPECT_EQ(info.block_cols, m.bc);
    EXPECT_EQ(info.scale_inv_dtype, m.scale_dtype);
    EXPECT_EQ(info.rowwise_scale_inv_bytes, uint64_t(ceil_div(rows, m.br) * ceil_div(cols, m.bc)));
    EXPECT_EQ(info.columnwise_scale_inv_bytes, uint64_t(ceil_div(cols, m.br) * ceil_div(rows, m.bc)));
    const uint64_t scalars = 5 * sizeof(float);
    EXPECT_EQ(info.total_bytes,
              codes + columnwise_codes + info.rowwise_scale_inv_bytes + info.columnwise_scale_inv_bytes + scalars);
    octet_memory_stats stats{};
    stats.struct_size = sizeof(stats);
    ASSERT_EQ(octet_context_get_memory_stats(ctx.get(), &stats), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(stats.current_bytes[OCTET_MEMORY_QUANTIZED_COPIES], info.total_bytes);
    // Component sizes: the packed codes; SCALE_INV is NVFP4's two tensor scales.
    std::vector<uint8_t> data(codes);
    EXPECT_EQ(octet_tensor_copy_to_host(t.get(), OCTET_COMPONENT_DATA, data.data(), codes), OCTET_STATUS_SUCCESS);
    float g[2];
    EXPECT_EQ(octet_tensor_copy_to_host(t.get(), OCTET_COMPONENT_SCALE_INV, g, sizeof(g)),
              m.nvfp4 ? OCTET_STATUS_SUCCESS : OCTET_STATUS_INVALID_ARGUMENT);
  }
  // An odd row length: every row ends with a pad nibble (3 rows of 3 bytes).
  TensorPtr odd = make_fp4(ctx.get(), {3, 5}, OCTET_SCALING_NVFP4_1X16, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(info_of(odd.get()).rowwise_bytes, 9u);
}

// Decodes the rowwise (or columnwise) copy from its components with the
// public codecs: decode(q) * X, X = E8M0 value, or E4M3 value * g.
std::vector<float> decode_components(const octet_tensor* t, const ModeShape& m, int64_t rows, int64_t cols,
                                     bool columnwise) {
  const size_t n = size_t(rows * cols), row_bytes = size_t(cols + 1) / 2;
  std::vector<uint8_t> packed =
      read<uint8_t>(t, columnwise ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA, size_t(rows) * row_bytes);
  const int64_t grid_cols = ceil_div(cols, m.bc);
  std::vector<uint8_t> scales =
      read<uint8_t>(t, columnwise ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV,
                    size_t(ceil_div(rows, m.br) * grid_cols));
  float g[2] = {1.0f, 1.0f};
  if (m.nvfp4) {
    EXPECT_EQ(octet_tensor_copy_to_host(t, OCTET_COMPONENT_SCALE_INV, g, sizeof(g)), OCTET_STATUS_SUCCESS);
  }
  std::vector<float> codes(n);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(octet_fp8_decode_array(packed.data() + size_t(r) * row_bytes, codes.data() + size_t(r * cols),
                                     size_t(cols), OCTET_DTYPE_E2M1),
              OCTET_STATUS_SUCCESS)
        << last_error();
  }
  std::vector<float> out(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t s = scales[size_t((r / m.br) * grid_cols + c / m.bc)];
      const float x = m.nvfp4 ? octet_fp8_decode(s, OCTET_DTYPE_E4M3) * g[columnwise ? 1 : 0] : octet_e8m0_decode(s);
      out[size_t(r * cols + c)] = codes[size_t(r * cols + c)] * x;
    }
  return out;
}

TEST(Fp4Tensors, QuantizeAndDequantizeThroughTheAbi) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  const int64_t rows = 32, cols = 40;
  std::vector<float> v = random_values(size_t(rows * cols), 2.0f, 11);
  TensorPtr x = make_fp32(ctx.get(), rows, cols, v);
  for (const ModeShape& m : kModes) {
    TensorPtr q = make_fp4(ctx.get(), {rows, cols}, m.mode, OCTET_USAGE_BOTH);
    ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
    const std::vector<float> rowwise = decode_components(q.get(), m, rows, cols, false);
    const std::vector<float> columnwise = decode_components(q.get(), m, cols, rows, true);
    TensorPtr back = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, cols});
    ASSERT_EQ(octet_dequantize(ctx.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS) << last_error();
    const std::vector<float> got = read<float>(back.get(), OCTET_COMPONENT_DATA, size_t(rows * cols));
    float block_amax_bound = 0.0f;
    for (float f : v) block_amax_bound = std::max(block_amax_bound, std::fabs(f));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = size_t(r * cols + c);
        EXPECT_EQ(got[i], rowwise[i]) << m.mode;
        // Each value within half a code step of the block's scale (at most
        // amax / 6 * 2 at the top binade: FP4 keeps 1 bit) of x.
        EXPECT_LE(std::fabs(rowwise[i] - v[i]), block_amax_bound / 3.0f + 1e-6f) << m.mode;
        EXPECT_LE(std::fabs(columnwise[size_t(c * rows + r)] - v[i]), block_amax_bound / 3.0f + 1e-6f) << m.mode;
        if (m.br == 16) {
          EXPECT_EQ(columnwise[size_t(c * rows + r)], rowwise[i]) << "16x16 copies are transposes";
        }
      }
    float amax = 0.0f;
    ASSERT_EQ(octet_tensor_copy_to_host(q.get(), OCTET_COMPONENT_AMAX, &amax, sizeof(amax)), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(amax, block_amax_bound);
  }
}

// The rowwise copy draws stream `offset`, the columnwise copy `offset + 1`:
// the columnwise codes equal the rowwise codes of x^T quantized with
// offset + 1. The same (seed, offset) gives the same bytes.
TEST(Fp4Tensors, StochasticStreamsAreReproducible) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  const int64_t rows = 16, cols = 64;
  std::vector<float> v = random_values(size_t(rows * cols), 1.0f, 3), vt(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) vt[size_t(c * rows + r)] = v[size_t(r * cols + c)];
  TensorPtr x = make_fp32(ctx.get(), rows, cols, v), xt = make_fp32(ctx.get(), cols, rows, vt);
  octet_quantize_options o{};
  ASSERT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(o.struct_size, sizeof(o));
  EXPECT_EQ(o.stochastic_rounding, 0);
  o.stochastic_rounding = 1;
  o.seed = 0x5EED;
  o.offset = 40;
  const size_t bytes = size_t(rows * cols) / 2;
  TensorPtr q1 = make_fp4(ctx.get(), {rows, cols}, OCTET_SCALING_NVFP4_1X16, OCTET_USAGE_BOTH);
  TensorPtr q2 = make_fp4(ctx.get(), {rows, cols}, OCTET_SCALING_NVFP4_1X16, OCTET_USAGE_BOTH);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q1.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q2.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_EQ(read<uint8_t>(q1.get(), OCTET_COMPONENT_DATA, bytes), read<uint8_t>(q2.get(), OCTET_COMPONENT_DATA, bytes));
  TensorPtr qt = make_fp4(ctx.get(), {cols, rows}, OCTET_SCALING_NVFP4_1X16, OCTET_USAGE_ROWWISE);
  o.offset = 41;
  ASSERT_EQ(octet_quantize(ctx.get(), xt.get(), qt.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_EQ(read<uint8_t>(q1.get(), OCTET_COMPONENT_COLUMNWISE_DATA, bytes),
            read<uint8_t>(qt.get(), OCTET_COMPONENT_DATA, bytes));
  TensorPtr q3 = make_fp4(ctx.get(), {rows, cols}, OCTET_SCALING_NVFP4_1X16, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), q3.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
  EXPECT_NE(read<uint8_t>(q1.get(), OCTET_COMPONENT_DATA, bytes), read<uint8_t>(q3.get(), OCTET_COMPONENT_DATA, bytes))
      << "another offset draws other bits";
}

// D = A' B'^T from the K-contiguous copies (rowwise as stored, columnwise
// when transposed), against the decoded operands multiplied in double.
TEST(Fp4Tensors, GemmMatchesTheDecodedProduct) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  const int64_t m = 16, n = 24, k = 64;
  for (const ModeShape* modes : {&kModes[0], &kModes[1]}) {
    const ModeShape& ma = *modes;
    const ModeShape& mb = ma.nvfp4 ? kModes[2] : kModes[0];          // NVFP4: 1x16 activations, 16x16 weights
    std::vector<float> av = random_values(size_t(k * m), 1.0f, 21);  // A stored [k, m], used transposed
    std::vector<float> bv = random_values(size_t(n * k), 1.0f, 22);
    TensorPtr a32 = make_fp32(ctx.get(), k, m, av), b32 = make_fp32(ctx.get(), n, k, bv);
    TensorPtr a = make_fp4(ctx.get(), {k, m}, ma.mode, OCTET_USAGE_COLUMNWISE);
    TensorPtr b = make_fp4(ctx.get(), {n, k}, mb.mode, OCTET_USAGE_ROWWISE);
    ASSERT_EQ(octet_quantize(ctx.get(), a32.get(), a.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
    ASSERT_EQ(octet_quantize(ctx.get(), b32.get(), b.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
    const std::vector<float> ad = decode_components(a.get(), ma, m, k, true);   // [m, k]
    const std::vector<float> bd = decode_components(b.get(), mb, n, k, false);  // [n, k]
    TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {m, n});
    octet_gemm_options o{};
    ASSERT_EQ(octet_gemm_options_init(&o), OCTET_STATUS_SUCCESS);
    o.trans_a = 1;
    o.alpha = 0.5f;
    ASSERT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), &o), OCTET_STATUS_SUCCESS) << last_error();
    const std::vector<float> got = read<float>(d.get(), OCTET_COMPONENT_DATA, size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0.0, magnitude = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = double(ad[size_t(i * k + kk)]) * bd[size_t(j * k + kk)];
          exact += p;
          magnitude += std::fabs(p);
        }
        // decode_components rounds each decoded value once (NVFP4: E4M3 * g
        // then * code), which the GEMM does not: allow that rounding too.
        const double bound = (double(k) * std::ldexp(1.0, -23) + std::ldexp(1.0, -21)) * magnitude * 0.5 + 1e-30;
        EXPECT_NEAR(got[size_t(i * n + j)], 0.5 * exact, bound) << ma.mode << " " << i << "," << j;
      }
  }
}

TEST(Fp4Tensors, BadRequestsAreRefused) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  octet_tensor_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.dtype = OCTET_DTYPE_E2M1;
  desc.ndim = 2;
  desc.shape[0] = 4;
  desc.shape[1] = 32;
  octet_tensor* t = nullptr;
  EXPECT_EQ(octet_tensor_create(ctx.get(), &desc, &t), OCTET_STATUS_INVALID_ARGUMENT);  // plain E2M1
  EXPECT_THAT(last_error(), HasSubstr("quantized FP4 tensor"));
  desc.usages = OCTET_USAGE_ROWWISE;
  desc.scaling_mode = OCTET_SCALING_MXFP8_1X32;
  EXPECT_EQ(octet_tensor_create(ctx.get(), &desc, &t), OCTET_STATUS_INVALID_ARGUMENT);
  desc.dtype = OCTET_DTYPE_E4M3;
  desc.scaling_mode = OCTET_SCALING_NVFP4_1X16;
  EXPECT_EQ(octet_tensor_create(ctx.get(), &desc, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("takes E2M1 elements"));
  EXPECT_EQ(t, nullptr);

  std::vector<float> v = random_values(4 * 32, 1.0f, 1);
  TensorPtr x = make_fp32(ctx.get(), 4, 32, v);
  TensorPtr mx = make_fp4(ctx.get(), {4, 32}, OCTET_SCALING_MXFP4_1X32, OCTET_USAGE_BOTH);
  TensorPtr nv = make_fp4(ctx.get(), {4, 32}, OCTET_SCALING_NVFP4_1X16, OCTET_USAGE_BOTH);
  octet_quantize_options o{};
  ASSERT_EQ(octet_quantize_options_init(&o), OCTET_STATUS_SUCCESS);
  o.hadamard_transform = 1;  // columnwise rows = 32 elements, but its groups run along 4 rows
  EXPECT_EQ(octet_quantize(ctx.get(), x.get(), nv.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("multiple of 16"));
  o.hadamard_transform = 2;
  EXPECT_EQ(octet_quantize(ctx.get(), x.get(), nv.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  o.hadamard_transform = 0;
  o.saturate = 0;
  EXPECT_EQ(octet_quantize(ctx.get(), x.get(), nv.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), mx.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
  ASSERT_EQ(octet_quantize(ctx.get(), x.get(), nv.get(), nullptr), OCTET_STATUS_SUCCESS) << last_error();
  // Stochastic rounding on an FP8 output.
  TensorPtr e4 = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {4, 32}, OCTET_USAGE_ROWWISE);
  o.saturate = 1;
  o.stochastic_rounding = 1;
  EXPECT_EQ(octet_quantize(ctx.get(), x.get(), e4.get(), &o), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("FP4 outputs only"));

  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {4, 4});
  octet_gemm_options g{};
  ASSERT_EQ(octet_gemm_options_init(&g), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet_gemm(ctx.get(), mx.get(), nv.get(), d.get(), &g), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(last_error(), HasSubstr("MXFP4 with MXFP4"));
  EXPECT_EQ(octet_gemm(ctx.get(), mx.get(), e4.get(), d.get(), &g), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_convert(ctx.get(), mx.get(), x.get(), 1), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(last_error(), HasSubstr("E2M1"));
  ASSERT_EQ(octet_gemm(ctx.get(), mx.get(), mx.get(), d.get(), &g), OCTET_STATUS_SUCCESS) << last_error();
}

}  // namespace
}  // namespace octet_test
