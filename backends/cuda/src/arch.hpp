// What the device's SM allows, for initialize()'s caps and the GEMM's layout
// rule: host-only and free of CUDA headers, so tests/cuda_backend checks it on
// any machine (arch_host_test.cpp).
#pragma once

namespace octet_cuda {

struct ArchProfile {
  // MX block scaling in the tensor cores (SM 10.x and newer): MXFP8 declared.
  bool mxfp8;
  // cuBLASLt runs FP8 GEMMs in every layout (TN, NN, TT, NT): SM 10.x and
  // 11.x. Its documentation requires TN ("A transposed, B non-transposed")
  // on Ada (8.9), Hopper (9.0) and Blackwell GeForce (12.x), and newer SMs are
  // unknown: TN only there. Also native_columnwise (columnwise operands read
  // as they are, no TN copies) follows it.
  bool fp8_all_layouts;
};

inline ArchProfile arch_profile(int major) {
  ArchProfile profile{};
  profile.mxfp8 = major >= 10;
  profile.fp8_all_layouts = major == 10 || major == 11;
  return profile;
}

}  // namespace octet_cuda
