// Table-level harness for the cuda plugin's kernels: the plugin opened with
// dlopen (no liboctet in between) beside the reference's own table, so one
// test drives both with the same input bytes and compares every output byte.
// Without a usable device the cuda side is absent and tests skip with the
// plugin's own reason (OCTET_REQUIRE_CUDA_TABLE).
#pragma once

#include <octet/octet_backend.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cuda_test {

// One opened table with one context; errors reported through the host
// callback are kept in order.
class Table {
 public:
  // The cuda plugin (process-wide, opened once).
  static Table& cuda();
  // The reference (host memory), opened anew for each caller.
  static Table reference();

  bool available() const { return api_ != nullptr && context_ != nullptr; }
  const std::string& unavailable_reason() const { return reason_; }
  const octet_backend_api& api() const { return *api_; }
  octet_backend_context* context() const { return context_; }
  const octet_backend_caps& caps() const { return caps_; }
  // The last message the backend reported ("" if none); clear_errors() forgets them.
  std::string last_error() const { return errors_.empty() ? std::string() : errors_.back(); }
  void clear_errors() { errors_.clear(); }
  // synchronize() when the table has it; returns its status.
  int32_t synchronize() const;

  Table() = default;
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  Table(Table&& other) noexcept;
  ~Table();

 private:
  void open(octet_backend_entry_fn entry, const char* what);

  const octet_backend_api* api_ = nullptr;
  octet_backend_context* context_ = nullptr;
  octet_host_services host_{};
  octet_backend_caps caps_{};
  std::vector<std::string> errors_;
  std::string reason_;
};

// Device memory of the cuda table (its mem_alloc/mem_free), with copies from
// and to host vectors. Aborts the test (ADD_FAILURE + empty buffer) on failure.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(const void* host, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  // Copies the whole buffer back (copy_to_host synchronizes).
  std::vector<uint8_t> download() const;
  template <typename T>
  std::vector<T> download_as() const {
    std::vector<uint8_t> raw = download();
    std::vector<T> out(raw.size() / sizeof(T));
    if (!out.empty()) __builtin_memcpy(out.data(), raw.data(), out.size() * sizeof(T));
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A view of `data` with the given shape (ld defaults to cols).
octet_matrix_view view(void* data, int32_t dtype, int64_t rows, int64_t cols, int64_t ld = 0);

// Bytes per element of an octet dtype.
size_t element_bytes(int32_t dtype);

}  // namespace cuda_test

// Skips the current test, giving the plugin's reason, when no device answers.
#define OCTET_REQUIRE_CUDA_TABLE()                                                   \
  do {                                                                               \
    if (!::cuda_test::Table::cuda().available())                                     \
      GTEST_SKIP() << "no usable CUDA device: "                                      \
                   << ::cuda_test::Table::cuda().unavailable_reason();               \
  } while (0)
