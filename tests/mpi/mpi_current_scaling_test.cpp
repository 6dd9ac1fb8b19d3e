// Current scaling with reduce_amax across real processes, through layers
// (docs/recipes.md, "Current scaling across processes"), on as many ranks as
// mpiexec starts (ctest: 2 and 4).
//
// Every rank holds different data (a rank-dependent peak in the input, the
// weight and dy) under liboctet_mpi's communicator, wrapped to count the
// allreduce_max calls. After a Linear's forward and backward, every rank's
// input, weight and gradient quantizers must hold the same scale, equal to
// fp8_max over the maximum over ranks of that tensor's amax, computed by the
// test from every rank's data (numerics.md 14.1: fp8_max / amax, epsilon 0,
// no power of two); and the scale a rank's own data alone would give must
// differ on some rank (else the check proves nothing). A LayerNormMLP's
// quantizers must hold bit-identical scales on every rank (gathered and
// compared). The call counts: Linear forward one call of count 2, backward
// one of count 1; LayerNormMLP forward counts 3 then 1, backward 1 and 1.
#include <mpi.h>
#include <octet/octet.h>
#include <octet/octet_mpi.h>

#include "mpi_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// liboctet_mpi's communicator with allreduce_max counted.
struct Counting {
  octet_communicator inner;
  std::vector<size_t> counts;
};

octet_status counting_allreduce_max(float* values, size_t count, void* user_data) {
  auto* c = static_cast<Counting*>(user_data);
  c->counts.push_back(count);
  return c->inner.allreduce_max(values, count, c->inner.user_data);
}

// Rank `rank`'s tensor `tag`: values in (-1, 1) plus one element of
// magnitude 2 + 3 * ((rank + tag) % size) + rank / 8 + tag / 64, so the
// largest rank changes with the tag, every rank's peak differs, and so do
// the global amaxes of different tensors (a scale taken from another
// tensor's amax is caught).
std::vector<float> data(int rank, int tag, size_t n) {
  std::vector<float> v(n);
  uint32_t s = 777u + uint32_t(rank) * 7919u + uint32_t(tag) * 104729u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(int(s >> 8) % 2001 - 1000) / 1024.0f;
  }
  const float peak = 2.0f + 3.0f * float((rank + tag) % g_size) + float(rank) / 8.0f + float(tag) / 64.0f;
  v[(size_t(tag) * 5 + size_t(rank)) % n] = (rank + tag) % 2 ? -peak : peak;
  return v;
}

