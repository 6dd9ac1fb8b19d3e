// Fuzzes SEQUENCES of layer calls through octet.h, as a user makes them
// (tests/core/random_arguments_test.cpp covers single calls).
//
// Each input is a small program. Its header creates up to three recipes
// (delayed with or without callbacks and overrides, current, static with or
// without observe, MXFP8, block; options drawn from the bytes) and a layer
// (Linear, LayerNormLinear or LayerNormMLP; ragged features and rows such as
// 1, 3, 17, 33; bias, params dtype, norm, activation, FP8-only weights,
// save_original_input, minimize_memory, weight_cache, skip_weight_allocation,
// its own recipe or none). Then up to kMaxSteps steps, each an opcode and a
// few argument bytes: forward (training or inference, into one of four saved
// slots), backward (accumulate, with or without grad_input; a slot that is
// empty, consumed, from inference or from another layer), saved destroy,
// new_step, set_weight, load_weight, writing and reading parameters and
// gradients, autocast begin/end (unbalanced too), quantizer calls on the
// layer's quantizers (record_amax, update_scale, set_scale, info, history,
// save/load, quantize, on the layer's context or a second one), a
// communicator that raises amaxes or fails at its Nth call, destroying and
// re-creating a layer (its saved handles outlive it), inspection, and a
// whole training step (autocast begin, forward, backward, end). Tensor
// arguments are usually well formed (fresh, or reused from earlier steps, so
// outputs feed later calls) and sometimes wrong: NULL, another context's,
// FP16, the other params dtype, quantized, plain FP8 codes, a wrong row or
// column count. Nothing the header calls undefined is generated: no handle is
// used after its destroy, a consumed saved handle is only passed as the NULL
// it was set to, a tensor lent by set_weight or kept by a save_original_input
// forward is never written again (nor destroyed before the layers: a lent
// step temporary is kept to the end), parameters are never passed as caller
// tensors.
//
// The program runs on reference contexts ("worlds"): native (or
// blackwell-like, the same capabilities on the reference: native columnwise
// access, every layout), hopper-like (TN-only FP8 GEMMs, transposed
// copies), and, in half the programs, a variant: native with the layer's
// minimize_memory flipped, and save_original_input flipped for a Linear.
// Properties, for every call:
// - the status is a documented one and not INTERNAL; a failure leaves a
//   message, its out-parameters (preset to sentinels) unchanged, and the
//   tensors it would write (output, grad_input, gradients, parameters)
//   bit-identical to before;
// - DIFFERENTIAL: native and hopper-like return the same status and message,
//   and every tensor the call wrote, every parameter, gradient, quantizer state
//   (info, amax history, checkpoint bytes) and communicator call read back
//   is bit-identical between them. docs/layers.md: "Results are
//   bit-identical across capability profiles (the same products summed in
//   the same order); only memory differs" (the reference GEMM widens the
//   operands and sums in ascending k whatever copy it reads, numerics.md
//   section 8); quantized tensors are compared as their rowwise codes (the
//   transposed copy transposed back where a profile keeps only that);
// - METAMORPHIC: the variant records the same as native (docs/layers.md:
//   both options quantize again in backward "with the forward's scale (same
//   codes)"), until a program does what breaks that relation: writes a
//   weight matrix between a forward and its backward (minimize_memory
//   quantizes the new one), or runs a Linear's training forward with a
//   delayed recipe overriding fprop only (save_original_input then
//   quantizes x in backward, with that moment's scale);
// - memory: no workspace outlives a call; user tensors are exactly the
//   caller's; with no saved handle alive, no saved activations remain, and no
//   quantized copy either (unless a weight cache is on);
// - no sanitizer report, no abort, no hang.
#include <octet/octet.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kWorlds = 3;  // native, hopper-like, variant (see the header)
const char* const kWorldNames[kWorlds] = {"native", "hopper-like", "variant"};
constexpr size_t kMaxSteps = 24;
constexpr size_t kMaxPool = 48;
constexpr int kSlots = 4;
constexpr int kMaxRecipes = 3;

const int64_t kFeatures[8] = {1, 3, 17, 33, 2, 8, 4, 5};
const int64_t kRows[8] = {1, 3, 17, 33, 2, 4, 1, 3};

// ---- failing -------------------------------------------------------------

std::string g_where = "setup";

[[noreturn]] void failf(const char* fmt, ...) {
  std::fprintf(stderr, "fuzz_layer_steps: at %s: ", g_where.c_str());
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::abort();
}
void check(bool ok, const char* what) {
  if (!ok) failf("%s", what);
}

// ---- input ----------------------------------------------------------------

