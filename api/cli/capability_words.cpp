#include "capability_words.hpp"

#include <octet/octet.h>

#include <cstdio>
#include <utility>
#include <vector>

namespace octet_cli {
namespace {

// Joins the names of the set bits; unknown bits are shown as hex so that a
// newer backend's flags are visible rather than silently dropped.
std::string join_flags(uint32_t bits, const std::vector<std::pair<uint32_t, const char*>>& names) {
  std::string out;
  uint32_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if (bits & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  if (bits & ~known) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%x", bits & ~known);
    out += (out.empty() ? "unknown " : ", unknown ") + std::string(hex);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string memory_kind_words(int32_t kind) {
  switch (kind) {
    case OCTET_MEMORY_HOST:
      return "host";
    case OCTET_MEMORY_DEVICE:
      return "device";
    default:
      return "unknown (" + std::to_string(kind) + ")";
  }
}

std::string dtype_list(uint32_t dtype_bits) {
  std::vector<std::pair<uint32_t, const char*>> names;
  for (octet_dtype d : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16, OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2,
                        OCTET_DTYPE_E8M0, OCTET_DTYPE_E2M1})
    names.emplace_back(OCTET_DTYPE_BIT(d), octet_dtype_name(d));
  return join_flags(dtype_bits, names);
}

std::string scaling_mode_list(uint32_t modes) {
  return join_flags(modes, {{OCTET_SCALING_PER_TENSOR, "per-tensor"},
                            {OCTET_SCALING_MXFP8_1X32, "mxfp8 1x32"},
                            {OCTET_SCALING_BLOCK_1X128, "block 1x128"},
                            {OCTET_SCALING_BLOCK_128X128, "block 128x128"},
                            {OCTET_SCALING_PER_ROW, "per-row"},
                            {OCTET_SCALING_PER_COLUMN, "per-column"},
                            {OCTET_SCALING_MXFP4_1X32, "mxfp4 1x32"},
                            {OCTET_SCALING_NVFP4_1X16, "nvfp4 1x16"},
                            {OCTET_SCALING_NVFP4_16X16, "nvfp4 16x16"}});
}

std::string gemm_layout_list(uint32_t layouts) {
  return join_flags(layouts, {{OCTET_GEMM_LAYOUT_TN, "TN"},
                              {OCTET_GEMM_LAYOUT_NN, "NN"},
                              {OCTET_GEMM_LAYOUT_TT, "TT"},
                              {OCTET_GEMM_LAYOUT_NT, "NT"}});
}

std::string feature_list(uint32_t features) {
  return join_flags(features, {{OCTET_FEATURE_CONVERT, "convert"},
                               {OCTET_FEATURE_AMAX, "amax"},
                               {OCTET_FEATURE_QUANTIZE, "quantize"},
                               {OCTET_FEATURE_FUSED_CAST_TRANSPOSE, "fused cast+transpose"},
                               {OCTET_FEATURE_TRANSPOSE, "transpose"},
                               {OCTET_FEATURE_DEQUANTIZE, "dequantize"},
                               {OCTET_FEATURE_GEMM_FP8, "fp8 gemm"},
                               {OCTET_FEATURE_GEMM_HIGH_PRECISION, "high-precision gemm"},
                               // plugin ABI 1.1
                               {OCTET_FEATURE_QUANTIZE_STATISTICS, "quantize statistics"},
                               {OCTET_FEATURE_BLOCK_QUANTIZE, "block quantize"},
                               {OCTET_FEATURE_BLOCK_GEMM, "block gemm"},
                               // plugin ABI 1.2 (layers)
                               {OCTET_FEATURE_NORM, "norm"},
                               {OCTET_FEATURE_ACTIVATION, "activation"},
                               {OCTET_FEATURE_BIAS_GRADIENT, "bias gradient"},
                               {OCTET_FEATURE_ACCUMULATE, "accumulate"},
                               // plugin ABI 1.3
                               {OCTET_FEATURE_GEMM_FP8_OUTPUT, "fp8 gemm output"},
                               // plugin ABI 1.4 (FP4)
                               {OCTET_FEATURE_FP4_QUANTIZE, "fp4 quantize"},
                               {OCTET_FEATURE_FP4_GEMM, "fp4 gemm"},
                               {OCTET_FEATURE_STOCHASTIC_ROUNDING, "stochastic rounding"},
                               {OCTET_FEATURE_HADAMARD_TRANSFORM, "hadamard transform"},
                               // plugin ABI 1.5
                               {OCTET_FEATURE_GROUPED_GEMM, "grouped gemm"}});
}

std::string profile_name(int32_t profile) {
  switch (profile) {
    case OCTET_PROFILE_NATIVE:
      return "native";
    case OCTET_PROFILE_HOPPER_LIKE:
      return "hopper-like";
    case OCTET_PROFILE_BLACKWELL_LIKE:
      return "blackwell-like";
    default:
      return "profile " + std::to_string(profile);
  }
}

std::string layout_name(bool trans_a, bool trans_b) {
  if (!trans_a) return trans_b ? "NN" : "TN";
  return trans_b ? "NT" : "TT";
}

}  // namespace octet_cli
