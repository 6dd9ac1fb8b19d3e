// load_element / store_element for every dtype, against the test's codecs.
#include <gtest/gtest.h>

#include <random>

#include "octet_reference/codecs.hpp"
#include "reference_table.hpp"

namespace octet::test {
namespace {

TEST(ElementAccess, LoadsAndStoresEveryDtype) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> uniform(-600.0f, 600.0f);
  for (int32_t dtype : all_dtypes()) {
    unsigned char storage[4 * 8] = {};
    for (std::size_t index = 0; index < 8; ++index) {
      const float value = uniform(rng);
      for (bool saturate : {true, false}) {
        ASSERT_TRUE(ref::store_element(storage, dtype, index, value, saturate));
        const uint32_t expected = oracle_store_bits(dtype, value, saturate);
        ASSERT_TRUE(same_element(dtype, raw_bits(storage, dtype, index), expected))
            << "dtype " << dtype << " value " << value;
        float loaded = 0;
        ASSERT_TRUE(ref::load_element(storage, dtype, index, &loaded));
        const float expected_value = oracle_load(storage, dtype, index);
        if (std::isnan(expected_value)) {
          EXPECT_TRUE(std::isnan(loaded));
        } else {
          EXPECT_EQ(loaded, expected_value);
        }
      }
    }
  }
}

TEST(ElementAccess, RefusesUnknownDtypes) {
  unsigned char storage[4] = {1, 2, 3, 4};
  float value = 5.0f;
  // E2M1 (17) is a known dtype with no element access: it is packed.
  for (int32_t dtype : {int32_t{OCTET_DTYPE_INVALID}, 4, 15, 16, int32_t{OCTET_DTYPE_E2M1}, -1}) {
    EXPECT_FALSE(ref::load_element(storage, dtype, 0, &value));
    EXPECT_FALSE(ref::store_element(storage, dtype, 0, 1.0f, true));
  }
  EXPECT_EQ(value, 5.0f);
  EXPECT_EQ(storage[0], 1);
}

}  // namespace
}  // namespace octet::test
