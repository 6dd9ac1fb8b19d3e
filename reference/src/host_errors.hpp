// How the reference reports failures: through the host's callback, the way
// every plugin must (octet_backend.h), never through thread-local state.
#pragma once

#include <octet/octet_backend.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace octet::ref {

// Keeps a copy of the host's services given to initialize() (the host's
// struct may be older, hence smaller, than ours). NULL forgets them.
void remember_host_services(const octet_host_services* host);

// Reports `message` with `status` to the host (when it gave a callback) and
// returns `status`, so a check can end with `return report(...)`.
int32_t report(int32_t status, const std::string& message);

// A host allocation of `bytes` that failed: guarded() reports it as
// OCTET_STATUS_OUT_OF_MEMORY with the size asked.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::size_t bytes) : bytes_(bytes) {}
  std::size_t bytes() const noexcept { return bytes_; }
  const char* what() const noexcept override { return "out of host memory"; }

 private:
  std::size_t bytes_;
};

// `count` copies of `value` in host memory; OutOfMemory naming the bytes
// when they cannot be had. Every kernel allocation whose size follows the
// arguments' shapes goes through here.
template <typename T>
std::vector<T> host_vector(std::size_t count, T value = T()) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
    throw OutOfMemory(std::numeric_limits<std::size_t>::max());
  try {
    return std::vector<T>(count, value);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(count * sizeof(T));
  }
}

// Runs an entry point's body so that no exception crosses the C ABI.
template <typename Body>
int32_t guarded(const char* entry_name, Body&& body) noexcept {
  try {
    return body();
  } catch (const OutOfMemory& e) {
    try {
      return report(OCTET_STATUS_OUT_OF_MEMORY,
                    std::string(entry_name) + ": out of host memory (" + std::to_string(e.bytes()) + " bytes asked)");
    } catch (...) {
      return OCTET_STATUS_OUT_OF_MEMORY;
    }
  } catch (const std::bad_alloc&) {
    try {
      return report(OCTET_STATUS_OUT_OF_MEMORY, std::string(entry_name) + ": out of host memory");
    } catch (...) {
      return OCTET_STATUS_OUT_OF_MEMORY;
    }
  } catch (...) {
    try {
      return report(OCTET_STATUS_INTERNAL, std::string(entry_name) + ": unexpected exception");
    } catch (...) {
      return OCTET_STATUS_INTERNAL;
    }
  }
}

}  // namespace octet::ref
