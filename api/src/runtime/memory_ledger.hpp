// Bytes a context holds, by category, with peaks: what users read to see
// what FP8 training costs and saves in memory.
#pragma once

#include <octet/octet.h>

#include <array>
#include <cstdint>

namespace octet::core {

class MemoryLedger {
 public:
  void add(int32_t category, uint64_t bytes);
  void remove(int32_t category, uint64_t bytes);
  void reset_peaks();
  octet_memory_stats snapshot() const;

 private:
  std::array<uint64_t, OCTET_MEMORY_CATEGORY_COUNT> current_{};
  std::array<uint64_t, OCTET_MEMORY_CATEGORY_COUNT> peak_{};
  uint64_t total_ = 0;
  uint64_t peak_total_ = 0;
};

}  // namespace octet::core
