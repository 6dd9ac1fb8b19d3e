// Rows for octet_quantize (every component of the quantized tensor) and
// octet_dequantize. Expectations: numerics.md section 7 composed from the
// scalar codecs for the plain reference, the reference context otherwise.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

// A quantized tensor read back: which copies exist, and their contents.
struct Quantized {
  bool has_rowwise = false;
  bool has_columnwise = false;
  HostArray rowwise;     // [rows, cols] codes, when has_rowwise
  HostArray columnwise;  // [cols, rows] codes, when has_columnwise
  float scale_inv = 0;
  float amax = 0;

  // The codes in row-major order, from whichever copy exists.
  HostArray logical_codes() const {
    if (has_rowwise) return rowwise;
    HostArray a = columnwise;
    a.shape = {columnwise.shape[1], columnwise.shape[0]};
    a.bytes = transpose_bytes(columnwise.bytes, columnwise.shape[0], columnwise.shape[1], 1);
    return a;
  }
};

struct QuantizeCase {
  HostArray input;
  octet_dtype fp8;
  uint32_t usages;
  float scale;
  bool saturate;
};

Quantized run_quantize(octet::Context& context, const QuantizeCase& c) {
  octet::Tensor in = upload_plain(context, c.input);
  octet::Tensor q = octet::Tensor::create(context, c.fp8, c.input.shape, c.usages);
  q.set_scale(c.scale);
  octet::quantize(context, in, q, 0, c.saturate);
  const octet_tensor_info info = q.info();
  const int64_t rows = c.input.rows(), cols = c.input.cols();
  Quantized out;
  out.has_rowwise = info.has_rowwise_data != 0;
  out.has_columnwise = info.has_columnwise_data != 0;
  if (out.has_rowwise) out.rowwise = download(q, OCTET_COMPONENT_DATA, c.fp8, {rows, cols});
  if (out.has_columnwise) out.columnwise = download(q, OCTET_COMPONENT_COLUMNWISE_DATA, c.fp8, {cols, rows});
  out.scale_inv = q.scale_inv();
  out.amax = q.amax();
  return out;
}

// q = fp8(x * scale) with the product rounded in FP32; scale_inv = 1/scale.
Quantized host_quantize(const QuantizeCase& c) {
  std::vector<float> scaled = widen(c.input);
  float amax = 0.0f;
  for (float& v : scaled) {
    amax = std::fmax(amax, std::fabs(v));
    v = v * c.scale;
  }
  Quantized out;
  out.has_rowwise = true;
  out.rowwise = encode_array(c.fp8, {c.input.rows(), c.input.cols()}, scaled, c.saturate);
  out.scale_inv = 1.0f / c.scale;
  out.amax = amax;
  return out;
}

std::string same_float(const char* what, float got, float expected) {
  uint32_t g, e;
  std::memcpy(&g, &got, 4);
  std::memcpy(&e, &expected, 4);
  if (g == e || (std::isnan(got) && std::isnan(expected))) return "";
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s is %.9g (%s), expected %.9g (%s)", what, got, hex_code(g, 8).c_str(), expected,
                hex_code(e, 8).c_str());
  return buf;
}

// Every component of `got`, and which copies it holds: the rule of octet.h
// (DATA with the rowwise usage or native columnwise access; a transposed
// copy with the columnwise usage on a backend without native access).
std::string compare_quantized(const Quantized& got, const Quantized& expected_q, uint32_t usages,
                              bool native_columnwise) {
  const bool want_rowwise = (usages & OCTET_USAGE_ROWWISE) || native_columnwise;
  const bool want_columnwise = (usages & OCTET_USAGE_COLUMNWISE) && !native_columnwise;
  if (got.has_rowwise != want_rowwise || got.has_columnwise != want_columnwise)
    return "tensor holds rowwise=" + std::to_string(got.has_rowwise) +
           " columnwise=" + std::to_string(got.has_columnwise) + ", expected rowwise=" + std::to_string(want_rowwise) +
           " columnwise=" + std::to_string(want_columnwise) + " (native columnwise " +
           std::to_string(native_columnwise) + ")";
  const HostArray codes = expected_q.logical_codes();
  if (got.has_rowwise) {
    const std::string d = compare_arrays(got.rowwise, codes);
    if (!d.empty()) return "DATA " + d;
  }
  if (got.has_columnwise) {
    HostArray transposed = codes;
    transposed.shape = {codes.shape[1], codes.shape[0]};
    transposed.bytes = transpose_bytes(codes.bytes, codes.shape[0], codes.shape[1], 1);
    const std::string d = compare_arrays(got.columnwise, transposed);
    if (!d.empty()) return "COLUMNWISE_DATA " + d;
  }
  std::string d = same_float("SCALE_INV", got.scale_inv, expected_q.scale_inv);
  if (d.empty()) d = same_float("AMAX", got.amax, expected_q.amax);
  return d;
}

std::string usage_words(uint32_t usages) {
  if (usages == OCTET_USAGE_BOTH) return "both";
  return usages == OCTET_USAGE_ROWWISE ? "rowwise" : "columnwise";
}

