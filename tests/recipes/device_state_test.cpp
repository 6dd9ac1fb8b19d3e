// Where quantizer scaling state lives (docs/recipes.md, "Where the scaling
// state lives"). The reference provides the plugin ABI 1.3 scaling entries,
// so the core keeps its quantizers' state in backend memory and does the
// per-quantize bookkeeping and the delayed update there; the cpu backend
// does not, so it keeps the host path. The same traces on both must give
// the same bits: scales, histories, update counts, codes. Also: host reads
// and writes mid-trace (get_info, get_amax_history, set_scale, record_amax,
// checkpoints), migration between contexts and backends, user callbacks
// (the host path of a resident state), and, through the counting test
// plugins, that a quantize and update with delayed scaling copy nothing to
// the host on the device path.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace {

using namespace recipes_test;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

bool cpu_available() {
#ifdef OCTET_CPU_PLUGIN_PATH
  return load_backend("cpu", OCTET_CPU_PLUGIN_PATH);
#else
  return backend_registered("cpu");
#endif
}

#define REQUIRE_CPU()                                                                                    \
  do {                                                                                                   \
    if (!cpu_available())                                                                                \
      GTEST_SKIP() << "the cpu backend (the host path) is not built (-DOCTET_WITH_ONEDNN=ON) or failed " \
                      "to load: nothing to compare the device path with";                                \
  } while (0)

// What a quantizer holds after one step, bit for bit.
struct Snapshot {
  uint32_t scale = 0, scale_inv = 0, amax = 0;
  uint64_t updates = 0;
  std::vector<uint32_t> history;  // newest first
  bool operator==(const Snapshot& o) const {
    return scale == o.scale && scale_inv == o.scale_inv && amax == o.amax && updates == o.updates &&
           history == o.history;
  }
};

std::ostream& operator<<(std::ostream& out, const Snapshot& s) {
  out << "scale " << std::hex << s.scale << " scale_inv " << s.scale_inv << " amax " << s.amax << std::dec
      << " updates " << s.updates << " history";
  for (uint32_t h : s.history) out << " " << std::hex << h << std::dec;
  return out;
}

Snapshot snapshot(octet_quantizer* q) {
  Snapshot s;
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_quantizer_get_info(q, &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  s.scale = bits(info.scale);
  s.scale_inv = bits(info.scale_inv);
  s.amax = bits(info.amax);
  s.updates = info.update_count;
  std::vector<float> h(info.amax_history_len);
  EXPECT_EQ(octet_quantizer_get_amax_history(q, h.data(), h.size()), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  for (float v : h) s.history.push_back(bits(v));
  return s;
}

// A tensor of magnitude about `amax` (its exact amax does not matter: both
// backends get the same values); inf and NaN appear as elements.
std::vector<float> values_for(float amax, uint32_t seed, size_t n) {
  std::vector<float> v = random_values(n, 1.0f, seed);
  for (float& x : v) x = std::isfinite(amax) ? x * (amax / 4.0f) : x;
  if (std::isinf(amax)) v[1] = -amax;
  if (std::isnan(amax)) v[2] = amax;
  return v;
}

std::vector<std::vector<float>> amax_trace() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {{3.0f},  {0.5f, 7.25f}, {0.0f},   {inf},   {nan},        {1e-3f}, {2e4f, 1.0f}, {},
          {1e-30f}, {3e38f},       {96.0f, nan}, {0.75f}, {12.0f}, {5.0f}, {0.0f},       {200.0f}};
}

octet_status max_with_five(float* values, size_t count, void*) {
  // Another process saw amax 5 in every quantizer.
  for (size_t i = 0; i < count; ++i) values[i] = std::fmax(values[i], 5.0f);
  return OCTET_STATUS_SUCCESS;
}

enum class Update { Explicit, Autocast, AutocastReduced };

struct TraceRun {
  std::vector<Snapshot> steps;       // empty when not read each step
  Snapshot last;
  std::vector<uint8_t> codes;        // every FP8 code written, in order
  std::vector<uint32_t> scale_invs;  // every output's SCALE_INV
};

// One quantizer through the trace on `backend`.
TraceRun run_trace(const char* backend, const octet_recipe* recipe, int32_t role, int32_t dtype, Update update,
                   bool read_each_step) {
  TraceRun run;
  Context ctx = make_context(backend);
  if (update == Update::AutocastReduced) {
    octet_communicator c{};
    c.struct_size = sizeof(c);
    c.allreduce_max = max_with_five;
    EXPECT_EQ(octet_context_set_communicator(ctx.get(), &c), OCTET_STATUS_SUCCESS);
  }
  // Autocast: a quantizer without a recipe takes the scope's.
  Quantizer q = make_quantizer(update == Update::Explicit ? recipe : nullptr, role);
  uint32_t seed = 7;
  for (const auto& step : amax_trace()) {
    if (update != Update::Explicit) {
      EXPECT_EQ(octet_autocast_begin(ctx.get(), recipe), OCTET_STATUS_SUCCESS);
    }
    for (float amax : step) {
      const int64_t rows = 4, cols = 6;
      Tensor in = make_fp32(ctx.get(), rows, cols, values_for(amax, seed++, size_t(rows * cols)));
      Tensor out = make_tensor(ctx.get(), dtype, rows, cols, OCTET_USAGE_ROWWISE);
      EXPECT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr),
                OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      for (uint8_t c : read_bytes(out.get(), OCTET_COMPONENT_DATA, size_t(rows * cols))) run.codes.push_back(c);
      run.scale_invs.push_back(bits(read_floats(out.get(), OCTET_COMPONENT_SCALE_INV, 1)[0]));
    }
    if (update == Update::Explicit) {
      EXPECT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    } else {
      EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    }
    if (read_each_step) run.steps.push_back(snapshot(q.get()));
  }
  run.last = snapshot(q.get());
  return run;
}

