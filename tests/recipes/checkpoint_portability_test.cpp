// Checkpoint portability: a quantizer state saved on one backend restores on
// another and continues identically (same scales, bit-identical codes), and
// the byte format of docs/recipes.md ("Checkpoint format") is a contract: a
// buffer built here from the documented layout, not by the library, loads
// and gives the documented state; another ABI major is refused; a newer
// minor (with extension bytes) loads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

bool message_has(const char* needle) { return std::string(octet_last_error_message()).find(needle) != std::string::npos; }

octet_quantizer_info info_of(const octet_quantizer* q) {
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_quantizer_get_info(q, &info), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return info;
}

std::vector<float> history_of(const octet_quantizer* q, size_t n) {
  std::vector<float> h(n);
  EXPECT_EQ(octet_quantizer_get_amax_history(q, h.data(), n), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return h;
}

bool cpu_backend_available() {
  if (backend_registered("cpu")) return true;
#ifdef OCTET_CPU_PLUGIN_PATH
  octet_backend_load(OCTET_CPU_PLUGIN_PATH);
  return backend_registered("cpu");
#else
  return false;
#endif
}

Recipe delayed_recipe(int history, int margin) {
  octet_delayed_scaling_options o;
  EXPECT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.amax_history_len = history;
  o.margin = margin;
  o.format = OCTET_FORMAT_HYBRID;
  o.amax_compute_algo = OCTET_AMAX_MAX;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_delayed(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Recipe(r);
}

float max_abs(const std::vector<float>& x) {
  float m = 0.0f;
  for (float v : x) m = std::max(m, std::fabs(v));
  return m;
}

// The delayed-scaling rule of numerics.md 14.2 for MAX over the window, in
// the test: fp8_max * 2^-margin / amax.
float expected_scale(const std::vector<float>& window, int32_t dtype, int margin) {
  float amax = 0.0f;
  for (float a : window) amax = std::max(amax, a);
  return std::ldexp(fp8_max(dtype), -margin) / amax;
}

struct Step {
  std::vector<uint8_t> codes;
  float scale_used;
};

Step quantize(octet_context* ctx, octet_quantizer* q, const std::vector<float>& x, int32_t dtype, int rows,
              int cols) {
  Tensor in = make_fp32(ctx, rows, cols, x);
  Tensor out = make_tensor(ctx, dtype, rows, cols, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(octet_quantizer_quantize(ctx, q, in.get(), out.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return {read_bytes(out.get(), OCTET_COMPONENT_DATA, x.size()), read_floats(out.get(), OCTET_COMPONENT_SCALE, 1)[0]};
}

// Trains a delayed-scaling quantizer per role for a few steps on `from`,
// saves it, restores it on `to`, and runs the next steps on both: codes and
// scales must be identical, and equal to the rule computed here.
void save_on_restore_on(const char* from, const char* to) {
  SCOPED_TRACE(std::string(from) + " -> " + to);
  Context src = make_context(from);
  Context dst = make_context(to);
  ASSERT_TRUE(src && dst);
  const int history = 3, margin = 1, rows = 4, cols = 16;
  Recipe recipe = delayed_recipe(history, margin);
  for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
    SCOPED_TRACE("role " + std::to_string(role));
    const int32_t dtype = role == OCTET_ROLE_GRADIENT ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;  // HYBRID
    Quantizer a = make_quantizer(recipe.get(), role);
    std::vector<float> amaxes;  // newest last
    uint32_t seed = 100 + uint32_t(role) * 10;
    for (int step = 0; step < 4; ++step) {
      std::vector<float> x = random_values(rows * cols, 0.5f + float(step) * 3.0f, seed++);
      quantize(src.get(), a.get(), x, dtype, rows, cols);
      amaxes.push_back(max_abs(x));
      ASSERT_EQ(octet_quantizer_update_scale(a.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    }
    std::vector<uint8_t> bytes = save(a.get());
    Quantizer b = make_quantizer(recipe.get(), role);
    ASSERT_EQ(octet_quantizer_load(b.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    EXPECT_EQ(info_of(b.get()).scale, info_of(a.get()).scale);
    EXPECT_EQ(history_of(b.get(), history), history_of(a.get(), history));

    for (int step = 0; step < 3; ++step) {
      // The scale in use was computed at the last update from the window of
      // the last `history` steps.
      std::vector<float> window(amaxes.end() - history, amaxes.end());
      const float scale_now = expected_scale(window, dtype, margin);
      // Large enough that some values saturate at the stale scale.
      std::vector<float> x = random_values(rows * cols, 2.0f + float(step) * 8.0f, seed++);
      Step sa = quantize(src.get(), a.get(), x, dtype, rows, cols);
      Step sb = quantize(dst.get(), b.get(), x, dtype, rows, cols);
      EXPECT_EQ(sa.scale_used, scale_now);
      EXPECT_EQ(sb.scale_used, scale_now);
      EXPECT_EQ(sa.codes, sb.codes) << "step " << step;
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(sb.codes[i], fp8_encode_sat(x[i] * scale_now, dtype)) << "step " << step << " element " << i;
      amaxes.push_back(max_abs(x));
      ASSERT_EQ(octet_quantizer_update_scale(a.get()), OCTET_STATUS_SUCCESS);
      ASSERT_EQ(octet_quantizer_update_scale(b.get()), OCTET_STATUS_SUCCESS);
      std::vector<float> next(amaxes.end() - history, amaxes.end());
      const float expected = expected_scale(next, dtype, margin);
      EXPECT_EQ(info_of(a.get()).scale, expected) << "step " << step;
      EXPECT_EQ(info_of(b.get()).scale, expected) << "step " << step;
      EXPECT_EQ(info_of(b.get()).scale_inv, 1.0f / expected);
      EXPECT_EQ(info_of(a.get()).update_count, info_of(b.get()).update_count);
    }
    EXPECT_EQ(save(a.get()), save(b.get()));  // the whole state agrees
  }
}

TEST(CheckpointPortability, ReferenceToCpuAndBack) {
  if (!cpu_backend_available())
    GTEST_SKIP() << "the cpu backend is not registered (it is built with -DOCTET_WITH_ONEDNN=ON): cross-backend "
                    "checkpoint portability is not tested in this build";
  save_on_restore_on("reference", "cpu");
  save_on_restore_on("cpu", "reference");
}

// ---- The byte format, written from docs/recipes.md ------------------------

struct Bytes {
  std::vector<uint8_t> b;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i)));
  }
  void f32(float f) {
    uint32_t v;
    std::memcpy(&v, &f, 4);
    u32(v);
  }
  // FNV-1a 32-bit of everything so far, appended.
  void seal() {
    uint32_t h = 2166136261u;
    for (uint8_t c : b) h = (h ^ c) * 16777619u;
    u32(h);
  }
};

struct DocState {
  uint32_t version = 2;
  uint32_t abi_major = OCTET_ABI_MAJOR;
  uint32_t abi_minor = OCTET_ABI_MINOR;
  int32_t role = OCTET_ROLE_WEIGHT;
  int32_t kind = OCTET_RECIPE_DELAYED;
  std::vector<float> history = {5.0f, 12.0f, 0.25f};  // newest first
  std::vector<uint8_t> extension;
  uint64_t update_count = 41;
  float scale = 17.5f;
  float scale_inv = 1.0f / 17.5f;
  float observed_amax = 3.0f;
  uint64_t saturated = 7;
  uint64_t total = 1000;
};

std::vector<uint8_t> documented_buffer(const DocState& s) {
  Bytes w;
  for (char c : {'O', 'C', 'T', 'Q'}) w.b.push_back(uint8_t(c));
  w.u32(s.version);
  w.u32(s.abi_major);
  if (s.version >= 2) w.u32(s.abi_minor);
  w.u32(uint32_t(s.role));
  w.u32(uint32_t(s.kind));
  w.u32(uint32_t(s.history.size()));
  if (s.version >= 2) w.u32(uint32_t(s.extension.size()));
  w.u64(s.update_count);
  w.f32(s.scale);
  w.f32(s.scale_inv);
  w.f32(s.observed_amax);
  w.u64(s.saturated);
  w.u64(s.total);
  for (float a : s.history) w.f32(a);
  if (s.version >= 2) w.b.insert(w.b.end(), s.extension.begin(), s.extension.end());
  w.seal();
  return w.b;
}

void expect_state(const octet_quantizer* q, const DocState& s) {
  octet_quantizer_info info = info_of(q);
  EXPECT_EQ(info.role, s.role);
  EXPECT_EQ(info.scale, s.scale);
  EXPECT_EQ(info.scale_inv, s.scale_inv);
  EXPECT_EQ(info.update_count, s.update_count);
  EXPECT_EQ(info.amax, s.history[0]);
  EXPECT_EQ(info.observed_amax, s.observed_amax);
  EXPECT_EQ(info.observed_saturated, s.saturated);
  EXPECT_EQ(info.observed_total, s.total);
  EXPECT_EQ(history_of(q, s.history.size()), s.history);
}

TEST(CheckpointFormat, BufferBuiltFromTheDocumentedLayoutLoads) {
  Recipe recipe = delayed_recipe(3, 0);
  DocState s;
  std::vector<uint8_t> bytes = documented_buffer(s);
  ASSERT_EQ(bytes.size(), 68u + 4u * 3u + 4u);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  ASSERT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  expect_state(q.get(), s);
  // The library writes exactly the documented bytes back.
  EXPECT_EQ(save(q.get()), bytes);
  // And the state continues by the rule: next update, MAX over the window
  // {new step 1.0, 5, 12} (0.25 leaves it), 448 / 12.
  ASSERT_EQ(octet_quantizer_record_amax(q.get(), 1.0f), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info_of(q.get()).scale, 448.0f / 12.0f);
  EXPECT_EQ(info_of(q.get()).update_count, 42u);
}

TEST(CheckpointFormat, Version1OfAbi11StillLoads) {
  Recipe recipe = delayed_recipe(3, 0);
  DocState s;
  s.version = 1;
  std::vector<uint8_t> bytes = documented_buffer(s);
  ASSERT_EQ(bytes.size(), 60u + 4u * 3u + 4u);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  ASSERT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  expect_state(q.get(), s);
}

TEST(CheckpointFormat, NewerMinorWithExtensionBytesLoads) {
  Recipe recipe = delayed_recipe(3, 0);
  DocState s;
  s.abi_minor = OCTET_ABI_MINOR + 7;
  s.extension = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // fields this library does not know
  std::vector<uint8_t> bytes = documented_buffer(s);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  ASSERT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  expect_state(q.get(), s);
  // The extension is covered by the checksum.
  std::vector<uint8_t> corrupt = bytes;
  corrupt[68 + 12 + 4] ^= 1;
  EXPECT_EQ(octet_quantizer_load(q.get(), corrupt.data(), corrupt.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("checksum")) << octet_last_error_message();
}

TEST(CheckpointFormat, AnotherAbiMajorIsRefusedAndChangesNothing) {
  Recipe recipe = delayed_recipe(3, 0);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  ASSERT_EQ(octet_quantizer_set_scale(q.get(), 3.0f), OCTET_STATUS_SUCCESS);
  for (uint32_t major : {uint32_t(OCTET_ABI_MAJOR + 1), uint32_t(OCTET_ABI_MAJOR - 1)}) {
    for (uint32_t version : {1u, 2u, 3u}) {
      DocState s;
      s.abi_major = major;
      s.version = version;
      std::vector<uint8_t> bytes = documented_buffer(s);
      EXPECT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_ABI_MISMATCH)
          << "major " << major << " version " << version;
      const std::string want = "written by users' ABI major " + std::to_string(major);
      EXPECT_TRUE(message_has(want.c_str())) << octet_last_error_message();
      EXPECT_TRUE(message_has("loads checkpoints of users' ABI major")) << octet_last_error_message();
    }
  }
  EXPECT_EQ(info_of(q.get()).scale, 3.0f);
  EXPECT_EQ(info_of(q.get()).update_count, 0u);
  // An unknown format version of this major is refused by name too.
  DocState s;
  s.version = 3;
  std::vector<uint8_t> bytes = documented_buffer(s);
  EXPECT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("format version 3")) << octet_last_error_message();
}

// A valid checksum only proves the bytes are the writer's. A state that no
// operation of the library produces would quantize with wrong scales
// without a word, so each is refused by name and changes nothing (found by
// tests/fuzz/fuzz_quantizer_checkpoint.cpp).
TEST(CheckpointFormat, StatesNoOperationProducesAreRefused) {
  struct Case {
    const char* what;
    void (*edit)(DocState&);
    const char* message;
  };
  const Case cases[] = {
      {"scale 0", [](DocState& s) { s.scale = 0.0f; s.scale_inv = INFINITY; }, "scale (0) is not finite and > 0"},
      {"scale -2", [](DocState& s) { s.scale = -2.0f; s.scale_inv = -0.5f; }, "is not finite and > 0"},
      {"scale inf", [](DocState& s) { s.scale = INFINITY; s.scale_inv = 0.0f; }, "is not finite and > 0"},
      {"scale NaN", [](DocState& s) { s.scale = std::nanf(""); }, "is not finite and > 0"},
      {"scale_inv off by one ulp",
       [](DocState& s) { s.scale_inv = std::nextafter(1.0f / s.scale, 1.0f); }, "is not 1/scale"},
      {"scale_inv of another scale", [](DocState& s) { s.scale_inv = 0.5f; }, "is not 1/scale"},
      {"observed amax -1", [](DocState& s) { s.observed_amax = -1.0f; }, "observed amax (-1) is negative or NaN"},
      {"observed amax NaN", [](DocState& s) { s.observed_amax = std::nanf(""); }, "is negative or NaN"},
      {"saturated > total", [](DocState& s) { s.saturated = s.total + 1; }, "saturated count (1001) exceeds"},
      {"history entry -0.5", [](DocState& s) { s.history[1] = -0.5f; }, "amax history entry 1 (newest first)"},
      {"history entry NaN", [](DocState& s) { s.history[2] = std::nanf(""); }, "amax history entry 2"},
      {"recipe kind 9", [](DocState& s) { s.kind = 9; }, "recipe kind (9) is not one of this library's"},
  };
  Recipe recipe = delayed_recipe(3, 0);
  for (const Case& c : cases) {
    for (uint32_t version : {1u, 2u}) {
      Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
      ASSERT_EQ(octet_quantizer_set_scale(q.get(), 3.0f), OCTET_STATUS_SUCCESS);
      const std::vector<uint8_t> before = save(q.get());
      DocState s;
      s.version = version;
      c.edit(s);
      std::vector<uint8_t> bytes = documented_buffer(s);
      EXPECT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_INVALID_ARGUMENT)
          << c.what << ", version " << version;
      EXPECT_TRUE(message_has(c.message)) << c.what << ": " << octet_last_error_message();
      EXPECT_EQ(save(q.get()), before) << c.what;
    }
  }
  // The unedited state loads (the cases above fail for their edit alone),
  // and so do the edge values the library itself writes: amax 0 and inf,
  // -0 (fmax may keep it), the largest finite scale.
  DocState edge;
  edge.history = {0.0f, INFINITY, -0.0f};
  edge.observed_amax = INFINITY;
  edge.scale = 3.4028235e38f;
  edge.scale_inv = 1.0f / edge.scale;
  edge.saturated = edge.total;
  for (const DocState& s : {DocState{}, edge}) {
    Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
    std::vector<uint8_t> bytes = documented_buffer(s);
    EXPECT_EQ(octet_quantizer_load(q.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
  }
}

}  // namespace
}  // namespace recipes_test