class Input {
 public:
  Input(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return pos_ >= n_; }
  uint8_t byte() { return pos_ < n_ ? p_[pos_++] : 0; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

// ---- values ---------------------------------------------------------------

uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

float special_value(uint32_t r) {
  const float table[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, 3e38f,
                         448.0f, 464.0f, 57344.0f, 61440.0f, -480.0f, 1e-7f, 2.0f, -1.0f};
  return table[r % 16];
}

// Deterministic values of one of eight distributions.
std::vector<float> values(size_t n, uint32_t dist, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = mix(seed * 2654435761u + dist + 1);
  for (size_t i = 0; i < n; ++i) {
    s = mix(s + uint32_t(i) + 0x9e3779b9u);
    const float sign = (s & 1) ? -1.0f : 1.0f;
    switch (dist % 8) {
      case 0: v[i] = float(int((s >> 1) % 33) - 16) / 8.0f; break;                       // small dyadic
      case 1: v[i] = sign * std::ldexp(1.0f + float((s >> 8) % 256) / 256.0f, int((s >> 1) % 11) - 6); break;
      case 2: v[i] = sign * std::ldexp(1.0f + float((s >> 8) % 4096) / 4096.0f, int((s >> 1) % 51) - 30); break;
      case 3: v[i] = (s >> 24) < 24 ? special_value(s >> 1) : float(int((s >> 1) % 17) - 8) / 4.0f; break;
      case 4: v[i] = 0.0f; break;
      case 5: v[i] = float(seed % 7) - 3.0f; break;
      case 6: v[i] = sign * std::ldexp(1.0f + float((s >> 8) % 256) / 256.0f, int((s >> 1) % 8) + 8); break;
      default: v[i] = sign * std::ldexp(1.0f + float((s >> 8) % 256) / 256.0f, -int((s >> 1) % 8) - 20); break;
    }
  }
  return v;
}

// The bytes of `n` values in a dtype (BF16: the top half of the FP32 bits,
// FP16 and FP8: patterns), for octet_tensor_copy_from_host.
std::vector<uint8_t> encoded(int32_t dtype, size_t n, uint32_t dist, uint32_t seed) {
  std::vector<float> v = values(n, dist, seed);
  std::vector<uint8_t> out;
  if (dtype == OCTET_DTYPE_FP32) {
    out.resize(n * 4);
    std::memcpy(out.data(), v.data(), n * 4);
  } else if (dtype == OCTET_DTYPE_BF16 || dtype == OCTET_DTYPE_FP16) {
    out.resize(n * 2);
    for (size_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, &v[i], 4);
      const uint16_t h = dtype == OCTET_DTYPE_BF16 ? uint16_t(u >> 16) : uint16_t(mix(u) & 0x7BFF);
      std::memcpy(&out[2 * i], &h, 2);
    }
  } else {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = uint8_t(mix(seed + uint32_t(i)) & 0x7E);
  }
  return out;
}

size_t dtype_bytes(int32_t dtype) { return octet_dtype_size(static_cast<octet_dtype>(dtype)); }

// ---- statuses and records -------------------------------------------------

struct Call {
  octet_status status = 0;
  std::string message;
  bool ok() const { return status == OCTET_STATUS_SUCCESS; }
};

// FUZZ_LAYER_STEPS_TRACE=1: every call's status on stderr (to see what a
// corpus reaches).
const bool g_trace = std::getenv("FUZZ_LAYER_STEPS_TRACE") != nullptr;

Call called(octet_status s, const char* what) {
  if (g_trace) std::fprintf(stderr, "trace %s | %s | %s\n", g_where.c_str(), what, octet_status_name(s));
  Call c;
  c.status = s;
  if (s < OCTET_STATUS_SUCCESS || s > OCTET_STATUS_INTERNAL) failf("%s returned the undocumented status %d", what, s);
  if (s == OCTET_STATUS_SUCCESS) return c;
  c.message = octet_last_error_message();
  if (s == OCTET_STATUS_INTERNAL) failf("%s returned INTERNAL: %s", what, c.message.c_str());
  if (c.message.empty()) failf("%s failed with %s but left no message", what, octet_status_name(s));
  return c;
}

// What one world observed in one step, compared entry by entry between the
// worlds.
struct Record {
  std::vector<std::string> labels;
  std::vector<std::vector<uint8_t>> blobs;
  void add(const std::string& label, const void* p, size_t n) {
    labels.push_back(label);
    blobs.emplace_back(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  }
  void add(const std::string& label, const std::vector<uint8_t>& b) { add(label, b.data(), b.size()); }
  void add(const std::string& label, const Call& c) {
    add(label + " status", &c.status, sizeof c.status);
    add(label + " message", c.message.data(), c.message.size());
  }
  void flag(const std::string& label, int64_t v) { add(label, &v, sizeof v); }
};

void compare(const Record& a, const Record& b, int wb) {
  const char* nb = kWorldNames[wb];
  if (a.labels.size() != b.labels.size()) {
    for (size_t i = 0; i < a.labels.size() || i < b.labels.size(); ++i) {
      if (i < a.labels.size() && i < b.labels.size() && a.labels[i] == b.labels[i]) continue;
      failf("native and %s recorded different things: '%s' vs '%s'", nb, i < a.labels.size() ? a.labels[i].c_str() : "-",
            i < b.labels.size() ? b.labels[i].c_str() : "-");
    }
  }
  for (size_t i = 0; i < a.labels.size(); ++i) {
    if (a.labels[i] != b.labels[i])
      failf("native and %s recorded different things: '%s' vs '%s'", nb, a.labels[i].c_str(), b.labels[i].c_str());
    if (a.blobs[i] == b.blobs[i]) continue;
    const std::vector<uint8_t>& x = a.blobs[i];
    const std::vector<uint8_t>& y = b.blobs[i];
    if (a.labels[i].find("message") != std::string::npos)
      failf("'%s' differs between native and %s:\n  native: %.*s\n  %s: %.*s", a.labels[i].c_str(), nb,
            int(x.size()), reinterpret_cast<const char*>(x.data()), nb, int(y.size()),
            reinterpret_cast<const char*>(y.data()));
    size_t k = 0;
    while (k < x.size() && k < y.size() && x[k] == y[k]) ++k;
    failf("'%s' differs between native and %s (%zu vs %zu bytes; first difference at byte %zu: %02x vs %02x)",
          a.labels[i].c_str(), nb, x.size(), y.size(), k, k < x.size() ? x[k] : 0, k < y.size() ? y[k] : 0);
  }
}

// ---- what the program knows (the same for both worlds) --------------------

struct TensorModel {
  int32_t dtype = OCTET_DTYPE_FP32;
  int32_t ndim = 2;
  int64_t shape[3] = {1, 1, 1};
  int64_t rows = 1, cols = 1;
  bool frozen = false;  // lent to a layer or kept by a forward: never written again
  uint64_t bytes() const { return uint64_t(rows * cols) * dtype_bytes(dtype); }
};

struct ParamModel {
  std::string name;
  int32_t ndim = 1;
  int64_t rows = 1, cols = 1;  // 1-D: rows = 1, cols = length
  bool matrix = false;
};

struct LayerSpec {
  int kind = 0;  // 0 Linear, 1 LayerNormLinear, 2 LayerNormMLP
  octet_linear_options lo{};
  int recipe = -1;  // index into the program's recipes, -1 none
  int32_t norm = OCTET_LAYER_LAYERNORM;
  float epsilon = 1e-5f;
  int32_t activation = OCTET_LAYER_GELU;
  int64_t ffn = 1;
  bool corrupt = false;
};

struct LayerModel {
  bool alive = false;
  LayerSpec spec;
  std::vector<ParamModel> params;
  std::vector<bool> grad;  // allocated
  bool grads_unknown = false;
  // A dead layer's calls get NULL; their tensors still need a valid shape.
  int64_t in() const { return alive ? spec.lo.in_features : 3; }
  int64_t out() const { return !alive ? 3 : spec.kind == 2 ? spec.lo.in_features : spec.lo.out_features; }
  int32_t dtype() const { return alive ? spec.lo.params_dtype : int32_t(OCTET_DTYPE_FP32); }
  bool fp8_only() const { return spec.lo.weight_storage == OCTET_WEIGHTS_FP8_ONLY; }
  size_t linears() const { return spec.kind == 2 ? 2 : 1; }
};

struct SlotModel {
  bool full = false;
  int layer = 0;
  uint64_t generation = 0;
  int64_t rows = 1;
  bool variant_ok = true;  // the variant world's backward of it must match
};

struct Comm {
  int mode = 0;  // 0 none
  float remote = 0.0f;
  uint32_t fail_at = 0;  // 1-based call index, 0: never
  octet_status fail_status = OCTET_STATUS_BACKEND_ERROR;
  uint32_t calls = 0;
  std::vector<uint8_t> log;  // counts and values seen, compared between worlds
};

octet_status allreduce(float* values, size_t count, void* user_data) {
  Comm& c = *static_cast<Comm*>(user_data);
  ++c.calls;
  const uint32_t n = uint32_t(count);
  c.log.insert(c.log.end(), reinterpret_cast<const uint8_t*>(&n), reinterpret_cast<const uint8_t*>(&n) + 4);
  c.log.insert(c.log.end(), reinterpret_cast<const uint8_t*>(values),
               reinterpret_cast<const uint8_t*>(values) + 4 * count);
  if (c.calls == c.fail_at) return c.fail_status;
  for (size_t i = 0; i < count; ++i) values[i] = std::fmax(values[i], c.remote);
  return OCTET_STATUS_SUCCESS;
}

// Recipe callbacks: pure functions of their arguments and of a constant mode
// (user_data), so both worlds see the same results.
const int kModes[4] = {0, 1, 2, 3};

octet_status amax_callback(const float* history, size_t length, float* amax, void* user_data) {
  switch (*static_cast<const int*>(user_data)) {
    case 0: {
      float m = 0.0f;
      for (size_t i = 0; i < length; ++i) m = std::fmax(m, history[i]);
      *amax = m;
      return OCTET_STATUS_SUCCESS;
    }
    case 1: *amax = history[length - 1]; return OCTET_STATUS_SUCCESS;
    case 2:
      if (history[0] > 1.0f) return OCTET_STATUS_BACKEND_ERROR;
      *amax = history[0];
      return OCTET_STATUS_SUCCESS;
    default: *amax = INFINITY; return OCTET_STATUS_SUCCESS;
  }
}

octet_status scale_callback(float amax, float old_scale, float fp8_max, int32_t margin, float* new_scale,
                            void* user_data) {
  switch (*static_cast<const int*>(user_data)) {
    case 0: *new_scale = amax > 0.0f ? std::ldexp(fp8_max, -margin) / amax : old_scale; return OCTET_STATUS_SUCCESS;
    case 1: *new_scale = old_scale * 2.0f; return OCTET_STATUS_SUCCESS;
    case 2:
      if (amax > 4.0f) return OCTET_STATUS_UNAVAILABLE;
      *new_scale = old_scale;
      return OCTET_STATUS_SUCCESS;
    default: *new_scale = 0.0f; return OCTET_STATUS_SUCCESS;
  }
}

// ---- one world: a context with its profile and everything made on it -----

struct World {
  int32_t profile = OCTET_PROFILE_NATIVE;
  octet_context* ctx = nullptr;
  octet_context* ctx2 = nullptr;  // "another context"
  octet_layer* layers[2] = {nullptr, nullptr};
  std::vector<octet_tensor*> pool;
  octet_saved* slots[kSlots] = {};
  std::vector<octet_saved*> orphans;
  std::vector<octet_tensor*> temps;  // this step's special tensors
  // Step temporaries a successful set_weight lent to a layer: the header
  // has the caller keep them alive while the layer may use them, so they
  // are destroyed only after the layers.
  std::vector<octet_tensor*> lent;
  std::vector<bool> lent_on_ctx2;  // per lent tensor: made on ctx2
  Comm comm;

  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  void drop_temps() {
    for (octet_tensor* t : temps) octet_tensor_destroy(t);
    temps.clear();
  }
  // Moves temporary t (made this step) to the lent ones.
  void keep_lent(octet_tensor* t, bool on_ctx2) {
    for (size_t i = 0; i < temps.size(); ++i)
      if (temps[i] == t) {
        temps.erase(temps.begin() + std::ptrdiff_t(i));
        lent.push_back(t);
        lent_on_ctx2.push_back(on_ctx2);
        return;
      }
  }
  ~World() {
    drop_temps();
    for (octet_saved*& s : slots) octet_saved_destroy(s);
    for (octet_saved* s : orphans) octet_saved_destroy(s);
    for (octet_layer* l : layers) octet_layer_destroy(l);
    for (octet_tensor* t : lent) octet_tensor_destroy(t);
    for (octet_tensor* t : pool) octet_tensor_destroy(t);
    octet_context_destroy(ctx2);
    octet_context_destroy(ctx);
  }
};

template <typename T>
T* sentinel() {
  return reinterpret_cast<T*>(uintptr_t(0x5e171e00));
}

octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  if (octet_tensor_get_info(t, &info) != OCTET_STATUS_SUCCESS) failf("octet_tensor_get_info: %s", octet_last_error_message());
  return info;
}

std::vector<uint8_t> read_component(const octet_tensor* t, int32_t component, size_t bytes) {
  std::vector<uint8_t> b(bytes);
  if (octet_tensor_copy_to_host(t, component, b.data(), b.size()) != OCTET_STATUS_SUCCESS)
    failf("octet_tensor_copy_to_host (component %d, %zu bytes): %s", component, bytes, octet_last_error_message());
  return b;
}

// A tensor's contents in a form both profiles share: plain data; for a
// quantized tensor its rowwise codes ([rows, cols], transposed back from the
// transposed copy where that is all a per-tensor tensor has), its scalars,
// and its block scales. Where a per-tensor tensor holds both copies and
// `both_written`, they must agree.
std::vector<uint8_t> contents(const octet_tensor* t, bool both_written = false) {
  const octet_tensor_info i = info_of(t);
  int64_t rows = 1;
  for (int d = 0; d + 1 < i.ndim; ++d) rows *= i.shape[d];
  const int64_t cols = i.shape[i.ndim - 1];
  if (i.usages == 0) return read_component(t, OCTET_COMPONENT_DATA, size_t(i.rowwise_bytes));
  std::vector<uint8_t> out;
  auto append = [&](const std::vector<uint8_t>& b) { out.insert(out.end(), b.begin(), b.end()); };
  const size_t n = size_t(rows * cols);
  if (i.scaling_mode == OCTET_SCALING_PER_TENSOR) {
    std::vector<uint8_t> row, col;
    if (i.has_rowwise_data) row = read_component(t, OCTET_COMPONENT_DATA, n);
    if (i.has_columnwise_data) col = read_component(t, OCTET_COMPONENT_COLUMNWISE_DATA, n);
    std::vector<uint8_t> from_col(col.empty() ? 0 : n);
    for (int64_t r = 0; r < rows && !col.empty(); ++r)
      for (int64_t c = 0; c < cols; ++c) from_col[size_t(r * cols + c)] = col[size_t(c * rows + r)];
    if (!row.empty() && !col.empty() && both_written && row != from_col)
      failf("a per-tensor quantized tensor's transposed copy is not its rowwise codes transposed");
    append(row.empty() ? from_col : row);
    append(read_component(t, OCTET_COMPONENT_SCALE, 4));
    append(read_component(t, OCTET_COMPONENT_SCALE_INV, 4));
  } else {
    if (i.usages & OCTET_USAGE_ROWWISE) {
      append(read_component(t, OCTET_COMPONENT_DATA, n));
      append(read_component(t, OCTET_COMPONENT_ROWWISE_SCALE_INV, size_t(i.rowwise_scale_inv_bytes)));
    }
    if (i.usages & OCTET_USAGE_COLUMNWISE) {
      append(read_component(t, OCTET_COMPONENT_COLUMNWISE_DATA, n));
      append(read_component(t, OCTET_COMPONENT_COLUMNWISE_SCALE_INV, size_t(i.columnwise_scale_inv_bytes)));
    }
  }
  append(read_component(t, OCTET_COMPONENT_AMAX, 4));
  return out;
}

// Writes a pattern into every stored component of a quantized tensor (its
// contents are otherwise unspecified), so that "untouched" can be checked.
void fill_quantized(octet_tensor* t, uint32_t seed) {
  const octet_tensor_info i = info_of(t);
  auto put = [&](int32_t component, size_t bytes) {
    std::vector<uint8_t> b = encoded(OCTET_DTYPE_E4M3, bytes, 0, seed + uint32_t(component));
    if (octet_tensor_copy_from_host(t, component, b.data(), b.size()) != OCTET_STATUS_SUCCESS)
      failf("filling component %d of a quantized tensor: %s", component, octet_last_error_message());
  };
  if (i.has_rowwise_data) put(OCTET_COMPONENT_DATA, size_t(i.rowwise_bytes));
  if (i.has_columnwise_data) put(OCTET_COMPONENT_COLUMNWISE_DATA, size_t(i.columnwise_bytes));
  if (i.scaling_mode == OCTET_SCALING_PER_TENSOR) {
    const float one = 1.0f;
    octet_tensor_copy_from_host(t, OCTET_COMPONENT_SCALE, &one, 4);
    octet_tensor_copy_from_host(t, OCTET_COMPONENT_SCALE_INV, &one, 4);
  } else {
    if (i.rowwise_scale_inv_bytes) put(OCTET_COMPONENT_ROWWISE_SCALE_INV, size_t(i.rowwise_scale_inv_bytes));
    if (i.columnwise_scale_inv_bytes) put(OCTET_COMPONENT_COLUMNWISE_SCALE_INV, size_t(i.columnwise_scale_inv_bytes));
  }
  const float zero = 0.0f;
  octet_tensor_copy_from_host(t, OCTET_COMPONENT_AMAX, &zero, 4);
}

// ---- tensor arguments -------------------------------------------------------

// What kind of tensor an argument wants (the compatible ones).
struct Want {
  int32_t dtype = OCTET_DTYPE_FP32;
  int64_t rows = -1;  // -1: any (fresh: drawn)
  int64_t cols = 1;
  bool writable = false;
  int exclude = -1;  // a pool index that must not be picked
  int ndim_hint = 2;
  int64_t lead[2] = {0, 0};  // leading dims of a fresh tensor, when known
  bool matrix = false;       // a weight: exactly [rows, cols]
  bool required = false;     // never NULL, even with a full pool
};

struct TensorRef {
  enum Kind { Null, Pool, Temp } kind = Null;
  int index = -1;  // Pool
  // Creation (a fresh pool tensor or a temp).
  bool create = false;
  octet_tensor_desc desc{};
  bool on_ctx2 = false;
  uint32_t dist = 0, seed = 0;
};

octet_tensor_desc plain_desc(int32_t dtype, int ndim, const int64_t* shape) {
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.ndim = ndim;
  for (int i = 0; i < ndim; ++i) d.shape[i] = shape[i];
  return d;
}

struct Program;

// ---- the program --------------------------------------------------------

struct Program {
  World worlds[kWorlds];
  octet_recipe* recipes[kMaxRecipes] = {};
  int recipe_kind[kMaxRecipes] = {-1, -1, -1};
  int n_recipes = 0;
  std::vector<TensorModel> pool;
  LayerModel layers[2];
  uint64_t generation[2] = {0, 0};
  SlotModel slots[kSlots];
  std::vector<int> autocast;  // recipe indices (-1: NULL given, refused)
  bool orphans = false;
  bool override_fprop_only[kMaxRecipes] = {};  // delayed, fprop in high precision, wgrad in FP8
  bool variant_valid = true;  // the variant world runs and is still comparable

