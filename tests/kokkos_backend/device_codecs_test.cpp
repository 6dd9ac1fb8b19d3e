// The kokkos backend's device-safe codecs (backends/kokkos/src/
// device_codecs.hpp) against the reference's codecs, run inside Kokkos
// kernels in the default execution space: every FP8, BF16, FP16 and E8M0
// code decoded, and FP32 inputs encoded to every format (every FP32 whose
// low 16 bits are one of a set of rounding-boundary patterns, for each of
// the 2^16 high halves: every exponent, sign and leading mantissa bits,
// ties, one below and one above; OCTET_KOKKOS_EXHAUSTIVE=1 runs all 2^32
// FP32 inputs of the FP8 (OCP and FNUZ), BF16, FP16 and E8M0 encoders
// instead). FP8 covers the OCP and the FNUZ formats; the FNUZ cases of
// numerics.md are also checked against values written here. The
// expectations come from the reference (octet_reference, linked here).
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device_codecs.hpp"
#include "octet_reference/codecs.hpp"

namespace {

namespace ref = octet::ref;
namespace kk = octet_kokkos;

using HostIn = Kokkos::View<uint32_t*, Kokkos::HostSpace>;

enum Op : int {
  kEncodeE4M3Sat,
  kEncodeE4M3NoSat,
  kEncodeE5M2Sat,
  kEncodeE5M2NoSat,
  kEncodeBf16,
  kEncodeFp16,
  kEncodeE8m0Ceil,
  kEncodeE8m0Floor,
  kEncodeE4M3FnuzSat,
  kEncodeE4M3FnuzNoSat,
  kEncodeE5M2FnuzSat,
  kEncodeE5M2FnuzNoSat,
  kDecodeE4M3,
  kDecodeE5M2,
  kDecodeBf16,
  kDecodeFp16,
  kDecodeE8m0,
  kDecodeE4M3Fnuz,
  kDecodeE5M2Fnuz,
  kOpCount
};
constexpr int kFirstEncode = kEncodeE4M3Sat, kLastEncode = kEncodeE5M2FnuzNoSat;

const char* op_name(int op) {
  static const char* names[] = {"e4m3 sat",     "e4m3 no-sat",     "e5m2 sat",       "e5m2 no-sat",
                                "bf16 encode",  "fp16 encode",     "e8m0 ceil",      "e8m0 floor",
                                "e4m3fnuz sat", "e4m3fnuz no-sat", "e5m2fnuz sat",   "e5m2fnuz no-sat",
                                "e4m3 decode",  "e5m2 decode",     "bf16 decode",    "fp16 decode",
                                "e8m0 decode",  "e4m3fnuz decode", "e5m2fnuz decode"};
  return names[op];
}

// The reference's answer, as raw bits.
uint32_t reference_result(int op, uint32_t in) {
  float x;
  std::memcpy(&x, &in, 4);
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  switch (op) {
    case kEncodeE4M3Sat: return ref::fp8_encode(x, ref::Fp8Format::E4M3, true);
    case kEncodeE4M3NoSat: return ref::fp8_encode(x, ref::Fp8Format::E4M3, false);
    case kEncodeE5M2Sat: return ref::fp8_encode(x, ref::Fp8Format::E5M2, true);
    case kEncodeE5M2NoSat: return ref::fp8_encode(x, ref::Fp8Format::E5M2, false);
    case kEncodeBf16: return ref::bf16_encode(x);
    case kEncodeFp16: return ref::fp16_encode(x);
    case kEncodeE8m0Ceil: return ref::e8m0_encode(x, true);
    case kEncodeE8m0Floor: return ref::e8m0_encode(x, false);
    case kEncodeE4M3FnuzSat:
      return ref::fp8_encode(x, ref::Fp8Format::E4M3FNUZ, true);
    case kEncodeE4M3FnuzNoSat:
      return ref::fp8_encode(x, ref::Fp8Format::E4M3FNUZ, false);
    case kEncodeE5M2FnuzSat:
      return ref::fp8_encode(x, ref::Fp8Format::E5M2FNUZ, true);
    case kEncodeE5M2FnuzNoSat:
      return ref::fp8_encode(x, ref::Fp8Format::E5M2FNUZ, false);
    case kDecodeE4M3: return bits(ref::fp8_decode(static_cast<uint8_t>(in), ref::Fp8Format::E4M3));
    case kDecodeE5M2: return bits(ref::fp8_decode(static_cast<uint8_t>(in), ref::Fp8Format::E5M2));
    case kDecodeBf16: return bits(ref::bf16_decode(static_cast<uint16_t>(in)));
    case kDecodeFp16: return bits(ref::fp16_decode(static_cast<uint16_t>(in)));
    case kDecodeE8m0: return bits(ref::e8m0_decode(static_cast<uint8_t>(in)));
    case kDecodeE4M3Fnuz:
      return bits(ref::fp8_decode(static_cast<uint8_t>(in), ref::Fp8Format::E4M3FNUZ));
    case kDecodeE5M2Fnuz:
      return bits(ref::fp8_decode(static_cast<uint8_t>(in), ref::Fp8Format::E5M2FNUZ));
    default: return 0;
  }
}

// The kokkos codec's answer, computed in a Kokkos kernel.
KOKKOS_INLINE_FUNCTION uint32_t kokkos_result(int op, uint32_t in) {
  const float x = kk::float_of(in);
  switch (op) {
    case kEncodeE4M3Sat:
      return kk::fp8_encode(x, OCTET_DTYPE_E4M3, true);
    case kEncodeE4M3NoSat:
      return kk::fp8_encode(x, OCTET_DTYPE_E4M3, false);
    case kEncodeE5M2Sat:
      return kk::fp8_encode(x, OCTET_DTYPE_E5M2, true);
    case kEncodeE5M2NoSat:
      return kk::fp8_encode(x, OCTET_DTYPE_E5M2, false);
    case kEncodeE4M3FnuzSat:
      return kk::fp8_encode(x, OCTET_DTYPE_E4M3FNUZ, true);
    case kEncodeE4M3FnuzNoSat:
      return kk::fp8_encode(x, OCTET_DTYPE_E4M3FNUZ, false);
    case kEncodeE5M2FnuzSat:
      return kk::fp8_encode(x, OCTET_DTYPE_E5M2FNUZ, true);
    case kEncodeE5M2FnuzNoSat:
      return kk::fp8_encode(x, OCTET_DTYPE_E5M2FNUZ, false);
    case kEncodeBf16: return kk::bf16_encode(x);
    case kEncodeFp16: return kk::fp16_encode(x);
    case kEncodeE8m0Ceil: return kk::e8m0_encode(x, true);
    case kEncodeE8m0Floor: return kk::e8m0_encode(x, false);
    case kDecodeE4M3:
      return kk::bits_of(kk::fp8_decode(static_cast<uint8_t>(in), OCTET_DTYPE_E4M3));
    case kDecodeE5M2:
      return kk::bits_of(kk::fp8_decode(static_cast<uint8_t>(in), OCTET_DTYPE_E5M2));
    case kDecodeE4M3Fnuz:
      return kk::bits_of(kk::fp8_decode(static_cast<uint8_t>(in), OCTET_DTYPE_E4M3FNUZ));
    case kDecodeE5M2Fnuz:
      return kk::bits_of(kk::fp8_decode(static_cast<uint8_t>(in), OCTET_DTYPE_E5M2FNUZ));
    case kDecodeBf16: return kk::bits_of(kk::bf16_decode(static_cast<uint16_t>(in)));
    case kDecodeFp16: return kk::bits_of(kk::fp16_decode(static_cast<uint16_t>(in)));
    case kDecodeE8m0: return kk::bits_of(kk::e8m0_decode(static_cast<uint8_t>(in)));
    default: return 0;
  }
}

// Runs `op` over `inputs` in the default execution space and compares with
// the reference; reports the first few differences.
void compare(int op, const std::vector<uint32_t>& inputs) {
  const size_t n = inputs.size();
  Kokkos::View<uint32_t*> in("in", n), out("out", n);
  auto in_host = Kokkos::create_mirror_view(in);
  for (size_t i = 0; i < n; ++i) in_host(i) = inputs[i];
  Kokkos::deep_copy(in, in_host);
  Kokkos::parallel_for(
      "codec", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(size_t i) { out(i) = kokkos_result(op, in(i)); });
  auto out_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  int reported = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t want = reference_result(op, inputs[i]);
    if (out_host(i) != want && reported++ < 5) {
      ADD_FAILURE() << op_name(op) << " of 0x" << std::hex << inputs[i] << ": kokkos 0x" << out_host(i)
                    << ", reference 0x" << want;
    }
  }
}

