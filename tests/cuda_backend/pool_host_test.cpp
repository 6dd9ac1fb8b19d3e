// The caching pool's host-side rules (pool.cpp), without a device: sizes a
// request is rounded to, and requests no device can hold refused before
// cudaMalloc (rounded() would wrap around to a tiny block).
#include <gtest/gtest.h>

#include <cstdint>

#include "errors.hpp"
#include "pool.hpp"

namespace {

using octet_cuda::Pool;

TEST(CudaPoolOnHost, SizesAreRoundedToWholeGranules) {
  EXPECT_EQ(Pool::rounded(1), 512u);
  EXPECT_EQ(Pool::rounded(512), 512u);
  EXPECT_EQ(Pool::rounded(513), 1024u);
  EXPECT_EQ(Pool::rounded(size_t(1) << 20), size_t(1) << 20);
  EXPECT_EQ(Pool::rounded((size_t(1) << 20) + 1), size_t(2) << 20);
}

TEST(CudaPoolOnHost, EmptyAndImpossibleRequests) {
  Pool pool;
  EXPECT_EQ(pool.allocate(0), nullptr);
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 5, (SIZE_MAX >> 1) + 1}) {
    try {
      (void)pool.allocate(bytes);
      ADD_FAILURE() << bytes << " bytes were not refused";
    } catch (const octet_cuda::Failure& failure) {
      EXPECT_EQ(failure.status(), OCTET_STATUS_OUT_OF_MEMORY) << failure.message();
    }
  }
}

}  // namespace
