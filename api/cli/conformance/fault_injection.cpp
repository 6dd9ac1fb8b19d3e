// Section (e) of `octet conformance`: fault injection. In a child process
// (forked before this process loads any plugin), the plugin is loaded
// behind liboctet_fault_shim.so (api/cli/fault_shim), which registers under
// its name and can fail any one backend call or allocation. Each scenario
// below runs once to count its backend calls, then once per call with that
// call failing; every time the core must return a failure status with a
// message (never SUCCESS, never INTERNAL), leave the scenario's outputs as
// they were, and hold no more memory than before (the context's memory
// statistics and the shim's count of live blocks; less is allowed: a failed
// backward still releases what its forward saved). Then the scenario runs
// unfaulted again and must succeed.
#include <dlfcn.h>
#include <octet/octet.hpp>

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conformance/child_process.hpp"
#include "conformance/sections.hpp"
#include "conformance/tensors.hpp"

namespace octet_cli {
namespace {

struct Shim {
  void (*arm)(uint64_t) = nullptr;
  uint64_t (*calls)() = nullptr;
  int (*fired)() = nullptr;
  int64_t (*live)() = nullptr;
};

// Throws octet::Error; maybe() below turns UNSUPPORTED into an empty pointer.
octet::Tensor make(octet::Context& ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0,
                   int32_t mode = 0) {
  return create_tensor_2d(ctx, dtype, rows, cols, usages, mode);
}

octet::Tensor maybe(octet::Context& ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0) {
  try {
    return make(ctx, dtype, rows, cols, usages);
  } catch (const octet::Error& e) {
    if (e.status() != OCTET_STATUS_UNSUPPORTED) throw;
    return octet::Tensor();
  }
}

void fill(octet_tensor* t, uint32_t seed) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  octet::check(octet_tensor_get_info(t, &info));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  if (info.dtype == OCTET_DTYPE_FP32) {
    std::vector<float> v(size_t(info.rowwise_bytes / 4));
    for (float& x : v) x = d(rng);
    octet::check(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
  } else {
    std::vector<uint8_t> v(size_t(info.rowwise_bytes));
    for (uint8_t& x : v) x = uint8_t(rng() & 0x3f);  // finite codes of every dtype
    octet::check(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v.data(), v.size()));
  }
}

// Every component's bytes, to compare before and after a failed call.
std::vector<std::vector<uint8_t>> snapshot(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  octet::check(octet_tensor_get_info(t, &info));
  std::vector<std::vector<uint8_t>> out;
  auto take = [&](int32_t component, uint64_t bytes) {
    std::vector<uint8_t> b(static_cast<size_t>(bytes));
    octet::check(octet_tensor_copy_to_host(t, component, b.data(), b.size()));
    out.push_back(std::move(b));
  };
  if (info.has_rowwise_data) take(OCTET_COMPONENT_DATA, info.rowwise_bytes);
  if (info.has_columnwise_data) take(OCTET_COMPONENT_COLUMNWISE_DATA, info.columnwise_bytes);
  if (info.usages != 0) {
    if (info.scaling_mode == OCTET_SCALING_PER_TENSOR) {
      take(OCTET_COMPONENT_SCALE, 4);
      take(OCTET_COMPONENT_SCALE_INV, 4);
    } else {
      if (info.rowwise_scale_inv_bytes) take(OCTET_COMPONENT_ROWWISE_SCALE_INV, info.rowwise_scale_inv_bytes);
      if (info.columnwise_scale_inv_bytes) take(OCTET_COMPONENT_COLUMNWISE_SCALE_INV, info.columnwise_scale_inv_bytes);
    }
    take(OCTET_COMPONENT_AMAX, 4);
  }
  return out;
}

uint64_t memory_in_use(octet::Context& ctx) {
  octet_memory_stats stats{};
  stats.struct_size = sizeof stats;
  octet::check(octet_context_get_memory_stats(ctx.get(), &stats));
  return stats.current_total;
}

// One scenario: `prepare` (unfaulted) sets the stage, `run` is the call
// under faults, `outputs` what must be left as it was.
using Outputs = std::vector<std::vector<std::vector<uint8_t>>>;
struct Scenario {
  Scenario(std::string n, std::function<void()> p, std::function<octet_status()> r, std::function<Outputs()> o)
      : name(std::move(n)), prepare(std::move(p)), run(std::move(r)), outputs(std::move(o)) {}
  std::string name;
  std::function<void()> prepare;
  std::function<octet_status()> run;
  std::function<Outputs()> outputs;
  std::vector<const octet::Tensor*> needs;  // tensors that must exist (else: unsupported here)
};

void run_scenario(Section& s, octet::Context& ctx, const Shim& shim, const Scenario& sc) {
  for (const octet::Tensor* t : sc.needs)
    if (!*t) {
      s.add(sc.name, Outcome::Unsupported, "a tensor it needs cannot be created on this backend (see capabilities)");
      return;
    }
  try {
    shim.arm(0);
    sc.prepare();
    shim.arm(0);
    const octet_status first = sc.run();
    const uint64_t calls = shim.calls();
    if (first != OCTET_STATUS_SUCCESS) {
      s.add(sc.name, first == OCTET_STATUS_UNSUPPORTED ? Outcome::Unsupported : Outcome::Fail,
            std::string("without a fault: ") + octet_status_name(first) + ": " + octet_last_error_message());
      return;
    }
    if (calls == 0) {
      s.add(sc.name, Outcome::Skipped, "it made no backend call to fail");
      return;
    }
    std::string failure;
    uint64_t injected = 0;
    for (uint64_t i = 1; i <= calls && failure.empty(); ++i) {
      shim.arm(0);
      sc.prepare();
      const auto before = sc.outputs();
      const uint64_t memory = memory_in_use(ctx);
      const int64_t live = shim.live();
      shim.arm(i);
      const octet_status status = sc.run();
      const bool fired = shim.fired() != 0;
      shim.arm(0);
      if (!fired) continue;  // this run made fewer calls
      ++injected;
      const std::string at = "fault at backend call " + std::to_string(i) + " of " + std::to_string(calls) + ": ";
      if (status == OCTET_STATUS_SUCCESS)
        failure = at + "the call returned SUCCESS";
      else if (status == OCTET_STATUS_INTERNAL)
        failure = at + "INTERNAL: " + octet_last_error_message();
      else if (octet_last_error_message()[0] == '\0')
        failure = at + octet_status_name(status) + " with no message";
      else if (sc.outputs() != before)
        failure = at + "an output changed (" + octet_last_error_message() + ")";
      else if (memory_in_use(ctx) > memory)
        failure = at + "the context holds " + std::to_string(memory_in_use(ctx)) + " bytes, " + std::to_string(memory) +
                  " before";
      else if (shim.live() > live)
        failure = at + std::to_string(shim.live() - live) + " backend blocks more are allocated than before";
    }
    if (failure.empty()) {
      shim.arm(0);
      sc.prepare();
      const octet_status again = sc.run();
      if (again != OCTET_STATUS_SUCCESS)
        failure = std::string("after the faults the unfaulted call fails: ") + octet_status_name(again) + ": " +
                  octet_last_error_message();
    }
    s.add(sc.name, failure.empty() ? Outcome::Pass : Outcome::Fail,
          failure.empty() ? std::to_string(injected) +
                                " faults (every backend call and allocation in turn): a "
                                "failure status and message, outputs unchanged, no leak"
                          : failure);
  } catch (const octet::Error& e) {
    shim.arm(0);
    s.add(sc.name, e.status() == OCTET_STATUS_UNSUPPORTED ? Outcome::Unsupported : Outcome::Fail,
          std::string("outside the faults: ") + e.what());
  } catch (const std::exception& e) {
    shim.arm(0);
    s.add(sc.name, Outcome::Fail, std::string("outside the faults: ") + e.what());
  }
}

std::string shim_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&octet_library_version), &info) == 0 || info.dli_fname == nullptr) return "";
  // Normalized as the core names the files it loads ("bin/../lib" from an
  // $ORIGIN run path becomes "lib").
  std::error_code ec;
  const auto dir = std::filesystem::absolute(std::filesystem::path(info.dli_fname), ec).parent_path();
  return (dir / "octet" / "conformance" / "liboctet_fault_shim.so").lexically_normal().string();
}

