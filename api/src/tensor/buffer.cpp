#include "tensor/buffer.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/error.hpp"

namespace octet::core {

namespace {

// Host memory for a backend without mem_alloc. A buffer of kHugePage bytes
// or more starts on a kHugePage boundary and, on Linux, is advised
// MADV_HUGEPAGE, so that a kernel whose transparent huge pages are in
// "madvise" mode (Debian's default) backs it with 2 MiB pages: a kernel
// that writes one cache line to each of many 4 KiB pages in turn (the
// columnwise copy of a cast + transpose) then misses the TLB once per
// 2 MiB, not once per line. The advice is a hint: where it is refused the
// buffer keeps 4 KiB pages. Smaller buffers take the backend's alignment,
// and so does every buffer when OCTET_HOST_HUGE_PAGES is 0 (read once).
constexpr size_t kHugePage = size_t(2) << 20;

bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* value = std::getenv("OCTET_HOST_HUGE_PAGES");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return wanted;
}

// Freed host buffers of kHugePage bytes or more are kept for the next
// allocation of the same size and alignment, up to a budget of bytes
// (OCTET_HOST_CACHE_BYTES, read once; default 256 MiB, 0 keeps none), the
// least recently freed given back first: a fresh large buffer costs its page
// faults (the kernel zeroing every page, and finding 2 MiB pages for huge
// ones), often more than the kernel that fills it. Process-wide (the
// memory is the C library's, whichever context asked), never destroyed (a
// buffer may be freed during exit), left out under AddressSanitizer so that
// it still sees every free.
#if defined(__SANITIZE_ADDRESS__)
#define OCTET_HOST_CACHE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OCTET_HOST_CACHE_OFF 1
#endif
#endif

class HostCache {
 public:
  static HostCache& instance() {
    static HostCache* cache = new HostCache();  // never destroyed (above)
    return *cache;
  }
  void* take(size_t alignment, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
      if (it->bytes == bytes && it->alignment == alignment) {
        void* p = it->data;
        held_ -= bytes;
        blocks_.erase(std::next(it).base());
        return p;
      }
    }
    return nullptr;
  }
  // Keeps p, or returns false (the caller frees it).
  bool keep(void* p, size_t alignment, size_t bytes) {
    if (bytes < kHugePage || bytes > budget_) return false;
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (held_ + bytes > budget_ && !blocks_.empty()) {
        evicted.push_back(blocks_.front().data);
        held_ -= blocks_.front().bytes;
        blocks_.erase(blocks_.begin());
      }
      blocks_.push_back({p, alignment, bytes});
      held_ += bytes;
    }
    for (void* e : evicted) std::free(e);
    return true;
  }
  void clear() {
    std::vector<Block> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(blocks_);
      held_ = 0;
    }
    for (const Block& b : blocks) std::free(b.data);
  }

 private:
  struct Block {
    void* data;
    size_t alignment, bytes;
  };
  HostCache() {
#if defined(OCTET_HOST_CACHE_OFF)
    budget_ = 0;
#else
    const char* value = std::getenv("OCTET_HOST_CACHE_BYTES");
    char* end = nullptr;
    const unsigned long long parsed = value != nullptr ? std::strtoull(value, &end, 10) : 0;
    budget_ = value != nullptr && end != value && *end == '\0' ? size_t(parsed) : (size_t(256) << 20);
#endif
  }
  std::mutex mutex_;
  std::vector<Block> blocks_;  // least recently freed first
  size_t held_ = 0, budget_ = 0;
};

size_t host_alignment(size_t alignment, size_t bytes) {
  return bytes >= kHugePage && huge_pages_wanted() ? kHugePage : alignment;
}

void* allocate_fresh(size_t alignment, size_t bytes) {
  if (alignment != kHugePage) return std::aligned_alloc(alignment, bytes);
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, bytes) != 0) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void* allocate_host(size_t alignment, size_t bytes) {
  alignment = host_alignment(alignment, bytes);
  if (void* p = HostCache::instance().take(alignment, bytes)) return p;
  void* p = allocate_fresh(alignment, bytes);
  if (p == nullptr) {  // what the cache holds may be what is missing
    HostCache::instance().clear();
    p = allocate_fresh(alignment, bytes);
  }
  return p;
}

// `bytes`: the size asked of allocate_host (rounded as the constructor rounds).
void free_memory(const ContextState& ctx, void* data, size_t bytes) noexcept {
  const octet_backend_api& api = ctx.api();
  if (api.mem_free != nullptr) {
    api.mem_free(ctx.handle, data);
    return;
  }
  const size_t alignment = host_alignment(
      ctx.caps.alignment < alignof(std::max_align_t) ? alignof(std::max_align_t) : size_t(ctx.caps.alignment), bytes);
  try {
    if (HostCache::instance().keep(data, alignment, bytes)) return;
  } catch (...) {  // no memory for the cache's bookkeeping: free it instead
  }
  std::free(data);
}