float amax(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

float global_amax(int tag, size_t n) {
  float m = 0.0f;
  for (int r = 0; r < g_size; ++r) m = std::max(m, amax(data(r, tag, n)));
  return m;
}

octet::Tensor fp32(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& v) {
  octet::Tensor t = make_tensor(ctx, OCTET_DTYPE_FP32, {rows, cols});
  if (!v.empty()) OK(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
  return t;
}

float scale_of(octet_layer* layer, size_t linear, int32_t role) {
  octet_quantizer* q = nullptr;
  OK(octet_layer_get_quantizer(layer, linear, role, &q));
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  OK(octet_quantizer_get_info(q, &info));
  return info.scale;
}

// Sets every parameter of `layer` from data(rank, tag0 + i, n).
void fill(octet_layer* layer, int tag0) {
  size_t count = 0;
  OK(octet_layer_parameter_count(layer, &count));
  for (size_t i = 0; i < count; ++i) {
    octet_tensor* p = nullptr;
    OK(octet_layer_get_parameter(layer, i, &p));
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    OK(octet_tensor_get_info(p, &info));
    size_t n = 1;
    for (int32_t d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
    const std::vector<float> v = data(g_rank, tag0 + int(i), n);
    OK(octet_tensor_copy_from_host(p, OCTET_COMPONENT_DATA, v.data(), n * 4));
  }
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Gathers `mine` from every rank and checks they are bit-identical.
void check_identical(const std::vector<float>& mine, const char* what) {
  std::vector<uint32_t> b(mine.size()), all(mine.size() * size_t(g_size));
  for (size_t i = 0; i < mine.size(); ++i) b[i] = bits(mine[i]);
  MPI_Allgather(b.data(), int(b.size()), MPI_UINT32_T, all.data(), int(b.size()), MPI_UINT32_T, MPI_COMM_WORLD);
  for (int r = 0; r < g_size; ++r)
    for (size_t i = 0; i < b.size(); ++i)
      CHECK(all[size_t(r) * b.size() + i] == b[i], "%s: rank %d's scale %zu differs", what, r, i);
}

void test_linear(octet_context* ctx, Counting& counting, const octet_recipe* recipe) {
  const int64_t rows = 4, in = 8, out = 6;
  octet_linear_options lo;
  OK(octet_linear_options_init(&lo));
  lo.in_features = in;
  lo.out_features = out;
  lo.bias = 0;
  lo.recipe = recipe;
  octet_layer* layer = nullptr;
  OK(octet_layer_create_linear(ctx, &lo, &layer));
  fill(layer, 10);  // the weight: tag 10
  const size_t nx = size_t(rows * in), nw = size_t(out * in), ny = size_t(rows * out);
  octet::Tensor x = fp32(ctx, rows, in, data(g_rank, 20, nx));
  octet::Tensor y = fp32(ctx, rows, out, {});
  octet::Tensor dy = fp32(ctx, rows, out, data(g_rank, 30, ny));
  octet::Tensor dx = fp32(ctx, rows, in, {});

  counting.counts.clear();
  octet_saved* saved = nullptr;
  OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
  CHECK(counting.counts == std::vector<size_t>{2u}, "Linear forward: %zu calls, the first of count %zu",
        counting.counts.size(), counting.counts.empty() ? size_t(0) : counting.counts[0]);
  OK(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0));
  CHECK((counting.counts == std::vector<size_t>{2u, 1u}), "Linear backward: %zu calls in all", counting.counts.size());

  const struct {
    int32_t role;
    int tag;
    size_t n;
    float fp8_max;
  } expected[3] = {{OCTET_ROLE_INPUT, 20, nx, 448.0f},
                   {OCTET_ROLE_WEIGHT, 10, nw, 448.0f},
                   {OCTET_ROLE_GRADIENT, 30, ny, 57344.0f}};  // HYBRID
  CHECK(global_amax(20, nx) != global_amax(10, nw) && global_amax(10, nw) != global_amax(30, ny),
        "test data: the tensors' global amaxes coincide");
  std::vector<float> mine;
  int local_differs = 0;
  for (const auto& e : expected) {
    const float want = e.fp8_max / global_amax(e.tag, e.n);
    const float got = scale_of(layer, 0, e.role);
    CHECK(got == want, "Linear role %d: scale %.9g, expected fp8_max / global amax = %.9g", e.role, double(got),
          double(want));
    if (e.fp8_max / amax(data(g_rank, e.tag, e.n)) != want) ++local_differs;
    mine.push_back(got);
  }
  check_identical(mine, "Linear");
  int any = 0;
  MPI_Allreduce(&local_differs, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(any > 0, "test data: every rank's own amaxes give the global scale");

  for (octet::Tensor* t : {&x, &y, &dy, &dx}) *t = octet::Tensor();  // before the layer
  octet_layer_destroy(layer);
}

void test_mlp(octet_context* ctx, Counting& counting, const octet_recipe* recipe) {
  const int64_t rows = 4, hidden = 8, ffn = 16;
  octet_linear_options lo;
  OK(octet_linear_options_init(&lo));
  lo.in_features = hidden;
  lo.recipe = recipe;
  octet_layernorm_mlp_options mo;
  OK(octet_layernorm_mlp_options_init(&mo));
  mo.linear = &lo;
  mo.ffn_features = ffn;
  octet_layer* layer = nullptr;
  OK(octet_layer_create_layernorm_mlp(ctx, &mo, &layer));
  fill(layer, 40);
  const size_t n = size_t(rows * hidden);
  octet::Tensor x = fp32(ctx, rows, hidden, data(g_rank, 60, n));
  octet::Tensor y = fp32(ctx, rows, hidden, {});
  octet::Tensor dy = fp32(ctx, rows, hidden, data(g_rank, 61, n));
  octet::Tensor dx = fp32(ctx, rows, hidden, {});
  counting.counts.clear();
  octet_saved* saved = nullptr;
  OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
  CHECK((counting.counts == std::vector<size_t>{3u, 1u}), "LayerNormMLP forward: %zu calls", counting.counts.size());
  OK(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0));
  CHECK((counting.counts == std::vector<size_t>{3u, 1u, 1u, 1u}), "LayerNormMLP backward: %zu calls in all",
        counting.counts.size());
  std::vector<float> mine;
  for (size_t linear = 0; linear < 2; ++linear)
    for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT})
      mine.push_back(scale_of(layer, linear, role));
  check_identical(mine, "LayerNormMLP");
  // The weights' scales are known without the layer's arithmetic.
  size_t w1 = 0, w2 = 0;
  OK(octet_layer_find_parameter(layer, "fc1_weight", &w1));
  OK(octet_layer_find_parameter(layer, "fc2_weight", &w2));
  CHECK(mine[1] == 448.0f / global_amax(40 + int(w1), size_t(ffn * hidden)), "FC1 weight scale %.9g", double(mine[1]));
  CHECK(mine[4] == 448.0f / global_amax(40 + int(w2), size_t(ffn * hidden)), "FC2 weight scale %.9g", double(mine[4]));
  for (octet::Tensor* t : {&x, &y, &dy, &dx}) *t = octet::Tensor();  // before the layer
  octet_layer_destroy(layer);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  Counting counting;
  OK(octet_mpi_communicator_init(MPI_COMM_WORLD, &counting.inner));
  octet_communicator comm = counting.inner;
  comm.allreduce_max = counting_allreduce_max;
  comm.user_data = &counting;
  // The collectives keep liboctet_mpi's state as their user_data: only
  // allreduce_max is wrapped here, and these tests call no collective.
  comm.allreduce = nullptr;
  comm.allgather = nullptr;
  comm.reduce_scatter = nullptr;
  comm.wait = nullptr;

  octet_current_scaling_options co;
  OK(octet_current_scaling_options_init(&co));
  co.format = OCTET_FORMAT_HYBRID;
  co.reduce_amax = 1;
  octet_recipe* recipe = nullptr;
  OK(octet_recipe_create_current(&co, &recipe));

  for (const char* backend : {"reference", "cpu"}) {
    octet_context_options opts;
    OK(octet_context_options_init(&opts));
    opts.backend = backend;
    octet_context* ctx = nullptr;
    const octet_status s = octet_context_create(&opts, &ctx);
    int here = s == OCTET_STATUS_SUCCESS, everywhere = 0;
    MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {  // a backend that is not built: skipped on every rank alike
      if (ctx) octet_context_destroy(ctx);
      if (g_rank == 0) std::printf("backend %s: not available, skipped\n", backend);
      continue;
    }
    OK(octet_context_set_communicator(ctx, &comm));
    test_linear(ctx, counting, recipe);
    test_mlp(ctx, counting, recipe);
    octet_context_destroy(ctx);
    if (g_rank == 0) std::printf("backend %s: checked\n", backend);
  }

  octet_recipe_destroy(recipe);
  octet_mpi_communicator_destroy(&counting.inner);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %d check(s) failed over %d ranks\n", failures ? "FAILED" : "PASSED", failures, g_size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
