// A backend's grouped_gemm (octet_backend.h, "Grouped GEMMs") against its own
// gemm and block_gemm called group by group: every group's D bit for bit,
// for plain FP8, high-precision and MXFP8 / 1x128 block-scaled groups of
// ragged sizes (empty groups, one-thread groups and groups large enough to
// be split between threads on their own), and the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend_table.hpp"
#include "test_matrix.hpp"

namespace octet::test {
namespace {

class GroupedGemmKernels : public BackendTableTest {
 protected:
  void SetUp() override {
    BackendTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    OCTET_REQUIRE_ENTRY(grouped_gemm);
  }
};

// m of each group: empty, a decode row, ragged, and large enough that a call
// of its own would use several threads (2 m n k >= 8e6 flops).
const int64_t kRows[] = {5, 0, 1, 37, 160, 3, 96, 0, 64};

struct Group {
  Group(int32_t a_dtype, int32_t b_dtype, int32_t d_dtype, int64_t m, int64_t n, int64_t k, bool ta, bool tb)
      : m(m),
        n(n),
        k(k),
        trans_a(ta),
        trans_b(tb),
        a(a_dtype, ta ? k : m, ta ? m : k, (ta ? m : k) + 1),
        b(b_dtype, tb ? k : n, tb ? n : k, (tb ? n : k) + 2),
        d_grouped(d_dtype, m, n, n + 1),
        d_single(d_dtype, m, n, n + 1),
        bias(OCTET_DTYPE_FP32, 1, n, n) {}
  int64_t m, n, k;
  bool trans_a, trans_b;
  TestMatrix a, b, d_grouped, d_single, bias;
  float sa = 1.0f, sb = 1.0f;
  // Block scales (E8M0 codes, or FP32 values), one per row and k-block.
  std::vector<unsigned char> a_scales, b_scales;
};

void fill_d(Group& g, std::mt19937& rng) {
  fill_finite(g.d_grouped, rng, 8.0f);
  g.d_single.bytes = g.d_grouped.bytes;
  fill_finite(g.bias, rng, 2.0f);
}

void expect_same_d(const std::vector<std::unique_ptr<Group>>& groups) {
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Group& g = *groups[i];
    ASSERT_EQ(g.d_grouped.bytes, g.d_single.bytes)
        << "group " << i << " (m,n,k " << g.m << "," << g.n << "," << g.k << "): grouped_gemm differs from gemm";
  }
}

TEST_P(GroupedGemmKernels, PlainGroupsEqualTheirOwnGemmCalls) {
  OCTET_REQUIRE_ENTRY(gemm);
  std::mt19937 rng(23);
  const int32_t pairs[][2] = {{OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3},
                              {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
                              {OCTET_DTYPE_FP32, OCTET_DTYPE_FP32},
                              {OCTET_DTYPE_BF16, OCTET_DTYPE_BF16}};
  const int32_t outputs[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16};
  int case_index = 0;
  for (const auto& pair : pairs) {
    if (!(caps_.dtypes & OCTET_DTYPE_BIT(pair[0])) || !(caps_.dtypes & OCTET_DTYPE_BIT(pair[1]))) continue;
    const bool fp8 = pair[0] != OCTET_DTYPE_FP32 && pair[0] != OCTET_DTYPE_BF16;
    for (int layout = 0; layout < 4; ++layout) {
      const bool ta = layout & 1, tb = (layout >> 1) & 1;
      const uint32_t bit =
          !ta ? (tb ? OCTET_GEMM_LAYOUT_NN : OCTET_GEMM_LAYOUT_TN) : (tb ? OCTET_GEMM_LAYOUT_TT : OCTET_GEMM_LAYOUT_NT);
      if (fp8 && !(caps_.fp8_gemm_layouts & bit)) continue;
      for (int32_t out : outputs) {
        SCOPED_TRACE(::testing::Message()
                     << "a=" << pair[0] << " b=" << pair[1] << " d=" << out << " trans_a=" << ta << " trans_b=" << tb);
        std::vector<std::unique_ptr<Group>> groups;
        std::vector<octet_gemm_args> args;
        for (int64_t m : kRows) {
          ++case_index;
          auto g = std::make_unique<Group>(pair[0], pair[1], out, m, 48 + 16 * (case_index % 3), 256, ta, tb);
          fill_finite(g->a, rng, 4.0f);
          fill_finite(g->b, rng, 4.0f);
          fill_d(*g, rng);
          g->sa = 0.125f * float(1 + case_index % 4);
          g->sb = 1.5f;
          octet_gemm_args a{};
          a.struct_size = sizeof a;
          a.m = g->m;
          a.n = g->n;
          a.k = g->k;
          a.a = g->a.view();
          a.b = g->b.view();
          a.trans_a = ta;
          a.trans_b = tb;
          a.a_scale_inv = fp8 ? &g->sa : nullptr;
          a.b_scale_inv = fp8 ? &g->sb : nullptr;
          a.alpha = case_index % 2 ? 1.0f : -0.5f;
          a.beta = case_index % 3 == 0 ? 0.75f : 0.0f;
          a.d = g->d_grouped.view();
          if (case_index % 4 == 1) a.bias = g->bias.view();
          a.epilogue = case_index % 5 == 2 ? OCTET_EPILOGUE_GELU : OCTET_EPILOGUE_NONE;
          args.push_back(a);
          groups.push_back(std::move(g));
        }
        std::vector<const octet_gemm_args*> pointers;
        for (const octet_gemm_args& one : args) pointers.push_back(&one);
        octet_grouped_gemm_args grouped{};
        grouped.struct_size = sizeof grouped;
        grouped.group_count = int64_t(args.size());
        grouped.gemms = pointers.data();
        expect_success(api_->grouped_gemm(context_, &grouped));
        for (std::size_t i = 0; i < args.size(); ++i) {
          octet_gemm_args single = args[i];
          single.d = groups[i]->d_single.view();
          expect_success(api_->gemm(context_, &single));
        }
        expect_same_d(groups);
        for (const auto& g : groups) EXPECT_TRUE(g->d_grouped.padding_untouched());
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(GroupedGemmKernels, BlockScaledGroupsEqualTheirOwnBlockGemmCalls) {
  OCTET_REQUIRE_ENTRY(block_gemm);
  std::mt19937 rng(29);
  struct Mode {
    int32_t scale_dtype;
    int32_t block_cols;
  };
  for (const Mode mode : {Mode{OCTET_DTYPE_E8M0, 32}, Mode{OCTET_DTYPE_FP32, 128}}) {
    const uint32_t needed =
        mode.scale_dtype == OCTET_DTYPE_E8M0 ? uint32_t(OCTET_SCALING_MXFP8_1X32) : uint32_t(OCTET_SCALING_BLOCK_1X128);
    if (!(caps_.scaling_modes & needed)) continue;
    SCOPED_TRACE(::testing::Message() << "block 1x" << mode.block_cols);
    std::vector<std::unique_ptr<Group>> groups;
    std::vector<octet_block_gemm_args> args;
    int case_index = 0;
    for (int64_t m : kRows) {
      ++case_index;
      const int64_t n = 40 + 8 * (case_index % 3), k = 256 + (case_index % 2) * 40;
      auto g = std::make_unique<Group>(OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, m, n, k, false, false);
      fill_finite(g->a, rng, 4.0f);
      fill_finite(g->b, rng, 4.0f);
      fill_d(*g, rng);
      const int64_t k_blocks = (k + mode.block_cols - 1) / mode.block_cols;
      auto scales = [&](int64_t rows, std::vector<unsigned char>& out) {
        const std::size_t size = mode.scale_dtype == OCTET_DTYPE_E8M0 ? 1 : 4;
        out.assign(std::size_t(std::max<int64_t>(rows * k_blocks, 1)) * size, 0);
        for (int64_t i = 0; i < rows * k_blocks; ++i) {
          if (size == 1) {
            out[std::size_t(i)] = static_cast<unsigned char>(120 + rng() % 15);
          } else {
            const float v = 0.03125f * float(1 + rng() % 64);
            std::memcpy(out.data() + std::size_t(i) * 4, &v, 4);
          }
        }
      };
      scales(m, g->a_scales);
      scales(n, g->b_scales);
      octet_block_gemm_args a{};
      a.struct_size = sizeof a;
      a.m = m;
      a.n = n;
      a.k = k;
      a.a = g->a.view();
      a.b = g->b.view();
      a.a_scale_inv = g->a_scales.data();
      a.b_scale_inv = g->b_scales.data();
      a.scale_dtype = mode.scale_dtype;
      a.a_block_rows = 1;
      a.a_block_cols = mode.block_cols;
      a.b_block_rows = 1;
      a.b_block_cols = mode.block_cols;
      a.alpha = case_index % 2 ? 1.0f : 2.0f;
      a.beta = case_index % 3 == 0 ? 0.5f : 0.0f;
      a.d = g->d_grouped.view();
      if (case_index % 4 == 1) a.bias = g->bias.view();
      args.push_back(a);
      groups.push_back(std::move(g));
    }
    std::vector<const octet_block_gemm_args*> pointers;
    for (const octet_block_gemm_args& one : args) pointers.push_back(&one);
    octet_grouped_gemm_args grouped{};
    grouped.struct_size = sizeof grouped;
    grouped.group_count = int64_t(args.size());
    grouped.block_gemms = pointers.data();
    expect_success(api_->grouped_gemm(context_, &grouped));
    for (std::size_t i = 0; i < args.size(); ++i) {
      octet_block_gemm_args single = args[i];
      single.d = groups[i]->d_single.view();
      expect_success(api_->block_gemm(context_, &single));
    }
    expect_same_d(groups);
    if (HasFatalFailure()) return;
  }
}

TEST_P(GroupedGemmKernels, RefusesMalformedArguments) {
  OCTET_REQUIRE_ENTRY(gemm);
  Group g(OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 4, 4, 4, false, false);
  octet_gemm_args a{};
  a.struct_size = sizeof a;
  a.m = a.n = a.k = 4;
  a.a = g.a.view();
  a.b = g.b.view();
  a.alpha = 1.0f;
  a.d = g.d_grouped.view();
  octet_gemm_args pair[2] = {a, a};
  const octet_gemm_args* pointers[2] = {&pair[0], &pair[1]};
  octet_grouped_gemm_args grouped{};
  grouped.struct_size = sizeof grouped;
  grouped.group_count = 0;
  grouped.gemms = pointers;
  expect_failure(api_->grouped_gemm(context_, &grouped), OCTET_STATUS_INVALID_ARGUMENT,
                 {"grouped_gemm", "group_count"});
  grouped.group_count = 2;
  grouped.gemms = nullptr;
  expect_failure(api_->grouped_gemm(context_, &grouped), OCTET_STATUS_INVALID_ARGUMENT,
                 {"grouped_gemm", "exactly one"});
  grouped.gemms = pointers;
  pair[1].k = 5;  // B is [4,4]: the second group's shapes disagree
  expect_failure(api_->grouped_gemm(context_, &grouped), OCTET_STATUS_INVALID_ARGUMENT, {"gemm", "args->a"});
  expect_failure(api_->grouped_gemm(context_, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"grouped_gemm", "args"});
}

OCTET_BACKEND_SUITE(GroupedGemmKernels);

}  // namespace
}  // namespace octet::test
