// The fuzz targets' view of their input: a cursor over the bytes that reads
// zeros past the end, so every input, however short, is a whole program.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace octet_fuzz {

class Input {
 public:
  Input(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return pos_ >= n_; }
  uint8_t byte() { return pos_ < n_ ? p_[pos_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(byte()) << (8 * i);
    return v;
  }
  // Any FP32 bit pattern.
  float f32() {
    const uint32_t u = u32();
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  template <typename T, size_t N>
  T pick(const T (&table)[N]) {
    return table[byte() % N];
  }
  // Mostly ordinary magnitudes, sometimes specials or raw bit patterns.
  float value() {
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448.0f, 464.0f, -57344.0f,
                                     61440.0f, 1e-40f, -2e-45f, 3.4028235e38f, 0.0019531f, 1.0f, -1.0f};
    const uint8_t how = byte();
    if (how < 160) return float(int(byte()) - 128) * 0.0625f * float(1 + how % 5);
    if (how < 224) return specials[how % 16];
    return f32();
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace octet_fuzz
