#include "device_table.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "octet_reference/reference_backend.h"

namespace cuda_test {
namespace {

void record(void* data, int32_t, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message ? message : "");
}

octet_backend_entry_fn cuda_entry() {
  void* handle = dlopen(OCTET_CUDA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "cannot open %s: %s\n", OCTET_CUDA_PLUGIN_PATH, dlerror());
    std::abort();
  }
  auto fn = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  if (fn == nullptr) {
    std::fprintf(stderr, "%s has no %s\n", OCTET_CUDA_PLUGIN_PATH, OCTET_BACKEND_ENTRY_SYMBOL);
    std::abort();
  }
  return fn;
}

}  // namespace

void Table::open(octet_backend_entry_fn entry, const char* what) {
  const octet_backend_api* api = nullptr;
  if (entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api) != OCTET_STATUS_SUCCESS || api == nullptr) {
    reason_ = std::string(what) + ": octet_backend_entry refused the host's ABI";
    return;
  }
  host_.struct_size = sizeof host_;
  host_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  host_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  host_.report_error = record;
  host_.host_data = &errors_;
  caps_.struct_size = sizeof caps_;
  if (api->initialize(&host_, &caps_) != OCTET_STATUS_SUCCESS) {
    reason_ = errors_.empty() ? std::string(what) + ": initialize failed" : errors_.back();
    return;
  }
  octet_backend_context* context = nullptr;
  if (api->context_create(nullptr, &context) != OCTET_STATUS_SUCCESS) {
    reason_ = errors_.empty() ? std::string(what) + ": context_create failed" : errors_.back();
    return;
  }
  api_ = api;
  context_ = context;
}

Table& Table::cuda() {
  static Table table = [] {
    Table t;
    t.open(cuda_entry(), "cuda plugin");
    return t;
  }();
  return table;
}

Table Table::reference() {
  Table t;
  t.open(octet_reference_backend_entry, "reference");
  return t;
}

Table::Table(Table&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      context_(std::exchange(other.context_, nullptr)),
      host_(other.host_),
      caps_(other.caps_),
      errors_(std::move(other.errors_)),
      reason_(std::move(other.reason_)) {
  host_.host_data = &errors_;
}

Table::~Table() {
  if (api_ != nullptr && context_ != nullptr) api_->context_destroy(context_);
}

int32_t Table::synchronize() const {
  if (!available() || api_->synchronize == nullptr) return OCTET_STATUS_SUCCESS;
  return api_->synchronize(context_);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  Table& t = Table::cuda();
  if (!t.available()) {
    ADD_FAILURE() << "DeviceBuffer without a device: " << t.unavailable_reason();
    return;
  }
  if (t.api().mem_alloc(t.context(), bytes == 0 ? 1 : bytes, &ptr_) != OCTET_STATUS_SUCCESS) {
    ADD_FAILURE() << "mem_alloc(" << bytes << ") failed: " << t.last_error();
    ptr_ = nullptr;
  }
}

DeviceBuffer::DeviceBuffer(const void* host, size_t bytes) : DeviceBuffer(bytes) { upload(host, bytes); }

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) Table::cuda().api().mem_free(Table::cuda().context(), ptr_);
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (ptr_ == nullptr || bytes == 0) return;
  ASSERT_LE(bytes, bytes_);
  Table& t = Table::cuda();
  ASSERT_EQ(t.api().copy_from_host(t.context(), ptr_, host, bytes), OCTET_STATUS_SUCCESS) << t.last_error();
}

std::vector<uint8_t> DeviceBuffer::download() const {
  std::vector<uint8_t> out(bytes_);
  if (ptr_ == nullptr || bytes_ == 0) return out;
  Table& t = Table::cuda();
  EXPECT_EQ(t.api().copy_to_host(t.context(), out.data(), ptr_, bytes_), OCTET_STATUS_SUCCESS) << t.last_error();
  return out;
}

octet_matrix_view view(void* data, int32_t dtype, int64_t rows, int64_t cols, int64_t ld) {
  octet_matrix_view v{};
  v.data = data;
  v.dtype = dtype;
  v.rows = rows;
  v.cols = cols;
  v.ld = ld == 0 ? cols : ld;
  return v;
}

size_t element_bytes(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: return 2;
    default: return 1;
  }
}

}  // namespace cuda_test
