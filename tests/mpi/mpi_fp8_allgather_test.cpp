// FP8 all-gather of a sharded weight (issue 20, item 3), on as many ranks as
// mpiexec starts (ctest: 2 and 4).
//
// Each rank holds rows [rank * r, (rank + 1) * r) of an FP32 master weight W
// (every rank generates all of W from a seed, so expectations need no
// communication). It quantizes its shard through a weight quantizer of a
// current-scaling recipe with reduce_amax, so every rank takes the scale of
// the whole weight's amax, and all-gathers the E4M3 codes straight into the
// stored weight of an FP8-only Linear (users' ABI 1.7, octet_allgather).
// Checked:
//  - the gathered codes equal fp8(W * scale) for all of W with scale = 448 /
//    max |W| (the scalar codec, computed from W here), and SCALE / SCALE_INV;
//  - the Linear's forward on the gathered weight equals, bit for bit, the
//    forward of a Linear that loaded all of W itself on a context without a
//    communicator (the same scale, the same codes: nothing quantized again);
//  - the bytes sent, from the communication statistics: r x in for the FP8
//    gather, 2x that for BF16 and 4x for FP32 gathers of the same shard;
//  - shards quantized with their own scales make every rank refuse the
//    gather (INVALID_ARGUMENT), leaving the stored weight as it was;
//  - the weight gradient of all of W, reduce-scattered (SUM) back to the
//    shards, equals every rank's gradient summed (within FP32 rounding);
//  - a training Linear given the gathered FP8 tensor (set_weight) runs its
//    forward and dgrad on those codes, bit for bit as octet_gemm on them,
//    with no quantize of the weight (its quantizer unused, one amax
//    reduced per forward), and refuses it without a fitting recipe.
#include <mpi.h>
#include <octet/octet.h>
#include <octet/octet_mpi.h>

#include "mpi_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int64_t kShardRows = 3, kIn = 16, kBatch = 5;

// All of W, [size * kShardRows, kIn]: values in (-1, 1), and the largest
// magnitude (2.75) in the last rank's shard, so no single rank but that one
// holds the global amax.
std::vector<float> master_weight() {
  const size_t n = size_t(g_size * kShardRows * kIn);
  std::vector<float> w(n);
  uint32_t s = 12345u;
  for (float& v : w) {
    s = s * 1664525u + 1013904223u;
    v = float(int(s >> 8) % 2001 - 1000) / 1003.0f;
  }
  w[n - 7] = -2.75f;
  return w;
}

octet::Tensor make(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0) {
  return make_tensor(ctx, dtype, {rows, cols}, usages);
}

octet::Tensor fp32(octet_context* ctx, int64_t rows, int64_t cols, const float* v) {
  octet::Tensor t = make(ctx, OCTET_DTYPE_FP32, rows, cols);
  OK(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, v, size_t(rows * cols) * 4));
  return t;
}

octet_context* reference_context() {
  octet_context_options co;
  OK(octet_context_options_init(&co));
  co.backend = "reference";
  octet_context* ctx = nullptr;
  OK(octet_context_create(&co, &ctx));
  return ctx;
}

octet_layer* fp8_only_linear(octet_context* ctx, const octet_recipe* recipe) {
  octet_linear_options lo;
  OK(octet_linear_options_init(&lo));
  lo.in_features = kIn;
  lo.out_features = g_size * kShardRows;
  lo.bias = 0;
  lo.recipe = recipe;
  lo.weight_storage = OCTET_WEIGHTS_FP8_ONLY;
  octet_layer* layer = nullptr;
  OK(octet_layer_create_linear(ctx, &lo, &layer));
  return layer;
}

octet_tensor* stored_weight(octet_layer* layer) {
  size_t index = 0;
  OK(octet_layer_find_parameter(layer, "weight", &index));
  octet_tensor* w = nullptr;
  OK(octet_layer_get_parameter(layer, index, &w));
  return w;
}