class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

std::vector<uint32_t> all_codes(uint32_t count) {
  std::vector<uint32_t> v(count);
  for (uint32_t i = 0; i < count; ++i) v[i] = i;
  return v;
}

TEST(KokkosCodecs, DecodeEveryCode) {
  for (int op : {kDecodeE4M3, kDecodeE5M2, kDecodeE8m0, kDecodeE4M3Fnuz, kDecodeE5M2Fnuz}) compare(op, all_codes(256));
  for (int op : {kDecodeBf16, kDecodeFp16}) compare(op, all_codes(65536));
}

// Low halves that put an FP32 value on, just below and just above every
// rounding point of the narrow formats (their kept bits end at bit 13 (FP16),
// 16 (BF16), 20 (E4M3) or 21 (E5M2) in normal range, higher in subnormal
// range), plus random ones.
std::vector<uint32_t> boundary_low_halves() {
  std::vector<uint32_t> lows = {0x0000, 0x0001, 0x0002, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0xFFFE,
                                0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2001, 0x2FFF, 0x3000,
                                0x3001, 0x4000, 0x5000, 0x6000, 0x7000, 0x9000, 0xA000, 0xC000,
                                0xE000, 0xF000, 0xEFFF, 0xF001, 0x0800, 0x1800, 0x4001, 0xBFFF};
  std::mt19937 rng(16);
  for (int i = 0; i < 32; ++i) lows.push_back(rng() & 0xFFFFu);
  return lows;
}

