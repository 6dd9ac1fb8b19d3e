// FP32 <-> raw IEEE-754 bits, the vocabulary of every codec here.
#pragma once

#include <cstdint>
#include <cstring>

namespace octet::ref {

inline uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

constexpr uint32_t kFp32SignBit = 0x80000000u;
constexpr uint32_t kFp32Infinity = 0x7F800000u;  // also the exponent mask
constexpr uint32_t kFp32FractionMask = 0x007FFFFFu;
constexpr uint32_t kFp32QuietBit = 0x00400000u;
constexpr int kFp32FractionBits = 23;
constexpr int kFp32Bias = 127;

}  // namespace octet::ref
