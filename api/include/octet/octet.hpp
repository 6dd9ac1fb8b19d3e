// octet.hpp: header-only C++17 wrapper over the C ABI of octet.h.
//
// Ownership is unique: Context, Tensor, Recipe, Quantizer, Layer and Saved
// are move-only and destroy their handle once (a moved-from handle is empty
// and safe to destroy). What the library lends out (a layer's parameters,
// gradients and quantizers) comes back as TensorView / QuantizerView, which
// have no destructor at all, so the wrapper can never destroy a borrowed
// handle. Failures become octet::Error exceptions on the C++ side only; no
// destructor throws. Nothing here adds behaviour: every call is one C
// function, so the contract documented in octet.h (thread safety, lifetimes,
// numerics) applies as is. docs/cpp.md has the rules and examples.
#ifndef OCTET_OCTET_HPP
#define OCTET_OCTET_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
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
template <typename T>
struct Identity {
  using type = T;
};
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
  uint64_t alignment = 0;         // of the buffers Octet allocates
  uint64_t caller_alignment = 0;  // of wrapped and DLPack memory, besides the element size

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
    b.caller_alignment = c.caller_alignment;
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

// The function pointer of octet_communicator: replaces values[0..count) by
// the element-wise maximum over all processes.
using AllreduceMaxFn = octet_status (*)(float* values, size_t count, void* user_data);
// The C++ form: return a status; an exception it throws is caught (none may
// cross the C ABI) and becomes OCTET_STATUS_BACKEND_ERROR.
using AllreduceMax = std::function<octet_status(float* values, size_t count)>;

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
  ~Context() { release(); }
  Context(Context&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), communicator_(std::move(other.communicator_)) {}
  Context& operator=(Context&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, nullptr);
      communicator_ = std::move(other.communicator_);
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

  // The context's communicator (octet_context_set_communicator). C form:
  // user_data must stay valid while it is set, as in C; fn nullptr removes it.
  void set_communicator(AllreduceMaxFn fn, void* user_data) {
    if (fn == nullptr) {
      clear_communicator();
      return;
    }
    octet_communicator c{};
    c.struct_size = sizeof c;
    c.allreduce_max = fn;
    c.user_data = user_data;
    check(octet_context_set_communicator(handle_, &c));
    communicator_.reset();
  }
  // C++ form. The function is stored in this Context object (it moves with
  // it) and lives until the next set_communicator / clear_communicator or
  // until this object is destroyed, whose destructor first removes it from
  // the C context (a layer may keep the C context alive longer).
  void set_communicator(AllreduceMax fn) {
    if (!fn) {
      clear_communicator();
      return;
    }
    auto holder = std::make_unique<AllreduceMax>(std::move(fn));
    octet_communicator c{};
    c.struct_size = sizeof c;
    c.allreduce_max = &Context::call_communicator;
    c.user_data = holder.get();
    check(octet_context_set_communicator(handle_, &c));
    communicator_ = std::move(holder);  // the previous one is no longer referenced
  }
  // A whole octet_communicator, collectives included (users' ABI 1.7; e.g.
  // from octet_mpi_communicator_init): copied, as in C, so its user_data
  // must stay valid while it is set.
  void set_communicator(const octet_communicator& communicator) {
    check(octet_context_set_communicator(handle_, &communicator));
    communicator_.reset();
  }
  // Calls and bytes sent through the communicator (octet_communication_stats).
  octet_communication_stats communication_stats() const {
    octet_communication_stats stats{};
    stats.struct_size = sizeof stats;
    check(octet_context_get_communication_stats(handle_, &stats));
    return stats;
  }
  void clear_communicator() {
    check(octet_context_set_communicator(handle_, nullptr));
    communicator_.reset();
  }

  // Autocast nesting depth (0 outside any scope).
  int32_t autocast_depth() const {
    int32_t depth = 0;
    const octet_recipe* recipe = nullptr;
    check(octet_autocast_get_state(handle_, &depth, &recipe));
    return depth;
  }
  // The recipe of the innermost scope (borrowed; nullptr outside any scope).
  const octet_recipe* autocast_recipe() const {
    int32_t depth = 0;
    const octet_recipe* recipe = nullptr;
    check(octet_autocast_get_state(handle_, &depth, &recipe));
    return recipe;
  }

 private:
  static octet_status call_communicator(float* values, size_t count, void* user_data) noexcept {
    try {
      return (*static_cast<AllreduceMax*>(user_data))(values, count);
    } catch (...) {
      return OCTET_STATUS_BACKEND_ERROR;
    }
  }
  void release() noexcept {
    if (handle_ != nullptr && communicator_) octet_context_set_communicator(handle_, nullptr);
    communicator_.reset();
    octet_context_destroy(handle_);
    handle_ = nullptr;
  }

  octet_context* handle_ = nullptr;
  std::unique_ptr<AllreduceMax> communicator_;
};