void quantize_row(const ValidationRun& run, octet_dtype in_dtype, octet_dtype fp8, uint32_t usages, bool saturate) {
  std::string operation =
      std::string("quantize ") + octet_dtype_name(in_dtype) + "->" + octet_dtype_name(fp8) + " " + usage_words(usages);
  if (!saturate) operation += " no-saturate";
  run.row(operation, [&](RowCheck& check) {
    const bool native = run.context->info().native_columnwise;
    std::vector<std::vector<int64_t>> shapes = elementwise_shapes();
    shapes.push_back({2, 5, 7});  // rows = 2*5: the matrix view of a 3-D tensor
    const float scales[] = {1.0f, 0.0371f, 17.5f, 3.0f, 0.25f, 1000.0f};
    std::mt19937_64 rng(run.seed + 20);
    for (size_t s = 0; s < shapes.size(); ++s) {
      size_t n = 1;
      for (int64_t d : shapes[s]) n *= static_cast<size_t>(d);
      const QuantizeCase c{encode_array(in_dtype, shapes[s], floats_with_specials(n, rng)), fp8, usages, scales[s % 6],
                           saturate};
      check.run_case(shape_words(shapes[s]), [&] {
        const Quantized got = run_quantize(*run.context, c);
        const Quantized expected = run.target.is_plain_reference() ? host_quantize(c) : run_quantize(*run.reference, c);
        check.exact(compare_quantized(got, expected, usages, native));
      });
    }
  });
}

}  // namespace

void check_quantize(const ValidationRun& run) {
  for (octet_dtype fp8 : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2})
    for (uint32_t usages : {OCTET_USAGE_ROWWISE, OCTET_USAGE_COLUMNWISE, OCTET_USAGE_BOTH})
      quantize_row(run, OCTET_DTYPE_FP32, fp8, usages, true);
  quantize_row(run, OCTET_DTYPE_FP32, OCTET_DTYPE_E4M3, OCTET_USAGE_BOTH, false);
  quantize_row(run, OCTET_DTYPE_FP32, OCTET_DTYPE_E5M2, OCTET_USAGE_BOTH, false);
  quantize_row(run, OCTET_DTYPE_BF16, OCTET_DTYPE_E4M3, OCTET_USAGE_BOTH, true);
  quantize_row(run, OCTET_DTYPE_FP16, OCTET_DTYPE_E5M2, OCTET_USAGE_BOTH, true);
  // The FNUZ formats ("unsupported" on a backend that does not declare them).
  for (octet_dtype fp8 : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ})
    for (bool saturate : {true, false}) quantize_row(run, OCTET_DTYPE_FP32, fp8, OCTET_USAGE_BOTH, saturate);
  quantize_row(run, OCTET_DTYPE_BF16, OCTET_DTYPE_E4M3FNUZ, OCTET_USAGE_ROWWISE, true);
}

namespace {

HostArray run_dequantize(octet::Context& context, const HostArray& codes, float scale_inv, octet_dtype out_dtype) {
  octet::Tensor q = octet::Tensor::create(context, codes.dtype, codes.shape, OCTET_USAGE_ROWWISE);
  q.copy_from_host(OCTET_COMPONENT_DATA, codes.bytes.data(), codes.bytes.size());
  q.copy_from_host(OCTET_COMPONENT_SCALE_INV, &scale_inv, sizeof scale_inv);
  octet::Tensor out = octet::Tensor::create(context, out_dtype, codes.shape);
  octet::dequantize(context, q, out);
  return download(out, OCTET_COMPONENT_DATA, out_dtype, codes.shape);
}

// x' = decode(q) * scale_inv in FP32, then narrowed to the output dtype.
HostArray host_dequantize(const HostArray& codes, float scale_inv, octet_dtype out_dtype) {
  std::vector<float> values = widen(codes);
  for (float& v : values) v = v * scale_inv;
  return encode_array(out_dtype, codes.shape, values);
}

}  // namespace

void check_dequantize(const ValidationRun& run) {
  const float scale_invs[] = {1.0f, 0.0371f, 3.5f, 1.0f / 448.0f, 64.0f, 0.001f};
  for (octet_dtype fp8 : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    for (octet_dtype out : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      const std::string operation = std::string("dequantize ") + octet_dtype_name(fp8) + "->" + octet_dtype_name(out);
      run.row(operation, [&](RowCheck& check) {
        std::vector<HostArray> inputs;
        HostArray all = make_array(fp8, {16, 16});  // every code once
        for (size_t i = 0; i < 256; ++i) all.bytes[i] = static_cast<uint8_t>(i);
        inputs.push_back(all);
        std::mt19937_64 rng(run.seed + 30);
        for (const auto& shape : elementwise_shapes()) {
          HostArray a = make_array(fp8, shape);
          for (auto& byte : a.bytes) byte = static_cast<uint8_t>(rng());
          inputs.push_back(a);
        }
        for (size_t i = 0; i < inputs.size(); ++i) {
          const float scale_inv = scale_invs[i % 6];
          check.run_case(shape_words(inputs[i].shape), [&] {
            const HostArray got = run_dequantize(*run.context, inputs[i], scale_inv, out);
            const HostArray expected = run.target.is_plain_reference()
                                           ? host_dequantize(inputs[i], scale_inv, out)
                                           : run_dequantize(*run.reference, inputs[i], scale_inv, out);
            check.exact(compare_arrays(got, expected));
          });
        }
      });
    }
  }
}

}  // namespace octet_cli
