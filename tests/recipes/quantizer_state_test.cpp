// Quantizer state: checkpoints, autocast scopes (sequential, nested), the
// communicator, option validation and capability refusals.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "recipe_test_helpers.hpp"

namespace recipes_test {
namespace {

bool message_has(const char* needle) { return std::string(octet_last_error_message()).find(needle) != std::string::npos; }

Recipe delayed(int history, int algo = OCTET_AMAX_MAX, int reduce = 1) {
  octet_delayed_scaling_options o;
  EXPECT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.amax_history_len = history;
  o.amax_compute_algo = algo;
  o.reduce_amax = reduce;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_delayed(&o, &r), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return Recipe(r);
}

octet_quantizer_info info_of(const octet_quantizer* q) {
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_quantizer_get_info(q, &info), OCTET_STATUS_SUCCESS);
  return info;
}

std::vector<uint8_t> save(const octet_quantizer* q) {
  size_t size = 0;
  EXPECT_EQ(octet_quantizer_save(q, nullptr, 0, &size), OCTET_STATUS_SUCCESS);
  std::vector<uint8_t> bytes(size);
  EXPECT_EQ(octet_quantizer_save(q, bytes.data(), bytes.size(), &size), OCTET_STATUS_SUCCESS);
  return bytes;
}

TEST(Checkpoint, RoundTripRestoresTheWholeState) {
  Recipe recipe = delayed(4);
  Quantizer a = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  const float amaxes[] = {3.0f, 9.0f, 0.5f, 2.0f, 6.0f};
  for (float x : amaxes) {
    ASSERT_EQ(octet_quantizer_record_amax(a.get(), x), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_update_scale(a.get()), OCTET_STATUS_SUCCESS);
  }
  ASSERT_EQ(octet_quantizer_record_amax(a.get(), 1.5f), OCTET_STATUS_SUCCESS);
  std::vector<uint8_t> bytes = save(a.get());
  // The layout is documented: magic, then little-endian fields.
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(std::memcmp(bytes.data(), "OCTQ", 4), 0);
  EXPECT_EQ(bytes[4], 2);  // format version 2, little-endian
  EXPECT_EQ(bytes.size(), 68u + 4u * 4u + 4u);  // header, 4 history floats, checksum

  Quantizer b = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  ASSERT_EQ(octet_quantizer_load(b.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_quantizer_info ia = info_of(a.get()), ib = info_of(b.get());
  EXPECT_EQ(ia.scale, ib.scale);
  EXPECT_EQ(ia.scale_inv, ib.scale_inv);
  EXPECT_EQ(ia.update_count, ib.update_count);
  EXPECT_EQ(ia.amax, ib.amax);
  std::vector<float> ha(4), hb(4);
  ASSERT_EQ(octet_quantizer_get_amax_history(a.get(), ha.data(), 4), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_get_amax_history(b.get(), hb.data(), 4), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(ha, hb);
  // Both continue identically.
  for (float x : {7.0f, 0.0f, 100.0f}) {
    ASSERT_EQ(octet_quantizer_record_amax(a.get(), x), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_record_amax(b.get(), x), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_update_scale(a.get()), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_quantizer_update_scale(b.get()), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(info_of(a.get()).scale, info_of(b.get()).scale);
  }
  EXPECT_NE(ia.scale, 1.0f);  // the state saved was not the initial one
}

// numerics.md section 6: amax = max |x| with NaN ignored. A NaN recorded is ignored
// like a NaN element; a negative amax is a caller's bug and is refused by
// name instead of vanishing in the max.
TEST(RecordAmax, NaNIsIgnoredNegativeIsRefused) {
  Recipe recipe = delayed(2);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  ASSERT_EQ(octet_quantizer_record_amax(q.get(), 6.0f), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_record_amax(q.get(), std::nanf("")), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info_of(q.get()).amax, 6.0f);
  ASSERT_EQ(octet_quantizer_record_amax(q.get(), -0.0f), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info_of(q.get()).amax, 6.0f);
  for (float bad : {-1.0f, -INFINITY, -1e-40f}) {
    EXPECT_EQ(octet_quantizer_record_amax(q.get(), bad), OCTET_STATUS_INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(message_has("argument 'amax'")) << octet_last_error_message();
    EXPECT_TRUE(message_has("is negative")) << octet_last_error_message();
  }
  ASSERT_EQ(octet_quantizer_update_scale(q.get()), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info_of(q.get()).scale, 448.0f / 6.0f);
}

TEST(Checkpoint, RefusesCorruptOrMismatchedBuffers) {
  Recipe recipe = delayed(4);
  Quantizer a = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  std::vector<uint8_t> bytes = save(a.get());
  Quantizer b = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);

  std::vector<uint8_t> corrupt = bytes;
  corrupt[34] ^= 0x40;  // inside the update count
  EXPECT_EQ(octet_quantizer_load(b.get(), corrupt.data(), corrupt.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("checksum"));
  EXPECT_EQ(octet_quantizer_load(b.get(), bytes.data(), bytes.size() - 1), OCTET_STATUS_INVALID_ARGUMENT);
  std::vector<uint8_t> bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_EQ(octet_quantizer_load(b.get(), bad_magic.data(), bad_magic.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("not an Octet quantizer checkpoint"));

  Quantizer other_role = make_quantizer(recipe.get(), OCTET_ROLE_GRADIENT);
  EXPECT_EQ(octet_quantizer_load(other_role.get(), bytes.data(), bytes.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("role"));
  Recipe longer = delayed(8);
  Quantizer other_len = make_quantizer(longer.get(), OCTET_ROLE_INPUT);
  EXPECT_EQ(octet_quantizer_load(other_len.get(), bytes.data(), bytes.size()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("amax_history_len"));
  size_t size = 0;
  std::vector<uint8_t> small(bytes.size() - 1);
  EXPECT_EQ(octet_quantizer_save(a.get(), small.data(), small.size(), &size), OCTET_STATUS_INVALID_ARGUMENT);
}

TEST(Checkpoint, PortableAcrossContextsOfDifferentProfiles) {
  // The state lives on the host: a quantizer saved after work on one
  // context loads and quantizes identically on another.
  Recipe recipe = delayed(2);
  Context c1 = make_context();
  octet_context_options o{};
  o.struct_size = sizeof(o);
  o.backend = "reference";
  o.capability_profile = OCTET_PROFILE_HOPPER_LIKE;
  octet_context* raw = nullptr;
  ASSERT_EQ(octet_context_create(&o, &raw), OCTET_STATUS_SUCCESS);
  Context c2(raw);
  Quantizer a = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  std::vector<float> x = random_values(12, 20.0f, 3);
  Tensor in1 = make_fp32(c1.get(), 3, 4, x);
  Tensor out1 = make_tensor(c1.get(), OCTET_DTYPE_E4M3, 3, 4, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantizer_quantize(c1.get(), a.get(), in1.get(), out1.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_update_scale(a.get()), OCTET_STATUS_SUCCESS);
  std::vector<uint8_t> bytes = save(a.get());
  Quantizer b = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  ASSERT_EQ(octet_quantizer_load(b.get(), bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS);
  Tensor in2 = make_fp32(c2.get(), 3, 4, x);
  Tensor out_a = make_tensor(c1.get(), OCTET_DTYPE_E4M3, 3, 4, OCTET_USAGE_ROWWISE);
  Tensor out_b = make_tensor(c2.get(), OCTET_DTYPE_E4M3, 3, 4, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantizer_quantize(c1.get(), a.get(), in1.get(), out_a.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_quantizer_quantize(c2.get(), b.get(), in2.get(), out_b.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(read_bytes(out_a.get(), OCTET_COMPONENT_DATA, 12), read_bytes(out_b.get(), OCTET_COMPONENT_DATA, 12));
  EXPECT_EQ(read_floats(out_a.get(), OCTET_COMPONENT_SCALE, 1)[0], info_of(b.get()).scale);
  EXPECT_NE(info_of(b.get()).scale, 1.0f);
}

struct FakeWorld {
  std::vector<float> other_rank;  // what the "other process" contributes
  std::vector<size_t> calls;
};

octet_status allreduce_max(float* values, size_t count, void* user_data) {
  auto* world = static_cast<FakeWorld*>(user_data);
  world->calls.push_back(count);
  for (size_t i = 0; i < count && i < world->other_rank.size(); ++i) values[i] = std::max(values[i], world->other_rank[i]);
  return OCTET_STATUS_SUCCESS;
}

void quantize_once(octet_context* ctx, octet_quantizer* q, float amax, int32_t dtype) {
  std::vector<float> x = {amax, -amax / 2, 0.0f, 1.0f};
  Tensor in = make_fp32(ctx, 1, 4, x);
  Tensor out = make_tensor(ctx, dtype, 1, 4, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantizer_quantize(ctx, q, in.get(), out.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
}

TEST(Autocast, OutermostEndReducesThroughTheCommunicatorAndUpdates) {
  Context ctx = make_context();
  Recipe recipe = delayed(3, OCTET_AMAX_MOST_RECENT);
  Quantizer x = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  Quantizer w = make_quantizer(recipe.get(), OCTET_ROLE_WEIGHT);
  Quantizer g = make_quantizer(recipe.get(), OCTET_ROLE_GRADIENT);
  FakeWorld world;
  world.other_rank = {2.0f, 100.0f, 1.0f};  // in order of first use: w, x, g
  octet_communicator comm{};
  comm.struct_size = sizeof(comm);
  comm.allreduce_max = allreduce_max;
  comm.user_data = &world;
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &comm), OCTET_STATUS_SUCCESS);

  for (int step = 0; step < 2; ++step) {
    ASSERT_EQ(octet_autocast_begin(ctx.get(), recipe.get()), OCTET_STATUS_SUCCESS);
    quantize_once(ctx.get(), w.get(), 4.0f, OCTET_DTYPE_E4M3);
    quantize_once(ctx.get(), x.get(), 8.0f, OCTET_DTYPE_E4M3);
    quantize_once(ctx.get(), w.get(), 5.0f, OCTET_DTYPE_E4M3);
    quantize_once(ctx.get(), g.get(), 16.0f, OCTET_DTYPE_E5M2);
    EXPECT_EQ(info_of(w.get()).update_count, uint64_t(step));  // nothing updated inside the scope
    ASSERT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  }
  ASSERT_EQ(world.calls.size(), 2u);
  EXPECT_EQ(world.calls[0], 3u);
  // Reduced amaxes: w max(5, 2) = 5, x max(8, 100) = 100, g max(16, 1) = 16.
  EXPECT_EQ(info_of(w.get()).scale, 448.0f / 5.0f);
  EXPECT_EQ(info_of(x.get()).scale, 448.0f / 100.0f);
  EXPECT_EQ(info_of(g.get()).scale, 57344.0f / 16.0f);
  EXPECT_EQ(info_of(x.get()).update_count, 2u);
  EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("no autocast scope"));
}

TEST(Autocast, ReduceAmaxOffSkipsTheCommunicator) {
  Context ctx = make_context();
  Recipe recipe = delayed(1, OCTET_AMAX_MOST_RECENT, 0);
  Quantizer x = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  FakeWorld world;
  world.other_rank = {1000.0f};
  octet_communicator comm{};  // the 1.0 fields; the later ones stay 0
  comm.struct_size = sizeof comm;
  comm.allreduce_max = allreduce_max;
  comm.user_data = &world;
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &comm), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_autocast_begin(ctx.get(), recipe.get()), OCTET_STATUS_SUCCESS);
  quantize_once(ctx.get(), x.get(), 7.0f, OCTET_DTYPE_E4M3);
  ASSERT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS);
  EXPECT_TRUE(world.calls.empty());
  EXPECT_EQ(info_of(x.get()).scale, 448.0f / 7.0f);
}

octet_status failing_scale(float, float, float, int32_t, float*, void*) { return OCTET_STATUS_BACKEND_ERROR; }

TEST(Autocast, AFailingCallbackAtTheOutermostEndChangesNoQuantizer) {
  // The first quantizer's update would succeed, the second's callback fails:
  // neither scales nor histories (nor the reduced amax) may change.
  Context ctx = make_context();
  Recipe good = delayed(2, OCTET_AMAX_MOST_RECENT);
  octet_delayed_scaling_options o;
  ASSERT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.amax_history_len = 2;
  o.scale_compute_callback = failing_scale;
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(&o, &raw), OCTET_STATUS_SUCCESS);
  Recipe bad(raw);
  Quantizer first = make_quantizer(good.get(), OCTET_ROLE_INPUT);
  Quantizer second = make_quantizer(bad.get(), OCTET_ROLE_WEIGHT);
  FakeWorld world;
  world.other_rank = {50.0f, 60.0f};
  octet_communicator comm{};  // the 1.0 fields; the later ones stay 0
  comm.struct_size = sizeof comm;
  comm.allreduce_max = allreduce_max;
  comm.user_data = &world;
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &comm), OCTET_STATUS_SUCCESS);

  ASSERT_EQ(octet_autocast_begin(ctx.get(), good.get()), OCTET_STATUS_SUCCESS);
  quantize_once(ctx.get(), first.get(), 8.0f, OCTET_DTYPE_E4M3);
  quantize_once(ctx.get(), second.get(), 4.0f, OCTET_DTYPE_E4M3);
  EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_BACKEND_ERROR);
  EXPECT_TRUE(message_has("scale_compute_callback")) << octet_last_error_message();
  EXPECT_EQ(world.calls.size(), 1u);  // the reduction ran, its result was not kept
  for (const Quantizer* q : {&first, &second}) {
    octet_quantizer_info i = info_of(q->get());
    EXPECT_EQ(i.scale, 1.0f);
    EXPECT_EQ(i.update_count, 0u);
  }
  std::vector<float> h(2);
  ASSERT_EQ(octet_quantizer_get_amax_history(first.get(), h.data(), 2), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(h, (std::vector<float>{8.0f, 0.0f}));  // local amax, not the reduced 50
  ASSERT_EQ(octet_quantizer_get_amax_history(second.get(), h.data(), 2), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(h, (std::vector<float>{4.0f, 0.0f}));
  int32_t depth = -1;
  ASSERT_EQ(octet_autocast_get_state(ctx.get(), &depth, nullptr), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(depth, 0);  // the scope is closed all the same
}

TEST(Autocast, NestedScopesInnerRecipeWinsAndOnlyTheOutermostEndUpdates) {
  Context ctx = make_context();
  Recipe outer = delayed(2, OCTET_AMAX_MOST_RECENT);
  octet_current_scaling_options co;
  ASSERT_EQ(octet_current_scaling_options_init(&co), OCTET_STATUS_SUCCESS);
  octet_recipe* raw = nullptr;
  ASSERT_EQ(octet_recipe_create_current(&co, &raw), OCTET_STATUS_SUCCESS);
  Recipe inner(raw);
  // Quantizers without a recipe follow the scope in effect.
  Quantizer follower = make_quantizer(nullptr, OCTET_ROLE_INPUT);
  Quantizer other = make_quantizer(nullptr, OCTET_ROLE_WEIGHT);
  EXPECT_EQ(octet_quantizer_update_scale(follower.get()), OCTET_STATUS_INVALID_ARGUMENT);

  ASSERT_EQ(octet_autocast_begin(ctx.get(), outer.get()), OCTET_STATUS_SUCCESS);
  quantize_once(ctx.get(), follower.get(), 32.0f, OCTET_DTYPE_E4M3);  // delayed: scale stays 1
  EXPECT_EQ(info_of(follower.get()).recipe_kind, int32_t(OCTET_RECIPE_DELAYED));
  EXPECT_EQ(info_of(follower.get()).scale, 1.0f);

  ASSERT_EQ(octet_autocast_begin(ctx.get(), inner.get()), OCTET_STATUS_SUCCESS);
  int32_t depth = 0;
  const octet_recipe* in_effect = nullptr;
  ASSERT_EQ(octet_autocast_get_state(ctx.get(), &depth, &in_effect), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(depth, 2);
  octet_recipe_info ri{};
  ri.struct_size = sizeof(ri);
  ASSERT_EQ(octet_recipe_get_info(in_effect, &ri), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(ri.kind, int32_t(OCTET_RECIPE_CURRENT));
  quantize_once(ctx.get(), other.get(), 64.0f, OCTET_DTYPE_E4M3);  // current scaling: 448/64 right away
  EXPECT_EQ(info_of(other.get()).scale, 448.0f / 64.0f);
  ASSERT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info_of(follower.get()).update_count, 0u);  // inner end: no update

  ASSERT_EQ(octet_autocast_get_state(ctx.get(), &depth, &in_effect), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(depth, 1);
  ASSERT_EQ(octet_recipe_get_info(in_effect, &ri), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(ri.kind, int32_t(OCTET_RECIPE_DELAYED));
  ASSERT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(info_of(follower.get()).update_count, 1u);
  EXPECT_EQ(info_of(follower.get()).scale, 448.0f / 32.0f);
  EXPECT_EQ(info_of(other.get()).update_count, 0u);  // a current-scaling quantizer has no update
  ASSERT_EQ(octet_autocast_get_state(ctx.get(), &depth, &in_effect), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(in_effect, nullptr);

  // Outside every scope a recipe-less quantizer cannot quantize.
  std::vector<float> x = {1.0f};
  Tensor in = make_fp32(ctx.get(), 1, 1, x);
  Tensor out = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 1, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(octet_quantizer_quantize(ctx.get(), follower.get(), in.get(), out.get(), nullptr, nullptr),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("autocast"));
}

TEST(Recipes, BadOptionsAreRejectedWithMessagesNamingThem) {
  octet_recipe* r = nullptr;
  octet_delayed_scaling_options d;
  auto delayed_with = [&](auto change, const char* needle) {
    ASSERT_EQ(octet_delayed_scaling_options_init(&d), OCTET_STATUS_SUCCESS);
    change(d);
    EXPECT_EQ(octet_recipe_create_delayed(&d, &r), OCTET_STATUS_INVALID_ARGUMENT) << needle;
    EXPECT_TRUE(message_has(needle)) << octet_last_error_message();
  };
  delayed_with([](auto& o) { o.amax_history_len = 0; }, "amax_history_len (0) must be >= 1");
  delayed_with([](auto& o) { o.margin = -1; }, "margin (-1) must be >= 0");
  delayed_with([](auto& o) { o.interval = 0; }, "interval (0) must be >= 1");
  delayed_with([](auto& o) { o.format = OCTET_FORMAT_E5M2; }, "E5M2 is refused for delayed scaling");
  delayed_with([](auto& o) { o.format = 9; }, "options->format (9)");
  delayed_with([](auto& o) { o.amax_compute_algo = OCTET_AMAX_CALLBACK; }, "amax_compute_callback is NULL");
  delayed_with([](auto& o) { o.reduce_amax = 2; }, "reduce_amax");
  EXPECT_EQ(r, nullptr);

  octet_current_scaling_options c;
  ASSERT_EQ(octet_current_scaling_options_init(&c), OCTET_STATUS_SUCCESS);
  c.amax_epsilon = -1.0f;
  EXPECT_EQ(octet_recipe_create_current(&c, &r), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("amax_epsilon"));
  octet_static_scaling_options s;
  ASSERT_EQ(octet_static_scaling_options_init(&s), OCTET_STATUS_SUCCESS);
  s.scale = 0.0f;
  EXPECT_EQ(octet_recipe_create_static(&s, &r), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("options->scale"));
  octet_mxfp8_options m;
  ASSERT_EQ(octet_mxfp8_options_init(&m), OCTET_STATUS_SUCCESS);
  m.rounding = 5;
  EXPECT_EQ(octet_recipe_create_mxfp8(&m, &r), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("rounding"));
  EXPECT_EQ(octet_quantizer_create(nullptr, 7, nullptr), OCTET_STATUS_INVALID_ARGUMENT);

  // Defaults (NULL options) are valid and documented.
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &r), OCTET_STATUS_SUCCESS);
  Recipe def(r);
  ASSERT_EQ(octet_delayed_scaling_options_init(&d), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(d.margin, 0);
  EXPECT_EQ(d.interval, 1);
  EXPECT_EQ(d.format, int32_t(OCTET_FORMAT_HYBRID));
  EXPECT_EQ(d.amax_history_len, 1024);
  EXPECT_EQ(d.amax_compute_algo, int32_t(OCTET_AMAX_MAX));
  EXPECT_EQ(d.reduce_amax, 1);
  octet_recipe_destroy(nullptr);
  octet_quantizer_destroy(nullptr);
}

TEST(Recipes, QuantizerRefusesAnOutputOfTheWrongFormat) {
  Context ctx = make_context();
  Recipe recipe = delayed(1);
  Quantizer g = make_quantizer(recipe.get(), OCTET_ROLE_GRADIENT);
  std::vector<float> x = {1.0f, 2.0f};
  Tensor in = make_fp32(ctx.get(), 1, 2, x);
  Tensor e4 = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, 1, 2, OCTET_USAGE_ROWWISE);
  EXPECT_EQ(octet_quantizer_quantize(ctx.get(), g.get(), in.get(), e4.get(), nullptr, nullptr),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("e5m2"));
  Tensor mx = make_tensor(ctx.get(), OCTET_DTYPE_E5M2, 1, 2, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  EXPECT_EQ(octet_quantizer_quantize(ctx.get(), g.get(), in.get(), mx.get(), nullptr, nullptr),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has("scaling mode"));
}

#ifdef OCTET_TEST_TEMPLATE_PLUGIN
TEST(Capabilities, TemplatePluginRefusesBlockModesButRunsRecipes) {
  ASSERT_EQ(octet_backend_load(OCTET_TEST_TEMPLATE_PLUGIN), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Context ctx = make_context("template");
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = OCTET_DTYPE_E4M3;
  d.ndim = 2;
  d.shape[0] = 4;
  d.shape[1] = 64;
  d.usages = OCTET_USAGE_ROWWISE;
  for (int32_t mode : {int32_t(OCTET_SCALING_MXFP8_1X32), int32_t(OCTET_SCALING_BLOCK_1X128),
                       int32_t(OCTET_SCALING_BLOCK_128X128)}) {
    d.scaling_mode = mode;
    octet_tensor* t = nullptr;
    EXPECT_EQ(octet_tensor_create(ctx.get(), &d, &t), OCTET_STATUS_UNSUPPORTED);
    EXPECT_TRUE(message_has("does not declare the scaling mode"));
    EXPECT_EQ(t, nullptr);
  }
  // A caller built against ABI 1.0 (no scaling_mode field) gets per-tensor.
  d.scaling_mode = 12345;  // beyond the old struct_size: never read
  d.struct_size = offsetof(octet_tensor_desc, scaling_mode);
  octet_tensor* t = nullptr;
  ASSERT_EQ(octet_tensor_create(ctx.get(), &d, &t), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Tensor old = Tensor::adopt(t);
  // Per-tensor recipes run on it (current scaling computes the scale in the core).
  octet_recipe* raw = nullptr;
  octet_current_scaling_options co;
  ASSERT_EQ(octet_current_scaling_options_init(&co), OCTET_STATUS_SUCCESS);
  co.format = OCTET_FORMAT_E4M3;
  ASSERT_EQ(octet_recipe_create_current(&co, &raw), OCTET_STATUS_SUCCESS);
  Recipe recipe(raw);
  Quantizer q = make_quantizer(recipe.get(), OCTET_ROLE_INPUT);
  std::vector<float> x = random_values(256, 10.0f, 4);
  Tensor in = make_fp32(ctx.get(), 4, 64, x);
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q.get(), in.get(), old.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  EXPECT_EQ(read_floats(old.get(), OCTET_COMPONENT_SCALE, 1)[0], 448.0f / amax);
}
#endif

}  // namespace
}  // namespace recipes_test