  // Native against hopper-like always; native against the variant while
  // the relation holds.
  void compare_all(const Record* rec) {
    compare(rec[0], rec[1], 1);
    if (variant_valid) compare(rec[0], rec[2], 2);
  }
  // The worlds a step runs on: the variant only while it is comparable
  // (it costs half again as much).
  int worlds_run() const { return variant_valid ? kWorlds : kWorlds - 1; }

  ~Program() {
    // World destructors run first (members are destroyed in reverse order
    // after this body); recipes are kept alive by their users anyway.
    for (octet_recipe* r : recipes) octet_recipe_destroy(r);
  }

  bool any_saved() const {
    if (orphans) return true;
    for (const SlotModel& s : slots)
      if (s.full) return true;
    return false;
  }

  // -- tensors --

  bool compatible(const TensorModel& t, const Want& w, int index) const {
    if (index == w.exclude) return false;
    if (w.writable && t.frozen) return false;
    if (t.dtype != w.dtype || t.cols != w.cols) return false;
    if (w.rows >= 0 && t.rows != w.rows) return false;
    if (w.matrix && t.ndim != 2) return false;
    return true;
  }

  // Draws a tensor argument from one byte: fresh, reused, or one of the
  // wrong kinds.
  TensorRef choose(uint8_t c, const Want& want) {
    TensorRef ref;
    int64_t rows = want.rows >= 0 ? want.rows : kRows[(c >> 3) & 7];
    int ndim = want.ndim_hint;
    int64_t shape[3];
    auto fresh_desc = [&](int32_t dtype, int64_t r, int64_t cols) {
      int nd = want.matrix ? 2 : ndim;
      if (nd == 1 && r != 1) nd = 2;
      if (nd == 3 && !(want.lead[0] > 0 && want.lead[0] * want.lead[1] == r)) nd = 2;
      if (nd == 1) {
        shape[0] = cols;
      } else if (nd == 2) {
        shape[0] = r;
        shape[1] = cols;
      } else {
        shape[0] = want.lead[0];
        shape[1] = want.lead[1];
        shape[2] = cols;
      }
      ref.create = true;
      ref.desc = plain_desc(dtype, nd, shape);
      ref.dist = c & 7;
      ref.seed = mix(c + uint32_t(pool.size()) * 131u);
    };
    auto fresh_pool = [&](int32_t dtype, int64_t r, int64_t cols) {
      if (pool.size() >= kMaxPool && !want.required) {  // reuse the oldest compatible, else NULL
        for (size_t i = 0; i < pool.size(); ++i)
          if (compatible(pool[i], want, int(i))) {
            ref.kind = TensorRef::Pool;
            ref.index = int(i);
            return;
          }
        ref.kind = TensorRef::Null;
        return;
      }
      fresh_desc(dtype, r, cols);
      ref.kind = TensorRef::Pool;
      ref.index = int(pool.size());
      TensorModel m;
      m.dtype = dtype;
      m.ndim = ref.desc.ndim;
      for (int i = 0; i < m.ndim; ++i) m.shape[i] = ref.desc.shape[i];
      m.rows = r;
      m.cols = cols;
      pool.push_back(m);
    };
    if (c < 0x60) {
      fresh_pool(want.dtype, rows, want.cols);
      return ref;
    }
    if (c < 0xF0) {
      std::vector<int> fits;
      for (size_t i = 0; i < pool.size(); ++i)
        if (compatible(pool[i], want, int(i))) fits.push_back(int(i));
      if (fits.empty()) {
        fresh_pool(want.dtype, rows, want.cols);
      } else {
        ref.kind = TensorRef::Pool;
        ref.index = fits[size_t(c) % fits.size()];
      }
      return ref;
    }
    switch (c & 0x0F) {
      case 0:
        ref.kind = TensorRef::Null;
        return ref;
      case 1:  // another context's
        fresh_desc(want.dtype, rows, want.cols);
        ref.kind = TensorRef::Temp;
        ref.on_ctx2 = true;
        return ref;
      case 2:  // FP16
        fresh_pool(OCTET_DTYPE_FP16, rows, want.cols);
        return ref;
      case 3:  // quantized
        fresh_desc(OCTET_DTYPE_E4M3, rows, want.cols);
        ref.desc.usages = OCTET_USAGE_ROWWISE;
        ref.kind = TensorRef::Temp;
        return ref;
      case 4:  // plain FP8 codes
        fresh_desc(OCTET_DTYPE_E4M3, rows, want.cols);
        ref.kind = TensorRef::Temp;
        return ref;
      case 5:
        fresh_pool(want.dtype, rows, want.cols + 1);
        return ref;
      case 6:
        fresh_pool(want.dtype, rows + 1, want.cols);
        return ref;
      case 7:
        if (!pool.empty()) {
          ref.kind = TensorRef::Pool;
          ref.index = int(pool.size() - 1);
          if (want.writable && pool[size_t(ref.index)].frozen) fresh_pool(want.dtype, rows, want.cols);
          return ref;
        }
        fresh_pool(want.dtype, rows, want.cols);
        return ref;
      case 8:
        fresh_pool(want.dtype == OCTET_DTYPE_FP32 ? OCTET_DTYPE_BF16 : OCTET_DTYPE_FP32, rows, want.cols);
        return ref;
      default:
        return choose(uint8_t(0x60 + (c & 0x0F)), want);
    }
  }

  // Makes the tensor of `ref` in world w (creating it first if it is new).
  octet_tensor* materialize(World& w, const TensorRef& ref) {
    if (ref.kind == TensorRef::Null) return nullptr;
    if (ref.kind == TensorRef::Pool && !ref.create) return w.pool[size_t(ref.index)];
    octet_tensor* t = nullptr;
    const octet_status s = octet_tensor_create(ref.on_ctx2 ? w.ctx2 : w.ctx, &ref.desc, &t);
    if (s != OCTET_STATUS_SUCCESS) failf("creating a valid tensor failed: %s", octet_last_error_message());
    if (ref.desc.usages != 0) {
      fill_quantized(t, ref.seed);
    } else {
      int64_t n = 1;
      for (int i = 0; i < ref.desc.ndim; ++i) n *= ref.desc.shape[i];
      std::vector<uint8_t> b = encoded(ref.desc.dtype, size_t(n), ref.dist, ref.seed);
      if (octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, b.data(), b.size()) != OCTET_STATUS_SUCCESS)
        failf("filling a tensor failed: %s", octet_last_error_message());
    }
    if (ref.kind == TensorRef::Pool) {
      if (size_t(ref.index) != w.pool.size()) failf("harness: pool indices out of step");
      w.pool.push_back(t);
    } else {
      w.temps.push_back(t);
    }
    return t;
  }

  // -- layers --

