// octet.hpp: header-only C++17 wrapper over the C ABI of octet.h.
//
// Ownership is unique (Context and Tensor are move-only and destroy their
// handle once); failures become octet::Error exceptions on the C++ side only.
// Nothing here adds behaviour: every call is one C function, so the contract
// documented in octet.h (thread safety, lifetimes, numerics) applies as is.
#ifndef OCTET_OCTET_HPP
#define OCTET_OCTET_HPP

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "octet.h"

namespace octet {

// A failed call: the status code and the library's message.
class Error : public std::runtime_error {
 public:
  Error(octet_status status, const std::string& message)
      : std::runtime_error(std::string(octet_status_name(status)) + ": " + message),
        status_(status),
        message_(message) {}
  octet_status status() const noexcept { return status_; }
  // The library's message alone, without the status name.
  const std::string& message() const noexcept { return message_; }

 private:
  octet_status status_;
  std::string message_;
};

// Throws Error when status is not SUCCESS. The message is read at once,
// because the thread-local text is only valid until the next Octet call.
inline void check(octet_status status) {
  if (status != OCTET_STATUS_SUCCESS) throw Error(status, octet_last_error_message());
}

namespace detail {
inline std::string text(const char* s) { return s ? std::string(s) : std::string(); }
}  // namespace detail

// octet_backend_info with owned strings.
struct BackendInfo {
  std::string name;
  std::string version;
  std::string device;
  std::string path;
  int32_t memory_kind = OCTET_MEMORY_HOST;
  bool available = false;
  std::string unavailable_reason;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  uint32_t dtypes = 0;
  uint32_t scaling_modes = 0;
  bool native_columnwise = false;
  uint32_t fp8_gemm_layouts = 0;
  uint32_t features = 0;
  uint64_t alignment = 0;

  static BackendInfo from_c(const octet_backend_info& c) {
    BackendInfo b;
    b.name = detail::text(c.name);
    b.version = detail::text(c.version);
    b.device = detail::text(c.device);
    b.path = detail::text(c.path);
    b.memory_kind = c.memory_kind;
    b.available = c.available != 0;
    b.unavailable_reason = detail::text(c.unavailable_reason);
    b.abi_major = c.abi_major;
    b.abi_minor = c.abi_minor;
    b.dtypes = c.dtypes;
    b.scaling_modes = c.scaling_modes;
    b.native_columnwise = c.native_columnwise != 0;
    b.fp8_gemm_layouts = c.fp8_gemm_layouts;
    b.features = c.features;
    b.alignment = c.alignment;
    return b;
  }
};

struct BackendFailure {
  std::string path;
  std::string reason;
};

inline std::vector<BackendInfo> backends() {
  size_t count = 0;
  check(octet_backend_count(&count));
  std::vector<BackendInfo> out;
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info info{};
    info.struct_size = sizeof info;
    check(octet_backend_get_info(i, &info));
    out.push_back(BackendInfo::from_c(info));
  }
  return out;
}

inline std::vector<BackendFailure> backend_failures() {
  size_t count = 0;
  check(octet_backend_failure_count(&count));
  std::vector<BackendFailure> out;
  for (size_t i = 0; i < count; ++i) {
    octet_backend_failure f{};
    f.struct_size = sizeof f;
    check(octet_backend_get_failure(i, &f));
    out.push_back({detail::text(f.path), detail::text(f.reason)});
  }
  return out;
}

