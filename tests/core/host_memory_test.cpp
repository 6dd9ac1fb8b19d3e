// Host memory for backends without mem_alloc (the reference, the cpu
// plugin): a tensor of 2 MiB or more starts on a 2 MiB boundary and, on
// Linux, its mapping carries the MADV_HUGEPAGE advice ("hg" in the
// mapping's VmFlags in /proc/self/smaps), so that a kernel in transparent
// huge page "madvise" mode may back it with 2 MiB pages. Smaller tensors
// keep the backend's alignment (whether their mapping carries the advice
// depends on where the C library put them, so it is not checked). Built a
// second time with OCTET_TEST_HUGE_PAGES_OFF=1 and run under
// OCTET_HOST_HUGE_PAGES=0 (ctest's core.host_memory_huge_pages_off): then
// no tensor is moved to a 2 MiB boundary or advised. The pointer comes
// from a DLPack export, the way a user sees it. A freed buffer of 2 MiB or
// more serves the next allocation of its size.
#include <octet/octet_dlpack.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.hpp"

using namespace octet_test;

namespace {

constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

// The data pointer of `t`'s DATA component, through a DLPack export (the
// export is released before returning; the tensor keeps the memory).
uintptr_t data_address(octet_tensor* t) {
  octet_dlpack_managed_tensor_versioned* e = nullptr;
  EXPECT_EQ(octet_tensor_to_dlpack(t, OCTET_COMPONENT_DATA, &e), 0) << octet_last_error_message();
  if (e == nullptr) return 0;
  const uintptr_t address = reinterpret_cast<uintptr_t>(e->dl_tensor.data) + e->dl_tensor.byte_offset;
  e->deleter(e);
  return address;
}

// The VmFlags line of the /proc/self/smaps mapping that holds `address`
// ("" when there is no such mapping or no smaps).
std::string vm_flags_of(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2) {  // a mapping's first line
      inside = address >= lo && address < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool has_flag(const std::string& vm_flags, const std::string& flag) {
  std::istringstream words(vm_flags);
  std::string word;
  while (words >> word)
    if (word == flag) return true;
  return false;
}

bool huge_pages_turned_off() {
  const char* value = std::getenv("OCTET_HOST_HUGE_PAGES");
  return value != nullptr && std::strcmp(value, "0") == 0;
}

class HostMemory : public testing::Test {
 protected:
  void SetUp() override { ctx = make_context("reference", OCTET_PROFILE_NATIVE); }
  ContextPtr ctx;
};

#if !OCTET_TEST_HUGE_PAGES_OFF

TEST_F(HostMemory, LargeTensorsStartOnA2MiBBoundary) {
  ASSERT_FALSE(huge_pages_turned_off()) << "run without OCTET_HOST_HUGE_PAGES=0";
  for (int64_t rows : {512, 1024, 1500}) {  // 2 MiB, 4 MiB and 5.9 MiB of FP32
    TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, 1024});
    ASSERT_TRUE(t) << octet_last_error_message();
    EXPECT_EQ(data_address(t.get()) % kHugePage, 0u) << rows << " x 1024 FP32";
  }
}

TEST_F(HostMemory, SmallTensorsKeepTheBackendsAlignment) {
  octet_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(octet_context_get_info(ctx.get(), &info), 0) << octet_last_error_message();
  ASSERT_GT(info.alignment, 0u);
  TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {511, 1024});  // 4 KiB under 2 MiB
  ASSERT_TRUE(t) << octet_last_error_message();
  EXPECT_EQ(data_address(t.get()) % uintptr_t(info.alignment), 0u);
}

TEST_F(HostMemory, LargeTensorsAreAdvisedHugePagesOnLinux) {
#if !defined(__linux__)
  GTEST_SKIP() << "MADV_HUGEPAGE is Linux's; this system keeps 4 KiB pages";
#else
  ASSERT_FALSE(huge_pages_turned_off()) << "run without OCTET_HOST_HUGE_PAGES=0";
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage)";
  for (int64_t rows : {512, 1500}) {  // 2 MiB and 5.9 MiB of FP32
    TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, 1024});
    ASSERT_TRUE(t) << octet_last_error_message();
    const std::string flags = vm_flags_of(data_address(t.get()));
    ASSERT_FALSE(flags.empty()) << "no /proc/self/smaps mapping holds the tensor";
    EXPECT_TRUE(has_flag(flags, "hg")) << rows << " x 1024 FP32: " << flags;
  }
#endif
}

// A freed buffer of 2 MiB or more is kept for the next one of its size
// (docs/abi.md): the same address comes back, and the memory statistics
// count only what tensors hold.
TEST_F(HostMemory, AFreedLargeBufferServesTheNextOfItsSize) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer builds keep no freed buffer (so that it sees every free)";
#else
  auto current_total = [&] {
    octet_memory_stats stats{};
    stats.struct_size = sizeof stats;
    EXPECT_EQ(octet_context_get_memory_stats(ctx.get(), &stats), 0) << octet_last_error_message();
    return stats.current_total;
  };
  const uint64_t before = current_total();
  TensorPtr first = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {1024, 1024});  // 4 MiB
  ASSERT_TRUE(first) << octet_last_error_message();
  const uintptr_t address = data_address(first.get());
  EXPECT_EQ(current_total(), before + (uint64_t(4) << 20));
  first = TensorPtr();                 // destroyed
  EXPECT_EQ(current_total(), before);  // kept, not counted
  TensorPtr second = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {1024, 1024});
  ASSERT_TRUE(second) << octet_last_error_message();
  EXPECT_EQ(data_address(second.get()), address);
  TensorPtr other = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {1024, 1024});  // the kept one is taken
  ASSERT_TRUE(other) << octet_last_error_message();
  EXPECT_NE(data_address(other.get()), address);
#endif
}

#else

TEST_F(HostMemory, TurnedOff) {
  ASSERT_TRUE(huge_pages_turned_off()) << "run under OCTET_HOST_HUGE_PAGES=0";
  for (int64_t rows : {512, 1500}) {
    TensorPtr t = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, 1024});
    ASSERT_TRUE(t) << octet_last_error_message();
    const uintptr_t address = data_address(t.get());
    EXPECT_NE(address % kHugePage, 0u) << rows << " x 1024 FP32";
#if defined(__linux__)
    EXPECT_FALSE(has_flag(vm_flags_of(address), "hg")) << rows << " x 1024 FP32";
#endif
  }
}

#endif  // OCTET_TEST_HUGE_PAGES_OFF

}  // namespace
