// Per-element bookkeeping of the statistics a quantize pass can report
// (numerics.md, "Statistics"), shared by the per-tensor and block kernels so
// both count by the same rule.
#pragma once

#include <octet/octet_backend.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "octet_reference/codecs.hpp"

namespace octet::ref {

class StatisticsCounter {
 public:
  // x: the input value; scaled: the value handed to the FP8 encoder; code:
  // the code written.
  void count(float x, float scaled, uint8_t code, Fp8Format format) {
    if (std::isnan(x)) {
      ++stats_.nan_count;
      return;
    }
    stats_.amax = std::max(stats_.amax, std::fabs(x));  // x is not NaN here
    // Saturated: the non-saturating conversion would have overflowed, i.e.
    // the saturating one clamped (an infinity included; a NaN scaled value,
    // from a NaN per-tensor scale, is not a saturation).
    if (!std::isnan(scaled)) {
      const uint8_t unclamped = fp8_encode(scaled, format, false);
      const uint8_t magnitude = unclamped & 0x7F;
      bool overflow = false;
      switch (format) {
        case Fp8Format::E4M3:
          overflow = magnitude == 0x7F;
          break;  // NaN
        case Fp8Format::E5M2:
          overflow = magnitude >= 0x7C;
          break;  // inf (NaN excluded above)
        case Fp8Format::E4M3FNUZ:
        case Fp8Format::E5M2FNUZ:
          overflow = unclamped == 0x80;
          break;  // the NaN
        case Fp8Format::E2M1:
          overflow = unclamped == kE2M1NoCode;
          break;
      }
      if (overflow) ++stats_.saturated_count;
    }
    if (std::isfinite(x) && x != 0.0f && code_is_zero(code, format)) ++stats_.flushed_count;
  }
  // Whether `code` is +0 or -0 of `format`: E2M1's sign is bit 3, and the
  // FNUZ formats have one zero (0x80 is their NaN).
  static bool code_is_zero(uint8_t code, Fp8Format format) {
    switch (format) {
      case Fp8Format::E2M1:
        return (code & 0x7) == 0;
      case Fp8Format::E4M3FNUZ:
      case Fp8Format::E5M2FNUZ:
        return code == 0;
      default:
        return (code & 0x7F) == 0;
    }
  }
  const octet_quantize_statistics& result() const { return stats_; }

 private:
  octet_quantize_statistics stats_{};
};

}  // namespace octet::ref