std::vector<float> forward(octet_context* ctx, octet_layer* layer, const std::vector<float>& x) {
  octet::Tensor in = fp32(ctx, kBatch, kIn, x.data());
  octet::Tensor out = make(ctx, OCTET_DTYPE_FP32, kBatch, g_size * kShardRows);
  OK(octet_layer_forward(layer, in.get(), out.get(), 0, nullptr));
  std::vector<float> y(size_t(kBatch * g_size * kShardRows));
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_DATA, y.data(), y.size() * 4));
  in = octet::Tensor();
  out = octet::Tensor();
  return y;
}

uint64_t gathered_bytes(octet_context* ctx) {
  octet_communication_stats s{};
  s.struct_size = sizeof(s);
  OK(octet_context_get_communication_stats(ctx, &s));
  return s.bytes_sent[OCTET_COLLECTIVE_ALLGATHER];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  octet_communicator comm;
  OK(octet_mpi_communicator_init(MPI_COMM_WORLD, &comm));

  octet_current_scaling_options co;
  OK(octet_current_scaling_options_init(&co));
  co.format = OCTET_FORMAT_E4M3;
  co.reduce_amax = 1;
  octet_recipe* recipe = nullptr;
  OK(octet_recipe_create_current(&co, &recipe));

  const std::vector<float> w = master_weight();
  const size_t shard_n = size_t(kShardRows * kIn);
  const float* shard = w.data() + size_t(g_rank) * shard_n;
  float amax = 0.0f;
  for (float v : w) amax = std::max(amax, std::fabs(v));
  const float scale = 448.0f / amax;  // numerics.md 14.1, epsilon 0

  octet_context* ctx = reference_context();
  OK(octet_context_set_communicator(ctx, &comm));

  // 1. The shard, quantized with the scale of the whole weight.
  octet_quantizer* q = nullptr;
  OK(octet_quantizer_create(recipe, OCTET_ROLE_WEIGHT, &q));
  octet::Tensor shard_hp = fp32(ctx, kShardRows, kIn, shard);
  octet::Tensor shard_q = make(ctx, OCTET_DTYPE_E4M3, kShardRows, kIn, OCTET_USAGE_ROWWISE);
  OK(octet_quantizer_quantize(ctx, q, shard_hp.get(), shard_q.get(), nullptr, nullptr));
  float shard_scale = 0.0f;
  OK(octet_tensor_copy_to_host(shard_q.get(), OCTET_COMPONENT_SCALE, &shard_scale, 4));
  CHECK(shard_scale == scale, "the shard's scale %.9g, expected 448 / max|W| = %.9g", double(shard_scale),
        double(scale));

  // 2. Gathered into the FP8-only Linear's stored weight.
  octet_layer* layer = fp8_only_linear(ctx, recipe);
  octet_tensor* weight = stored_weight(layer);
  OK(octet_context_reset_communication_stats(ctx));
  OK(octet_allgather(ctx, shard_q.get(), weight));
  const uint64_t fp8_bytes = gathered_bytes(ctx);
  std::vector<uint8_t> codes(w.size());
  OK(octet_tensor_copy_to_host(weight, OCTET_COMPONENT_DATA, codes.data(), codes.size()));
  for (size_t i = 0; i < w.size(); ++i) {
    const uint8_t want = octet_fp8_encode(w[i] * scale, OCTET_DTYPE_E4M3, 1);
    CHECK(codes[i] == want, "gathered code %zu: 0x%02x, expected 0x%02x", i, codes[i], want);
  }
  float scalars[2];
  OK(octet_tensor_copy_to_host(weight, OCTET_COMPONENT_SCALE, &scalars[0], 4));
  OK(octet_tensor_copy_to_host(weight, OCTET_COMPONENT_SCALE_INV, &scalars[1], 4));
  CHECK(scalars[0] == scale && scalars[1] == 1.0f / scale, "gathered weight: scale %.9g, scale_inv %.9g",
        double(scalars[0]), double(scalars[1]));

  // 3. The forward on the gathered weight equals one on all of W loaded
  // by a single process (the same input on every rank, so the input's
  // reduced amax is its own).
  std::vector<float> x(size_t(kBatch * kIn));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 29) - 14) / 8.0f;
  const std::vector<float> y = forward(ctx, layer, x);
  octet_context* alone = reference_context();
  octet_layer* whole = fp8_only_linear(alone, recipe);
  octet::Tensor w_all = fp32(alone, g_size * kShardRows, kIn, w.data());
  size_t index = 0;
  OK(octet_layer_find_parameter(whole, "weight", &index));
  OK(octet_layer_load_weight(whole, index, w_all.get()));
  const std::vector<float> y_ref = forward(alone, whole, x);
  for (size_t i = 0; i < y.size(); ++i)
    CHECK(std::memcmp(&y[i], &y_ref[i], 4) == 0, "y[%zu] = %.9g on the gathered weight, %.9g on all of W", i,
          double(y[i]), double(y_ref[i]));

  // 4. Bytes: FP8 codes are half of BF16's and a quarter of FP32's.
  CHECK(fp8_bytes == shard_n, "the FP8 gather sent %llu bytes, expected %zu", (unsigned long long)fp8_bytes, shard_n);
  for (int32_t dtype : {OCTET_DTYPE_BF16, OCTET_DTYPE_FP32}) {
    octet::Tensor s = make(ctx, dtype, kShardRows, kIn);
    octet::Tensor all = make(ctx, dtype, g_size * kShardRows, kIn);
    OK(octet_convert(ctx, shard_hp.get(), s.get(), 1));
    OK(octet_context_reset_communication_stats(ctx));
    OK(octet_allgather(ctx, s.get(), all.get()));
    const uint64_t bytes = gathered_bytes(ctx);
    CHECK(bytes == fp8_bytes * (dtype == OCTET_DTYPE_BF16 ? 2u : 4u), "a %s gather sent %llu bytes",
          octet_dtype_name(dtype), (unsigned long long)bytes);
    if (g_rank == 0)
      std::printf("bytes sent per rank for a [%lld, %lld] shard: %s %llu\n", (long long)kShardRows, (long long)kIn,
                  octet_dtype_name(dtype), (unsigned long long)bytes);
    s = octet::Tensor();
    all = octet::Tensor();
  }
  if (g_rank == 0) std::printf("  E4M3 %llu\n", (unsigned long long)fp8_bytes);

  // 5. Shards quantized each with its own amax (reduce_amax = 0; the
  // global amax is in the last rank's shard alone, so the scales differ):
  // every rank refuses, the stored weight is unchanged.
  octet_current_scaling_options lo = co;
  lo.reduce_amax = 0;
  octet_recipe* local = nullptr;
  OK(octet_recipe_create_current(&lo, &local));
  octet_quantizer* q_local = nullptr;
  OK(octet_quantizer_create(local, OCTET_ROLE_WEIGHT, &q_local));
  OK(octet_quantizer_quantize(ctx, q_local, shard_hp.get(), shard_q.get(), nullptr, nullptr));
  const octet_status s = octet_allgather(ctx, shard_q.get(), weight);
  const std::string message = octet_last_error_message();
  CHECK(s == OCTET_STATUS_INVALID_ARGUMENT && message.find("different scales") != std::string::npos,
        "a gather of shards with different scales: %s (%s)", octet_status_name(s), message.c_str());
  std::vector<uint8_t> after(codes.size());
  OK(octet_tensor_copy_to_host(weight, OCTET_COMPONENT_DATA, after.data(), after.size()));
  CHECK(after == codes, "a refused gather changed the stored weight");

  // 6. The weight gradient back to the shards: each rank's dW of all of W
  // (a high-precision Linear's backward on its own batch), reduce-scattered
  // (SUM) so each rank gets the sum over ranks of its rows, checked against
  // every rank's dW (MPI_Allgather here) summed in double, within the
  // rounding of an FP32 sum of `size` terms.
  {
    octet_linear_options hp;
    OK(octet_linear_options_init(&hp));
    hp.in_features = kIn;
    hp.out_features = g_size * kShardRows;
    hp.bias = 0;
    octet_layer* dense = nullptr;
    OK(octet_layer_create_linear(ctx, &hp, &dense));
    size_t wi = 0;
    OK(octet_layer_find_parameter(dense, "weight", &wi));
    octet_tensor* wp = nullptr;
    OK(octet_layer_get_parameter(dense, wi, &wp));
    OK(octet_tensor_copy_from_host(wp, OCTET_COMPONENT_DATA, w.data(), w.size() * 4));
    std::vector<float> xb(size_t(kBatch * kIn)), dyb(size_t(kBatch * g_size * kShardRows));
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = float(int((i * 13 + size_t(g_rank) * 7) % 17) - 8) / 4.0f;
    for (size_t i = 0; i < dyb.size(); ++i) dyb[i] = float(int((i * 5 + size_t(g_rank) * 3) % 11) - 5) / 8.0f;
    octet::Tensor xt = fp32(ctx, kBatch, kIn, xb.data());
    octet::Tensor yt = make(ctx, OCTET_DTYPE_FP32, kBatch, g_size * kShardRows);
    octet::Tensor dyt = fp32(ctx, kBatch, g_size * kShardRows, dyb.data());
    octet::Tensor dxt = make(ctx, OCTET_DTYPE_FP32, kBatch, kIn);
    octet_saved* saved = nullptr;
    OK(octet_layer_forward(dense, xt.get(), yt.get(), 1, &saved));
    OK(octet_layer_backward(dense, &saved, dyt.get(), dxt.get(), 0));
    octet_tensor* dw = nullptr;
    OK(octet_layer_get_gradient(dense, wi, &dw));
    std::vector<float> mine(w.size()), all(w.size() * size_t(g_size));
    OK(octet_tensor_copy_to_host(dw, OCTET_COMPONENT_DATA, mine.data(), mine.size() * 4));
    MPI_Allgather(mine.data(), int(mine.size()), MPI_FLOAT, all.data(), int(mine.size()), MPI_FLOAT, MPI_COMM_WORLD);
    octet::Tensor dw_shard = make(ctx, OCTET_DTYPE_FP32, kShardRows, kIn);
    OK(octet_reduce_scatter(ctx, dw, dw_shard.get(), OCTET_REDUCE_SUM));
    std::vector<float> got(shard_n);
    OK(octet_tensor_copy_to_host(dw_shard.get(), OCTET_COMPONENT_DATA, got.data(), got.size() * 4));
    for (size_t i = 0; i < shard_n; ++i) {
      const size_t at = size_t(g_rank) * shard_n + i;
      double sum = 0.0, magnitude = 0.0;
      for (int r = 0; r < g_size; ++r) {
        sum += double(all[size_t(r) * w.size() + at]);
        magnitude += std::fabs(double(all[size_t(r) * w.size() + at]));
      }
      CHECK(std::fabs(double(got[i]) - sum) <= double(g_size) * 0x1p-24 * magnitude,
            "reduce-scattered dW shard [%zu] = %.9g, expected %.9g", i, double(got[i]), sum);
    }
    bool ranks_differ = false;
    for (size_t i = 0; i < w.size() && g_size > 1; ++i) ranks_differ = ranks_differ || all[i] != all[w.size() + i];
    CHECK(g_size < 2 || ranks_differ, "test data: ranks 0 and 1 computed the same dW");
    for (octet::Tensor* t : {&xt, &yt, &dyt, &dxt, &dw_shard}) *t = octet::Tensor();  // before the layer
    octet_layer_destroy(dense);
  }

  // 7. A training Linear on the gathered weight (skip_weight_allocation,
  // octet_layer_set_weight with the gathered FP8 tensor; users' ABI 1.8):
  // forward and dgrad run on exactly the gathered codes and scale, and
  // nothing quantizes the weight again. Expectations: x and dy quantized by
  // quantizers of the same recipe (the same all-reduced amaxes the layer
  // takes), then octet_gemm on the gathered tensor itself.
  {
    OK(octet_quantizer_quantize(ctx, q, shard_hp.get(), shard_q.get(), nullptr, nullptr));
    octet::Tensor gathered = make(ctx, OCTET_DTYPE_E4M3, g_size * kShardRows, kIn, OCTET_USAGE_ROWWISE);
    OK(octet_allgather(ctx, shard_q.get(), gathered.get()));
    std::vector<uint8_t> given(codes.size());
    OK(octet_tensor_copy_to_host(gathered.get(), OCTET_COMPONENT_DATA, given.data(), given.size()));
    CHECK(given == codes, "the second gather's codes differ from the first's");
    octet_linear_options tl;
    OK(octet_linear_options_init(&tl));
    tl.in_features = kIn;
    tl.out_features = g_size * kShardRows;
    tl.bias = 0;
    tl.recipe = recipe;
    tl.skip_weight_allocation = 1;
    octet_layer* trained = nullptr;
    OK(octet_layer_create_linear(ctx, &tl, &trained));
    size_t wi = 0;
    OK(octet_layer_find_parameter(trained, "weight", &wi));
    OK(octet_layer_set_weight(trained, wi, gathered.get()));
    const int64_t n_out = g_size * kShardRows;
    std::vector<float> xr(size_t(kBatch * kIn)), dyr(size_t(kBatch * n_out));
    for (size_t i = 0; i < xr.size(); ++i) xr[i] = float(int((i * 11 + size_t(g_rank) * 5) % 23) - 11) / 4.0f;
    for (size_t i = 0; i < dyr.size(); ++i) dyr[i] = float(int((i * 7 + size_t(g_rank) * 3) % 19) - 9) / 16.0f;
    octet::Tensor xt = fp32(ctx, kBatch, kIn, xr.data());
    octet::Tensor yt = make(ctx, OCTET_DTYPE_FP32, kBatch, n_out);
    octet::Tensor dyt = fp32(ctx, kBatch, n_out, dyr.data());
    octet::Tensor dxt = make(ctx, OCTET_DTYPE_FP32, kBatch, kIn);
    octet_quantizer* wq = nullptr;
    OK(octet_layer_get_quantizer(trained, 0, OCTET_ROLE_WEIGHT, &wq));
    // A quantize of W through it would record max|W| (2.75) and take the
    // scale 448 / 2.75: its amax, scale and history stay as created.
    auto quantizer_state = [&] {
      octet_quantizer_info info{};
      info.struct_size = sizeof(info);
      OK(octet_quantizer_get_info(wq, &info));
      return info;
    };
    const octet_quantizer_info created = quantizer_state();
    auto weight_quantizer_unused = [&](const char* when) {
      const octet_quantizer_info now = quantizer_state();
      CHECK(now.amax == created.amax && now.scale == created.scale && now.scale_inv == created.scale_inv &&
                now.amax != 2.75f,
            "after %s the layer's weight quantizer changed: amax %.9g scale %.9g (created: %.9g, %.9g)", when,
            double(now.amax), double(now.scale), double(created.amax), double(created.scale));
    };
    octet_communication_stats st{};
    st.struct_size = sizeof(st);
    OK(octet_context_reset_communication_stats(ctx));
    octet_saved* saved = nullptr;
    OK(octet_layer_forward(trained, xt.get(), yt.get(), 1, &saved));
    OK(octet_context_get_communication_stats(ctx, &st));
    // One amax reduced (x's); a weight quantized again would add a second.
    CHECK(st.calls[OCTET_COLLECTIVE_AMAX] == 1 && st.bytes_sent[OCTET_COLLECTIVE_AMAX] == 4,
          "forward reduced %llu amax call(s), %llu bytes: expected x's alone (1 call, 4 bytes)",
          (unsigned long long)st.calls[OCTET_COLLECTIVE_AMAX],
          (unsigned long long)st.bytes_sent[OCTET_COLLECTIVE_AMAX]);
    weight_quantizer_unused("forward");
    OK(octet_layer_backward(trained, &saved, dyt.get(), dxt.get(), 0));
    weight_quantizer_unused("backward");
    std::vector<uint8_t> still(codes.size());
    OK(octet_tensor_copy_to_host(gathered.get(), OCTET_COMPONENT_DATA, still.data(), still.size()));
    CHECK(still == codes, "forward and backward changed the given FP8 weight's codes");

    octet_gemm_options go;
    OK(octet_gemm_options_init(&go));
    octet_quantizer* qx = nullptr;
    octet_quantizer* qg = nullptr;
    OK(octet_quantizer_create(recipe, OCTET_ROLE_INPUT, &qx));
    OK(octet_quantizer_create(recipe, OCTET_ROLE_GRADIENT, &qg));
    octet::Tensor xq = make(ctx, OCTET_DTYPE_E4M3, kBatch, kIn, OCTET_USAGE_ROWWISE);
    octet::Tensor dyq = make(ctx, OCTET_DTYPE_E4M3, kBatch, n_out, OCTET_USAGE_ROWWISE);
    OK(octet_quantizer_quantize(ctx, qx, xt.get(), xq.get(), nullptr, nullptr));
    OK(octet_quantizer_quantize(ctx, qg, dyt.get(), dyq.get(), nullptr, nullptr));
    octet::Tensor y_ref = make(ctx, OCTET_DTYPE_FP32, kBatch, n_out);
    octet::Tensor dx_ref = make(ctx, OCTET_DTYPE_FP32, kBatch, kIn);
    OK(octet_gemm(ctx, xq.get(), gathered.get(), y_ref.get(), &go));  // y = x W^T (W stored [N, K])
    go.trans_b = 1;
    OK(octet_gemm(ctx, dyq.get(), gathered.get(), dx_ref.get(), &go));  // dx = dy W (W stored [K, N] for this product)
    auto same = [&](octet_tensor* got_t, octet_tensor* want_t, size_t n, const char* what) {
      std::vector<float> got(n), want(n);
      OK(octet_tensor_copy_to_host(got_t, OCTET_COMPONENT_DATA, got.data(), n * 4));
      OK(octet_tensor_copy_to_host(want_t, OCTET_COMPONENT_DATA, want.data(), n * 4));
      for (size_t i = 0; i < n; ++i)
        CHECK(std::memcmp(&got[i], &want[i], 4) == 0, "%s[%zu] = %.9g, octet_gemm on the gathered codes %.9g", what, i,
              double(got[i]), double(want[i]));
    };
    same(yt.get(), y_ref.get(), size_t(kBatch * n_out), "y");
    same(dxt.get(), dx_ref.get(), size_t(kBatch * kIn), "dx");
    octet_tensor* dw = nullptr;
    OK(octet_layer_get_gradient(trained, wi, &dw));
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    OK(octet_tensor_get_info(dw, &info));
    CHECK(info.dtype == OCTET_DTYPE_FP32 && info.shape[0] == n_out && info.shape[1] == kIn,
          "the weight gradient is %s [%lld, %lld]", octet_dtype_name(info.dtype), (long long)info.shape[0],
          (long long)info.shape[1]);

    // Refused, with the rule named: no FP8 recipe at forward; a recipe
    // whose weight role is another dtype; a block-scaled tensor.
    octet_context* single = reference_context();
    octet_linear_options nl = tl;
    nl.recipe = nullptr;
    octet_layer* plain = nullptr;
    OK(octet_layer_create_linear(single, &nl, &plain));
    octet::Tensor w_single = make(single, OCTET_DTYPE_E4M3, n_out, kIn, OCTET_USAGE_ROWWISE);
    OK(octet_layer_set_weight(plain, wi, w_single.get()));
    octet::Tensor x1 = fp32(single, kBatch, kIn, xr.data());
    octet::Tensor y1 = make(single, OCTET_DTYPE_FP32, kBatch, n_out);
    octet_status rs = octet_layer_forward(plain, x1.get(), y1.get(), 0, nullptr);
    std::string m = octet_last_error_message();
    CHECK(rs == OCTET_STATUS_INVALID_ARGUMENT && m.find("needs an FP8 recipe") != std::string::npos,
          "forward on a given FP8 weight without a recipe: %s (%s)", octet_status_name(rs), m.c_str());
    octet_current_scaling_options e5 = co;
    e5.format = OCTET_FORMAT_E5M2;
    e5.reduce_amax = 0;
    octet_recipe* r5 = nullptr;
    OK(octet_recipe_create_current(&e5, &r5));
    OK(octet_autocast_begin(single, r5));
    rs = octet_layer_forward(plain, x1.get(), y1.get(), 0, nullptr);
    m = octet_last_error_message();
    OK(octet_autocast_end(single));
    CHECK(rs == OCTET_STATUS_INVALID_ARGUMENT && m.find("weight role is") != std::string::npos,
          "forward on E4M3 codes under an E5M2 recipe: %s (%s)", octet_status_name(rs), m.c_str());
    octet_tensor_desc md{};
    md.struct_size = sizeof(md);
    md.dtype = OCTET_DTYPE_E4M3;
    md.ndim = 2;
    md.shape[0] = n_out;
    md.shape[1] = 32;
    md.usages = OCTET_USAGE_ROWWISE;
    md.scaling_mode = OCTET_SCALING_MXFP8_1X32;
    octet_tensor* mx = nullptr;
    if (octet_tensor_create(single, &md, &mx) == OCTET_STATUS_SUCCESS) {
      octet_linear_options wide = nl;
      wide.in_features = 32;
      octet_layer* wl = nullptr;
      OK(octet_layer_create_linear(single, &wide, &wl));
      rs = octet_layer_set_weight(wl, wi, mx);
      m = octet_last_error_message();
      CHECK(rs == OCTET_STATUS_INVALID_ARGUMENT && m.find("per-tensor") != std::string::npos,
            "set_weight with an MXFP8 tensor: %s (%s)", octet_status_name(rs), m.c_str());
      octet_layer_destroy(wl);
      octet_tensor_destroy(mx);
    }
    for (octet::Tensor* t : {&x1, &y1, &w_single}) *t = octet::Tensor();  // before the context
    octet_recipe_destroy(r5);
    octet_layer_destroy(plain);
    octet_context_destroy(single);
    for (octet::Tensor* t : {&gathered, &xt, &yt, &dyt, &dxt, &xq, &dyq, &y_ref, &dx_ref})
      *t = octet::Tensor();  // before the layer
    octet_quantizer_destroy(qx);
    octet_quantizer_destroy(qg);
    octet_layer_destroy(trained);
  }

  octet_quantizer_destroy(q_local);
  octet_recipe_destroy(local);
  w_all = octet::Tensor();
  octet_layer_destroy(whole);
  octet_context_destroy(alone);
  octet_layer_destroy(layer);
  shard_q = octet::Tensor();
  shard_hp = octet::Tensor();
  octet_quantizer_destroy(q);
  octet_context_destroy(ctx);
  octet_recipe_destroy(recipe);
  octet_mpi_communicator_destroy(&comm);

  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %d check(s) failed over %d ranks\n", failures ? "FAILED" : "PASSED", failures, g_size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
