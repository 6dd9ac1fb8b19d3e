// Error reporting through the host's callback, and the guard that keeps
// every exception inside the plugin (no exception crosses the ABI).
#pragma once

#include <octet/octet_backend.h>

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

namespace octet_cpu {

// Set at initialize(), cleared at shutdown().
void set_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host and returns `status`.
int32_t report(int32_t status, const std::string& message);

// Reports `status` with "<entry>: <what>". Building the message or the
// host's callback may itself throw (std::bad_alloc when memory is short);
// then the status is returned without a message, since nothing may leave a
// noexcept entry point.
inline int32_t report_quietly(int32_t status, const char* entry, const char* what) noexcept {
  try {
    return report(status, std::string(entry) + ": " + what);
  } catch (...) {
    return status;
  }
}

// An allocation of `bytes` that failed: reported as OCTET_STATUS_OUT_OF_MEMORY
// with the size asked (issue 21). Derives from std::bad_alloc, so code that
// catches that still does.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::size_t bytes) : bytes_(bytes) {}
  std::size_t bytes() const noexcept { return bytes_; }
  const char* what() const noexcept override { return "out of host memory"; }

 private:
  std::size_t bytes_;
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

template <typename Body>
int32_t guarded(const char* entry, Body&& body) noexcept {
  try {
    return body();
  } catch (const OutOfMemory& e) {
    try {
      return report(OCTET_STATUS_OUT_OF_MEMORY, std::string(entry) + ": out of host memory (" +
                                                    std::to_string(e.bytes()) + " bytes asked)");
    } catch (...) {
      return OCTET_STATUS_OUT_OF_MEMORY;
    }
  } catch (const std::bad_alloc&) {
    return report_quietly(OCTET_STATUS_OUT_OF_MEMORY, entry, "out of host memory");
  } catch (const std::exception& e) {
    return report_quietly(OCTET_STATUS_BACKEND_ERROR, entry, e.what());
  } catch (...) {
    return report_quietly(OCTET_STATUS_BACKEND_ERROR, entry, "unknown failure");
  }
}

}  // namespace octet_cpu