  static std::vector<ParamModel> params_of(const LayerSpec& s) {
    // The table of octet.h ("Parameters, in a fixed order with stable names").
    std::vector<ParamModel> p;
    auto vec = [&](const char* name, int64_t n) { p.push_back({name, 1, 1, n, false}); };
    auto mat = [&](const char* name, int64_t r, int64_t c) { p.push_back({name, 2, r, c, true}); };
    const int64_t in = s.lo.in_features, out = s.lo.out_features;
    if (s.kind != 0) {
      vec("norm_weight", in);
      if (s.norm == OCTET_LAYER_LAYERNORM) vec("norm_bias", in);
    }
    if (s.kind != 2) {
      mat("weight", out, in);
      if (s.lo.bias) vec("bias", out);
    } else {
      mat("fc1_weight", s.activation == OCTET_LAYER_SWIGLU ? 2 * s.ffn : s.ffn, in);
      if (s.lo.bias) vec("fc1_bias", s.activation == OCTET_LAYER_SWIGLU ? 2 * s.ffn : s.ffn);
      mat("fc2_weight", in, s.ffn);
      if (s.lo.bias) vec("fc2_bias", in);
    }
    return p;
  }

  LayerSpec read_layer_spec(Input& in) {
    LayerSpec s;
    octet_linear_options_init(&s.lo);
    const uint8_t a = in.byte(), b = in.byte(), c = in.byte();
    s.kind = (a & 3) % 3;
    s.lo.bias = (a >> 2) & 1;
    s.lo.params_dtype = (a >> 3) & 1 ? OCTET_DTYPE_BF16 : OCTET_DTYPE_FP32;
    s.norm = (a >> 4) & 1 ? OCTET_LAYER_RMSNORM : OCTET_LAYER_LAYERNORM;
    s.activation = (a >> 5) & 1 ? OCTET_LAYER_SWIGLU : OCTET_LAYER_GELU;
    s.lo.weight_storage = (a >> 6) == 3 ? OCTET_WEIGHTS_FP8_ONLY : OCTET_WEIGHTS_HIGH_PRECISION;
    s.lo.in_features = kFeatures[b & 7];
    s.lo.out_features = kFeatures[(b >> 3) & 7];
    s.lo.save_original_input = s.kind == 0 ? (b >> 6) & 1 : 0;
    s.lo.minimize_memory = (b >> 7) & 1;
    s.ffn = kFeatures[c & 7];
    s.lo.weight_cache = (c >> 3) & 1;
    s.lo.skip_weight_allocation = s.lo.weight_storage == OCTET_WEIGHTS_FP8_ONLY ? 0 : ((c >> 4) & 3) == 3;
    const int r = (c >> 6) & 3;  // 0: none (autocast or high precision), else a recipe
    s.recipe = r == 0 ? -1 : (r - 1) % n_recipes;
    if (s.recipe >= 0 && recipes[s.recipe] == nullptr) s.recipe = -1;
    if (s.lo.weight_storage == OCTET_WEIGHTS_FP8_ONLY && s.recipe < 0) {
      if (recipes[0] != nullptr) s.recipe = 0;
      else s.lo.weight_storage = OCTET_WEIGHTS_HIGH_PRECISION;
    }
    s.lo.recipe = s.recipe >= 0 ? recipes[s.recipe] : nullptr;
    s.epsilon = (a & 0x80) && s.norm == OCTET_LAYER_RMSNORM ? 0.0f : 1e-5f;
    // Rarely, an option the create must refuse.
    const uint8_t bad = in.byte();
    if (bad >= 0xF0) {
      s.corrupt = true;  // unless the option is one this kind ignores
      switch (bad & 7) {
        case 0: s.lo.in_features = 0; break;
        case 1: s.lo.params_dtype = OCTET_DTYPE_FP16; break;
        case 2: s.lo.weight_cache = 2; break;
        case 3: s.kind == 0 ? (void)(s.lo.out_features = -1) : (void)(s.lo.save_original_input = 1); break;
        case 4: s.epsilon = NAN; s.corrupt = s.kind != 0; break;
        case 5: s.ffn = 0; s.corrupt = s.kind == 2; break;
        case 6: s.activation = 2; s.corrupt = s.kind == 2; break;
        default: s.norm = 7; s.corrupt = s.kind != 0; break;
      }
    }
    return s;
  }