Recipe make_delayed(int algo, int history, int interval, int margin, int pow2, int format) {
  octet_delayed_scaling_options opt;
  EXPECT_EQ(octet_delayed_scaling_options_init(&opt), OCTET_STATUS_SUCCESS);
  opt.amax_compute_algo = algo;
  opt.amax_history_len = history;
  opt.interval = interval;
  opt.margin = margin;
  opt.power_of_two_scales = pow2;
  opt.format = format;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_delayed(&opt, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Recipe(r);
}

void expect_same_run(const TraceRun& device, const TraceRun& host, const std::string& what) {
  ASSERT_EQ(device.steps.size(), host.steps.size()) << what;
  for (size_t i = 0; i < device.steps.size(); ++i)
    ASSERT_EQ(device.steps[i], host.steps[i]) << what << ": step " << i;
  EXPECT_EQ(device.last, host.last) << what;
  EXPECT_EQ(device.codes, host.codes) << what;
  EXPECT_EQ(device.scale_invs, host.scale_invs) << what;
}

using Combo = std::tuple<int, int, int, int, int, int>;

class DeviceStateTrace : public ::testing::TestWithParam<Combo> {};

// Every option combination of the delayed-scaling suite, through quantizes:
// the reference (state in backend memory) and cpu (host path) agree bit for
// bit at every step, with the update explicit, at the end of an autocast
// scope, and after a cross-process reduction; reading the state only at the
// end gives the same as reading it every step.
TEST_P(DeviceStateTrace, ReferenceAndCpuAgreeBitForBit) {
  REQUIRE_CPU();
  auto [algo, history, interval, margin, pow2, format] = GetParam();
  Recipe recipe = make_delayed(algo, history, interval, margin, pow2, format);
  const struct {
    int32_t role;
    Update update;
  } cases[] = {{OCTET_ROLE_INPUT, Update::Explicit},
               {OCTET_ROLE_GRADIENT, Update::Autocast},
               {OCTET_ROLE_WEIGHT, Update::AutocastReduced}};
  for (const auto& c : cases) {
    int32_t dtype = OCTET_DTYPE_INVALID, mode = 0;
    ASSERT_EQ(octet_recipe_tensor_format(recipe.get(), c.role, &dtype, &mode), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    const std::string what = "role " + std::to_string(c.role) + " update " + std::to_string(int(c.update));
    TraceRun device = run_trace("reference", recipe.get(), c.role, dtype, c.update, true);
    TraceRun host = run_trace("cpu", recipe.get(), c.role, dtype, c.update, true);
    expect_same_run(device, host, what);
    TraceRun read_at_end = run_trace("reference", recipe.get(), c.role, dtype, c.update, false);
    EXPECT_EQ(read_at_end.last, device.last) << what;
    EXPECT_EQ(read_at_end.codes, device.codes) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptionCombinations, DeviceStateTrace,
                         ::testing::Combine(::testing::Values(int(OCTET_AMAX_MOST_RECENT), int(OCTET_AMAX_MAX)),
                                            ::testing::Values(1, 3, 5), ::testing::Values(1, 2, 3),
                                            ::testing::Values(0, 2), ::testing::Values(0, 1),
                                            ::testing::Values(int(OCTET_FORMAT_E4M3), int(OCTET_FORMAT_HYBRID))));

// ---- host reads and writes in the middle of a device-path trace ----------

// Steps of quantize + update on one context; returns the state after each.
std::vector<Snapshot> steps_on(octet_context* ctx, octet_quantizer* q, int first, int count) {
  std::vector<Snapshot> out;
  for (int step = first; step < first + count; ++step) {
    Tensor in = make_fp32(ctx, 3, 5, values_for(float(1 + step * step), uint32_t(100 + step), 15));
    Tensor t = make_tensor(ctx, OCTET_DTYPE_E4M3, 3, 5, OCTET_USAGE_ROWWISE);
    EXPECT_EQ(octet_quantizer_quantize(ctx, q, in.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    EXPECT_EQ(octet_quantizer_update_scale(q), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    out.push_back(snapshot(q));
  }
  return out;
}

TEST(DeviceState, CheckpointRoundTripMidTrace) {
  REQUIRE_CPU();
  Recipe recipe = make_delayed(OCTET_AMAX_MAX, 4, 2, 1, 0, OCTET_FORMAT_E4M3);
  Context ref = make_context("reference");
  Context cpu = make_context("cpu");
  Quantizer a = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  Quantizer h = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  steps_on(ref.get(), a.get(), 0, 5);
  steps_on(cpu.get(), h.get(), 0, 5);
  // The checkpoint of the device state is the host path's, byte for byte.
  const std::vector<uint8_t> saved = save(a.get());
  EXPECT_EQ(saved, save(h.get()));
  const std::vector<Snapshot> continued = steps_on(ref.get(), a.get(), 5, 5);
  EXPECT_EQ(continued, steps_on(cpu.get(), h.get(), 5, 5));
  // Loaded into a quantizer whose state is resident (it quantized once):
  // the load replaces the device state too.
  Quantizer b = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  steps_on(ref.get(), b.get(), 40, 3);
  ASSERT_EQ(octet_quantizer_load(b.get(), saved.data(), saved.size()), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  EXPECT_EQ(save(b.get()), saved);
  EXPECT_EQ(steps_on(ref.get(), b.get(), 5, 5), continued);
}

TEST(DeviceState, SetScaleAndRecordAmaxReachTheDeviceState) {
  REQUIRE_CPU();
  Recipe recipe = make_delayed(OCTET_AMAX_MAX, 3, 1, 0, 0, OCTET_FORMAT_E4M3);
  std::vector<std::vector<Snapshot>> runs;
  for (const char* backend : {"reference", "cpu"}) {
    Context ctx = make_context(backend);
    Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
    std::vector<Snapshot> run = steps_on(ctx.get(), q.get(), 0, 2);
    EXPECT_EQ(octet_quantizer_set_scale(q.get(), 3.0f), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(octet_quantizer_record_amax(q.get(), 1000.0f), OCTET_STATUS_SUCCESS);
    // The next quantize uses the set scale; its amax joins the recorded one.
    Tensor in = make_fp32(ctx.get(), 2, 2, {1.0f, -2.0f, 0.5f, 0.25f});
    Tensor t = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 2, 2, OCTET_USAGE_ROWWISE);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(read_floats(t.get(), OCTET_COMPONENT_SCALE_INV, 1)[0], 1.0f / 3.0f) << backend;
    run.push_back(snapshot(q.get()));
    EXPECT_EQ(run.back().history[0], bits(1000.0f)) << backend;
    for (const Snapshot& s : steps_on(ctx.get(), q.get(), 2, 2)) run.push_back(s);
    runs.push_back(run);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// A quantizer used on several contexts and backends: its state follows
// (through the host) and the results equal a run on the host path only.
TEST(DeviceState, QuantizerMigratesBetweenContextsAndBackends) {
  REQUIRE_CPU();
  Recipe recipe = make_delayed(OCTET_AMAX_MAX, 3, 1, 1, 1, OCTET_FORMAT_E4M3);
  Context ref1 = make_context("reference");
  Context ref2 = make_context("reference");
  Context cpu = make_context("cpu");
  Quantizer moving = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  Quantizer host = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  octet_context* order[] = {ref1.get(), ref1.get(), ref2.get(), cpu.get(), ref1.get(), cpu.get(), ref2.get()};
  int step = 0;
  for (octet_context* ctx : order) {
    EXPECT_EQ(steps_on(ctx, moving.get(), step, 1), steps_on(cpu.get(), host.get(), step, 1)) << "step " << step;
    ++step;
  }
  // A context destroyed while a quantizer's state lives there: the state
  // stays readable (the quantizer keeps what it needs alive).
  {
    Context gone = make_context("reference");
    steps_on(gone.get(), moving.get(), step, 1);
    steps_on(cpu.get(), host.get(), step, 1);
  }
  EXPECT_EQ(snapshot(moving.get()), snapshot(host.get()));
  EXPECT_EQ(steps_on(ref1.get(), moving.get(), step + 1, 2), steps_on(cpu.get(), host.get(), step + 1, 2));
}

// ---- user callbacks: the host path of a resident state -------------------

bool g_fail_scale_callback = false;

octet_status oldest_amax(const float* history, size_t length, float* amax, void*) {
  *amax = history[length - 1];
  return OCTET_STATUS_SUCCESS;
}

octet_status halve_old_plus_amax(float amax, float old_scale, float, int32_t, float* scale, void*) {
  if (g_fail_scale_callback) return OCTET_STATUS_INVALID_ARGUMENT;
  *scale = old_scale * 0.5f + (std::isfinite(amax) ? amax : 1.0f) + 1.0f;
  return OCTET_STATUS_SUCCESS;
}

TEST(DeviceState, CallbacksRunOnTheHostAndAFailureChangesNothing) {
  REQUIRE_CPU();
  octet_delayed_scaling_options opt;
  ASSERT_EQ(octet_delayed_scaling_options_init(&opt), OCTET_STATUS_SUCCESS);
  opt.amax_history_len = 3;
  opt.amax_compute_algo = OCTET_AMAX_CALLBACK;
  opt.amax_compute_callback = oldest_amax;
  opt.scale_compute_callback = halve_old_plus_amax;
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&opt, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Recipe recipe(raw);
  std::vector<std::vector<Snapshot>> runs;
  for (const char* backend : {"reference", "cpu"}) {
    Context ctx = make_context(backend);
    Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
    std::vector<Snapshot> run = steps_on(ctx.get(), q.get(), 0, 4);
    // A failing callback: the update fails and the state is as it was.
    Tensor in = make_fp32(ctx.get(), 1, 2, {30.0f, 1.0f});
    Tensor t = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 2, OCTET_USAGE_ROWWISE);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
    const Snapshot before = snapshot(q.get());
    g_fail_scale_callback = true;
    EXPECT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_INVALID_ARGUMENT) << backend;
    g_fail_scale_callback = false;
    EXPECT_EQ(snapshot(q.get()), before) << backend;
    // Also at the end of an autocast scope (all or nothing).
    ASSERT_EQ(octet_autocast_begin(ctx.get(), recipe.get()), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), t.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
    g_fail_scale_callback = true;
    EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_INVALID_ARGUMENT) << backend;
    g_fail_scale_callback = false;
    run.push_back(snapshot(q.get()));
    for (const Snapshot& s : steps_on(ctx.get(), q.get(), 4, 3)) run.push_back(s);
    runs.push_back(run);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_NE(runs[0][0].scale, bits(1.0f));  // the callbacks did run
}

// ---- current scaling -------------------------------------------------------

TEST(DeviceState, CurrentScalingMatchesTheHostPath) {
  REQUIRE_CPU();
  for (int pow2 : {0, 1})
    for (float epsilon : {0.0f, 1e-3f}) {
      octet_current_scaling_options opt;
      ASSERT_EQ(octet_current_scaling_options_init(&opt), OCTET_STATUS_SUCCESS);
      opt.power_of_two_scales = pow2;
      opt.amax_epsilon = epsilon;
      octet_recipe* raw = nullptr;
      ASSERT_EQ(octet_recipe_create_current(&opt, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      Recipe recipe(raw);
      int32_t dtype = OCTET_DTYPE_INVALID, mode = 0;
      ASSERT_EQ(octet_recipe_tensor_format(recipe.get(), OCTET_ROLE_GRADIENT, &dtype, &mode), OCTET_STATUS_SUCCESS);
      TraceRun device = run_trace("reference", recipe.get(), OCTET_ROLE_GRADIENT, dtype, Update::Explicit, true);
      TraceRun host = run_trace("cpu", recipe.get(), OCTET_ROLE_GRADIENT, dtype, Update::Explicit, true);
      expect_same_run(device, host, "current, pow2 " + std::to_string(pow2) + " eps " + std::to_string(epsilon));
    }
}

// ---- copies to the host ----------------------------------------------------

struct Copies {
  uint64_t to_host = 0, from_host = 0;
};

Copies copies_of(const char* path) {
  Copies c;
  void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << "the counting plugin is not loaded: " << path;
  if (handle == nullptr) return c;
  using Fn = void (*)(uint64_t*, uint64_t*);
  auto fn = reinterpret_cast<Fn>(dlsym(handle, "octet_test_counting_copies"));
  EXPECT_NE(fn, nullptr);
  if (fn != nullptr) fn(&c.to_host, &c.from_host);
  dlclose(handle);
  return c;
}

// Quantizes through a delayed (or current) quantizer for a few steps with
// every tensor made beforehand; returns the copies to the host it made.
uint64_t copies_to_host_in_steps(const char* backend, const char* path, const octet_recipe* recipe, bool autocast) {
  Context ctx = make_context(backend);
  Quantizer q = make_quantizer(autocast ? nullptr : recipe, OCTET_ROLE_INPUT);
  std::vector<Tensor> ins, outs;
  for (int i = 0; i < 6; ++i) {
    ins.push_back(make_fp32(ctx.get(), 4, 8, values_for(float(i + 1), uint32_t(i), 32)));
    outs.push_back(make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 4, 8, OCTET_USAGE_ROWWISE | OCTET_USAGE_COLUMNWISE));
  }
  const Copies before = copies_of(path);
  for (int step = 0; step < 3; ++step) {
    if (autocast) {
      EXPECT_EQ(octet_autocast_begin(ctx.get(), recipe), OCTET_STATUS_SUCCESS);
    }
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), ins[size_t(2 * step + i)].get(),
                                         outs[size_t(2 * step + i)].get(), nullptr, nullptr),
                OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
    }
    if (autocast) {
      EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    } else {
      EXPECT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    }
  }
  const uint64_t during = copies_of(path).to_host - before.to_host;
  // A host read downloads the state: exactly one copy on the device path.
  snapshot(q.get());
  return during;
}

TEST(DeviceState, NoCopyToTheHostPerQuantizeOrUpdate) {
  ASSERT_TRUE(load_backend("counting", OCTET_COUNTING_PLUGIN_PATH)) << octet_last_error_message();
  ASSERT_TRUE(load_backend("counting_host", OCTET_COUNTING_HOST_PLUGIN_PATH)) << octet_last_error_message();
  Recipe delayed = make_delayed(OCTET_AMAX_MAX, 4, 1, 0, 0, OCTET_FORMAT_E4M3);
  octet_current_scaling_options copt;
  ASSERT_EQ(octet_current_scaling_options_init(&copt), OCTET_STATUS_SUCCESS);
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_current(&copt, &raw), OCTET_STATUS_SUCCESS);
  Recipe current(raw);
  for (bool autocast : {false, true}) {
    EXPECT_EQ(copies_to_host_in_steps("counting", OCTET_COUNTING_PLUGIN_PATH, delayed.get(), autocast), 0u)
        << "delayed, autocast " << autocast;
    EXPECT_EQ(copies_to_host_in_steps("counting", OCTET_COUNTING_PLUGIN_PATH, current.get(), autocast), 0u)
        << "current, autocast " << autocast;
    // The host path reads every quantize's amax back (and current scaling's
    // amax before it): the counter sees them, so the zeros above mean
    // something.
    EXPECT_GE(copies_to_host_in_steps("counting_host", OCTET_COUNTING_HOST_PLUGIN_PATH, delayed.get(), autocast), 6u);
    EXPECT_GE(copies_to_host_in_steps("counting_host", OCTET_COUNTING_HOST_PLUGIN_PATH, current.get(), autocast),
              12u);
  }
  // One host read of a resident state is one download.
  Context ctx = make_context("counting");
  Quantizer q = make_quantizer(delayed.get(), OCTET_ROLE_INPUT);
  Tensor in = make_fp32(ctx.get(), 1, 2, {1.0f, 2.0f});
  Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 2, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), out.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
  const Copies before = copies_of(OCTET_COUNTING_PLUGIN_PATH);
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_get_info(q.get(), &info), OCTET_STATUS_SUCCESS);  // still current: no second copy
  EXPECT_EQ(copies_of(OCTET_COUNTING_PLUGIN_PATH).to_host - before.to_host, 1u);
  EXPECT_EQ(info.amax, 2.0f);
}

}  // namespace
