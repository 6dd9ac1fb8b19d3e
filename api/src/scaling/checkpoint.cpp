// Quantizer checkpoints: a little-endian, versioned, checksummed byte
// layout (docs/recipes.md, "Checkpoint format"), independent of the host's
// endianness and of the backend, so a state saved anywhere loads anywhere
// with the same ABI major.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/error.hpp"
#include "scaling/quantizer.hpp"

namespace octet::core {
namespace {

constexpr char kMagic[4] = {'O', 'C', 'T', 'Q'};
// Version 2 (users' ABI 1.2) adds the writer's ABI minor and an extension length:
// a later minor of the same major appends its new fields after the history
// and this reader skips them. Version 1 (users' ABI 1.1) is still read.
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kHeaderBytesV1 = 4 + 4 + 4 + 4 + 4 + 4 + 8 + 4 + 4 + 4 + 8 + 8;
constexpr size_t kHeaderBytesV2 = kHeaderBytesV1 + 4 + 4;

uint32_t fnv1a(const uint8_t* data, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

class Writer {
 public:
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  }
  void f32(float f) {
    uint32_t v;
    std::memcpy(&v, &f, 4);
    u32(v);
  }
  std::vector<uint8_t> bytes;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(take()) << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(take()) << (8 * i);
    return v;
  }
  float f32() {
    uint32_t v = u32();
    float f;
    std::memcpy(&f, &v, 4);
    return f;
  }