class Context {
 public:
  // An empty handle (nothing to destroy), like a default std::unique_ptr.
  Context() noexcept = default;
  // backend: a name, or "" / "auto" for the automatic choice (see
  // octet_context_options).
  explicit Context(const std::string& backend, int32_t profile = OCTET_PROFILE_NATIVE,
                   void* stream = nullptr) {
    octet_context_options options{};
    options.struct_size = sizeof options;
    options.backend = backend.empty() ? nullptr : backend.c_str();
    options.capability_profile = profile;
    options.stream = stream;
    check(octet_context_create(&options, &handle_));
  }
  ~Context() { octet_context_destroy(handle_); }
  Context(Context&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Context& operator=(Context&& other) noexcept {
    if (this != &other) {
      octet_context_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  octet_context* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  // Capabilities in effect (after the profile).
  BackendInfo info() const {
    octet_backend_info c{};
    c.struct_size = sizeof c;
    check(octet_context_get_info(handle_, &c));
    return BackendInfo::from_c(c);
  }
  void synchronize() { check(octet_context_synchronize(handle_)); }

 private:
  octet_context* handle_ = nullptr;
};

class Tensor {
 public:
  Tensor() = default;
  ~Tensor() { octet_tensor_destroy(handle_); }
  Tensor(Tensor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      octet_tensor_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // usages != 0 on an FP8 dtype makes a quantized tensor (OCTET_USAGE_*).
  static Tensor create(Context& context, octet_dtype dtype,
                       const std::vector<int64_t>& shape, uint32_t usages = 0) {
    octet_tensor_desc desc = make_desc(dtype, shape, usages);
    Tensor t;
    check(octet_tensor_create(context.get(), &desc, &t.handle_));
    return t;
  }
  // Wraps caller memory without copying; it must outlive the tensor.
  static Tensor wrap(Context& context, octet_dtype dtype,
                     const std::vector<int64_t>& shape, void* data) {
    octet_tensor_desc desc = make_desc(dtype, shape, 0);
    Tensor t;
    check(octet_tensor_wrap(context.get(), &desc, data, &t.handle_));
    return t;
  }

  octet_tensor* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  octet_tensor_info info() const {
    octet_tensor_info i{};
    i.struct_size = sizeof i;
    check(octet_tensor_get_info(handle_, &i));
    return i;
  }
  // Size in bytes of one component, from the tensor's own description.
  size_t component_bytes(octet_component component) const {
    const octet_tensor_info i = info();
    switch (component) {
      case OCTET_COMPONENT_DATA: return static_cast<size_t>(i.rowwise_bytes);
      case OCTET_COMPONENT_COLUMNWISE_DATA: return static_cast<size_t>(i.columnwise_bytes);
      default: return sizeof(float);
    }
  }

  void copy_from_host(octet_component component, const void* src, size_t bytes) {
    check(octet_tensor_copy_from_host(handle_, component, src, bytes));
  }
  void copy_to_host(octet_component component, void* dst, size_t bytes) const {
    check(octet_tensor_copy_to_host(handle_, component, dst, bytes));
  }
  template <typename T>
  void upload(const std::vector<T>& values, octet_component component = OCTET_COMPONENT_DATA) {
    copy_from_host(component, values.data(), values.size() * sizeof(T));
  }
  // The whole component as a vector of T (bytes / sizeof(T) elements).
  template <typename T>
  std::vector<T> download(octet_component component = OCTET_COMPONENT_DATA) const {
    std::vector<T> out(component_bytes(component) / sizeof(T));
    copy_to_host(component, out.data(), out.size() * sizeof(T));
    return out;
  }
  void set_scale(float scale) { copy_from_host(OCTET_COMPONENT_SCALE, &scale, sizeof scale); }
  float scale_inv() const { return download<float>(OCTET_COMPONENT_SCALE_INV).at(0); }
  float amax() const { return download<float>(OCTET_COMPONENT_AMAX).at(0); }

 private:
  static octet_tensor_desc make_desc(octet_dtype dtype, const std::vector<int64_t>& shape,
                                     uint32_t usages) {
    if (shape.empty() || shape.size() > OCTET_MAX_DIMS)
      throw Error(OCTET_STATUS_INVALID_ARGUMENT,
                  "shape: needs 1 to " + std::to_string(OCTET_MAX_DIMS) + " dimensions");
    octet_tensor_desc desc{};
    desc.struct_size = sizeof desc;
    desc.dtype = dtype;
    desc.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) desc.shape[i] = shape[i];
    desc.usages = usages;
    return desc;
  }

  octet_tensor* handle_ = nullptr;
};

// ---- operations ---------------------------------------------------------

inline void convert(Context& context, const Tensor& input, Tensor& output,
                    bool saturate = true) {
  check(octet_convert(context.get(), input.get(), output.get(), saturate ? 1 : 0));
}

inline float amax(Context& context, const Tensor& input) {
  float value = 0.0f;
  check(octet_amax(context.get(), input.get(), &value));
  return value;
}

// usages 0: every usage the output has.
inline void quantize(Context& context, const Tensor& input, Tensor& output,
                     uint32_t usages = 0, bool saturate = true) {
  octet_quantize_options options{};
  options.struct_size = sizeof options;
  options.usages = usages;
  options.saturate = saturate ? 1 : 0;
  check(octet_quantize(context.get(), input.get(), output.get(), &options));
}

inline void dequantize(Context& context, const Tensor& input, Tensor& output) {
  check(octet_dequantize(context.get(), input.get(), output.get()));
}

struct GemmOptions {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
  const Tensor* bias = nullptr;
  octet_epilogue epilogue = OCTET_EPILOGUE_NONE;
  bool fast_accumulation = false;  // ABI 1.4
  bool saturate_output = true;     // ABI 1.4, FP8 D only
};

// D = alpha * sa * sb * A' B'^T + beta * D + bias (see octet_gemm).
inline void gemm(Context& context, const Tensor& a, const Tensor& b, Tensor& d,
                 const GemmOptions& options = GemmOptions()) {
  octet_gemm_options c{};
  c.struct_size = sizeof c;
  c.trans_a = options.trans_a ? 1 : 0;
  c.trans_b = options.trans_b ? 1 : 0;
  c.alpha = options.alpha;
  c.beta = options.beta;
  c.bias = options.bias ? options.bias->get() : nullptr;
  c.epilogue = options.epilogue;
  c.fast_accumulation = options.fast_accumulation ? 1 : 0;
  c.saturate_output = options.saturate_output ? 1 : 0;
  check(octet_gemm(context.get(), a.get(), b.get(), d.get(), &c));
}

}  // namespace octet

#endif  // OCTET_OCTET_HPP
