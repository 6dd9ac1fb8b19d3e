// A caching device allocator, one per backend context: freed blocks go to a
// free list by rounded size and are reused by later allocations. All work of
// a context runs on its one stream, so a block freed while a kernel that uses
// it is still queued can be handed out again: the next user's work is queued
// after it on the same stream.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace octet_cuda {

class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool();  // frees everything (the owner synchronizes its stream first)

  // Throws Failure (OUT_OF_MEMORY) when cudaMalloc fails even after the
  // cached blocks were released. Returns nullptr for 0 bytes.
  void* allocate(size_t bytes);
  // Returns a block to the free list; unknown pointers are ignored.
  void release(void* ptr) noexcept;
  // cudaFree of every cached (free) block.
  void trim() noexcept;

  static size_t rounded(size_t bytes);

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  std::unordered_map<void*, size_t> live_;
};

}  // namespace octet_cuda
