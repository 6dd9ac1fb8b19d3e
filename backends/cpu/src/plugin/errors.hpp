// Error reporting through the host's callback, and the guard that keeps
// every exception inside the plugin (no exception crosses the ABI): the
// plugin SDK's (<octet/octet_plugin.hpp>), bound to the cpu backend's Host.
#pragma once

#include <octet/octet_backend.h>
#include <octet/octet_plugin.hpp>

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <utility>

namespace octet_cpu {

// The host's services, kept from initialize() (the plugin SDK's Host).
const octet::plugin::Host& host();
// Set at initialize(), cleared at shutdown().
void set_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host and returns `status`.
inline int32_t report(int32_t status, const std::string& message) { return host().report(status, message); }

// Reports `status` with "<entry>: <what>"; never throws (a message that
// cannot be built is reported as the entry alone).
inline int32_t report_quietly(int32_t status, const char* entry, const char* what) noexcept {
  return host().report_at(status, entry, what);
}

// An allocation of `bytes` of host memory that failed: reported as
// OCTET_STATUS_OUT_OF_MEMORY with the size asked (issue 21).
class OutOfMemory : public octet::plugin::OutOfMemory {
 public:
  explicit OutOfMemory(std::size_t bytes) noexcept : octet::plugin::OutOfMemory(bytes, "host memory") {}
};

// 64-byte aligned host memory of `bytes` (at least 1), released by free();
// OutOfMemory when it cannot be had.
void* aligned_bytes(std::size_t bytes);

// An owning 64-byte aligned buffer of `count` T (T trivial), released when
// it goes out of scope: every GEMM workspace lives for one call.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t count) { reset(count); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(data_); }
  void reset(std::size_t count) {
    std::free(data_);
    data_ = nullptr;
    if (count > (~std::size_t{0} - 64) / sizeof(T)) throw OutOfMemory(~std::size_t{0});
    data_ = static_cast<T*>(aligned_bytes(count * sizeof(T)));
  }
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
};

// Runs an entry point's body so that no exception crosses the C ABI.
template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  return octet::plugin::guard(host(), entry, std::forward<Body>(body));
}

}  // namespace octet_cpu
