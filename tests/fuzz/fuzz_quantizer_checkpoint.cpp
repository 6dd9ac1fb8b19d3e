// Fuzzes octet_quantizer_load, the one ABI entry that parses bytes a user
// may have stored anywhere (docs/recipes.md, "Checkpoint format").
//
// Each input edits a real checkpoint (saved from a quantizer whose recipe,
// role, history length and state the first bytes choose), then, when the
// input asks, puts a valid FNV-1a checksum back, so the edits reach every
// check behind the checksum. Properties, for any bytes:
// - a refused load returns INVALID_ARGUMENT or ABI_MISMATCH with a message,
//   and leaves the quantizer's state as it was (its checkpoint unchanged);
// - an accepted load gives a state the rest of the API could have produced
//   (scale finite and > 0, scale_inv = 1/scale, amaxes >= 0, saturated <=
//   total), holds the fields at the documented offsets, saves and loads
//   back to the same bytes, and keeps updating and quantizing.
// The layout constants below come from the format's table in the docs, not
// from the library.
#include <octet/octet.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.hpp"

namespace {

using octet_fuzz::Input;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_quantizer_checkpoint: %s (the library's last message, perhaps from an earlier call: %s)\n", what, octet_last_error_message());
  std::abort();
}
void check(bool ok, const char* what) {
  if (!ok) fail(what);
}
void ok(octet_status s, const char* what) {
  if (s != OCTET_STATUS_SUCCESS) fail(what);
}

// FNV-1a, 32 bits: offset basis 2166136261, prime 16777619 (the format's
// checksum over every byte before it).
uint32_t fnv1a(const uint8_t* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}
uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}
uint64_t le64(const std::vector<uint8_t>& b, size_t at) { return uint64_t(le32(b, at)) | uint64_t(le32(b, at + 4)) << 32; }
float lef(const std::vector<uint8_t>& b, size_t at) {
  uint32_t u = le32(b, at);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Handles {
  octet_recipe* recipe = nullptr;
  octet_context* context = nullptr;
  std::vector<octet_quantizer*> quantizers;
  std::vector<octet::Tensor> tensors;
  ~Handles() {
    tensors.clear();  // the tensors first, as they came
    for (octet_quantizer* q : quantizers) octet_quantizer_destroy(q);
    octet_context_destroy(context);
    octet_recipe_destroy(recipe);
  }
  octet_quantizer* quantizer(int32_t role) {
    octet_quantizer* q = nullptr;
    ok(octet_quantizer_create(recipe, role, &q), "octet_quantizer_create");
    quantizers.push_back(q);
    return q;
  }
};

std::vector<uint8_t> save(const octet_quantizer* q) {
  size_t size = 0;
  ok(octet_quantizer_save(q, nullptr, 0, &size), "octet_quantizer_save (size)");
  std::vector<uint8_t> bytes(size);
  ok(octet_quantizer_save(q, bytes.data(), bytes.size(), &size), "octet_quantizer_save");
  check(size == bytes.size(), "octet_quantizer_save wrote another size than it asked for");
  return bytes;
}

octet_quantizer_info info_of(const octet_quantizer* q) {
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  ok(octet_quantizer_get_info(q, &info), "octet_quantizer_get_info");
  return info;
}

// A 4 x 32 tensor through octet::Tensor::create, held by h; a failure is
// fail(what), as for the C calls.
octet_tensor* tensor(Handles& h, int32_t dtype, uint32_t usages, int32_t mode, const char* what) {
  try {
    h.tensors.push_back(octet::Tensor::create(h.context, dtype, {4, 32}, usages, mode));
  } catch (const octet::Error&) {
    fail(what);
  }
  return h.tensors.back().get();
}

// Quantizes a small tensor on the reference: the state moves to the
// backend's memory (the reference has the scaling entries), so a later load
// must reach it there.
void quantize_once(Handles& h, octet_quantizer* q, float value) {
  if (h.context == nullptr) {
    octet_context_options o;
    octet_context_options_init(&o);
    o.backend = "reference";
    ok(octet_context_create(&o, &h.context), "octet_context_create");
  }
  int32_t role = info_of(q).role, dtype = 0, mode = 0;
  ok(octet_recipe_tensor_format(h.recipe, role, &dtype, &mode), "octet_recipe_tensor_format");
  octet_tensor* in = tensor(h, OCTET_DTYPE_FP32, 0, 0, "octet_tensor_create (input)");
  octet_tensor* out = tensor(h, dtype, OCTET_USAGE_ROWWISE, mode, "octet_tensor_create (output)");
  std::vector<float> x(4 * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = value * float(int(i % 7) - 3);
  ok(octet_tensor_copy_from_host(in, OCTET_COMPONENT_DATA, x.data(), x.size() * sizeof(float)),
     "octet_tensor_copy_from_host");
  ok(octet_quantizer_quantize(h.context, q, in, out, nullptr, nullptr), "octet_quantizer_quantize");
}

// The fields at the offsets of the format's table (version 1 or 2).
struct Fields {
  uint64_t update_count;
  float scale, scale_inv, observed_amax;
  uint64_t saturated, total;
  std::vector<float> history_newest_first;
};
Fields parse(const std::vector<uint8_t>& b) {
  const bool v1 = le32(b, 4) == 1;
  const size_t base = v1 ? 24 : 32;  // where the update count sits
  const size_t length = le32(b, v1 ? 20 : 24);
  Fields f{le64(b, base), lef(b, base + 8), lef(b, base + 12), lef(b, base + 16), le64(b, base + 20),
           le64(b, base + 28), {}};
  for (size_t i = 0; i < length; ++i) f.history_newest_first.push_back(lef(b, base + 36 + 4 * i));
  return f;
}

void check_state_is_possible(const octet_quantizer* q) {
  octet_quantizer_info i = info_of(q);
  check(std::isfinite(i.scale) && i.scale > 0.0f, "a loaded scale is not finite and > 0");
  check(bits(i.scale_inv) == bits(1.0f / i.scale), "a loaded scale_inv is not 1/scale");
  check(i.observed_amax >= 0.0f, "a loaded observed amax is negative or NaN");
  check(i.observed_saturated <= i.observed_total, "a loaded saturated count exceeds the total");
  std::vector<float> history(i.amax_history_len);
  ok(octet_quantizer_get_amax_history(q, history.data(), history.size()), "octet_quantizer_get_amax_history");
  for (float a : history) check(a >= 0.0f, "a loaded amax history entry is negative or NaN");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Handles h;
  // The quantizer whose checkpoint is edited, and the one it loads into.
  const uint8_t setup = in.byte();
  const int kind = setup % 4;  // delayed, current, static, none (follows autocast)
  const uint32_t history_len = 1 + (setup >> 2) % 8;
  const int32_t role = int32_t((setup >> 5) % 3);
  const bool resident_target = (setup >> 7) != 0;
  if (kind == 0) {
    octet_delayed_scaling_options o;
    octet_delayed_scaling_options_init(&o);
    o.amax_history_len = int32_t(history_len);
    ok(octet_recipe_create_delayed(&o, &h.recipe), "octet_recipe_create_delayed");
  } else if (kind == 1) {
    ok(octet_recipe_create_current(nullptr, &h.recipe), "octet_recipe_create_current");
  } else if (kind == 2) {
    ok(octet_recipe_create_static(nullptr, &h.recipe), "octet_recipe_create_static");
  }
  octet_quantizer* source = h.quantizer(role);
  // A state that is not the initial one: a few amaxes and updates.
  const uint8_t steps = in.byte() % 4;
  for (uint8_t s = 0; s < steps && h.recipe != nullptr; ++s) {
    float amax = std::fabs(in.f32());
    if (std::isnan(amax)) amax = 1.0f;
    ok(octet_quantizer_record_amax(source, amax), "octet_quantizer_record_amax");
    ok(octet_quantizer_update_scale(source), "octet_quantizer_update_scale");
  }
  std::vector<uint8_t> buffer = save(source);

  // Edits: 6 bytes each (op, position, 4 bytes of value).
  const uint8_t edits = in.byte() % 8;
  for (uint8_t e = 0; e < edits && !in.empty(); ++e) {
    const uint8_t op = in.byte();
    const size_t at = buffer.empty() ? 0 : in.byte() % buffer.size();
    const uint32_t value = in.u32();
    switch (op % 4) {
      case 0:  // overwrite a field
        for (size_t k = 0; k < 4 && at + k < buffer.size(); ++k) buffer[at + k] = uint8_t(value >> (8 * k));
        break;
      case 1:
        if (!buffer.empty()) buffer[at] ^= uint8_t(value);
        break;
      case 2:
        buffer.resize(at);
        break;
      default:
        for (int k = 0; k < 4; ++k) buffer.insert(buffer.begin() + long(at), uint8_t(value >> (8 * k)));
        break;
    }
  }
  const bool fix_checksum = (in.byte() & 1) == 0;
  if (fix_checksum && buffer.size() >= 4) {
    uint32_t sum = fnv1a(buffer.data(), buffer.size() - 4);
    for (int k = 0; k < 4; ++k) buffer[buffer.size() - 4 + k] = uint8_t(sum >> (8 * k));
  }

  octet_quantizer* target = h.quantizer(role);
  if (resident_target && h.recipe != nullptr) quantize_once(h, target, 2.5f);
  const std::vector<uint8_t> before = save(target);
  const octet_status status = octet_quantizer_load(target, buffer.data(), buffer.size());
  // OCTET_FUZZ_VERBOSE=1 with -runs=0 over a corpus shows which checks it reaches.
  static const bool verbose = std::getenv("OCTET_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "load: %d %s\n", int(status), status ? octet_last_error_message() : "");
  if (status != OCTET_STATUS_SUCCESS) {
    check(status == OCTET_STATUS_INVALID_ARGUMENT || status == OCTET_STATUS_ABI_MISMATCH,
          "a refused load returned neither INVALID_ARGUMENT nor ABI_MISMATCH");
    check(std::strlen(octet_last_error_message()) > 0, "a refused load left no message");
    check(save(target) == before, "a refused load changed the quantizer's state");
    return 0;
  }

  // Accepted: the state is one the API could have made, and it is the
  // buffer's.
  check_state_is_possible(target);
  const Fields f = parse(buffer);
  const octet_quantizer_info i = info_of(target);
  check(i.update_count == f.update_count, "the loaded update count is not the buffer's");
  check(bits(i.scale) == bits(f.scale) && bits(i.scale_inv) == bits(f.scale_inv), "the loaded scales are not the buffer's");
  check(bits(i.observed_amax) == bits(f.observed_amax) && i.observed_saturated == f.saturated &&
            i.observed_total == f.total,
        "the loaded observations are not the buffer's");
  std::vector<float> history(i.amax_history_len);
  check(history.size() == f.history_newest_first.size(), "the loaded history length is not the buffer's");
  ok(octet_quantizer_get_amax_history(target, history.data(), history.size()), "octet_quantizer_get_amax_history");
  for (size_t k = 0; k < history.size(); ++k)
    check(bits(history[k]) == bits(f.history_newest_first[k]), "the loaded history is not the buffer's");

  // Saving the loaded state and loading it elsewhere is the identity.
  const std::vector<uint8_t> again = save(target);
  octet_quantizer* copy = h.quantizer(role);
  ok(octet_quantizer_load(copy, again.data(), again.size()), "loading a checkpoint the library just saved");
  check(save(copy) == again, "save, load, save is not the identity");

  // The loaded state keeps working.
  if (h.recipe != nullptr) {
    ok(octet_quantizer_record_amax(target, 3.0f), "record_amax after a load");
    ok(octet_quantizer_update_scale(target), "update_scale after a load");
    check_state_is_possible(target);
    quantize_once(h, target, 0.75f);
    check_state_is_possible(target);
  }
  return 0;
}
