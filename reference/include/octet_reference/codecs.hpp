// Exact scalar codecs of the reference (numerics.md sections 1 and 2).
// Written for clarity: every rule of the numerical contract is visible here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace octet::ref {

// The narrow floating-point formats of quantized data: the OCP FP8 formats,
// the FNUZ FP8 formats (one NaN code 0x80, no infinity, no negative zero)
// and FP4 E2M1 (no NaN, no infinity; a 4-bit code in the low nibble).
enum class Fp8Format { E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, E2M1 };

// What fp8_encode returns for E2M1 when the value has no code: NaN, and with
// saturate false also +-inf and magnitudes that round above 6. Not a 4-bit
// code, so a caller can tell it from every value.
constexpr uint8_t kE2M1NoCode = 0xFF;

// FP32 -> FP8/FP4, round to nearest even once with the exponent unbounded
// above, then overflow handled per `saturate` (numerics.md section 1 tables).
uint8_t fp8_encode(float value, Fp8Format format, bool saturate);
// Exact. E2M1 reads the low nibble of `code`.
float fp8_decode(uint8_t code, Fp8Format format);
// Largest finite value: 448 (E4M3), 57344 (E5M2, E5M2FNUZ), 240 (E4M3FNUZ),
// 6 (E2M1).
float fp8_max(Fp8Format format);
// The format of an octet_dtype; false for a dtype that is none of them.
bool fp8_format_of_dtype(int32_t dtype, Fp8Format* format);

uint16_t bf16_encode(float value);
float bf16_decode(uint16_t code);
uint16_t fp16_encode(float value);
float fp16_decode(uint16_t code);

// E8M0: power-of-two exponent rounded up (round_up) or down; see octet.h.
uint8_t e8m0_encode(float value, bool round_up);
float e8m0_decode(uint8_t code);

// Generic element access used by the reference kernels: widen element
// `index` of an array of `dtype` (octet_dtype) to FP32 (FP8 as raw codes,
// no scale), and narrow an FP32 into it. Return false for an unknown dtype.
bool load_element(const void* base, int32_t dtype, std::size_t index, float* value);
bool store_element(void* base, int32_t dtype, std::size_t index, float value,
                   bool saturate);

}  // namespace octet::ref
