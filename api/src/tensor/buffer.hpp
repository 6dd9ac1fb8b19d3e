// Memory in a context's backend: allocated by the backend, or aligned host
// memory when a host backend leaves allocation to the core.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/context.hpp"

namespace octet::core {

class Buffer {
 public:
  Buffer() = default;
  // Allocates `bytes` (at least one alignment unit) in the context's memory,
  // counted under `category` (octet_memory_category) while it lives.
  Buffer(std::shared_ptr<ContextState> ctx, size_t bytes, int32_t category);
  // Refers to caller memory without owning it. With a `keeper`, the Buffer
  // holds a reference to it until released (DLPack imports: the keeper
  // calls the producer's deleter).
  static Buffer wrap(std::shared_ptr<ContextState> ctx, void* data, size_t bytes,
                     std::shared_ptr<void> keeper = nullptr);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  int32_t category() const { return category_; }
  // Moves the bytes to another category (e.g. a tensor a layer saves).
  void recategorize(int32_t category);
  bool owned() const { return owned_; }
  explicit operator bool() const { return data_ != nullptr; }

  // A reference that keeps the memory alive past this Buffer (DLPack
  // exports). Owned memory first moves into a shared block, freed (and
  // uncounted) when the Buffer and every such reference are gone; borrowed
  // memory gives its keeper, NULL for plain caller memory.
  std::shared_ptr<void> share() const;

  void copy_from_host(const void* src, size_t bytes, size_t offset = 0);
  void copy_to_host(void* dst, size_t bytes, size_t offset = 0) const;

 private:
  Buffer(std::shared_ptr<ContextState> ctx, size_t bytes, int32_t category, bool counted);
  void release() noexcept;

  std::shared_ptr<ContextState> ctx_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool owned_ = false;
  bool counted_ = true;
  int32_t category_ = OCTET_MEMORY_WORKSPACE;
  // See wrap() and share(): set, it owns (or keeps alive) the memory.
  mutable std::shared_ptr<void> keeper_;
};

}  // namespace octet::core