namespace detail {
// The tensor calls shared by Tensor (owning) and TensorView (borrowed).
template <typename Self>
class TensorOps {
 public:
  octet_tensor_info info() const {
    octet_tensor_info i{};
    i.struct_size = sizeof i;
    check(octet_tensor_get_info(handle(), &i));
    return i;
  }
  // Size in bytes of one component, from the tensor's own description.
  size_t component_bytes(octet_component component) const {
    const octet_tensor_info i = info();
    switch (component) {
      case OCTET_COMPONENT_DATA: return static_cast<size_t>(i.rowwise_bytes);
      case OCTET_COMPONENT_COLUMNWISE_DATA: return static_cast<size_t>(i.columnwise_bytes);
      case OCTET_COMPONENT_ROWWISE_SCALE_INV:
        return static_cast<size_t>(i.rowwise_scale_inv_bytes);
      case OCTET_COMPONENT_COLUMNWISE_SCALE_INV:
        return static_cast<size_t>(i.columnwise_scale_inv_bytes);
      case OCTET_COMPONENT_SCALE_INV:  // NVFP4: the two tensor scales, rowwise then columnwise
        return i.scaling_mode == OCTET_SCALING_NVFP4_1X16 || i.scaling_mode == OCTET_SCALING_NVFP4_16X16
                   ? 2 * sizeof(float)
                   : sizeof(float);
      default: return sizeof(float);
    }
  }

  void copy_from_host(octet_component component, const void* src, size_t bytes) const {
    check(octet_tensor_copy_from_host(handle(), component, src, bytes));
  }
  void copy_to_host(octet_component component, void* dst, size_t bytes) const {
    check(octet_tensor_copy_to_host(handle(), component, dst, bytes));
  }
  template <typename T>
  void upload(const std::vector<T>& values,
              octet_component component = OCTET_COMPONENT_DATA) const {
    copy_from_host(component, values.data(), values.size() * sizeof(T));
  }
  // The whole component as a vector of T (bytes / sizeof(T) elements).
  template <typename T>
  std::vector<T> download(octet_component component = OCTET_COMPONENT_DATA) const {
    std::vector<T> out(component_bytes(component) / sizeof(T));
    copy_to_host(component, out.data(), out.size() * sizeof(T));
    return out;
  }
  void set_scale(float scale) const {
    copy_from_host(OCTET_COMPONENT_SCALE, &scale, sizeof scale);
  }
  float scale_inv() const { return download<float>(OCTET_COMPONENT_SCALE_INV).at(0); }
  float amax() const { return download<float>(OCTET_COMPONENT_AMAX).at(0); }

 private:
  octet_tensor* handle() const noexcept { return static_cast<const Self*>(this)->get(); }
};
}  // namespace detail

// A borrowed tensor: a layer's parameter or gradient, or a view of a Tensor.
// Copyable, no destructor: it never destroys anything. Valid while its owner
// (the Layer, or the Tensor) is.
class TensorView : public detail::TensorOps<TensorView> {
 public:
  TensorView() noexcept = default;
  explicit TensorView(octet_tensor* handle) noexcept : handle_(handle) {}
  octet_tensor* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  octet_tensor* handle_ = nullptr;
};

class Tensor : public detail::TensorOps<Tensor> {
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

