#include "runtime/handle.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <new>

namespace octet::core {
namespace {

// In front of every pooled object; 16 bytes keep the object max-aligned.
struct alignas(16) SlotHeader {
  std::atomic<uint32_t> tag;
  uint32_t kind;
};
static_assert(sizeof(SlotHeader) == 16, "the slot header keeps objects 16-byte aligned");

constexpr uint32_t kLive = 0x0C7E7A11u;
constexpr uint32_t kDead = 0xDEADC7E7u;
uint32_t live_tag(HandleKind kind) { return kLive ^ (uint32_t(kind) << 24); }

struct Pool {
  std::mutex mutex;
  std::deque<SlotHeader*> quarantine;  // destroyed slots, oldest first
  size_t slot_bytes = 0;               // every object of a kind has one size
};

constexpr size_t kKinds = 7;

// Never destroyed: handles may be released during static destruction.
Pool* pools() {
  static Pool* p = new Pool[kKinds];
  return p;
}

SlotHeader* header_of(const void* object) {
  return reinterpret_cast<SlotHeader*>(const_cast<char*>(static_cast<const char*>(object)) - sizeof(SlotHeader));
}

}  // namespace

void* handle_allocate(size_t bytes, HandleKind kind) {
  Pool& pool = pools()[size_t(kind)];
  SlotHeader* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.slot_bytes == 0) pool.slot_bytes = bytes;
    if (pool.slot_bytes == bytes && pool.quarantine.size() > kHandleQuarantine) {
      slot = pool.quarantine.front();
      pool.quarantine.pop_front();
    }
  }
  if (slot == nullptr) {
    void* raw = ::operator new(sizeof(SlotHeader) + bytes);
    slot = new (raw) SlotHeader{};
  }
  slot->kind = uint32_t(kind);
  slot->tag.store(live_tag(kind), std::memory_order_release);
  return reinterpret_cast<char*>(slot) + sizeof(SlotHeader);
}

void handle_release(void* object, HandleKind kind) noexcept {
  if (object == nullptr) return;
  SlotHeader* slot = header_of(object);
  slot->tag.store(kDead, std::memory_order_release);
  Pool& pool = pools()[size_t(kind)];
  try {
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.quarantine.push_back(slot);
  } catch (...) {
    // No room to remember the slot: it stays allocated (and dead) forever.
  }
}

bool handle_live(const void* object, HandleKind kind) noexcept {
  return header_of(object)->tag.load(std::memory_order_acquire) == live_tag(kind);
}

const char* handle_kind_name(HandleKind kind) noexcept {
  switch (kind) {
    case HandleKind::Context: return "octet_context";
    case HandleKind::Tensor: return "octet_tensor";
    case HandleKind::Recipe: return "octet_recipe";
    case HandleKind::Quantizer: return "octet_quantizer";
    case HandleKind::Layer: return "octet_layer";
    case HandleKind::Saved: return "octet_saved";
  }
  return "handle";
}

void require_live_handle(const void* object, HandleKind kind, const char* name) {
  require(object != nullptr, "argument '", name, "' is NULL");
  if (!handle_live(object, kind))
    fail(OCTET_STATUS_INVALID_ARGUMENT, "argument '", name, "' (", object, ") is not a live ", handle_kind_name(kind),
         ": it was destroyed, or is not an ", handle_kind_name(kind), " at all");
}

}  // namespace octet::core