  // Creates layer `li` in every world from `s` (destroying the old one; its
  // saved handles stay in their slots) and fills its parameters.
  void create_layer(int li, const LayerSpec& s, Input& in) {
    const uint32_t seed = in.byte();
    const uint8_t dists = in.byte();
    Record rec[kWorlds];
    bool created = false;
    for (int wi = 0; wi < worlds_run(); ++wi) {
      World& w = worlds[wi];
      octet_layer_destroy(w.layers[li]);
      w.layers[li] = nullptr;
      octet_layer* out = sentinel<octet_layer>();
      octet_status st;
      // The variant: minimize_memory flipped, and save_original_input for a
      // Linear (the others refuse it).
      LayerSpec v = s;
      if (wi == 2) {
        v.lo.minimize_memory = !v.lo.minimize_memory;
        if (v.kind == 0) v.lo.save_original_input = !v.lo.save_original_input;
      }
      if (v.kind == 0) {
        st = octet_layer_create_linear(w.ctx, &v.lo, &out);
      } else if (v.kind == 1) {
        octet_layernorm_linear_options o;
        octet_layernorm_linear_options_init(&o);
        o.linear = &v.lo;
        o.norm = v.norm;
        o.epsilon = v.epsilon;
        st = octet_layer_create_layernorm_linear(w.ctx, &o, &out);
      } else {
        octet_layernorm_mlp_options o;
        octet_layernorm_mlp_options_init(&o);
        o.linear = &v.lo;
        o.ffn_features = v.ffn;
        o.norm = v.norm;
        o.epsilon = v.epsilon;
        o.activation = v.activation;
        st = octet_layer_create_layernorm_mlp(w.ctx, &o, &out);
      }
      const Call c = called(st, "octet_layer_create_*");
      rec[wi].add("create", c);
      if (!c.ok()) {
        check(out == sentinel<octet_layer>(), "a failed layer create wrote its out-parameter");
        continue;
      }
      check(out != nullptr && out != sentinel<octet_layer>(), "a layer create succeeded without a layer");
      w.layers[li] = out;
      created = true;
    }
    compare_all(rec);
    if (g_trace)
      std::fprintf(stderr,
                   "trace layer %d: kind %d in %lld out %lld ffn %lld bias %d dtype %d storage %d recipe %d (kind %d) "
                   "save_original %d minimize %d cache %d skip %d norm %d act %d\n",
                   li, s.kind, (long long)s.lo.in_features, (long long)s.lo.out_features, (long long)s.ffn, s.lo.bias,
                   s.lo.params_dtype, s.lo.weight_storage, s.recipe, s.recipe >= 0 ? recipe_kind[s.recipe] : -1,
                   s.lo.save_original_input, s.lo.minimize_memory, s.lo.weight_cache, s.lo.skip_weight_allocation,
                   s.norm, s.activation);
    ++generation[li];
    LayerModel& L = layers[li];
    L = LayerModel{};
    L.spec = s;
    if (!created) return;
    if (s.corrupt) failf("a layer create with an invalid option succeeded");
    L.alive = true;
    L.params = params_of(s);
    L.grad.assign(L.params.size(), false);
    // The parameters are those of the table, in its order.
    for (int wi = 0; wi < worlds_run(); ++wi) {
      octet_layer* layer = worlds[wi].layers[li];
      size_t count = 0;
      check(octet_layer_parameter_count(layer, &count) == OCTET_STATUS_SUCCESS, "octet_layer_parameter_count");
      if (count != L.params.size()) failf("the layer has %zu parameters, octet.h's table says %zu", count, L.params.size());
      for (size_t i = 0; i < count; ++i) {
        const char* name = nullptr;
        check(octet_layer_parameter_name(layer, i, &name) == OCTET_STATUS_SUCCESS, "octet_layer_parameter_name");
        if (L.params[i].name != name) failf("parameter %zu is '%s', octet.h's table says '%s'", i, name, L.params[i].name.c_str());
      }
    }
    // Initial values: every parameter written (weights lent or loaded where
    // the options say so), so that no read sees unspecified contents. A
    // load quantizes (current scaling may call the communicator): the
    // program's communicator is detached meanwhile.
    for (World& w : worlds)
      if (w.comm.mode != 0) check(octet_context_set_communicator(w.ctx, nullptr) == OCTET_STATUS_SUCCESS, "unset");
    for (size_t p = 0; p < L.params.size(); ++p) {
      const ParamModel& pm = L.params[p];
      const uint32_t dist = (dists >> (p % 4 * 2)) & 3;  // 0..3: no all-zero or huge initial weights
      if (pm.matrix && (s.lo.skip_weight_allocation || L.fp8_only())) {
        Want want;
        want.dtype = s.lo.params_dtype;
        want.rows = pm.rows;
        want.cols = pm.cols;
        want.matrix = true;
        want.required = true;
        TensorRef ref = choose(uint8_t((seed + p) % 0x60), want);
        for (int wi = 0; wi < worlds_run(); ++wi) {
          World& w = worlds[wi];
          octet_tensor* t = materialize(w, ref);
          const octet_status st = s.lo.skip_weight_allocation ? octet_layer_set_weight(w.layers[li], p, t)
                                                              : octet_layer_load_weight(w.layers[li], p, t);
          if (st != OCTET_STATUS_SUCCESS) failf("initialising weight '%s': %s", pm.name.c_str(), octet_last_error_message());
        }
        if (s.lo.skip_weight_allocation) pool[size_t(ref.index)].frozen = true;
        continue;
      }
      for (int wi = 0; wi < worlds_run(); ++wi) {
        octet_tensor* t = nullptr;
        if (octet_layer_get_parameter(worlds[wi].layers[li], p, &t) != OCTET_STATUS_SUCCESS)
          failf("octet_layer_get_parameter: %s", octet_last_error_message());
        std::vector<uint8_t> b = encoded(s.lo.params_dtype, size_t(pm.rows * pm.cols), dist, seed * 31 + uint32_t(p));
        if (octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, b.data(), b.size()) != OCTET_STATUS_SUCCESS)
          failf("writing parameter '%s': %s", pm.name.c_str(), octet_last_error_message());
      }
    }
    for (World& w : worlds) {
      if (w.comm.mode == 0) continue;
      octet_communicator c{};
      c.struct_size = sizeof(c);
      c.allreduce_max = allreduce;
      c.user_data = &w.comm;
      check(octet_context_set_communicator(w.ctx, &c) == OCTET_STATUS_SUCCESS, "setting the communicator again");
    }
  }

  // The parameter tensor, or null (a gradient likewise).
  static octet_tensor* parameter(octet_layer* layer, size_t p) {
    octet_tensor* t = nullptr;
    return octet_layer_get_parameter(layer, p, &t) == OCTET_STATUS_SUCCESS ? t : nullptr;
  }

  // Snapshots of everything a layer call may write: the layer's allocated
  // gradients (and, for FP8-only weights, the weights).
  std::vector<std::vector<uint8_t>> layer_outputs(World& w, int li) {
    std::vector<std::vector<uint8_t>> out;
    const LayerModel& L = layers[li];
    if (!L.alive) return out;
    for (size_t p = 0; p < L.params.size(); ++p) {
      if (!L.grad[p]) continue;
      octet_tensor* g = nullptr;
      if (octet_layer_get_gradient(w.layers[li], p, &g) != OCTET_STATUS_SUCCESS)
        failf("octet_layer_get_gradient of an allocated gradient: %s", octet_last_error_message());
      out.push_back(contents(g));
    }
    return out;
  }

  // -- memory --

  void check_memory(World& w, int wi) {
    octet_memory_stats m{};
    m.struct_size = sizeof(m);
    check(octet_context_get_memory_stats(w.ctx, &m) == OCTET_STATUS_SUCCESS, "octet_context_get_memory_stats");
    if (m.current_bytes[OCTET_MEMORY_WORKSPACE] != 0)
      failf("profile %d: %llu bytes of workspace outlive the call", wi,
            (unsigned long long)m.current_bytes[OCTET_MEMORY_WORKSPACE]);
    uint64_t user = 0;
    for (const TensorModel& t : pool) user += t.bytes();
    // Lent temporaries of this context: plain FP8 codes count as user
    // tensors (one byte a value); quantized ones as quantized copies (their
    // size as the tensor reports it, scales included: bounded below).
    uint64_t lent_quantized = 0;
    for (size_t i = 0; i < w.lent.size(); ++i) {
      if (w.lent_on_ctx2[i]) continue;
      const octet_tensor_info li = info_of(w.lent[i]);
      int64_t n = 1;
      for (int d = 0; d < li.ndim; ++d) n *= li.shape[d];
      if (li.usages == 0)
        user += uint64_t(n) * dtype_bytes(li.dtype);
      else
        lent_quantized += li.total_bytes;
    }
    if (m.current_bytes[OCTET_MEMORY_USER_TENSORS] != user)
      failf("profile %d: user tensors are %llu bytes, the caller's tensors %llu", wi,
            (unsigned long long)m.current_bytes[OCTET_MEMORY_USER_TENSORS], (unsigned long long)user);
    if (any_saved()) return;
    if (m.current_bytes[OCTET_MEMORY_SAVED_ACTIVATIONS] != 0)
      failf("profile %d: no saved handle is alive but %llu bytes of saved activations remain", wi,
            (unsigned long long)m.current_bytes[OCTET_MEMORY_SAVED_ACTIVATIONS]);
    // An open autocast scope holds every quantizer used since it began, so
    // a destroyed layer's quantizer states may outlive it until the end.
    if (!autocast.empty()) return;
    bool cache = false;
    for (const LayerModel& L : layers) cache = cache || (L.alive && L.spec.lo.weight_cache);
    // What may remain: the scaling state (scale, scale_inv, amax history)
    // of each live layer's quantizers, where it lives in this context, and
    // the lent quantized tensors.
    uint64_t states = lent_quantized;
    for (size_t li = 0; li < 2; ++li) {
      if (!layers[li].alive) continue;
      for (size_t lin = 0; lin < layers[li].linears(); ++lin)
        for (int32_t role = 0; role < 3; ++role) {
          octet_quantizer* q = nullptr;
          check(octet_layer_get_quantizer(w.layers[li], lin, role, &q) == OCTET_STATUS_SUCCESS,
                "octet_layer_get_quantizer");
          octet_quantizer_info i{};
          i.struct_size = sizeof(i);
          check(octet_quantizer_get_info(q, &i) == OCTET_STATUS_SUCCESS, "octet_quantizer_get_info");
          states += (2 + uint64_t(i.amax_history_len)) * sizeof(float);
        }
    }
    if (!cache && m.current_bytes[OCTET_MEMORY_QUANTIZED_COPIES] > states)
      failf(
          "profile %d: no saved handle or weight cache is alive but %llu bytes of quantized copies remain, "
          "more than the %llu bytes of the live layers' quantizer states",
          wi, (unsigned long long)m.current_bytes[OCTET_MEMORY_QUANTIZED_COPIES], (unsigned long long)states);
  }

  // -- state comparison --

  void record_quantizers(World& w, int li, Record& r) {
    if (!layers[li].alive) return;
    for (size_t lin = 0; lin < layers[li].linears(); ++lin)
      for (int32_t role = 0; role < 3; ++role) {
        octet_quantizer* q = nullptr;
        check(octet_layer_get_quantizer(w.layers[li], lin, role, &q) == OCTET_STATUS_SUCCESS, "octet_layer_get_quantizer");
        record_quantizer(q, r, "quantizer " + std::to_string(li) + "." + std::to_string(lin) + "." + std::to_string(role));
      }
  }

  static void record_quantizer(octet_quantizer* q, Record& r, const std::string& label) {
    octet_quantizer_info i{};
    i.struct_size = sizeof(i);
    const Call c = called(octet_quantizer_get_info(q, &i), "octet_quantizer_get_info");
    r.add(label + " info", c);
    if (!c.ok()) return;
    // Field by field (the struct has padding).
    r.flag(label + " role", i.role);
    r.flag(label + " recipe_kind", i.recipe_kind);
    r.add(label + " scale", &i.scale, 4);
    r.add(label + " scale_inv", &i.scale_inv, 4);
    r.add(label + " amax", &i.amax, 4);
    r.flag(label + " amax_history_len", i.amax_history_len);
    r.add(label + " update_count", &i.update_count, 8);
    r.add(label + " observed_amax", &i.observed_amax, 4);
    r.add(label + " observed_saturated", &i.observed_saturated, 8);
    r.add(label + " observed_total", &i.observed_total, 8);
    r.add(label + " saturated_fraction", &i.saturated_fraction, 8);
    std::vector<float> h(i.amax_history_len);
    r.add(label + " history", called(octet_quantizer_get_amax_history(q, h.data(), h.size()), "octet_quantizer_get_amax_history"));
    r.add(label + " history values", h.data(), 4 * h.size());
    size_t size = 0;
    const Call s = called(octet_quantizer_save(q, nullptr, 0, &size), "octet_quantizer_save (size)");
    r.add(label + " save size", s);
    if (!s.ok()) return;
    std::vector<uint8_t> bytes(size);
    r.add(label + " save", called(octet_quantizer_save(q, bytes.data(), bytes.size(), &size), "octet_quantizer_save"));
    r.add(label + " checkpoint", bytes);
  }

  void record_everything(World& w, Record& r) {
    for (int li = 0; li < 2; ++li) {
      const LayerModel& L = layers[li];
      if (!L.alive) continue;
      for (size_t p = 0; p < L.params.size(); ++p) {
        octet_tensor* t = parameter(w.layers[li], p);
        check(t != nullptr, "a parameter of a live layer is missing");
        r.add("parameter " + L.params[p].name, contents(t));
      }
      size_t k = 0;
      for (const std::vector<uint8_t>& g : layer_outputs(w, li)) r.add("gradient " + std::to_string(k++), g);
      record_quantizers(w, li, r);
    }
    int32_t depth = -1;
    const octet_recipe* top = nullptr;
    r.add("autocast state", called(octet_autocast_get_state(w.ctx, &depth, &top), "octet_autocast_get_state"));
    r.flag("autocast depth", depth);
    r.flag("autocast recipe set", top != nullptr);
    r.add("communicator log", w.comm.log);
    for (size_t i = 0; i < pool.size(); ++i) r.add("pool tensor " + std::to_string(i), contents(w.pool[i]));
  }

  // -- steps --

  void step(Input& in, size_t index);
  void op_forward(Input& in);
  void op_backward(Input& in);
  void op_saved_destroy(Input& in);
  void op_new_step(Input& in);
  void op_set_weight(Input& in, bool load);
  void op_write_parameter(Input& in);
  void op_read_parameter(Input& in);
  void op_autocast(Input& in, bool begin);
  void op_quantizer(Input& in);
  void op_communicator(Input& in);
  void op_layer(Input& in);
  void op_inspect();
  void op_training_step(Input& in);
};

// One program step, on both worlds; records compared, then the memory
// checked.
void Program::step(Input& in, size_t index) {
  const uint8_t op = in.byte();
  static const char* const kNames[] = {"forward", "forward", "forward", "backward", "backward", "saved_destroy",
                                       "new_step", "set_weight", "load_weight", "write_parameter", "read_parameter",
                                       "autocast_begin", "autocast_end", "quantizer", "quantizer", "communicator",
                                       "layer", "inspect", "training step", "training step"};
  const int code = op % 20;
  g_where = "step " + std::to_string(index) + " (" + kNames[code] + ")";
  switch (code) {
    case 0: case 1: case 2: op_forward(in); break;
    case 3: case 4: op_backward(in); break;
    case 5: op_saved_destroy(in); break;
    case 6: op_new_step(in); break;
    case 7: op_set_weight(in, false); break;
    case 8: op_set_weight(in, true); break;
    case 9: op_write_parameter(in); break;
    case 10: op_read_parameter(in); break;
    case 11: op_autocast(in, true); break;
    case 12: op_autocast(in, false); break;
    case 13: case 14: op_quantizer(in); break;
    case 15: op_communicator(in); break;
    case 16: op_layer(in); break;
    case 17: op_inspect(); break;
    default: op_training_step(in); break;
  }
  for (int wi = 0; wi < worlds_run(); ++wi) {
    worlds[wi].drop_temps();
    check_memory(worlds[wi], wi);
  }
}

