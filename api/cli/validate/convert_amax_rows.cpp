// Rows for octet_convert and octet_amax. Expectations: the scalar codecs of
// octet.h for the plain reference, the reference context for anything else.
#include <cmath>
#include <cstdio>
#include <limits>

#include "validate/row_families.hpp"

namespace octet_cli {

const std::vector<std::vector<int64_t>>& elementwise_shapes() {
  static const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {7, 13}, {67, 131}, {129, 65}, {1481, 677}};
  return shapes;
}

namespace {

HostArray run_convert(octet::Context& context, const HostArray& input, octet_dtype out_dtype, bool saturate) {
  octet::Tensor in = upload_plain(context, input);
  octet::Tensor out = octet::Tensor::create(context, out_dtype, input.shape);
  octet::convert(context, in, out, saturate);
  return download(out, OCTET_COMPONENT_DATA, out_dtype, input.shape);
}

// The conversion rule composed from the scalar codecs: widen exactly, then
// narrow once.
HostArray host_convert(const HostArray& input, octet_dtype out_dtype, bool saturate) {
  return encode_array(out_dtype, input.shape, widen(input), saturate);
}

void convert_row(const ValidationRun& run, const std::string& operation, const std::vector<HostArray>& inputs,
                 octet_dtype out_dtype, bool saturate) {
  run.row(operation, [&](RowCheck& check) {
    for (const HostArray& input : inputs) {
      check.run_case(shape_words(input.shape), [&] {
        const HostArray got = run_convert(*run.context, input, out_dtype, saturate);
        const HostArray expected = run.target.is_plain_reference()
                                       ? host_convert(input, out_dtype, saturate)
                                       : run_convert(*run.reference, input, out_dtype, saturate);
        check.exact(compare_arrays(got, expected));
      });
    }
  });
}

std::vector<HostArray> float_inputs(octet_dtype dtype, uint64_t seed) {
  std::vector<HostArray> inputs;
  std::mt19937_64 rng(seed);
  for (const auto& shape : elementwise_shapes()) {
    const size_t n = static_cast<size_t>(shape[0] * shape[1]);
    inputs.push_back(encode_array(dtype, shape, floats_with_specials(n, rng)));
  }
  return inputs;
}

// Every code of a 1- or 2-byte format once (a square of them), then random
// codes in ragged shapes.
std::vector<HostArray> code_inputs(octet_dtype dtype, uint64_t seed) {
  const size_t size = octet_dtype_size(dtype);
  const int64_t side = size == 1 ? 16 : 256;
  std::vector<HostArray> inputs;
  HostArray all = make_array(dtype, {side, side});
  for (size_t i = 0; i < all.count(); ++i)
    for (size_t b = 0; b < size; ++b) all.bytes[i * size + b] = static_cast<uint8_t>(i >> (8 * b));
  inputs.push_back(all);
  std::mt19937_64 rng(seed);
  for (const auto& shape : elementwise_shapes()) {
    HostArray a = make_array(dtype, shape);
    for (auto& byte : a.bytes) byte = static_cast<uint8_t>(rng());
    inputs.push_back(a);
  }
  return inputs;
}

}  // namespace