void check_faults(Section& s, const std::string& plugin) {
  const std::string path = shim_path();
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    s.add("fault shim", Outcome::Fail, "liboctet_fault_shim.so is not installed beside liboctet (" + path + ")");
    return;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto configure =
      handle ? reinterpret_cast<int (*)(const char*)>(dlsym(handle, "octet_fault_shim_configure")) : nullptr;
  Shim shim;
  if (handle) {
    shim.arm = reinterpret_cast<void (*)(uint64_t)>(dlsym(handle, "octet_fault_shim_arm"));
    shim.calls = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "octet_fault_shim_calls"));
    shim.fired = reinterpret_cast<int (*)()>(dlsym(handle, "octet_fault_shim_fired"));
    shim.live = reinterpret_cast<int64_t (*)()>(dlsym(handle, "octet_fault_shim_live_blocks"));
  }
  if (!configure || !shim.arm || !shim.calls || !shim.fired || !shim.live) {
    s.add("fault shim", Outcome::Fail,
          "cannot use " + path + ": " + (handle ? "a control function is missing" : dlerror()));
    return;
  }
  if (configure(plugin.c_str()) != 0) {
    s.add("fault shim", Outcome::Fail, "the shim cannot open " + plugin);
    return;
  }
  if (octet_backend_load(path.c_str()) != OCTET_STATUS_SUCCESS) {
    s.add("fault shim", Outcome::Fail,
          std::string("the core refused the wrapped plugin: ") + octet_last_error_message());
    return;
  }
  std::string name;
  bool available = false;
  for (const auto& b : octet::backends())
    if (b.path == path) {
      name = b.name;
      available = b.available;
    }
  if (name.empty() || !available) {
    s.add("fault shim", Outcome::Fail, "the wrapped plugin is not registered, or unavailable here");
    return;
  }
  octet::Context ctx(name);
  const octet::BackendInfo info = ctx.info();
  const bool bf16 = (info.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_BF16)) != 0;
  const int64_t m = 32, n = 48, k = 64;

  // Tensors the scenarios share; created outside the faults.
  octet::Tensor x = make(ctx, OCTET_DTYPE_FP32, m, k);
  fill(x.get(), 1);
  octet::Tensor w = make(ctx, OCTET_DTYPE_FP32, n, k);
  fill(w.get(), 2);
  octet::Tensor q, qw, y, d, h, bias;
  float amax_value = -1.0f;
  std::vector<Scenario> scenarios;

  scenarios.emplace_back(Scenario{"tensor create (quantized, both usages)", [] {},
                                  [&] {
                                    octet_tensor_desc desc{};
                                    desc.struct_size = sizeof desc;
                                    desc.dtype = OCTET_DTYPE_E4M3;
                                    desc.ndim = 2;
                                    desc.shape[0] = m;
                                    desc.shape[1] = k;
                                    desc.usages = OCTET_USAGE_BOTH;
                                    octet_tensor* t = nullptr;
                                    const octet_status st = octet_tensor_create(ctx.get(), &desc, &t);
                                    if (st == OCTET_STATUS_SUCCESS && t == nullptr)
                                      return octet_status(OCTET_STATUS_INTERNAL);
                                    octet_tensor_destroy(t);
                                    return st;
                                  },
                                  [] { return Outputs{}; }});
  scenarios.emplace_back(
      Scenario{"copy to and from the host", [] {},
               [&] {
                 std::vector<float> v(size_t(m * k), 0.5f);
                 octet_status st = octet_tensor_copy_from_host(y.get(), OCTET_COMPONENT_DATA, v.data(), v.size() * 4);
                 if (st == OCTET_STATUS_SUCCESS)
                   st = octet_tensor_copy_to_host(x.get(), OCTET_COMPONENT_DATA, v.data(), v.size() * 4);
                 return st;
               },
               [&] { return Outputs{snapshot(y.get())}; }});
  y = make(ctx, OCTET_DTYPE_FP32, m, k);
  fill(y.get(), 3);
  q = maybe(ctx, OCTET_DTYPE_E4M3, m, k, OCTET_USAGE_BOTH);
  scenarios.emplace_back(Scenario{"quantize (per-tensor, both usages)", [] {},
                                  [&] {
                                    octet_quantize_options o = octet::quantize_options();
                                    return octet_quantize(ctx.get(), x.get(), q.get(), &o);
                                  },
                                  [&] { return Outputs{snapshot(q.get())}; }});
  scenarios.back().needs = {&q};
  scenarios.emplace_back(Scenario{"dequantize", [] {}, [&] { return octet_dequantize(ctx.get(), q.get(), y.get()); },
                                  [&] { return Outputs{snapshot(y.get())}; }});
  scenarios.back().needs = {&q};
  scenarios.emplace_back(Scenario{"amax", [&] { amax_value = -1.0f; },
                                  [&] { return octet_amax(ctx.get(), x.get(), &amax_value); },
                                  [&] {
                                    std::vector<uint8_t> b(4);
                                    std::memcpy(b.data(), &amax_value, 4);
                                    return Outputs{{b}};
                                  }});
  h = maybe(ctx, bf16 ? OCTET_DTYPE_BF16 : OCTET_DTYPE_E4M3, m, k);
  scenarios.emplace_back(Scenario{std::string("convert fp32 -> ") + (bf16 ? "bf16" : "e4m3"), [] {},
                                  [&] { return octet_convert(ctx.get(), x.get(), h.get(), 1); },
                                  [&] { return Outputs{snapshot(h.get())}; }});
  scenarios.back().needs = {&h};
  qw = maybe(ctx, OCTET_DTYPE_E4M3, n, k, OCTET_USAGE_ROWWISE);
  d = make(ctx, OCTET_DTYPE_FP32, m, n);
  fill(d.get(), 4);
  bias = make(ctx, OCTET_DTYPE_FP32, 1, n);
  fill(bias.get(), 5);
  scenarios.emplace_back(Scenario{"fp8 gemm (TN, bias, beta 1)",
                                  [&] {
                                    octet_quantize_options o = octet::quantize_options();
                                    octet::check(octet_quantize(ctx.get(), w.get(), qw.get(), &o));
                                  },
                                  [&] {
                                    octet_gemm_options o;
                                    octet_gemm_options_init(&o);
                                    o.beta = 1.0f;
                                    o.bias = bias.get();
                                    return octet_gemm(ctx.get(), q.get(), qw.get(), d.get(), &o);
                                  },
                                  [&] { return Outputs{snapshot(d.get())}; }});
  scenarios.back().needs = {&q, &qw};
  scenarios.emplace_back(Scenario{"fp32 gemm", [] {},
                                  [&] {
                                    octet_gemm_options o;
                                    octet_gemm_options_init(&o);
                                    return octet_gemm(ctx.get(), x.get(), w.get(), d.get(), &o);
                                  },
                                  [&] { return Outputs{snapshot(d.get())}; }});
  // A Linear layer under the delayed recipe: forward (output, quantizer
  // state), then backward (grad_input and every parameter gradient).
  octet::Recipe recipe = octet::Recipe::delayed();
  octet_linear_options lo = octet::linear_options();
  lo.in_features = k;
  lo.out_features = n;
  lo.bias = 1;
  lo.recipe = recipe.get();
  octet::Layer layer;
  try {
    layer = octet::Layer::linear(ctx, lo);
  } catch (const octet::Error& e) {
    s.add("linear layer", e.status() == OCTET_STATUS_UNSUPPORTED ? Outcome::Unsupported : Outcome::Fail, e.what());
  }
  octet::Tensor ly = make(ctx, OCTET_DTYPE_FP32, m, n), dy = make(ctx, OCTET_DTYPE_FP32, m, n),
                dx = make(ctx, OCTET_DTYPE_FP32, m, k);
  fill(dy.get(), 6);
  auto layer_outputs = [&] {
    Outputs out{snapshot(ly.get()), snapshot(dx.get())};
    for (size_t i = 0; i < layer.parameter_count(); ++i) {
      octet_tensor* g = nullptr;
      octet::check(octet_layer_get_gradient(layer.get(), i, &g));
      out.push_back(snapshot(g));
    }
    return out;
  };
  if (layer) {
    scenarios.emplace_back(Scenario{"linear forward (delayed recipe, training)", [] {},
                                    [&] {
                                      octet_saved* raw = nullptr;
                                      const octet_status st =
                                          octet_layer_forward(layer.get(), x.get(), ly.get(), 1, &raw);
                                      octet_saved_destroy(raw);
                                      return st;
                                    },
                                    layer_outputs});
    octet_saved* pending = nullptr;
    scenarios.emplace_back(Scenario{"linear backward (delayed recipe)",
                                    [&] {
                                      octet_saved_destroy(pending);
                                      pending = nullptr;
                                      octet::check(octet_layer_forward(layer.get(), x.get(), ly.get(), 1, &pending));
                                    },
                                    [&] {
                                      const octet_status st =
                                          octet_layer_backward(layer.get(), &pending, dy.get(), dx.get(), 0);
                                      octet_saved_destroy(pending);
                                      pending = nullptr;
                                      return st;
                                    },
                                    layer_outputs});
    for (const Scenario& sc : scenarios) run_scenario(s, ctx, shim, sc);
    octet_saved_destroy(pending);
    return;
  }
  for (const Scenario& sc : scenarios) run_scenario(s, ctx, shim, sc);
}

}  // namespace

Section check_fault_injection(const std::string& plugin) {
  Section s;
  s.id = "fault_injection";
  s.title = "every backend call and allocation failed in turn: a clean status, no leak, outputs unchanged";
  run_in_child(&s, "fault injection", [&](Section& child) {
    try {
      check_faults(child, plugin);
    } catch (const std::exception& e) {
      child.add("fault injection setup", Outcome::Fail, e.what());
    }
  });
  return s;
}

}  // namespace octet_cli
