// The users' scalar and array codecs: thin checks over the reference's exact
// codecs, so every backend is measured against the same definitions.
#include <octet/octet.h>
#include <octet_reference/codecs.hpp>

#include <limits>

#include "runtime/error.hpp"

namespace {

using octet::core::fail;
using octet::core::guarded;
using octet::core::require;
using octet::ref::Fp8Format;

bool fp8_format_of(int32_t dtype, Fp8Format* format) {
  if (dtype == OCTET_DTYPE_E4M3) { *format = Fp8Format::E4M3; return true; }
  if (dtype == OCTET_DTYPE_E5M2) { *format = Fp8Format::E5M2; return true; }
  return false;
}

Fp8Format require_fp8_format(int32_t dtype) {
  Fp8Format format;
  if (!fp8_format_of(dtype, &format))
    fail(OCTET_STATUS_INVALID_ARGUMENT, "argument 'dtype' (", dtype,
         ") must be OCTET_DTYPE_E4M3 (10) or OCTET_DTYPE_E5M2 (12)");
  return format;
}

void require_rounding(int32_t rounding) {
  require(rounding == OCTET_E8M0_ROUND_CEIL || rounding == OCTET_E8M0_ROUND_FLOOR,
          "argument 'rounding' (", rounding,
          ") must be OCTET_E8M0_ROUND_CEIL or OCTET_E8M0_ROUND_FLOOR");
}

template <typename In, typename Out>
void require_arrays(const In* in, Out* out, size_t n) {
  if (n == 0) return;
  require(in != nullptr, "argument 'in' is NULL");
  require(out != nullptr, "argument 'out' is NULL");
  const char* in_begin = reinterpret_cast<const char*>(in);
  const char* out_begin = reinterpret_cast<const char*>(out);
  bool overlap = in_begin < out_begin + n * sizeof(Out) && out_begin < in_begin + n * sizeof(In);
  require(!overlap, "arguments 'in' and 'out' overlap");
}

}  // namespace

extern "C" {

OCTET_API uint8_t octet_fp8_encode(float value, int32_t dtype, int32_t saturate) {
  uint8_t code = 0xFF;  // NaN in both formats: an invalid dtype is never a number
  guarded("octet_fp8_encode", [&] {
    code = octet::ref::fp8_encode(value, require_fp8_format(dtype), saturate != 0);
  });
  return code;
}

OCTET_API float octet_fp8_decode(uint8_t code, int32_t dtype) {
  float value = std::numeric_limits<float>::quiet_NaN();
  guarded("octet_fp8_decode", [&] { value = octet::ref::fp8_decode(code, require_fp8_format(dtype)); });
  return value;
}

OCTET_API uint16_t octet_bf16_encode(float value) { return octet::ref::bf16_encode(value); }
OCTET_API float octet_bf16_decode(uint16_t code) { return octet::ref::bf16_decode(code); }
OCTET_API uint16_t octet_fp16_encode(float value) { return octet::ref::fp16_encode(value); }
OCTET_API float octet_fp16_decode(uint16_t code) { return octet::ref::fp16_decode(code); }

OCTET_API uint8_t octet_e8m0_encode(float value, int32_t rounding) {
  uint8_t code = 0xFF;
  guarded("octet_e8m0_encode", [&] {
    require_rounding(rounding);
    code = octet::ref::e8m0_encode(value, rounding == OCTET_E8M0_ROUND_CEIL);
  });
  return code;
}

OCTET_API float octet_e8m0_decode(uint8_t code) { return octet::ref::e8m0_decode(code); }

OCTET_API octet_status octet_fp8_encode_array(const float* in, uint8_t* out, size_t n,
                                             int32_t dtype, int32_t saturate) {
  return guarded("octet_fp8_encode_array", [&] {
    Fp8Format format = require_fp8_format(dtype);
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp8_encode(in[i], format, saturate != 0);
  });
}

OCTET_API octet_status octet_fp8_decode_array(const uint8_t* in, float* out, size_t n,
                                             int32_t dtype) {
  return guarded("octet_fp8_decode_array", [&] {
    Fp8Format format = require_fp8_format(dtype);
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp8_decode(in[i], format);
  });
}

OCTET_API octet_status octet_bf16_encode_array(const float* in, uint16_t* out, size_t n) {
  return guarded("octet_bf16_encode_array", [&] {
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::bf16_encode(in[i]);
  });
}

OCTET_API octet_status octet_bf16_decode_array(const uint16_t* in, float* out, size_t n) {
  return guarded("octet_bf16_decode_array", [&] {
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::bf16_decode(in[i]);
  });
}

OCTET_API octet_status octet_fp16_encode_array(const float* in, uint16_t* out, size_t n) {
  return guarded("octet_fp16_encode_array", [&] {
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp16_encode(in[i]);
  });
}

OCTET_API octet_status octet_fp16_decode_array(const uint16_t* in, float* out, size_t n) {
  return guarded("octet_fp16_decode_array", [&] {
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp16_decode(in[i]);
  });
}

OCTET_API octet_status octet_e8m0_encode_array(const float* in, uint8_t* out, size_t n,
                                              int32_t rounding) {
  return guarded("octet_e8m0_encode_array", [&] {
    require_rounding(rounding);
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i)
      out[i] = octet::ref::e8m0_encode(in[i], rounding == OCTET_E8M0_ROUND_CEIL);
  });
}

OCTET_API octet_status octet_e8m0_decode_array(const uint8_t* in, float* out, size_t n) {
  return guarded("octet_e8m0_decode_array", [&] {
    require_arrays(in, out, n);
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::e8m0_decode(in[i]);
  });
}

}  // extern "C"
