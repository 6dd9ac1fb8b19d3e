// Handles users hold (contexts, tensors, recipes, quantizers, layers, saved
// states) are allocated from per-kind pools with a tag in front of each
// object, so an entry point can tell a live handle from a destroyed one.
//
// - Creating a handle tags its slot live; destroying it tags the slot dead
//   and puts it in a quarantine. Slots are never given back to the system
//   allocator, so reading the tag of a destroyed handle is always a read of
//   memory the library owns (no use-after-free, also under ASan).
// - A dead slot is reused only once more than kHandleQuarantine slots of its
//   kind wait in the quarantine, oldest first. Until then a destroyed handle
//   is refused; after reuse it names the new object (the limit of the scheme).
// - A pointer that never was a handle of the kind is not reliably detected
//   (its tag is read from whatever lies before it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/error.hpp"

namespace octet::core {

enum class HandleKind : uint32_t { Context = 1, Tensor, Recipe, Quantizer, Layer, Saved };

inline constexpr size_t kHandleQuarantine = 1024;

void* handle_allocate(size_t bytes, HandleKind kind);
void handle_release(void* object, HandleKind kind) noexcept;
// Whether `object` is a live handle of `kind` (one acquire load).
bool handle_live(const void* object, HandleKind kind) noexcept;
const char* handle_kind_name(HandleKind kind) noexcept;

// NULL or a destroyed handle is INVALID_ARGUMENT naming `name`.
void require_live_handle(const void* object, HandleKind kind, const char* name);

}  // namespace octet::core

// Inside a handle struct: routes new/delete through the pool of `kind`.
#define OCTET_POOLED_HANDLE(kind)                                                                  \
  static void* operator new(std::size_t bytes) { return ::octet::core::handle_allocate(bytes, kind); } \
  static void operator delete(void* object) noexcept { ::octet::core::handle_release(object, kind); }