size_t rounded_size(const ContextState& ctx, size_t bytes) {
  const size_t alignment =
      ctx.caps.alignment < alignof(std::max_align_t) ? alignof(std::max_align_t) : size_t(ctx.caps.alignment);
  return bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
}

// Owned memory once share() was called: freed with the last reference.
struct SharedBlock {
  SharedBlock(std::shared_ptr<ContextState> c, void* d, size_t b, bool n, int32_t k)
      : ctx(std::move(c)), data(d), bytes(b), counted(n), category(k) {}
  SharedBlock(const SharedBlock&) = delete;
  SharedBlock& operator=(const SharedBlock&) = delete;
  std::shared_ptr<ContextState> ctx;
  void* data;
  size_t bytes;
  bool counted;
  int32_t category;
  ~SharedBlock() {
    if (counted) ctx->memory.remove(category, bytes);
    free_memory(*ctx, data, rounded_size(*ctx, bytes));
  }
};

}  // namespace

Buffer::Buffer(std::shared_ptr<ContextState> ctx, size_t bytes, int32_t category)
    : Buffer(std::move(ctx), bytes, category, true) {}

Buffer::Buffer(std::shared_ptr<ContextState> ctx, size_t bytes, int32_t category, bool counted)
    : ctx_(std::move(ctx)), bytes_(bytes), counted_(counted), category_(category) {
  size_t alignment =
      ctx_->caps.alignment < alignof(std::max_align_t) ? alignof(std::max_align_t) : size_t(ctx_->caps.alignment);
  size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  const octet_backend_api& api = ctx_->api();
  if (api.mem_alloc != nullptr) {
    void* p = nullptr;
    try {
      call_backend(*ctx_, "mem_alloc", [&] { return api.mem_alloc(ctx_->handle, rounded, &p); });
    } catch (const Failure& failure) {
      fail(failure.status(), failure.what(), " (", rounded, " bytes asked)");
    }
    if (p == nullptr)
      fail(OCTET_STATUS_BACKEND_ERROR, "backend '", ctx_->backend->name, "' mem_alloc returned NULL for ", rounded,
           " bytes with OCTET_STATUS_SUCCESS");
    data_ = p;
  } else {
    if (!ctx_->host_memory())
      fail(OCTET_STATUS_INTERNAL, "device backend '", ctx_->backend->name, "' has no mem_alloc");
    data_ = allocate_host(alignment, rounded);
    if (data_ == nullptr) fail(OCTET_STATUS_OUT_OF_MEMORY, "cannot allocate ", rounded, " bytes of host memory");
  }
  owned_ = true;
  if (counted_) ctx_->memory.add(category_, bytes_);
}

void Buffer::recategorize(int32_t category) {
  if (owned_ && counted_ && data_ != nullptr) {
    ctx_->memory.remove(category_, bytes_);
    ctx_->memory.add(category, bytes_);
    if (keeper_) static_cast<SharedBlock*>(keeper_.get())->category = category;
  }
  category_ = category;
}

Buffer Buffer::wrap(std::shared_ptr<ContextState> ctx, void* data, size_t bytes, std::shared_ptr<void> keeper) {
  Buffer b;
  b.ctx_ = std::move(ctx);
  b.data_ = data;
  b.bytes_ = bytes;
  b.owned_ = false;
  b.keeper_ = std::move(keeper);
  return b;
}

std::shared_ptr<void> Buffer::share() const {
  if (owned_ && data_ != nullptr && !keeper_)
    keeper_ = std::make_shared<SharedBlock>(ctx_, data_, bytes_, counted_, category_);
  return keeper_;
}

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    owned_ = std::exchange(other.owned_, false);
    counted_ = std::exchange(other.counted_, true);
    category_ = other.category_;
    keeper_ = std::move(other.keeper_);
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() noexcept {
  if (keeper_) {
    keeper_.reset();  // a shared block frees owned memory with its last reference
  } else if (data_ != nullptr && owned_) {
    if (counted_) ctx_->memory.remove(category_, bytes_);
    free_memory(*ctx_, data_, rounded_size(*ctx_, bytes_));
  }
  data_ = nullptr;
  owned_ = false;
  counted_ = true;
}

void Buffer::copy_from_host(const void* src, size_t bytes, size_t offset) {
  char* dst = static_cast<char*>(data_) + offset;
  const octet_backend_api& api = ctx_->api();
  if (api.copy_from_host != nullptr)
    call_backend(*ctx_, "copy_from_host", [&] { return api.copy_from_host(ctx_->handle, dst, src, bytes); });
  else
    std::memcpy(dst, src, bytes);
}

void Buffer::copy_to_host(void* dst, size_t bytes, size_t offset) const {
  const char* src = static_cast<const char*>(data_) + offset;
  const octet_backend_api& api = ctx_->api();
  if (api.copy_to_host != nullptr)
    call_backend(*ctx_, "copy_to_host", [&] { return api.copy_to_host(ctx_->handle, dst, src, bytes); });
  else
    std::memcpy(dst, src, bytes);
}

}  // namespace octet::core