void Program::op_forward(Input& in) {
  const uint8_t a = in.byte(), bx = in.byte(), by = in.byte();
  const int li = a & 1;
  const bool training = (a >> 1) & 1;
  const bool pass_saved = training || ((a >> 2) & 1);
  const int slot = (a >> 3) & 3;
  const int misc = (a >> 5);  // 7: a misc invalid argument
  const LayerModel& L = layers[li];
  const LayerSpec& s = L.spec;
  Want wx;
  wx.dtype = L.dtype();
  wx.cols = L.in();
  wx.ndim_hint = (bx & 0x40) && (bx & 0x80) == 0 ? ((bx & 0x20) ? 3 : 1) : 2;
  if (bx < 0x60) {  // fresh: its rows, and a 3-D split of them
    const int64_t rows = kRows[(bx >> 3) & 3];
    wx.rows = rows;
    wx.lead[0] = rows;
    wx.lead[1] = 1;
    if (wx.ndim_hint == 3 && rows == 33) {
      wx.lead[0] = 3;
      wx.lead[1] = 11;
    }
  }
  TensorRef rx = choose(bx, wx);
  const int64_t rows = rx.kind == TensorRef::Pool ? pool[size_t(rx.index)].rows : (wx.rows >= 0 ? wx.rows : 1);
  Want wy;
  wy.dtype = L.dtype();
  wy.cols = L.out();
  wy.rows = rows;
  wy.writable = true;
  wy.exclude = rx.kind == TensorRef::Pool ? rx.index : -1;
  if (rx.kind == TensorRef::Pool && rx.create && rx.desc.ndim == 3) {
    wy.ndim_hint = 3;
    wy.lead[0] = rx.desc.shape[0];
    wy.lead[1] = rx.desc.shape[1];
  }
  TensorRef ry = choose(by, wy);
  // Where the output is the input (a reused tensor), the call must refuse.
  // save_original_input with fprop in high precision and wgrad in FP8
  // quantizes x in backward (with the quantizer's scale of that moment, the
  // amax recorded then), not in forward: from a training forward of that
  // kind on, the variant differs legitimately.
  const int in_effect = s.recipe >= 0 ? s.recipe : (autocast.empty() ? -1 : autocast.back());
  if (training && s.kind == 0 && in_effect >= 0 && override_fprop_only[in_effect]) variant_valid = false;
  Record rec[kWorlds];
  Call first;
  octet_saved* made[kWorlds] = {};
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    octet_tensor* x = materialize(w, rx);
    octet_tensor* y = materialize(w, ry);
    if (misc == 7 && (a & 0x04)) y = x;
    const int32_t train_arg = misc == 7 && !(a & 0x04) ? 2 : (training ? 1 : 0);
    octet_layer* layer = w.layers[li];
    const std::vector<uint8_t> y_before = y ? contents(y) : std::vector<uint8_t>();
    const std::vector<std::vector<uint8_t>> grads_before = layer_outputs(w, li);
    octet_saved* handle = sentinel<octet_saved>();
    const Call c = called(octet_layer_forward(layer, x, y, train_arg, pass_saved ? &handle : nullptr), "octet_layer_forward");
    rec[wi].add("forward", c);
    if (c.ok()) {
      if (pass_saved) {
        check(handle != sentinel<octet_saved>() && handle != nullptr, "a forward given a saved pointer returned no handle");
        made[wi] = handle;
      }
      rec[wi].add("output", contents(y));
    } else {
      check(handle == sentinel<octet_saved>(), "a failed forward wrote its saved out-parameter");
      if (y != nullptr && contents(y) != y_before) failf("a failed forward wrote its output");
    }
    if (layer_outputs(w, li) != grads_before) failf("a forward changed a gradient");
    if (wi == 0) first = c;
  }
  compare_all(rec);
  if (!first.ok()) return;
  // A Linear's training forward keeps the caller's input in one of the
  // worlds (save_original_input is flipped in the variant).
  if (training && s.kind == 0 && rx.kind == TensorRef::Pool) pool[size_t(rx.index)].frozen = true;
  if (!pass_saved) return;
  const bool variant_ok = true;
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    if (w.slots[slot] != nullptr) w.orphans.push_back(w.slots[slot]);
    w.slots[slot] = made[wi];
  }
  if (slots[slot].full) orphans = true;
  slots[slot] = SlotModel{true, li, generation[li], rows, variant_ok};
}

void Program::op_backward(Input& in) {
  const uint8_t a = in.byte(), bd = in.byte(), bx = in.byte();
  const int li = a & 1;
  int slot = (a >> 1) & 3;
  // Usually a slot that holds a handle (bit 6 clear); else the one drawn,
  // empty or not.
  for (int k = 0; k < kSlots && !(a & 0x40) && !slots[slot].full; ++k) slot = (slot + 1) % kSlots;
  const bool accumulate = (a >> 3) & 1;
  const bool want_dx = !((a >> 4) & 1);
  const int misc = a >> 5;  // 7: a misc invalid argument
  const LayerModel& L = layers[li];
  const SlotModel& sm = slots[slot];
  Want wd;
  wd.dtype = L.dtype();
  wd.cols = L.out();
  wd.rows = sm.full ? sm.rows : -1;
  TensorRef rd = choose(bd, wd);
  TensorRef rx;
  if (want_dx) {
    Want wx;
    wx.dtype = L.dtype();
    wx.cols = L.in();
    wx.rows = rd.kind == TensorRef::Pool ? pool[size_t(rd.index)].rows : wd.rows;
    wx.writable = true;
    wx.exclude = rd.kind == TensorRef::Pool ? rd.index : -1;
    rx = choose(bx, wx);
  }
  // The backward of a forward whose variant relation broke makes the
  // variant's gradients differ from here on.
  if (sm.full && !sm.variant_ok) variant_valid = false;
  Record rec[kWorlds];
  bool consumed = false;
  Call first;
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    octet_tensor* dy = materialize(w, rd);
    octet_tensor* dx = materialize(w, rx);
    if (misc == 7 && (a & 0x08) && dx != nullptr) dx = dy;
    const int32_t acc = misc == 7 && !(a & 0x08) ? 2 : (accumulate ? 1 : 0);
    const bool null_pointer = misc == 6 && (a & 0x08);
    octet_saved* before = w.slots[slot];
    const std::vector<uint8_t> dx_before = dx ? contents(dx) : std::vector<uint8_t>();
    const std::vector<std::vector<uint8_t>> grads_before = layer_outputs(w, li);
    const Call c = called(octet_layer_backward(w.layers[li], null_pointer ? nullptr : &w.slots[slot], dy, dx, acc),
                          "octet_layer_backward");
    rec[wi].add("backward", c);
    const bool gone = w.slots[slot] == nullptr && before != nullptr;
    rec[wi].flag("consumed", gone);
    if (c.ok()) {
      check(gone, "a successful backward did not consume its saved handle");
      if (dx != nullptr) rec[wi].add("grad_input", contents(dx));
    } else {
      check(w.slots[slot] == before || w.slots[slot] == nullptr, "a failed backward wrote another handle into *saved");
      if (dx != nullptr && contents(dx) != dx_before) failf("a failed backward wrote grad_input");
      const std::vector<std::vector<uint8_t>> grads_after = layer_outputs(w, li);
      for (size_t k = 0; k < grads_after.size(); ++k)
        if (grads_after[k] != grads_before[k]) failf("a failed backward changed parameter gradient %zu", k);
    }
    if (wi == 0) {
      first = c;
      consumed = gone;
    }
  }
  compare_all(rec);
  if (consumed) slots[slot] = SlotModel{};
  if (first.ok()) {
    LayerModel& Lm = layers[li];
    for (size_t p = 0; p < Lm.params.size(); ++p) Lm.grad[p] = !(Lm.params[p].matrix && Lm.fp8_only());
    Record grads[kWorlds];
    for (int wi = 0; wi < worlds_run(); ++wi) {
      size_t k = 0;
      for (const std::vector<uint8_t>& g : layer_outputs(worlds[wi], li)) grads[wi].add("gradient " + std::to_string(k++), g);
    }
    compare_all(grads);
  }
}

// Destroys a slot's handle (NULL when empty: accepted), and with the high
// bit the handles pushed out of their slots by later forwards.
void Program::op_saved_destroy(Input& in) {
  const uint8_t a = in.byte();
  const int slot = a & 3;
  for (World& w : worlds) {
    octet_saved_destroy(w.slots[slot]);
    w.slots[slot] = nullptr;
    if (a & 0x80) {
      for (octet_saved* s : w.orphans) octet_saved_destroy(s);
      w.orphans.clear();
    }
  }
  slots[slot] = SlotModel{};
  if (a & 0x80) orphans = false;
}

void Program::op_new_step(Input& in) {
  const uint8_t a = in.byte();
  const int li = a & 1;
  Record rec[kWorlds];
  for (int wi = 0; wi < worlds_run(); ++wi)
    rec[wi].add("new_step", called(octet_layer_new_step(a >= 0xF0 ? nullptr : worlds[wi].layers[li]), "octet_layer_new_step"));
  compare_all(rec);
}

// set_weight (a lent weight) or load_weight (an FP8-only weight).
void Program::op_set_weight(Input& in, bool load) {
  const uint8_t a = in.byte(), b = in.byte();
  const int li = a & 1;
  const LayerModel& L = layers[li];
  const size_t n = L.params.size();
  const size_t p = size_t(a >> 1) % (n + 1);  // n: out of range
  Want want;
  want.dtype = L.dtype();
  want.matrix = true;
  if (p < n) {
    want.rows = L.params[p].rows;
    want.cols = L.params[p].cols;
  } else {
    want.rows = 3;
    want.cols = L.in();
  }
  TensorRef ref = choose(b, want);
  Record rec[kWorlds];
  Call first;
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    octet_tensor* t = materialize(w, ref);
    octet_tensor* param = p < n && L.alive ? parameter(w.layers[li], p) : nullptr;
    const std::vector<uint8_t> before = param ? contents(param) : std::vector<uint8_t>();
    const Call c = load ? called(octet_layer_load_weight(w.layers[li], p, t), "octet_layer_load_weight")
                        : called(octet_layer_set_weight(w.layers[li], p, t), "octet_layer_set_weight");
    rec[wi].add(load ? "load_weight" : "set_weight", c);
    if (!c.ok() && param != nullptr && contents(param) != before) failf("a failed call changed the parameter");
    octet_tensor* now = p < n && L.alive ? parameter(w.layers[li], p) : nullptr;
    if (now != nullptr) rec[wi].add("parameter", contents(now));
    if (c.ok() && !load) check(now == t, "after set_weight, get_parameter does not return the lent tensor");
    if (c.ok() && !load && ref.kind == TensorRef::Temp) w.keep_lent(t, ref.on_ctx2);
    if (wi == 0) first = c;
  }
  compare_all(rec);
  if (first.ok() && !load && ref.kind == TensorRef::Pool) pool[size_t(ref.index)].frozen = true;
}

