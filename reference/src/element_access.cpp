// Widening and narrowing of single elements of any octet_dtype, the one place
// where the reference kernels meet storage formats.
#include <octet/octet_types.h>

#include <cstring>

#include "octet_reference/codecs.hpp"

namespace octet::ref {
namespace {

template <typename T>
T read_at(const void* base, std::size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(base) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void write_at(void* base, std::size_t index, T value) {
  std::memcpy(static_cast<unsigned char*>(base) + index * sizeof(T), &value, sizeof(T));
}

}  // namespace

bool load_element(const void* base, int32_t dtype, std::size_t index, float* value) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: *value = read_at<float>(base, index); return true;
    case OCTET_DTYPE_BF16: *value = bf16_decode(read_at<uint16_t>(base, index)); return true;
    case OCTET_DTYPE_FP16: *value = fp16_decode(read_at<uint16_t>(base, index)); return true;
    case OCTET_DTYPE_E4M3:
      *value = fp8_decode(read_at<uint8_t>(base, index), Fp8Format::E4M3);
      return true;
    case OCTET_DTYPE_E5M2:
      *value = fp8_decode(read_at<uint8_t>(base, index), Fp8Format::E5M2);
      return true;
    case OCTET_DTYPE_E4M3FNUZ:
      *value = fp8_decode(read_at<uint8_t>(base, index), Fp8Format::E4M3FNUZ);
      return true;
    case OCTET_DTYPE_E5M2FNUZ:
      *value = fp8_decode(read_at<uint8_t>(base, index), Fp8Format::E5M2FNUZ);
      return true;
    case OCTET_DTYPE_E8M0: *value = e8m0_decode(read_at<uint8_t>(base, index)); return true;
    default:
      return false;  // E2M1 too: packed tensors are not stored by the reference
  }
}

bool store_element(void* base, int32_t dtype, std::size_t index, float value, bool saturate) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: write_at<float>(base, index, value); return true;
    case OCTET_DTYPE_BF16: write_at<uint16_t>(base, index, bf16_encode(value)); return true;
    case OCTET_DTYPE_FP16: write_at<uint16_t>(base, index, fp16_encode(value)); return true;
    case OCTET_DTYPE_E4M3:
      write_at<uint8_t>(base, index, fp8_encode(value, Fp8Format::E4M3, saturate));
      return true;
    case OCTET_DTYPE_E5M2:
      write_at<uint8_t>(base, index, fp8_encode(value, Fp8Format::E5M2, saturate));
      return true;
    case OCTET_DTYPE_E4M3FNUZ:
      write_at<uint8_t>(base, index, fp8_encode(value, Fp8Format::E4M3FNUZ, saturate));
      return true;
    case OCTET_DTYPE_E5M2FNUZ:
      write_at<uint8_t>(base, index, fp8_encode(value, Fp8Format::E5M2FNUZ, saturate));
      return true;
    case OCTET_DTYPE_E8M0:
      // A scale is never allowed to shrink a block's values past the format's
      // range, so values become E8M0 with the exponent rounded up (RCEIL rule).
      write_at<uint8_t>(base, index, e8m0_encode(value, /*round_up=*/true));
      return true;
    default: return false;
  }
}

}  // namespace octet::ref
