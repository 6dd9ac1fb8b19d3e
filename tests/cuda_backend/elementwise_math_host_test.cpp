// The NaN bits of the element-wise kernels (elementwise.cu): quantize's
// x * scale and 1 / scale, and dequantize's decode(q) * scale_inv, use
// host_float_ops.cuh so that a GPU writes the reference's NaNs (octet_math.h's
// rule). Here those very operations, compiled for the host, are compared with
// the reference's table on inputs where two different NaNs meet, which checks
// that the device code names the operands in the reference's order.
#include <octet/octet_backend.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "codecs.cuh"
#include "host_float_ops.cuh"
#include "octet_reference/reference_backend.h"

namespace {

using octet_cuda::bits_of;
using octet_cuda::float_of;

struct Reference {
  const octet_backend_api* api = nullptr;
  octet_backend_context* context = nullptr;
  octet_host_services host{};
  octet_backend_caps caps{};
  Reference() {
    EXPECT_EQ(octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api),
              OCTET_STATUS_SUCCESS);
    host.struct_size = sizeof host;
    host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host.report_error = [](void*, int32_t, const char*) {};
    caps.struct_size = sizeof caps;
    EXPECT_EQ(api->initialize(&host, &caps), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(api->context_create(nullptr, &context), OCTET_STATUS_SUCCESS);
  }
  ~Reference() { api->context_destroy(context); }
};

// NaNs of both signs with distinct payloads, and the non-NaN values that
// make an invalid operation (0 * inf).
const uint32_t kOperands[] = {0x7FC00001u, 0xFFC00002u, 0x7F800003u, 0xFF800004u, 0x7F800000u,
                              0xFF800000u, 0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u};

TEST(CudaElementwiseMathOnHost, QuantizeNaNsAreTheReferences) {
  Reference ref;
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (uint32_t scale_bits : kOperands) {
      std::vector<float> x;
      for (uint32_t b : kOperands) x.push_back(float_of(b));
      const float scale = float_of(scale_bits);
      std::vector<uint8_t> codes(x.size());
      float scale_inv = 0.0f;
      octet_quantize_args args{};
      args.struct_size = sizeof args;
      args.input = octet_matrix_view{x.data(), OCTET_DTYPE_FP32, 0, 1, int64_t(x.size()), int64_t(x.size())};
      args.out_dtype = dtype;
      args.saturate = 0;
      args.scale = &scale;
      args.rowwise_out = codes.data();
      args.scale_inv_out = &scale_inv;
      ASSERT_EQ(ref.api->quantize(ref.context, &args), OCTET_STATUS_SUCCESS);
      for (size_t i = 0; i < x.size(); ++i) {
        const uint8_t ours = octet_cuda::fp8_encode(octet_cuda::host_mul(x[i], scale), dtype == OCTET_DTYPE_E4M3, false);
        EXPECT_EQ(int(ours), int(codes[i])) << std::hex << "x 0x" << bits_of(x[i]) << " scale 0x" << scale_bits;
      }
      EXPECT_EQ(bits_of(octet_cuda::host_div(1.0f, scale)), bits_of(scale_inv)) << std::hex << "scale 0x" << scale_bits;
    }
  }
}

TEST(CudaElementwiseMathOnHost, DequantizeNaNsAreTheReferences) {
  Reference ref;
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    std::vector<uint8_t> codes;
    for (uint32_t c = 0; c < 256; ++c) codes.push_back(uint8_t(c));
    for (uint32_t scale_bits : kOperands) {
      const float scale_inv = float_of(scale_bits);
      std::vector<float> out(codes.size());
      octet_dequantize_args args{};
      args.struct_size = sizeof args;
      args.input = octet_matrix_view{codes.data(), dtype, 0, 1, 256, 256};
      args.scale_inv = &scale_inv;
      args.output = octet_matrix_view{out.data(), OCTET_DTYPE_FP32, 0, 1, 256, 256};
      ASSERT_EQ(ref.api->dequantize(ref.context, &args), OCTET_STATUS_SUCCESS);
      for (size_t c = 0; c < codes.size(); ++c) {
        const float q = octet_cuda::fp8_decode(codes[c], dtype == OCTET_DTYPE_E4M3);
        EXPECT_EQ(bits_of(octet_cuda::host_mul(q, scale_inv)), bits_of(out[c]))
            << std::hex << "code 0x" << c << " scale_inv 0x" << scale_bits;
      }
    }
  }
}

}  // namespace