  // usages != 0 on an FP8 (or FP4) dtype makes a quantized tensor
  // (OCTET_USAGE_*), scaled in scaling_mode: one OCTET_SCALING_* value
  // (per-tensor, MXFP8_1X32, BLOCK_1X128, BLOCK_128X128, PER_ROW,
  // PER_COLUMN; for E2M1, MXFP4_1X32, NVFP4_1X16, NVFP4_16X16), 0 meaning
  // per-tensor, as in octet_tensor_desc.
  static Tensor create(Context& context, octet_dtype dtype, const std::vector<int64_t>& shape, uint32_t usages = 0,
                       int32_t scaling_mode = 0) {
    return create(context.get(), dtype, shape, usages, scaling_mode);
  }
  // The same on a context handle a C call created (not owned here).
  static Tensor create(octet_context* context, octet_dtype dtype, const std::vector<int64_t>& shape,
                       uint32_t usages = 0, int32_t scaling_mode = 0) {
    octet_tensor_desc desc = make_desc(dtype, shape, usages);
    desc.scaling_mode = scaling_mode;
    Tensor t;
    check(octet_tensor_create(context, &desc, &t.handle_));
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
  // A borrowed view (valid while this Tensor owns the handle). Implicit, so
  // a Tensor goes wherever a TensorView is taken.
  TensorView view() const noexcept { return TensorView(handle_); }
  operator TensorView() const noexcept { return TensorView(handle_); }
  // Takes ownership of a handle a C call created (this Tensor destroys it).
  static Tensor adopt(octet_tensor* handle) noexcept {
    Tensor t;
    t.handle_ = handle;
    return t;
  }

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

inline void convert(Context& context, TensorView input, TensorView output,
                    bool saturate = true) {
  check(octet_convert(context.get(), input.get(), output.get(), saturate ? 1 : 0));
}

inline float amax(Context& context, TensorView input) {
  float value = 0.0f;
  check(octet_amax(context.get(), input.get(), &value));
  return value;
}

// usages 0: every usage the output has.
inline void quantize(Context& context, TensorView input, TensorView output,
                     uint32_t usages = 0, bool saturate = true) {
  octet_quantize_options options{};
  options.struct_size = sizeof options;
  options.usages = usages;
  options.saturate = saturate ? 1 : 0;
  check(octet_quantize(context.get(), input.get(), output.get(), &options));
}

inline void dequantize(Context& context, TensorView input, TensorView output) {
  check(octet_dequantize(context.get(), input.get(), output.get()));
}

// Collectives through the context's communicator (octet_allreduce,
// octet_allgather, octet_reduce_scatter; docs/distributed.md).
inline void allreduce(Context& context, TensorView input, TensorView output, octet_reduce_op op) {
  check(octet_allreduce(context.get(), input.get(), output.get(), op));
}
inline void allgather(Context& context, TensorView input, TensorView output) {
  check(octet_allgather(context.get(), input.get(), output.get()));
}
inline void reduce_scatter(Context& context, TensorView input, TensorView output, octet_reduce_op op) {
  check(octet_reduce_scatter(context.get(), input.get(), output.get(), op));
}

struct GemmOptions {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
  const Tensor* bias = nullptr;
  octet_epilogue epilogue = OCTET_EPILOGUE_NONE;
  bool fast_accumulation = false;
  bool saturate_output = true;  // FP8 D only
};

// D = alpha * sa * sb * A' B'^T + beta * D + bias (see octet_gemm).
inline void gemm(Context& context, TensorView a, TensorView b, TensorView d,
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

struct GroupedGemmOptions {
  int32_t split = OCTET_GROUP_SPLIT_M;  // OCTET_GROUP_SPLIT_M or _K
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
  std::vector<TensorView> bias;  // empty, or one per group (empty views: none)
  octet_epilogue epilogue = OCTET_EPILOGUE_NONE;
  bool fast_accumulation = false;
};

// G GEMMs in one call (see octet_grouped_gemm; docs/grouped_gemm.md): a, b
// and d each hold one tensor (stacked along the split, or 3-D [G, r, c])
// or one per group.
inline void grouped_gemm(Context& context, const std::vector<int64_t>& splits, const std::vector<TensorView>& a,
                         const std::vector<TensorView>& b, const std::vector<TensorView>& d,
                         const GroupedGemmOptions& options = GroupedGemmOptions()) {
  octet_grouped_gemm_options c;
  check(octet_grouped_gemm_options_init(&c));
  c.split = options.split;
  c.trans_a = options.trans_a ? 1 : 0;
  c.trans_b = options.trans_b ? 1 : 0;
  c.alpha = options.alpha;
  c.beta = options.beta;
  c.epilogue = options.epilogue;
  c.fast_accumulation = options.fast_accumulation ? 1 : 0;
  auto handles = [](const std::vector<TensorView>& views) {
    std::vector<octet_tensor*> h;
    for (const TensorView& v : views) h.push_back(v.get());
    return h;
  };
  const std::vector<octet_tensor*> ha = handles(a), hb = handles(b), hd = handles(d), hbias = handles(options.bias);
  std::vector<const octet_tensor*> ca(ha.begin(), ha.end()), cb(hb.begin(), hb.end()),
      cbias(hbias.begin(), hbias.end());
  c.bias = options.bias.empty() ? nullptr : cbias.data();
  check(octet_grouped_gemm(context.get(), splits.size(), splits.data(), ca.data(), ca.size(), cb.data(), cb.size(),
                           hd.data(), hd.size(), &c));
}

// ---- option structs with their defaults ---------------------------------
// Each returns the C struct filled by its octet_*_init (the sized form where
// the header routes to one), so fields not changed keep the defaults.

inline octet_quantize_options quantize_options() {
  octet_quantize_options o{};
  check(octet_quantize_options_init(&o));
  return o;
}
// A zeroed octet_quantize_stats with struct_size set, for Quantizer::quantize.
inline octet_quantize_stats quantize_stats() noexcept {
  octet_quantize_stats s{};
  s.struct_size = sizeof s;
  return s;
}
inline octet_delayed_scaling_options delayed_scaling_options() {
  octet_delayed_scaling_options o{};
  check(octet_delayed_scaling_options_init(&o));
  return o;
}
inline octet_current_scaling_options current_scaling_options() {
  octet_current_scaling_options o{};
  check(octet_current_scaling_options_init(&o));
  return o;
}
inline octet_static_scaling_options static_scaling_options() {
  octet_static_scaling_options o{};
  check(octet_static_scaling_options_init(&o));
  return o;
}
inline octet_mxfp8_options mxfp8_options() {
  octet_mxfp8_options o{};
  check(octet_mxfp8_options_init(&o));
  return o;
}
inline octet_block_scaling_options block_scaling_options() {
  octet_block_scaling_options o{};
  check(octet_block_scaling_options_init(&o));
  return o;
}
inline octet_rowwise_scaling_options rowwise_scaling_options() {
  octet_rowwise_scaling_options o{};
  check(octet_rowwise_scaling_options_init(&o));
  return o;
}
inline octet_linear_options linear_options() {
  octet_linear_options o{};
  check(octet_linear_options_init(&o));
  return o;
}
// The `linear` field is left NULL: Layer::layernorm_linear takes the linear
// options separately and points it at them.
inline octet_layernorm_linear_options layernorm_linear_options() {
  octet_layernorm_linear_options o{};
  check(octet_layernorm_linear_options_init(&o));
  return o;
}
inline octet_layernorm_mlp_options layernorm_mlp_options() {
  octet_layernorm_mlp_options o{};
  check(octet_layernorm_mlp_options_init(&o));
  return o;
}
inline octet_grouped_linear_options grouped_linear_options() {
  octet_grouped_linear_options o{};
  check(octet_grouped_linear_options_init(&o));
  return o;
}

// ---- recipes --------------------------------------------------------------

// What octet_recipe_tensor_format answers for a role.
struct TensorFormat {
  octet_dtype dtype = OCTET_DTYPE_INVALID;
  int32_t scaling_mode = 0;  // OCTET_SCALING_*
};

// An immutable scaling recipe (docs/recipes.md). Move-only; quantizers,
// scopes and layers made from it keep what they need alive, so a Recipe may
// be destroyed before them.
class Recipe {
 public:
  Recipe() noexcept = default;
  ~Recipe() { octet_recipe_destroy(handle_); }
  Recipe(Recipe&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Recipe& operator=(Recipe&& other) noexcept {
    if (this != &other) {
      octet_recipe_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Recipe(const Recipe&) = delete;
  Recipe& operator=(const Recipe&) = delete;

  // Start options from octet::delayed_scaling_options() etc.; the no-argument
  // forms use the library's defaults.
  static Recipe delayed() { return make(octet_recipe_create_delayed, nullptr); }
  static Recipe delayed(const octet_delayed_scaling_options& o) {
    return make(octet_recipe_create_delayed, &o);
  }
  static Recipe current() { return make(octet_recipe_create_current, nullptr); }
  static Recipe current(const octet_current_scaling_options& o) {
    return make(octet_recipe_create_current, &o);
  }
  static Recipe static_scaling() { return make(octet_recipe_create_static, nullptr); }
  static Recipe static_scaling(const octet_static_scaling_options& o) {
    return make(octet_recipe_create_static, &o);
  }
  // Convenience: static scaling with this scale and the other defaults.
  static Recipe static_scaling(float scale) {
    octet_static_scaling_options o = static_scaling_options();
    o.scale = scale;
    return static_scaling(o);
  }
  static Recipe mxfp8() { return make(octet_recipe_create_mxfp8, nullptr); }
  static Recipe mxfp8(const octet_mxfp8_options& o) { return make(octet_recipe_create_mxfp8, &o); }
  static Recipe block() { return make(octet_recipe_create_block, nullptr); }
  static Recipe block(const octet_block_scaling_options& o) {
    return make(octet_recipe_create_block, &o);
  }
  static Recipe rowwise() { return make(octet_recipe_create_rowwise, nullptr); }
  static Recipe rowwise(const octet_rowwise_scaling_options& o) { return make(octet_recipe_create_rowwise, &o); }

  octet_recipe* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  octet_recipe_info info() const {
    octet_recipe_info i{};
    i.struct_size = sizeof i;
    check(octet_recipe_get_info(handle_, &i));
    return i;
  }
  octet_recipe_kind kind() const { return info().kind; }
  // The dtype and scaling mode a quantized tensor of `role` takes.
  TensorFormat tensor_format(octet_tensor_role role) const {
    int32_t dtype = 0, mode = 0;
    check(octet_recipe_tensor_format(handle_, role, &dtype, &mode));
    return TensorFormat{dtype, mode};
  }

 private:
  template <typename Options>
  static Recipe make(octet_status (*create)(const Options*, octet_recipe**),
                     const typename detail::Identity<Options>::type* options) {
    Recipe r;
    check(create(options, &r.handle_));
    return r;
  }

  octet_recipe* handle_ = nullptr;
};

// ---- quantizers -----------------------------------------------------------

namespace detail {
// The quantizer calls shared by Quantizer (owning) and QuantizerView.
template <typename Self>
class QuantizerOps {
 public:
  // Quantizes input into output (dtype and scaling mode of the recipe's
  // tensor_format for the role); options nullptr: defaults; stats: optional
  // (start from octet::quantize_stats()).
  void quantize(Context& context, TensorView input, TensorView output,
                const octet_quantize_options* options = nullptr,
                octet_quantize_stats* stats = nullptr) const {
    check(octet_quantizer_quantize(context.get(), handle(), input.get(), output.get(), options,
                                   stats));
  }
  void record_amax(float amax) const { check(octet_quantizer_record_amax(handle(), amax)); }
  void update_scale() const { check(octet_quantizer_update_scale(handle())); }
  void set_scale(float scale) const { check(octet_quantizer_set_scale(handle(), scale)); }

  octet_quantizer_info info() const {
    octet_quantizer_info i{};
    i.struct_size = sizeof i;
    check(octet_quantizer_get_info(handle(), &i));
    return i;
  }
  float scale() const { return info().scale; }
  // Newest first: [0] is the current step.
  std::vector<float> amax_history() const {
    std::vector<float> out(info().amax_history_len);
    check(octet_quantizer_get_amax_history(handle(), out.data(), out.size()));
    return out;
  }

  // Checkpoint bytes (docs/recipes.md, "Checkpoint format").
  std::vector<uint8_t> save() const {
    size_t size = 0;
    check(octet_quantizer_save(handle(), nullptr, 0, &size));
    std::vector<uint8_t> bytes(size);
    check(octet_quantizer_save(handle(), bytes.data(), bytes.size(), &size));
    bytes.resize(size);
    return bytes;
  }
  void load(const void* bytes, size_t size) const {
    check(octet_quantizer_load(handle(), bytes, size));
  }
  void load(const std::vector<uint8_t>& bytes) const { load(bytes.data(), bytes.size()); }

 private:
  octet_quantizer* handle() const noexcept { return static_cast<const Self*>(this)->get(); }
};
}  // namespace detail

// A borrowed quantizer (Layer::quantizer, or a view of a Quantizer). Copyable,
// no destructor; valid while its owner is.
class QuantizerView : public detail::QuantizerOps<QuantizerView> {
 public:
  QuantizerView() noexcept = default;
  explicit QuantizerView(octet_quantizer* handle) noexcept : handle_(handle) {}
  octet_quantizer* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  octet_quantizer* handle_ = nullptr;
};

class Quantizer : public detail::QuantizerOps<Quantizer> {
 public:
  Quantizer() noexcept = default;
  // The recipe is kept alive by the quantizer.
  Quantizer(const Recipe& recipe, octet_tensor_role role) {
    check(octet_quantizer_create(recipe.get(), role, &handle_));
  }
  // No recipe: follows the innermost autocast scope of the context it
  // quantizes on (fails outside any scope).
  explicit Quantizer(octet_tensor_role role) {
    check(octet_quantizer_create(nullptr, role, &handle_));
  }
  ~Quantizer() { octet_quantizer_destroy(handle_); }
  Quantizer(Quantizer&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Quantizer& operator=(Quantizer&& other) noexcept {
    if (this != &other) {
      octet_quantizer_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Quantizer(const Quantizer&) = delete;
  Quantizer& operator=(const Quantizer&) = delete;

  octet_quantizer* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  QuantizerView view() const noexcept { return QuantizerView(handle_); }
  operator QuantizerView() const noexcept { return QuantizerView(handle_); }

 private:
  octet_quantizer* handle_ = nullptr;
};

// ---- autocast -------------------------------------------------------------

// A scope guard: octet_autocast_begin in the constructor, octet_autocast_end
// in end() or, if end() was not called, in the destructor.
//
// end() throws octet::Error on failure; the library closes the scope even
// then (no quantizer changed: docs/recipes.md), so the guard is finished
// after end() either returns or throws.
//
// Destructor-error rule: the destructor never throws. If its
// octet_autocast_end fails, the failure is dropped (the scope is still
// closed and the quantizers are left unchanged, per the library's rule); call
// end() on the normal path to see errors. The destructor's end is a full end:
// when an exception unwinds an outermost scope, the scale update runs with
// the amaxes recorded so far, and the communicator (if set) is called; with
// a communicator that needs every process (MPI), a process that unwinds
// alone may then wait for the others, so end scopes explicitly there.
//
// Not copyable or movable; it holds the raw context, so it must end before
// the Context object is destroyed (declare it after the Context).
class AutocastScope {
 public:
  AutocastScope(Context& context, const Recipe& recipe) : context_(context.get()) {
    check(octet_autocast_begin(context_, recipe.get()));
  }
  ~AutocastScope() {
    if (context_ != nullptr) octet_autocast_end(context_);  // status dropped: see above
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  void end() {
    if (context_ == nullptr)
      throw Error(OCTET_STATUS_INVALID_ARGUMENT, "AutocastScope::end: the scope already ended");
    octet_context* context = std::exchange(context_, nullptr);
    check(octet_autocast_end(context));
  }
  bool active() const noexcept { return context_ != nullptr; }

 private:
  octet_context* context_ = nullptr;
};

// ---- layers ---------------------------------------------------------------

// What a training forward kept for its backward (owns an octet_saved).
// Move-only; consumed by Layer::backward; destroying it without a backward
// releases it (octet_saved_destroy). It may outlive its Layer.
class Saved {
 public:
  Saved() noexcept = default;
  ~Saved() { octet_saved_destroy(handle_); }
  Saved(Saved&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Saved& operator=(Saved&& other) noexcept {
    if (this != &other) {
      octet_saved_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Saved(const Saved&) = delete;
  Saved& operator=(const Saved&) = delete;

  octet_saved* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  void reset() noexcept { octet_saved_destroy(std::exchange(handle_, nullptr)); }

 private:
  friend class Layer;
  octet_saved* handle_ = nullptr;
};

// Linear, LayerNormLinear or LayerNormMLP (docs/layers.md). Move-only; owns
// the octet_layer, which keeps its context alive. Parameters, gradients and
// quantizers are handed out as views, valid until the Layer is destroyed.
class Layer {
 public:
  Layer() noexcept = default;
  ~Layer() { octet_layer_destroy(handle_); }
  Layer(Layer&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Layer& operator=(Layer&& other) noexcept {
    if (this != &other) {
      octet_layer_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Start options from octet::linear_options() etc.
  static Layer linear(Context& context, const octet_linear_options& options) {
    Layer l;
    check(octet_layer_create_linear(context.get(), &options, &l.handle_));
    return l;
  }
  // The C struct as is (options.linear set by the caller).
  static Layer layernorm_linear(Context& context, const octet_layernorm_linear_options& options) {
    Layer l;
    check(octet_layer_create_layernorm_linear(context.get(), &options, &l.handle_));
    return l;
  }
  static Layer layernorm_mlp(Context& context, const octet_layernorm_mlp_options& options) {
    Layer l;
    check(octet_layer_create_layernorm_mlp(context.get(), &options, &l.handle_));
    return l;
  }
  // options.linear may be left NULL: it is pointed at `linear` for the call.
  static Layer layernorm_linear(Context& context, const octet_linear_options& linear,
                                octet_layernorm_linear_options options) {
    options.linear = &linear;
    return layernorm_linear(context, static_cast<const octet_layernorm_linear_options&>(options));
  }
  static Layer layernorm_mlp(Context& context, const octet_linear_options& linear,
                             octet_layernorm_mlp_options options) {
    options.linear = &linear;
    return layernorm_mlp(context, static_cast<const octet_layernorm_mlp_options&>(options));
  }
  // A GroupedLinear of num_groups experts (docs/grouped_linear.md): forward
  // it with forward_grouped.
  static Layer grouped_linear(Context& context, const octet_linear_options& linear, int64_t num_groups,
                              bool shared_quantizers = false) {
    octet_grouped_linear_options options = grouped_linear_options();
    options.linear = &linear;
    options.num_groups = num_groups;
    options.shared_quantizers = shared_quantizers ? 1 : 0;
    Layer l;
    check(octet_layer_create_grouped_linear(context.get(), &options, &l.handle_));
    return l;
  }

  octet_layer* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  size_t parameter_count() const {
    size_t count = 0;
    check(octet_layer_parameter_count(handle_, &count));
    return count;
  }
  std::string parameter_name(size_t index) const {
    const char* name = nullptr;
    check(octet_layer_parameter_name(handle_, index, &name));
    return detail::text(name);
  }
  std::vector<std::string> parameter_names() const {
    std::vector<std::string> names;
    const size_t count = parameter_count();
    for (size_t i = 0; i < count; ++i) names.push_back(parameter_name(i));
    return names;
  }
  // Index of a parameter; octet::Error NOT_FOUND when the layer has none such.
  size_t find_parameter(const std::string& name) const {
    size_t index = 0;
    check(octet_layer_find_parameter(handle_, name.c_str(), &index));
    return index;
  }
  bool has_parameter(const std::string& name) const {
    size_t index = 0;
    return octet_layer_find_parameter(handle_, name.c_str(), &index) == OCTET_STATUS_SUCCESS;
  }

  // Borrowed parameter / gradient tensors (see octet_layer_get_parameter /
  // octet_layer_get_gradient).
  TensorView parameter(size_t index) const {
    octet_tensor* t = nullptr;
    check(octet_layer_get_parameter(handle_, index, &t));
    return TensorView(t);
  }
  TensorView parameter(const std::string& name) const { return parameter(find_parameter(name)); }
  TensorView gradient(size_t index) const {
    octet_tensor* t = nullptr;
    check(octet_layer_get_gradient(handle_, index, &t));
    return TensorView(t);
  }
  TensorView gradient(const std::string& name) const { return gradient(find_parameter(name)); }

  // skip_weight_allocation: borrowed; it must stay alive and unchanged until
  // every backward of a forward that used it has run.
  void set_weight(size_t index, TensorView weight) {
    check(octet_layer_set_weight(handle_, index, weight.get()));
  }
  void set_weight(const std::string& name, TensorView weight) {
    set_weight(find_parameter(name), weight);
  }
  // A temporary Tensor would be destroyed while the layer still borrows it.
  void set_weight(size_t index, Tensor&& weight) = delete;
  void set_weight(const std::string& name, Tensor&& weight) = delete;
  // FP8-only weights: quantizes a high-precision matrix into weight `index`.
  void load_weight(size_t index, TensorView weight) {
    check(octet_layer_load_weight(handle_, index, weight.get()));
  }
  void load_weight(const std::string& name, TensorView weight) {
    load_weight(find_parameter(name), weight);
  }
  void new_step() { check(octet_layer_new_step(handle_)); }

  // Borrowed quantizer of one role of one linear (0: the only one, or FC1;
  // 1: FC2).
  QuantizerView quantizer(size_t linear_index, octet_tensor_role role) const {
    octet_quantizer* q = nullptr;
    check(octet_layer_get_quantizer(handle_, linear_index, role, &q));
    return QuantizerView(q);
  }

  // output = layer(input). training: returns what backward needs; otherwise
  // nothing is kept and the returned Saved is empty.
  Saved forward(TensorView input, TensorView output, bool training) {
    Saved saved;
    check(octet_layer_forward(handle_, input.get(), output.get(), training ? 1 : 0,
                              training ? &saved.handle_ : nullptr));
    return saved;
  }
  // GroupedLinear: splits[g] rows of input (in order) go through expert g.
  Saved forward_grouped(TensorView input, const std::vector<int64_t>& splits, TensorView output, bool training) {
    Saved saved;
    check(octet_layer_forward_grouped(handle_, input.get(), splits.size(), splits.data(), output.get(),
                                      training ? 1 : 0, training ? &saved.handle_ : nullptr));
    return saved;
  }
  // Consumes saved (empty afterwards, even when backward fails after its
  // argument checks passed; when those checks fail it is left as it was).
  // grad_input may be an empty view to skip dL/dinput; accumulate adds to
  // the parameter gradients instead of overwriting them.
  void backward(Saved& saved, TensorView grad_output, TensorView grad_input = TensorView(),
                bool accumulate = false) {
    check(octet_layer_backward(handle_, &saved.handle_, grad_output.get(), grad_input.get(),
                               accumulate ? 1 : 0));
  }

 private:
  octet_layer* handle_ = nullptr;
};

// ---- DLPack (octet_dlpack.h) ---------------------------------------------
//
// Zero-copy exchange with frameworks that speak DLPack (PyTorch, NumPy, JAX,
// CuPy through their C++ APIs, ...). The rules (what an import accepts, who
// calls which deleter) are octet_dlpack.h's.

}  // namespace octet

#include "octet_dlpack.h"

namespace octet {

// An owned DLManagedTensorVersioned (octet_dlpack_managed_tensor_versioned):
// the destructor calls its deleter once, unless release() handed it on.
// Move-only. It holds what to_dlpack exported (keeping the Octet memory
// alive, even past the Tensor's destruction), or what another producer
// gave, to import with from_dlpack.
class DLPackTensor {
 public:
  DLPackTensor() noexcept = default;
  explicit DLPackTensor(octet_dlpack_managed_tensor_versioned* managed) noexcept : managed_(managed) {}
  ~DLPackTensor() { reset(); }
  DLPackTensor(DLPackTensor&& other) noexcept : managed_(std::exchange(other.managed_, nullptr)) {}
  DLPackTensor& operator=(DLPackTensor&& other) noexcept {
    if (this != &other) {
      reset();
      managed_ = std::exchange(other.managed_, nullptr);
    }
    return *this;
  }
  DLPackTensor(const DLPackTensor&) = delete;
  DLPackTensor& operator=(const DLPackTensor&) = delete;

  octet_dlpack_managed_tensor_versioned* get() const noexcept { return managed_; }
  explicit operator bool() const noexcept { return managed_ != nullptr; }
  // The DLTensor (empty object: throws octet::Error).
  const octet_dlpack_tensor& tensor() const {
    if (!managed_) throw Error(OCTET_STATUS_INVALID_ARGUMENT, "DLPackTensor: empty (moved from or released)");
    return managed_->dl_tensor;
  }
  // The first element: data + byte_offset (host memory only to dereference).
  template <typename T>
  T* data() const {
    const octet_dlpack_tensor& t = tensor();
    return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
  }
  // Hands the struct on (to a consumer that will call its deleter); this
  // object becomes empty.
  octet_dlpack_managed_tensor_versioned* release() noexcept { return std::exchange(managed_, nullptr); }
  // Calls the deleter now (if any) and becomes empty.
  void reset() noexcept {
    octet_dlpack_managed_tensor_versioned* m = std::exchange(managed_, nullptr);
    if (m && m->deleter) m->deleter(m);
  }

 private:
  octet_dlpack_managed_tensor_versioned* managed_ = nullptr;
};

// Exports one component of `tensor` (octet_component: DATA, a quantized
// tensor's scales, ...) without copying (octet_tensor_to_dlpack).
inline DLPackTensor to_dlpack(TensorView tensor, octet_component component = OCTET_COMPONENT_DATA) {
  octet_dlpack_managed_tensor_versioned* managed = nullptr;
  check(octet_tensor_to_dlpack(tensor.get(), component, &managed));
  return DLPackTensor(managed);
}

// A Tensor on `context` over the memory `managed` describes, without
// copying (octet_tensor_from_dlpack). On success the Tensor owns the struct
// (Octet calls its deleter when the last user of the memory lets go) and
// `managed` is empty; on failure (octet::Error) `managed` still owns it.
inline Tensor from_dlpack(Context& context, DLPackTensor&& managed) {
  octet_tensor* handle = nullptr;
  check(octet_tensor_from_dlpack(context.get(), managed.get(), &handle));
  managed.release();
  return Tensor::adopt(handle);
}

}  // namespace octet

#endif  // OCTET_OCTET_HPP