TEST(KokkosCodecs, EncodeEveryHighHalfAtEveryRoundingBoundary) {
  const std::vector<uint32_t> lows = boundary_low_halves();
  std::vector<uint32_t> inputs;
  inputs.reserve(65536 * lows.size());
  for (uint32_t high = 0; high < 65536; ++high)
    for (uint32_t low : lows) inputs.push_back((high << 16) | low);
  for (int op = kFirstEncode; op <= kLastEncode; ++op) compare(op, inputs);
}

// numerics.md's named cases, expected values written here (not taken from
// the reference): the overflow thresholds and the subnormal/normal tie.
TEST(KokkosCodecs, NamedBoundaries) {
  constexpr int32_t e4m3 = OCTET_DTYPE_E4M3, e5m2 = OCTET_DTYPE_E5M2;
  EXPECT_EQ(kk::fp8_encode(464.0f, e4m3, false), 0x7E);                     // ties to 448
  EXPECT_EQ(kk::fp8_encode(kk::float_of(0x43E80001u), e4m3, false), 0x7F);  // above 464: NaN
  EXPECT_EQ(kk::fp8_encode(61440.0f, e5m2, false), 0x7C);                   // to infinity
  EXPECT_EQ(kk::fp8_encode(61440.0f, e5m2, true), 0x7B);
  EXPECT_EQ(kk::fp8_encode(7.5f * 0.001953125f, e4m3, true), 0x08);  // 7.5 * 2^-9 -> 2^-6
  EXPECT_EQ(kk::fp8_encode(-0.0f, e4m3, true), 0x80);
  EXPECT_EQ(kk::fp8_encode(kk::float_of(0xFFC00000u), e5m2, true), 0xFF);
  EXPECT_EQ(kk::e8m0_encode(0.0f, true), 0xFF);
  EXPECT_EQ(kk::e8m0_encode(3.0f, true), 128 + 1);
  EXPECT_EQ(kk::e8m0_encode(3.0f, false), 128);
}