void Program::op_write_parameter(Input& in) {
  const uint8_t a = in.byte(), b = in.byte();
  const int li = a & 1;
  const LayerModel& L = layers[li];
  if (!L.alive || L.params.empty()) return;
  const size_t p = size_t(a >> 1) % L.params.size();
  const ParamModel& pm = L.params[p];
  // Lent weights are the caller's (never written: see the header); FP8-only
  // weights are written with load_weight.
  if (pm.matrix && (L.spec.lo.skip_weight_allocation || L.fp8_only())) return;
  const bool wrong_size = b >= 0xF8;
  // minimize_memory quantizes the weight again in backward: a weight
  // written between a forward and its backward breaks the variant relation.
  if (pm.matrix && !wrong_size)
    for (SlotModel& sm : slots)
      if (sm.full && sm.layer == li && sm.generation == generation[li]) sm.variant_ok = false;
  Record rec[kWorlds];
  for (int wi = 0; wi < worlds_run(); ++wi) {
    octet_tensor* t = parameter(worlds[wi].layers[li], p);
    check(t != nullptr, "a parameter of a live layer is missing");
    const std::vector<uint8_t> before = contents(t);
    std::vector<uint8_t> v = encoded(L.dtype(), size_t(pm.rows * pm.cols), b & 7, b);
    if (wrong_size) v.resize(v.size() + 2);
    const Call c = called(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v.data(), v.size()), "octet_tensor_copy_from_host");
    rec[wi].add("write", c);
    if (!c.ok() && contents(t) != before) failf("a failed copy_from_host changed the parameter");
    rec[wi].add("parameter", contents(t));
  }
  compare_all(rec);
}

void Program::op_read_parameter(Input& in) {
  const uint8_t a = in.byte();
  const int li = a & 1;
  LayerModel& L = layers[li];
  const size_t n = L.params.size();
  const size_t p = size_t(a >> 1) % (n + 1);
  Record rec[kWorlds];
  bool got_grad = false;
  for (int wi = 0; wi < worlds_run(); ++wi) {
    octet_layer* layer = worlds[wi].layers[li];
    octet_tensor* t = sentinel<octet_tensor>();
    const Call c = called(octet_layer_get_parameter(layer, p, &t), "octet_layer_get_parameter");
    rec[wi].add("get_parameter", c);
    if (c.ok()) rec[wi].add("parameter", contents(t));
    else check(t == sentinel<octet_tensor>(), "a failed get_parameter wrote its out-parameter");
    octet_tensor* g = sentinel<octet_tensor>();
    const Call cg = called(octet_layer_get_gradient(layer, p, &g), "octet_layer_get_gradient");
    rec[wi].add("get_gradient", cg);
    if (cg.ok()) {
      rec[wi].add("gradient", contents(g));
      const octet_tensor_info i = info_of(g);
      check(i.dtype == L.dtype() && i.usages == 0, "a gradient is not a plain params_dtype tensor");
    } else {
      check(g == sentinel<octet_tensor>(), "a failed get_gradient wrote its out-parameter");
    }
    if (wi == 0) got_grad = cg.ok();
  }
  compare_all(rec);
  if (got_grad) L.grad[p] = true;
}

void Program::op_autocast(Input& in, bool begin) {
  const uint8_t a = in.byte();
  const bool null_context = a >= 0xF8;
  Record rec[kWorlds];
  Call first;
  int r = a % (n_recipes + 1);  // n_recipes: NULL
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    octet_context* ctx = null_context ? nullptr : w.ctx;
    const Call c = begin ? called(octet_autocast_begin(ctx, r < n_recipes ? recipes[r] : nullptr), "octet_autocast_begin")
                         : called(octet_autocast_end(ctx), "octet_autocast_end");
    rec[wi].add(begin ? "autocast_begin" : "autocast_end", c);
    int32_t depth = -1;
    check(octet_autocast_get_state(w.ctx, &depth, nullptr) == OCTET_STATUS_SUCCESS, "octet_autocast_get_state");
    rec[wi].flag("depth", depth);
    rec[wi].add("communicator log", w.comm.log);
    record_quantizers(w, 0, rec[wi]);
    record_quantizers(w, 1, rec[wi]);
    if (wi == 0) first = c;
  }
  compare_all(rec);
  if (!first.ok()) return;
  if (begin) autocast.push_back(r);
  else autocast.pop_back();
}

void Program::op_quantizer(Input& in) {
  const uint8_t a = in.byte(), b = in.byte();
  const int li = a & 1;
  const LayerModel& L = layers[li];
  const size_t lin = (a >> 1) & 1;
  const int32_t role = ((a >> 2) & 3) == 3 ? ((b & 1) ? 3 : -1) : int32_t((a >> 2) & 3);
  const int sub = a >> 4;
  static const float kAmaxes[] = {0.0f, 1.0f, 2.5f, 448.0f, 1e-30f, 1e30f, INFINITY, NAN,
                                  -1.0f, -0.0f, 3e38f, 1e-45f, 0.125f, 7.0f, 60000.0f, 0.5f};
  const float value = kAmaxes[b >> 4];
  // Quantize: the recipe the quantizer will use (own, else the scope's).
  int recipe = L.spec.recipe >= 0 ? L.spec.recipe : (autocast.empty() ? -1 : autocast.back());
  if (recipe < 0 || recipe >= n_recipes || recipes[recipe] == nullptr) recipe = 0;
  const int64_t rows = kRows[b & 3], cols = kFeatures[(b >> 2) & 7];
  const uint32_t usages = 1 + ((b >> 5) & 1) + ((b >> 6) & 1);  // 1..3
  const bool on_ctx2 = (b >> 7) & 1;
  Record rec[kWorlds];
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    octet_quantizer* q = sentinel<octet_quantizer>();
    const bool bad_get = sub == 15;
    const Call cq = called(octet_layer_get_quantizer(w.layers[li], bad_get ? 2 + lin : lin, role, &q),
                          "octet_layer_get_quantizer");
    rec[wi].add("get_quantizer", cq);
    if (!cq.ok()) {
      check(q == sentinel<octet_quantizer>(), "a failed get_quantizer wrote its out-parameter");
      continue;
    }
    const std::string label = "quantizer";
    switch (sub) {
      case 0: case 1: case 2:
        rec[wi].add("record_amax", called(octet_quantizer_record_amax(q, value), "octet_quantizer_record_amax"));
        break;
      case 3: case 4:
        rec[wi].add("update_scale", called(octet_quantizer_update_scale(q), "octet_quantizer_update_scale"));
        break;
      case 5:
        rec[wi].add("set_scale", called(octet_quantizer_set_scale(q, value), "octet_quantizer_set_scale"));
        break;
      case 6: case 7: {  // save, then load into itself or into a sibling
        size_t size = 0;
        if (!called(octet_quantizer_save(q, nullptr, 0, &size), "octet_quantizer_save").ok()) break;
        std::vector<uint8_t> bytes(size);
        rec[wi].add("save", called(octet_quantizer_save(q, bytes.data(), bytes.size(), &size), "octet_quantizer_save"));
        octet_quantizer* target = q;
        if (sub == 7) {
          target = nullptr;
          octet_layer_get_quantizer(w.layers[li], lin, (role + 1 + (b & 1)) % 3, &target);
          if (target == nullptr) break;
        }
        size_t before_size = 0;
        octet_quantizer_save(target, nullptr, 0, &before_size);
        std::vector<uint8_t> before(before_size);
        octet_quantizer_save(target, before.data(), before.size(), &before_size);
        if (b >= 0xE0 && !bytes.empty()) bytes[size_t(b) % bytes.size()] ^= 0x40;  // a corrupt checkpoint
        const Call c = called(octet_quantizer_load(target, bytes.data(), bytes.size()), "octet_quantizer_load");
        rec[wi].add("load", c);
        size_t after_size = 0;
        octet_quantizer_save(target, nullptr, 0, &after_size);
        std::vector<uint8_t> after(after_size);
        octet_quantizer_save(target, after.data(), after.size(), &after_size);
        if (!c.ok() && after != before) failf("a refused quantizer load changed the quantizer");
        if (c.ok() && sub == 6 && b < 0xE0 && after != bytes) failf("save, load into itself, save is not the identity");
        break;
      }
      case 8: case 9: case 10: case 11: {  // quantize a fresh tensor
        octet_context* ctx = on_ctx2 ? w.ctx2 : w.ctx;
        int32_t dtype = OCTET_DTYPE_E4M3, mode = OCTET_SCALING_PER_TENSOR;
        if (recipes[recipe] != nullptr) octet_recipe_tensor_format(recipes[recipe], role, &dtype, &mode);
        const int64_t shape[2] = {rows, cols};
        octet_tensor_desc d = plain_desc(L.dtype(), 2, shape);
        octet_tensor* x = nullptr;
        octet_tensor* y = nullptr;
        check(octet_tensor_create(ctx, &d, &x) == OCTET_STATUS_SUCCESS, "creating a quantize input");
        w.temps.push_back(x);
        std::vector<uint8_t> v = encoded(d.dtype, size_t(rows * cols), b & 7, a * 7u + b);
        octet_tensor_copy_from_host(x, OCTET_COMPONENT_DATA, v.data(), v.size());
        d.dtype = dtype;
        d.usages = usages;
        d.scaling_mode = mode;
        check(octet_tensor_create(ctx, &d, &y) == OCTET_STATUS_SUCCESS, "creating a quantize output");
        w.temps.push_back(y);
        fill_quantized(y, b);
        const std::vector<uint8_t> before = contents(y);
        octet_quantize_stats stats{};
        stats.struct_size = sizeof(stats);
        const bool with_stats = sub & 1;
        const Call c = called(octet_quantizer_quantize(ctx, q, x, y, nullptr, with_stats ? &stats : nullptr),
                              "octet_quantizer_quantize");
        rec[wi].add("quantize", c);
        if (c.ok()) {
          rec[wi].add("quantized", contents(y, true));
          if (with_stats) {
            const uint64_t counts[4] = {stats.nan_count, stats.saturated_count, stats.flushed_count, stats.total_count};
            rec[wi].add("stats counts", counts, sizeof counts);
            rec[wi].add("stats amax", &stats.amax, 4);
          }
        } else if (contents(y) != before) {
          failf("a failed quantizer quantize wrote its output");
        }
        break;
      }
      default:
        break;
    }
    record_quantizer(q, rec[wi], label);
    rec[wi].add("communicator log", w.comm.log);
  }
  compare_all(rec);
}

