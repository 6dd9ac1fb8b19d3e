// Capability flags and enums of octet.h spelled out in words, for `octet info`
// and for the row labels of `octet validate`.
#pragma once

#include <cstdint>
#include <string>

namespace octet_cli {

std::string memory_kind_words(int32_t kind);
std::string dtype_list(uint32_t dtype_bits);
std::string scaling_mode_list(uint32_t modes);
std::string gemm_layout_list(uint32_t layouts);
std::string feature_list(uint32_t features);
std::string profile_name(int32_t profile);
// "TN", "NN", "TT", "NT" for the transpose flags of octet_gemm.
std::string layout_name(bool trans_a, bool trans_b);

}  // namespace octet_cli
