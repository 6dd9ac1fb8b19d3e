#include "pool.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

#include "errors.hpp"

namespace octet_cuda {

size_t Pool::rounded(size_t bytes) {
  // 512-byte granules up to 1 MiB, then whole MiB: cudaMalloc aligns to 256
  // bytes at least, so every block meets the declared alignment.
  constexpr size_t kSmall = 512, kLarge = size_t(1) << 20;
  if (bytes <= kLarge) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

void* Pool::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  // rounded() would wrap around to a small size (0 for SIZE_MAX): no device
  // has half the address space.
  if (bytes > (SIZE_MAX >> 1)) fail(OCTET_STATUS_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes of device memory");
  const size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // Reuse a free block of exactly this size, or one at most twice as large.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    void* ptr = it->second;
    const size_t block = it->first;
    free_.erase(it);
    live_.emplace(ptr, block);
    return ptr;
  }
  void* ptr = nullptr;
  cudaError_t error = cudaMalloc(&ptr, size);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    // Give the cached blocks back to the driver and try once more.
    for (auto& entry : free_) cudaFree(entry.second);
    free_.clear();
    error = cudaMalloc(&ptr, size);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      fail(error == cudaErrorMemoryAllocation ? OCTET_STATUS_OUT_OF_MEMORY : OCTET_STATUS_BACKEND_ERROR,
           "cudaMalloc of ", size, " bytes failed: ", cuda_error_text(error));
    }
  }
  try {
    live_.emplace(ptr, size);
  } catch (...) {
    cudaFree(ptr);
    throw;
  }
  return ptr;
}

void Pool::release(void* ptr) noexcept {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  const size_t size = it->second;
  live_.erase(it);
  try {
    free_.emplace(size, ptr);
  } catch (...) {
    cudaFree(ptr);  // cannot cache it: give it back (synchronizes the device)
  }
}

void Pool::trim() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : free_) cudaFree(entry.second);
  free_.clear();
}

Pool::~Pool() {
  for (auto& entry : free_) cudaFree(entry.second);
  for (auto& entry : live_) cudaFree(entry.first);
}

}  // namespace octet_cuda
