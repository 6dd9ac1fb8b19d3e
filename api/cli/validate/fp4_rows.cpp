// Rows for FP4 (numerics.md section 15): MXFP4 and NVFP4 quantize (nearest,
// stochastic rounding, Hadamard transform) against the reference context bit
// for bit, with every dequantized value also within its block's rounding of
// x; dequantize against the target's own components decoded with the scalar
// codecs of octet.h; GEMM against the double-precision product of those
// decoded operands within the bound of section 8. A backend without the FP4
// modes gets "-" (unsupported) rows.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

constexpr int64_t kRows = 48, kCols = 80;  // multiples of 16, ragged for 32

struct Mode {
  int32_t mode;
  int64_t br, bc;
  bool nvfp4;
};
Mode mode_of(int32_t mode) {
  if (mode == OCTET_SCALING_MXFP4_1X32) return {mode, 1, 32, false};
  return {mode, mode == OCTET_SCALING_NVFP4_16X16 ? 16 : 1, 16, true};
}

octet::Tensor make_fp4(octet::Context& ctx, int64_t rows, int64_t cols, int32_t mode, uint32_t usages) {
  return octet::Tensor::create(ctx, OCTET_DTYPE_E2M1, {rows, cols}, usages, mode);
}

std::vector<uint8_t> read_bytes(const octet::Tensor& t, int32_t component, size_t n) {
  std::vector<uint8_t> out(n);
  octet::check(octet_tensor_copy_to_host(t.get(), component, out.data(), n));
  return out;
}

// One copy read back: packed codes, block scales, the NVFP4 tensor scale.
struct Copy {
  std::vector<uint8_t> codes, scales;
  float g = 1.0f;
};

Copy read_copy(const octet::Tensor& t, const Mode& m, int64_t rows, int64_t cols, bool columnwise) {
  Copy c;
  c.codes = read_bytes(t, columnwise ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA,
                       size_t(rows * ((cols + 1) / 2)));
  c.scales = read_bytes(t, columnwise ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV,
                        size_t(((rows + m.br - 1) / m.br) * ((cols + m.bc - 1) / m.bc)));
  if (m.nvfp4) {
    float g[2] = {1.0f, 1.0f};
    octet::check(octet_tensor_copy_to_host(t.get(), OCTET_COMPONENT_SCALE_INV, g, sizeof g));
    c.g = g[columnwise ? 1 : 0];
  }
  return c;
}

// decode(q) * X with the scalar codecs: X = E8M0 value, or E4M3 value * g.
std::vector<float> decode_copy(const Copy& c, const Mode& m, int64_t rows, int64_t cols) {
  std::vector<float> out(size_t(rows * cols));
  const int64_t grid_cols = (cols + m.bc - 1) / m.bc, row_bytes = (cols + 1) / 2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      const uint8_t byte = c.codes[size_t(r * row_bytes + col / 2)];
      const uint8_t code = col % 2 == 0 ? byte & 0xF : byte >> 4;
      const uint8_t s = c.scales[size_t((r / m.br) * grid_cols + col / m.bc)];
      const float x = m.nvfp4 ? octet_fp8_decode(s, OCTET_DTYPE_E4M3) * c.g : octet_e8m0_decode(s);
      out[size_t(r * cols + col)] = octet_fp8_decode(code, OCTET_DTYPE_E2M1) * x;
    }
  return out;
}

std::string compare_copies(const Copy& got, const Copy& want, const char* what) {
  if (got.codes != want.codes) return std::string(what) + " codes differ from the reference's";
  if (got.scales != want.scales) return std::string(what) + " block scales differ from the reference's";
  if (std::memcmp(&got.g, &want.g, sizeof got.g) != 0) return std::string(what) + " tensor scale differs";
  return "";
}

std::vector<float> test_input(uint64_t seed, int64_t rows, int64_t cols) {
  std::mt19937_64 rng(seed);
  std::vector<float> x = uniform_floats(size_t(rows * cols), rng, -4.0f, 4.0f);
  for (int64_t c = 0; c < 32 && c < cols; ++c) x[size_t(c)] *= 1e-3f;        // a block far below the tensor's amax
  for (int64_t c = 32; c < 64 && c < cols; ++c) x[size_t(cols + c)] = 0.0f;  // a zero block
  return x;
}

void quantize_row(const ValidationRun& run, const std::string& name, int32_t mode, bool stochastic, bool rht) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      const Mode m = mode_of(mode);
      const std::vector<float> x = test_input(run.seed, kRows, kCols);
      octet_quantize_options o{};
      octet::check(octet_quantize_options_init(&o));
      o.stochastic_rounding = stochastic ? 1 : 0;
      o.hadamard_transform = rht ? 1 : 0;
      o.seed = run.seed;
      o.offset = 12;
      auto quantize_on = [&](octet::Context& ctx) {
        octet::Tensor in = upload_plain(ctx, encode_array(OCTET_DTYPE_FP32, {kRows, kCols}, x));
        octet::Tensor q = make_fp4(ctx, kRows, kCols, mode, OCTET_USAGE_BOTH);
        octet::check(octet_quantize(ctx.get(), in.get(), q.get(), &o));
        return q;
      };
      octet::Tensor got = quantize_on(*run.context), want = quantize_on(*run.reference);
      for (bool columnwise : {false, true}) {
        const int64_t rows = columnwise ? kCols : kRows, cols = columnwise ? kRows : kCols;
        const Copy g = read_copy(got, m, rows, cols, columnwise), w = read_copy(want, m, rows, cols, columnwise);
        check.exact(compare_copies(g, w, columnwise ? "columnwise" : "rowwise"));
        if (rht && columnwise) continue;  // the transformed copy holds other values than x
        // Within its block's rounding: X < amax / 3 (MXFP4 RCEIL; NVFP4 about
        // amax / 6), nearest rounding errs by at most X (half the spacing 2 X
        // at the top), stochastic rounding by less than 2 X.
        const std::vector<float> back = decode_copy(g, m, rows, cols);
        double worst = 0, bound = 0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            const float xv = columnwise ? x[size_t(c * kCols + r)] : x[size_t(r * kCols + c)];
            worst = std::fmax(worst, std::fabs(double(back[size_t(r * cols + c)]) - xv));
          }
        for (float v : x) bound = std::fmax(bound, std::fabs(double(v)) * (stochastic ? 2.0 : 1.0) / 3.0 * 1.01);
        check.bounded(worst, bound);
      }
    });
  });
}