// The FNUZ formats (numerics.md section 1, "FNUZ FP8 and FP4 E2M1"), values
// written here: bias 8 / 16, max 240 (0x7F) and 57344 (0x7F), one NaN 0x80,
// no infinity, no negative zero; overflow judged after rounding (E4M3FNUZ
// from 248, E5M2FNUZ from 61440).
TEST(KokkosCodecs, FnuzNamedCases) {
  constexpr int32_t e4 = OCTET_DTYPE_E4M3FNUZ, e5 = OCTET_DTYPE_E5M2FNUZ;
  EXPECT_EQ(kk::fp8_encode(240.0f, e4, false), 0x7F);
  EXPECT_EQ(kk::fp8_encode(247.99998f, e4, false), 0x7F);  // below the tie: 240
  EXPECT_EQ(kk::fp8_encode(248.0f, e4, false), 0x80);      // tie to 256 (even): overflow, NaN
  EXPECT_EQ(kk::fp8_encode(248.0f, e4, true), 0x7F);
  EXPECT_EQ(kk::fp8_encode(-248.0f, e4, true), 0xFF);
  EXPECT_EQ(kk::fp8_encode(57344.0f, e5, false), 0x7F);
  EXPECT_EQ(kk::fp8_encode(61440.0f, e5, false), 0x80);
  EXPECT_EQ(kk::fp8_encode(-61440.0f, e5, true), 0xFF);
  for (int32_t d : {e4, e5}) {
    EXPECT_EQ(kk::fp8_encode(kk::float_of(0x7F800000u), d, false), 0x80);  // +inf, no infinity code
    EXPECT_EQ(kk::fp8_encode(kk::float_of(0xFF800000u), d, true), 0xFF);   // -inf saturates
    EXPECT_EQ(kk::fp8_encode(kk::float_of(0xFFC00001u), d, true), 0x80);   // every NaN is 0x80
    EXPECT_EQ(kk::fp8_encode(-0.0f, d, true), 0x00);                       // no -0
    EXPECT_EQ(kk::fp8_encode(-1e-30f, d, true), 0x00);
    EXPECT_EQ(kk::bits_of(kk::fp8_decode(0x80, d)), 0x7FC00000u);  // the NaN, unsigned
    EXPECT_EQ(kk::fp8_decode(0x00, d), 0.0f);
  }
  EXPECT_EQ(kk::fp8_decode(0x7F, e4), 240.0f);
  EXPECT_EQ(kk::fp8_decode(0xFF, e4), -240.0f);
  EXPECT_EQ(kk::fp8_decode(0x01, e4), 0.0009765625f);  // 2^-10, the smallest subnormal
  EXPECT_EQ(kk::fp8_decode(0x08, e4), 0.0078125f);     // 2^-7, the smallest normal
  EXPECT_EQ(kk::fp8_decode(0x40, e4), 1.0f);           // bias 8
  EXPECT_EQ(kk::fp8_decode(0x7F, e5), 57344.0f);
  EXPECT_EQ(kk::fp8_decode(0x01, e5), 7.62939453125e-06f);  // 2^-17
  EXPECT_EQ(kk::fp8_decode(0x40, e5), 1.0f);                // bias 16
  EXPECT_EQ(kk::fp8_encode(1.0f, e4, true), 0x40);
  EXPECT_EQ(kk::fp8_encode(1.0f, e5, true), 0x40);
  EXPECT_EQ(kk::fp8_max_of(e4), 240.0f);
  EXPECT_EQ(kk::fp8_max_of(e5), 57344.0f);
}

// Every FNUZ code but 0x80 is finite and survives decode then encode (both
// modes), and the decoded values increase with the magnitude code: the
// whole code space, checked without the reference.
TEST(KokkosCodecs, FnuzEveryCodeRoundTrips) {
  for (int32_t d : {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}) {
    float previous = -1.0f;
    for (uint32_t code = 0; code < 256; ++code) {
      const float v = kk::fp8_decode(static_cast<uint8_t>(code), d);
      if (code == 0x80) {
        EXPECT_TRUE(v != v);
        continue;
      }
      ASSERT_TRUE(kk::is_finite(v)) << "code 0x" << std::hex << code;
      EXPECT_EQ(kk::fp8_encode(v, d, true), code) << "code 0x" << std::hex << code;
      EXPECT_EQ(kk::fp8_encode(v, d, false), code) << "code 0x" << std::hex << code;
      if (code < 0x80) {
        EXPECT_GT(v, previous) << "code 0x" << std::hex << code;
        previous = v;
        if (code != 0) {
          EXPECT_EQ(kk::fp8_decode(static_cast<uint8_t>(code | 0x80), d), -v);
        }
      }
    }
  }
}

TEST(KokkosCodecs, ExhaustiveWhenAsked) {
  const char* env = std::getenv("OCTET_KOKKOS_EXHAUSTIVE");
  if (env == nullptr || std::string(env) != "1") GTEST_SKIP() << "set OCTET_KOKKOS_EXHAUSTIVE=1 (all 2^32 FP32)";
  std::vector<uint32_t> chunk(1u << 24);
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += chunk.size()) {
    for (uint32_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint32_t>(base + i);
    for (int op = kFirstEncode; op <= kLastEncode; ++op) compare(op, chunk);
    if (HasFailure()) return;
  }
}

}  // namespace