void Program::op_communicator(Input& in) {
  const uint8_t a = in.byte(), b = in.byte();
  static const float kRemote[] = {0.0f, 0.5f, 4.0f, 1e6f, INFINITY, 3.0f, 448.0f, 1e-3f};
  static const octet_status kFail[] = {OCTET_STATUS_BACKEND_ERROR, OCTET_STATUS_UNAVAILABLE, OCTET_STATUS_OUT_OF_MEMORY,
                                       OCTET_STATUS_INVALID_ARGUMENT};
  Record rec[kWorlds];
  for (int wi = 0; wi < worlds_run(); ++wi) {
    World& w = worlds[wi];
    const int mode = a & 3;
    if (mode == 0) {
      rec[wi].add("unset", called(octet_context_set_communicator(w.ctx, nullptr), "octet_context_set_communicator"));
      w.comm.mode = 0;
      continue;
    }
    octet_communicator c{};
    c.struct_size = sizeof(c);
    c.allreduce_max = allreduce;
    c.user_data = &w.comm;
    if (mode == 3) {  // refused: no function, or a struct_size of 0
      if (a & 4) c.allreduce_max = nullptr;
      else c.struct_size = 0;
    }
    const Call s = called(octet_context_set_communicator(w.ctx, &c), "octet_context_set_communicator");
    rec[wi].add("set", s);
    if (mode == 3) {
      check(!s.ok(), "an invalid communicator was accepted");
      continue;
    }
    w.comm.mode = mode;
    w.comm.remote = kRemote[(a >> 2) & 7];
    w.comm.calls = 0;
    w.comm.fail_at = mode == 2 ? 1 + (b & 7) : 0;
    w.comm.fail_status = kFail[(b >> 3) & 3];
  }
  compare_all(rec);
}

// Destroys a layer (its saved handles stay in their slots) and, usually,
// creates a new one.
void Program::op_layer(Input& in) {
  const uint8_t a = in.byte();
  const int li = a & 1;
  if (a & 2) {
    const LayerSpec s = read_layer_spec(in);
    create_layer(li, s, in);
    return;
  }
  for (World& w : worlds) {
    octet_layer_destroy(w.layers[li]);
    w.layers[li] = nullptr;
  }
  layers[li] = LayerModel{};
  ++generation[li];
}

// One training step from five bytes, made of the steps above: [autocast
// begin], a training forward into a slot, the backward of that slot,
// [autocast end].
void Program::op_training_step(Input& in) {
  const uint8_t a = in.byte(), bx = in.byte(), by = in.byte(), bd = in.byte(), bdx = in.byte();
  const uint8_t li = a & 1, scope = (a >> 1) & 3, slot = (a >> 6) & 3;
  const std::string where = g_where;
  if (scope != 0) {
    g_where = where + " autocast_begin";
    const uint8_t b[1] = {uint8_t(scope - 1)};
    Input sub(b, 1);
    op_autocast(sub, true);
  }
  {
    g_where = where + " forward";
    const uint8_t b[3] = {uint8_t(li | 2 | (slot << 3)), bx, by};
    Input sub(b, 3);
    op_forward(sub);
  }
  {
    g_where = where + " backward";
    const uint8_t b[3] = {uint8_t(li | (slot << 1) | (a & 0x18)), bd, bdx};
    Input sub(b, 3);
    op_backward(sub);
  }
  if (scope != 0 && !(a & 0x20)) {
    g_where = where + " autocast_end";
    const uint8_t b[1] = {0};
    Input sub(b, 1);
    op_autocast(sub, false);
  }
}

void Program::op_inspect() {
  Record rec[kWorlds];
  for (int wi = 0; wi < worlds_run(); ++wi) record_everything(worlds[wi], rec[wi]);
  compare_all(rec);
}

// A recipe from two bytes (rarely an invalid option: then NULL).
octet_recipe* make_recipe(Input& in, int* kind_out) {
  const uint8_t k = in.byte(), b0 = in.byte(), b1 = in.byte();
  const int kind = k % 5;
  *kind_out = kind;
  octet_recipe* r = nullptr;
  octet_status s = OCTET_STATUS_SUCCESS;
  const int32_t format = (b0 >> 6) % 3;
  switch (kind) {
    case OCTET_RECIPE_DELAYED: {
      octet_delayed_scaling_options o;
      octet_delayed_scaling_options_init(&o);
      o.margin = b0 & 1;
      o.interval = (b0 >> 1) & 1 ? 2 : 1;
      o.format = (b0 >> 2) & 1 ? OCTET_FORMAT_HYBRID : OCTET_FORMAT_E4M3;
      o.amax_history_len = 1 + ((b0 >> 3) & 3);
      o.amax_compute_algo = (b0 >> 5) & 1 ? OCTET_AMAX_MAX : OCTET_AMAX_MOST_RECENT;
      if (((b0 >> 6) & 3) == 3) {
        o.amax_compute_algo = OCTET_AMAX_CALLBACK;
        o.amax_compute_callback = amax_callback;
        o.amax_compute_user_data = const_cast<int*>(&kModes[(b1 >> 6) & 3]);
      }
      o.power_of_two_scales = (k >> 3) & 1;
      o.override_fprop = (b1 & 7) == 1;
      o.override_dgrad = (b1 & 7) == 2;
      o.override_wgrad = (b1 & 7) == 3;
      if ((b1 & 7) == 4) o.override_fprop = o.override_dgrad = o.override_wgrad = 1;
      o.reduce_amax = (b1 >> 3) & 1;
      if ((b1 >> 4) & 1) {
        o.scale_compute_callback = scale_callback;
        o.scale_compute_user_data = const_cast<int*>(&kModes[(b1 >> 6) & 3]);
      }
      if (k >= 0xF0) o.interval = 0;  // refused
      s = octet_recipe_create_delayed(&o, &r);
      break;
    }
    case OCTET_RECIPE_CURRENT: {
      octet_current_scaling_options o;
      octet_current_scaling_options_init(&o);
      o.format = format;
      o.amax_epsilon = (b0 & 1) ? 1e-3f : 0.0f;
      o.power_of_two_scales = (b0 >> 1) & 1;
      o.reduce_amax = (b0 >> 2) & 1;
      s = octet_recipe_create_current(&o, &r);
      break;
    }
    case OCTET_RECIPE_STATIC: {
      octet_static_scaling_options o;
      octet_static_scaling_options_init(&o);
      static const float kScales[] = {1.0f, 0.5f, 16.0f, 1e-3f, 300.0f, 2.0f, 1.0f, 64.0f};
      o.format = format;
      o.scale = kScales[b0 & 7];
      o.observe = (b0 >> 3) & 1;
      s = octet_recipe_create_static(&o, &r);
      break;
    }
    case OCTET_RECIPE_MXFP8: {
      octet_mxfp8_options o;
      octet_mxfp8_options_init(&o);
      o.format = format;
      o.rounding = b0 & 1;
      s = octet_recipe_create_mxfp8(&o, &r);
      break;
    }
    default: {
      octet_block_scaling_options o;
      octet_block_scaling_options_init(&o);
      o.format = format;
      o.amax_epsilon = (b0 & 1) ? 1e-6f : 0.0f;
      o.power_of_two_scales = (b0 >> 1) & 1;
      s = octet_recipe_create_block(&o, &r);
      break;
    }
  }
  const Call c = called(s, "octet_recipe_create_*");
  if (!c.ok()) {
    check(r == nullptr, "a failed recipe create wrote its out-parameter");
    if (k < 0xF0 || kind != OCTET_RECIPE_DELAYED) failf("a valid recipe was refused: %s", c.message.c_str());
    return nullptr;
  }
  if (k >= 0xF0 && kind == OCTET_RECIPE_DELAYED) failf("a delayed recipe with interval 0 was accepted");
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  g_where = "setup";
  Program prog;
  const uint8_t head = in.byte();
  prog.variant_valid = !(head & 0x80);  // the variant world, in half the programs
  for (int wi = 0; wi < kWorlds; ++wi) {
    World& w = prog.worlds[wi];
    // The reference presents native (= blackwell-like) and hopper-like.
    w.profile = wi == 1 ? OCTET_PROFILE_HOPPER_LIKE
                        : (head & 1) && wi == 0 ? OCTET_PROFILE_BLACKWELL_LIKE : OCTET_PROFILE_NATIVE;
    octet_context_options o;
    octet_context_options_init(&o);
    o.backend = "reference";
    o.capability_profile = w.profile;
    if (octet_context_create(&o, &w.ctx) != OCTET_STATUS_SUCCESS ||
        octet_context_create(&o, &w.ctx2) != OCTET_STATUS_SUCCESS)
      failf("octet_context_create: %s", octet_last_error_message());
  }
  prog.n_recipes = 1 + (head >> 1) % kMaxRecipes;
  for (int r = 0; r < prog.n_recipes; ++r) {
    prog.recipes[r] = make_recipe(in, &prog.recipe_kind[r]);
    octet_recipe_info ri{};
    ri.struct_size = sizeof(ri);
    if (prog.recipes[r] != nullptr && octet_recipe_get_info(prog.recipes[r], &ri) == OCTET_STATUS_SUCCESS)
      prog.override_fprop_only[r] = ri.kind == OCTET_RECIPE_DELAYED && ri.override_fprop && !ri.override_wgrad;
  }
  const LayerSpec spec = prog.read_layer_spec(in);
  prog.create_layer(0, spec, in);
  for (size_t s = 0; s < kMaxSteps && !in.empty(); ++s) prog.step(in, s);
  // The end: everything compared once more, then every saved handle
  // released and the memory checked at rest.
  g_where = "end";
  prog.op_inspect();
  for (World& w : prog.worlds) {
    for (octet_saved*& s : w.slots) {
      octet_saved_destroy(s);
      s = nullptr;
    }
    for (octet_saved* s : w.orphans) octet_saved_destroy(s);
    w.orphans.clear();
  }
  for (SlotModel& s : prog.slots) s = SlotModel{};
  prog.orphans = false;
  for (int wi = 0; wi < prog.worlds_run(); ++wi) prog.check_memory(prog.worlds[wi], wi);
  return 0;
}