 private:
  uint8_t take() {
    require(pos_ < n_, "the checkpoint is truncated");
    return p_[pos_++];
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

std::vector<uint8_t> serialize(const QuantizerState& q) {
  Writer w;
  for (char c : kMagic) w.bytes.push_back(uint8_t(c));
  w.u32(kFormatVersion);
  w.u32(OCTET_ABI_MAJOR);
  w.u32(OCTET_ABI_MINOR);
  w.u32(uint32_t(q.role));
  w.u32(uint32_t(q.effective() ? q.effective()->kind : -1));
  w.u32(uint32_t(q.history.size()));
  // Extension bytes: users' ABI 1.8 appends the stream counter of an FP4
  // recipe's quantizer; other states keep the 1.2-1.7 layout byte for byte.
  const int32_t kind = q.effective() ? q.effective()->kind : -1;
  const bool fp4 = kind == OCTET_RECIPE_MXFP4 || kind == OCTET_RECIPE_NVFP4;
  w.u32(fp4 ? 8 : 0);
  w.u64(q.update_count);
  w.f32(q.scale);
  w.f32(q.scale_inv);
  w.f32(q.observed_amax);
  w.u64(q.observed_saturated);
  w.u64(q.observed_total);
  for (float a : q.history_newest_first()) w.f32(a);
  if (fp4) w.u64(q.stream_offset);
  w.u32(fnv1a(w.bytes.data(), w.bytes.size()));
  return w.bytes;
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_quantizer_save(const octet_quantizer* quantizer, void* buffer, size_t capacity,
                                            size_t* size) {
  return guarded("octet_quantizer_save", [&] {
    quantizer_arg(quantizer);
    require(size != nullptr, "argument 'size' is NULL");
    sync_host(*quantizer->state);  // a host read: the device may hold the newer state
    std::vector<uint8_t> bytes = serialize(*quantizer->state);
    if (buffer == nullptr) {
      *size = bytes.size();
      return;
    }
    require(capacity >= bytes.size(), "argument 'capacity' (", capacity, ") is smaller than the checkpoint (",
            bytes.size(), " bytes; call with buffer NULL to get the size)");
    std::memcpy(buffer, bytes.data(), bytes.size());
    *size = bytes.size();
  });
}

OCTET_API octet_status octet_quantizer_load(octet_quantizer* quantizer, const void* buffer, size_t size) {
  return guarded("octet_quantizer_load", [&] {
    quantizer_arg(quantizer);
    require(buffer != nullptr, "argument 'buffer' is NULL");
    const uint8_t* p = static_cast<const uint8_t*>(buffer);
    // Magic, format version and ABI major sit at offsets 0, 4 and 8 in
    // every version: the major is checked first so that a checkpoint of
    // another major is reported as such, whatever its layout.
    require(size >= 12 && std::memcmp(p, kMagic, 4) == 0,
            "the buffer is not an Octet quantizer checkpoint (bad magic or too short)");
    Reader r(p + 4, size - 4);
    uint32_t version = r.u32();
    uint32_t abi_major = r.u32();
    if (abi_major != OCTET_ABI_MAJOR)
      fail(OCTET_STATUS_ABI_MISMATCH, "the checkpoint was written by users' ABI major ", abi_major,
           "; this library is users' ABI ", OCTET_ABI_MAJOR, ".", OCTET_ABI_MINOR,
           " and loads checkpoints of users' ABI major ", OCTET_ABI_MAJOR, " only");
    require(version == 1 || version == 2, "the checkpoint has format version ", version,
            "; this library reads versions 1 and 2 (users' ABI major ", OCTET_ABI_MAJOR, ")");
    const size_t header = version == 1 ? kHeaderBytesV1 : kHeaderBytesV2;
    require(size >= header + 4, "the checkpoint is truncated (", size, " bytes; its header alone is ", header + 4,
            ")");
    if (version >= 2) r.u32();  // the writer's ABI minor: any minor of this major loads
    QuantizerState& q = *quantizer->state;
    int32_t role = int32_t(r.u32());
    int32_t kind = int32_t(r.u32());
    uint32_t length = r.u32();
    uint32_t extension = version >= 2 ? r.u32() : 0;
    require(uint64_t(size) == uint64_t(header) + 4 * uint64_t(length) + uint64_t(extension) + 4,
            "the checkpoint's size (", size, " bytes) does not match its history length (", length,
            ") and extension length (", extension, ")");
    require(fnv1a(p, size - 4) == Reader(p + size - 4, 4).u32(), "the checkpoint's checksum does not match: it is corrupt");
    require((kind >= -1 && kind <= OCTET_RECIPE_ROWWISE) || kind == OCTET_RECIPE_MXFP4 || kind == OCTET_RECIPE_NVFP4,
            "the checkpoint's recipe kind (", kind, ") is not one of this library's");
    require(role == q.role, "the checkpoint is for role ", role, " but the quantizer has role ", q.role);
    const RecipeState* recipe = q.effective();
    if (recipe != nullptr) {
      require(kind == recipe->kind, "the checkpoint holds ", recipe_kind_name(kind), " state but the quantizer uses ",
              recipe_kind_name(recipe->kind));
      if (recipe->kind == OCTET_RECIPE_DELAYED)
        require(length == uint32_t(recipe->delayed.amax_history_len), "the checkpoint's amax history has ", length,
                " entries but the recipe's amax_history_len is ", recipe->delayed.amax_history_len);
    }
    require(length >= 1, "the checkpoint's history length is 0");
    QuantizerState loaded;
    loaded.update_count = r.u64();
    loaded.scale = r.f32();
    loaded.scale_inv = r.f32();
    loaded.observed_amax = r.f32();
    loaded.observed_saturated = r.u64();
    loaded.observed_total = r.u64();
    std::vector<float> newest = host_array<float>(length, "the checkpoint's amax history");
    for (float& a : newest) a = r.f32();
    // Extensions of later minors follow; 1.8's first 8 bytes are the FP4
    // stream counter (older checkpoints have none: 0).
    if (extension >= 8) loaded.stream_offset = r.u64();
    // The checksum only proves the bytes are the writer's: a state no
    // operation of the library can produce (an edited or foreign checkpoint)
    // would quantize with wrong scales silently, so it is refused.
    require(std::isfinite(loaded.scale) && loaded.scale > 0.0f, "the checkpoint's scale (", loaded.scale,
            ") is not finite and > 0");
    const float inverse = 1.0f / loaded.scale;
    require(std::memcmp(&loaded.scale_inv, &inverse, sizeof(float)) == 0, "the checkpoint's scale_inv (",
            loaded.scale_inv, ") is not 1/scale (", inverse, ") rounded to FP32");
    require(loaded.observed_amax >= 0.0f, "the checkpoint's observed amax (", loaded.observed_amax,
            ") is negative or NaN");
    require(loaded.observed_saturated <= loaded.observed_total, "the checkpoint's saturated count (",
            loaded.observed_saturated, ") exceeds its total count (", loaded.observed_total, ")");
    for (size_t i = 0; i < newest.size(); ++i)
      require(newest[i] >= 0.0f, "the checkpoint's amax history entry ", i, " (newest first) is ", newest[i],
              ": an amax is >= 0 and not NaN");
    // Commit after every check passed.
    q.update_count = loaded.update_count;
    q.scale = loaded.scale;
    q.scale_inv = loaded.scale_inv;
    q.observed_amax = loaded.observed_amax;
    q.observed_saturated = loaded.observed_saturated;
    q.observed_total = loaded.observed_total;
    q.stream_offset = loaded.stream_offset;
    q.history.assign(length, 0.0f);
    q.current = 0;
    for (size_t i = 0; i < length; ++i) q.history[(length - i) % length] = newest[i];
    // Every host field was overwritten: a resident state takes them all.
    q.host_current = true;
    push_host_write(q);
  });
}

}  // extern "C"
