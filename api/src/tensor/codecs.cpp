// The users' scalar and array codecs: thin checks over the reference's exact
// codecs, so every backend is measured against the same definitions.
#include <octet/octet.h>
#include <octet_reference/codecs.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/error.hpp"

namespace {

using octet::core::fail;
using octet::core::guarded;
using octet::core::require;
using octet::ref::Fp8Format;

Fp8Format require_fp8_format(int32_t dtype) {
  Fp8Format format;
  if (!octet::ref::fp8_format_of_dtype(dtype, &format))
    fail(OCTET_STATUS_INVALID_ARGUMENT, "argument 'dtype' (", dtype,
         ") must be OCTET_DTYPE_E4M3 (10), OCTET_DTYPE_E4M3FNUZ (11), OCTET_DTYPE_E5M2 (12), "
         "OCTET_DTYPE_E5M2FNUZ (13) or OCTET_DTYPE_E2M1 (17)");
  return format;
}

// The E2M1 rule (docs/numerics.md): a value without a code is refused, never
// written as some other value.
// `index`: the element of an array, or SIZE_MAX for the scalar 'value'.
uint8_t e2m1_code_or_fail(float value, bool saturate, size_t index) {
  const uint8_t code = octet::ref::fp8_encode(value, Fp8Format::E2M1, saturate);
  if (code != octet::ref::kE2M1NoCode) return code;
  const std::string where = index == SIZE_MAX ? std::string("argument 'value'") : "in[" + std::to_string(index) + "]";
  if (std::isnan(value))
    fail(OCTET_STATUS_INVALID_ARGUMENT, where, " is NaN, which E2M1 cannot represent (it has no NaN code)");
  fail(OCTET_STATUS_INVALID_ARGUMENT, where, " (", value,
       ") is beyond E2M1's largest value 6 and saturate is 0 (E2M1 has no infinity or NaN code: "
       "pass saturate != 0 to clamp it to +-6)");
}

// Bytes an array of n elements of the format takes: E2M1 packs two per byte.
size_t packed_bytes(Fp8Format format, size_t n) { return format == Fp8Format::E2M1 ? n / 2 + n % 2 : n; }

void require_rounding(int32_t rounding) {
  require(rounding == OCTET_E8M0_ROUND_CEIL || rounding == OCTET_E8M0_ROUND_FLOOR,
          "argument 'rounding' (", rounding,
          ") must be OCTET_E8M0_ROUND_CEIL or OCTET_E8M0_ROUND_FLOOR");
}

// in_bytes / out_bytes: the arrays' sizes when they are not n elements of
// their type (a packed E2M1 array).
template <typename In, typename Out>
void require_arrays(const In* in, Out* out, size_t n, size_t in_bytes = 0, size_t out_bytes = 0) {
  if (n == 0) return;
  require(in != nullptr, "argument 'in' is NULL");
  require(out != nullptr, "argument 'out' is NULL");
  if (in_bytes == 0) in_bytes = n * sizeof(In);
  if (out_bytes == 0) out_bytes = n * sizeof(Out);
  const char* in_begin = reinterpret_cast<const char*>(in);
  const char* out_begin = reinterpret_cast<const char*>(out);
  bool overlap = in_begin < out_begin + out_bytes && out_begin < in_begin + in_bytes;
  require(!overlap, "arguments 'in' and 'out' overlap");
}

}  // namespace

extern "C" {

OCTET_API uint8_t octet_fp8_encode(float value, int32_t dtype, int32_t saturate) {
  uint8_t code = 0xFF;  // NaN in the OCP formats, no code in E2M1: an invalid dtype is never a number
  guarded("octet_fp8_encode", [&] {
    const Fp8Format format = require_fp8_format(dtype);
    code = format == Fp8Format::E2M1 ? e2m1_code_or_fail(value, saturate != 0, SIZE_MAX)
                                     : octet::ref::fp8_encode(value, format, saturate != 0);
  });
  return code;
}

OCTET_API float octet_fp8_decode(uint8_t code, int32_t dtype) {
  float value = std::numeric_limits<float>::quiet_NaN();
  guarded("octet_fp8_decode", [&] {
    const Fp8Format format = require_fp8_format(dtype);
    require(format != Fp8Format::E2M1 || code <= 0xF, "argument 'code' (", int(code),
            ") is not an E2M1 code: its high 4 bits must be 0");
    value = octet::ref::fp8_decode(code, format);
  });
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
    require_arrays(in, out, n, 0, packed_bytes(format, n));
    if (format != Fp8Format::E2M1) {
      for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp8_encode(in[i], format, saturate != 0);
      return;
    }
    // Every code first, so that a refused value leaves `out` untouched.
    std::vector<uint8_t> packed(packed_bytes(format, n), 0);
    for (size_t i = 0; i < n; ++i)
      packed[i / 2] |= uint8_t(e2m1_code_or_fail(in[i], saturate != 0, i) << (4 * (i % 2)));
    std::copy(packed.begin(), packed.end(), out);
  });
}

OCTET_API octet_status octet_fp8_decode_array(const uint8_t* in, float* out, size_t n,
                                             int32_t dtype) {
  return guarded("octet_fp8_decode_array", [&] {
    Fp8Format format = require_fp8_format(dtype);
    require_arrays(in, out, n, packed_bytes(format, n), 0);
    if (format != Fp8Format::E2M1) {
      for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp8_decode(in[i], format);
      return;
    }
    // An odd count ends in a half-used byte: in[n / 2] exists only then.
    if (n % 2 != 0)
      require((in[n / 2] >> 4) == 0, "in[", n / 2, "] (", int(in[n / 2]),
              ") pads an odd count of E2M1 codes: its high nibble must be 0");
    for (size_t i = 0; i < n; ++i) out[i] = octet::ref::fp8_decode(uint8_t((in[i / 2] >> (4 * (i % 2))) & 0xF), format);
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
