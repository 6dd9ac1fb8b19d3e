// FP32 bit patterns the NaN-rule tests are written in (numerics.md "NaN
// results"): ones, zeros, infinities, the default NaN, quiet NaNs with
// payloads of each sign, and signalling NaNs with what quieting makes of
// them.
#pragma once

#include <cstdint>

namespace octet::test {

inline constexpr uint32_t kOne = 0x3F800000u;       // 1
inline constexpr uint32_t kTwo = 0x40000000u;       // 2
inline constexpr uint32_t kThree = 0x40400000u;     // 3
inline constexpr uint32_t kMinusOne = 0xBF800000u;  // -1
inline constexpr uint32_t kZero = 0x00000000u;
inline constexpr uint32_t kMinusZero = 0x80000000u;
inline constexpr uint32_t kInf = 0x7F800000u;
inline constexpr uint32_t kMinusInf = 0xFF800000u;
inline constexpr uint32_t kDefaultNan = 0xFFC00000u;
// Quiet NaNs with payloads, one of each sign.
inline constexpr uint32_t kQuietPos = 0x7FC12345u;
inline constexpr uint32_t kQuietNeg = 0xFFC54321u;
// Signalling NaNs (quiet bit clear) and what quieting makes of them.
inline constexpr uint32_t kSignallingPos = 0x7F812345u, kSignallingPosQuieted = 0x7FC12345u;
inline constexpr uint32_t kSignallingNeg = 0xFF800001u, kSignallingNegQuieted = 0xFFC00001u;

}  // namespace octet::test
