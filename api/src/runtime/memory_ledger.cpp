#include "runtime/memory_ledger.hpp"

#include <algorithm>


namespace octet::core {

void MemoryLedger::add(int32_t category, uint64_t bytes) {
  current_[size_t(category)] += bytes;
  peak_[size_t(category)] = std::max(peak_[size_t(category)], current_[size_t(category)]);
  total_ += bytes;
  peak_total_ = std::max(peak_total_, total_);
}

void MemoryLedger::remove(int32_t category, uint64_t bytes) {
  current_[size_t(category)] -= bytes;
  total_ -= bytes;
}

void MemoryLedger::reset_peaks() {
  peak_ = current_;
  peak_total_ = total_;
}

octet_memory_stats MemoryLedger::snapshot() const {
  octet_memory_stats s{};
  s.struct_size = sizeof(s);
  for (size_t i = 0; i < current_.size(); ++i) {
    s.current_bytes[i] = current_[i];
    s.peak_bytes[i] = peak_[i];
  }
  s.current_total = total_;
  s.peak_total = peak_total_;
  return s;
}

}  // namespace octet::core

extern "C" {

OCTET_API const char* octet_memory_category_name(int32_t category) {
  switch (category) {
    case OCTET_MEMORY_USER_TENSORS: return "user tensors";
    case OCTET_MEMORY_PARAMETERS: return "parameters";
    case OCTET_MEMORY_QUANTIZED_COPIES: return "quantized copies";
    case OCTET_MEMORY_SAVED_ACTIVATIONS: return "saved activations";
    case OCTET_MEMORY_WORKSPACE: return "workspace";
    default: return "invalid";
  }
}

}  // extern "C"