void dequantize_row(const ValidationRun& run, const std::string& name, int32_t mode) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      const Mode m = mode_of(mode);
      const std::vector<float> x = test_input(run.seed + 1, kRows, kCols);
      octet::Tensor in = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, {kRows, kCols}, x));
      octet::Tensor q = make_fp4(*run.context, kRows, kCols, mode, OCTET_USAGE_ROWWISE);
      octet::check(octet_quantize(run.context->get(), in.get(), q.get(), nullptr));
      octet::Tensor out = octet::Tensor::create(*run.context, OCTET_DTYPE_FP32, {kRows, kCols});
      octet::check(octet_dequantize(run.context->get(), q.get(), out.get()));
      const HostArray got = download(out, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {kRows, kCols});
      const std::vector<float> want = decode_copy(read_copy(q, m, kRows, kCols, false), m, kRows, kCols);
      check.exact(compare_arrays(got, encode_array(OCTET_DTYPE_FP32, {kRows, kCols}, want)));
    });
  });
}

void gemm_row(const ValidationRun& run, const std::string& name, int32_t mode_a, int32_t mode_b) {
  run.row(name, [&](RowCheck& check) {
    check.run_case(name, [&] {
      const int64_t m = 16, n = 48, k = 96;
      const Mode ma = mode_of(mode_a), mb = mode_of(mode_b);
      const std::vector<float> xa = test_input(run.seed + 2, m, k), xb = test_input(run.seed + 3, n, k);
      octet::Tensor ha = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, {m, k}, xa));
      octet::Tensor hb = upload_plain(*run.context, encode_array(OCTET_DTYPE_FP32, {n, k}, xb));
      octet::Tensor qa = make_fp4(*run.context, m, k, mode_a, OCTET_USAGE_ROWWISE);
      octet::Tensor qb = make_fp4(*run.context, n, k, mode_b, OCTET_USAGE_ROWWISE);
      octet::check(octet_quantize(run.context->get(), ha.get(), qa.get(), nullptr));
      octet::check(octet_quantize(run.context->get(), hb.get(), qb.get(), nullptr));
      octet::Tensor d = octet::Tensor::create(*run.context, OCTET_DTYPE_FP32, {m, n});
      octet::check(octet_gemm(run.context->get(), qa.get(), qb.get(), d.get(), nullptr));
      const std::vector<float> a = decode_copy(read_copy(qa, ma, m, k, false), ma, m, k);
      const std::vector<float> b = decode_copy(read_copy(qb, mb, n, k, false), mb, n, k);
      const std::vector<float> got = widen(download(d, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {m, n}));
      double worst = 0, bound = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const double p = double(a[size_t(i * k + kk)]) * b[size_t(j * k + kk)];
            exact += p;
            magnitude += std::fabs(p);
          }
          // Section 8's bound, plus the one rounding of each decoded value
          // (E4M3 * g) that the GEMM does not make.
          const double err = std::fabs(double(got[size_t(i * n + j)]) - exact);
          const double b_ij = (double(k) * std::ldexp(1.0, -23) + std::ldexp(1.0, -22)) * magnitude +
                              std::ldexp(1.0, -24) * std::fabs(exact) + 1e-30;
          if (err / b_ij > (bound == 0 ? 0 : worst / bound)) {
            worst = err;
            bound = b_ij;
          }
        }
      check.bounded(worst, bound == 0 ? 1 : bound);
    });
  });
}

}  // namespace

void check_fp4(const ValidationRun& run) {
  quantize_row(run, "quantize mxfp4 1x32", OCTET_SCALING_MXFP4_1X32, false, false);
  quantize_row(run, "quantize nvfp4 1x16", OCTET_SCALING_NVFP4_1X16, false, false);
  quantize_row(run, "quantize nvfp4 16x16", OCTET_SCALING_NVFP4_16X16, false, false);
  quantize_row(run, "quantize nvfp4 stochastic", OCTET_SCALING_NVFP4_1X16, true, false);
  quantize_row(run, "quantize nvfp4 hadamard", OCTET_SCALING_NVFP4_1X16, true, true);
  quantize_row(run, "quantize mxfp4 stochastic", OCTET_SCALING_MXFP4_1X32, true, false);
  dequantize_row(run, "dequantize mxfp4", OCTET_SCALING_MXFP4_1X32);
  dequantize_row(run, "dequantize nvfp4", OCTET_SCALING_NVFP4_16X16);
  gemm_row(run, "gemm mxfp4", OCTET_SCALING_MXFP4_1X32, OCTET_SCALING_MXFP4_1X32);
  gemm_row(run, "gemm nvfp4 1x16 x 16x16", OCTET_SCALING_NVFP4_1X16, OCTET_SCALING_NVFP4_16X16);
}

}  // namespace octet_cli