void check_convert(const ValidationRun& run) {
  const auto fp32 = float_inputs(OCTET_DTYPE_FP32, run.seed + 1);
  for (octet_dtype fp8 : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (bool saturate : {true, false}) {
      convert_row(run,
                  std::string("convert fp32->") + octet_dtype_name(fp8) + (saturate ? " saturate" : " no-saturate"),
                  fp32, fp8, saturate);
    }
  }
  for (octet_dtype fp8 : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2})
    convert_row(run, std::string("convert ") + octet_dtype_name(fp8) + "->fp32 (all codes)",
                code_inputs(fp8, run.seed + 2), OCTET_DTYPE_FP32, true);
  // FP8 -> FP8 on raw codes: E5M2's inf, NaNs and range beyond 448 meet
  // E4M3's overflow rule; E4M3's 3-bit mantissas round into E5M2's 2 bits.
  const auto e5m2_codes = code_inputs(OCTET_DTYPE_E5M2, run.seed + 5);
  convert_row(run, "convert e5m2->e4m3 saturate (all codes)", e5m2_codes, OCTET_DTYPE_E4M3, true);
  convert_row(run, "convert e5m2->e4m3 no-saturate (all codes)", e5m2_codes, OCTET_DTYPE_E4M3, false);
  convert_row(run, "convert e4m3->e5m2 (all codes)", code_inputs(OCTET_DTYPE_E4M3, run.seed + 6), OCTET_DTYPE_E5M2,
              true);
  for (octet_dtype half : {OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    const std::string name = octet_dtype_name(half);
    convert_row(run, "convert fp32->" + name, fp32, half, true);
    convert_row(run, "convert " + name + "->fp32 (all codes)", code_inputs(half, run.seed + 3), OCTET_DTYPE_FP32, true);
    convert_row(run, "convert " + name + "->e4m3 saturate", float_inputs(half, run.seed + 4), OCTET_DTYPE_E4M3, true);
  }
  // The FNUZ formats (numerics.md section 1; "unsupported" on a backend that
  // does not declare them): one NaN code 0x80, no negative zero, no inf.
  for (octet_dtype fnuz : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    const std::string name = octet_dtype_name(fnuz);
    for (bool saturate : {true, false})
      convert_row(run, "convert fp32->" + name + (saturate ? " saturate" : " no-saturate"), fp32, fnuz, saturate);
    convert_row(run, "convert " + name + "->fp32 (all codes)", code_inputs(fnuz, run.seed + 7), OCTET_DTYPE_FP32, true);
  }
  // Between the FNUZ formats and to and from their OCP twins, on raw codes:
  // E5M2FNUZ's range meets E4M3FNUZ's 240; OCP NaNs, infs and -0 meet FNUZ's
  // single NaN and unsigned zero; FNUZ's 0x80 becomes an OCP NaN.
  const auto e5m2fnuz_codes = code_inputs(OCTET_DTYPE_E5M2FNUZ, run.seed + 8);
  convert_row(run, "convert e5m2fnuz->e4m3fnuz saturate (all codes)", e5m2fnuz_codes, OCTET_DTYPE_E4M3FNUZ, true);
  convert_row(run, "convert e5m2fnuz->e4m3fnuz no-saturate (all codes)", e5m2fnuz_codes, OCTET_DTYPE_E4M3FNUZ, false);
  convert_row(run, "convert e4m3->e4m3fnuz saturate (all codes)", code_inputs(OCTET_DTYPE_E4M3, run.seed + 9),
              OCTET_DTYPE_E4M3FNUZ, true);
  convert_row(run, "convert e5m2->e5m2fnuz no-saturate (all codes)", code_inputs(OCTET_DTYPE_E5M2, run.seed + 10),
              OCTET_DTYPE_E5M2FNUZ, false);
  convert_row(run, "convert e4m3fnuz->e4m3 (all codes)", code_inputs(OCTET_DTYPE_E4M3FNUZ, run.seed + 11),
              OCTET_DTYPE_E4M3, true);
  convert_row(run, "convert bf16->e4m3fnuz saturate", float_inputs(OCTET_DTYPE_BF16, run.seed + 12),
              OCTET_DTYPE_E4M3FNUZ, true);
}

namespace {

float host_amax(const HostArray& input) {
  float amax = 0.0f;
  // fmaxf ignores NaN, as the contract says amax does.
  for (size_t i = 0; i < input.count(); ++i) amax = std::fmax(amax, std::fabs(input.get(i)));
  return amax;
}

float run_amax(octet::Context& context, const HostArray& input) {
  octet::Tensor t = upload_plain(context, input);
  return octet::amax(context, t);
}

std::string compare_amax(float got, float expected) {
  if (got == expected && std::signbit(got) == std::signbit(expected)) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "amax %.9g, expected %.9g", got, expected);
  return buf;
}

}  // namespace

void check_amax(const ValidationRun& run) {
  for (octet_dtype dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    const std::string operation = std::string("amax ") + octet_dtype_name(dtype);
    run.row(operation, [&](RowCheck& check) {
      std::mt19937_64 rng(run.seed + 10 + static_cast<uint64_t>(dtype));
      for (const auto& shape : elementwise_shapes()) {
        const size_t n = static_cast<size_t>(shape[0] * shape[1]);
        // Three variants: finite values; a NaN (ignored) near the end; an inf.
        for (int variant = 0; variant < 3; ++variant) {
          std::vector<float> values = random_floats(n, rng, -12, 12);
          if (variant == 1) values[n - 1] = std::numeric_limits<float>::quiet_NaN();
          if (variant == 2) values[n / 2] = -std::numeric_limits<float>::infinity();
          const HostArray input = encode_array(dtype, shape, values);
          check.run_case(shape_words(shape) + " variant " + std::to_string(variant), [&] {
            const float got = run_amax(*run.context, input);
            const float expected = run.target.is_plain_reference() ? host_amax(input) : run_amax(*run.reference, input);
            check.exact(compare_amax(got, expected));
          });
        }
      }
    });
  }
}

}  // namespace octet_cli
