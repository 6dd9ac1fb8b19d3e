// Delayed scaling across processes with a real MPI communicator.
//
// Every rank quantizes different data under delayed-scaling autocast scopes
// (sequential steps, some nested). The context's communicator all-reduces
// (MAX) the amaxes with MPI_Allreduce at the end of each outermost scope.
// After each step every rank checks, against the delayed-scaling rule of
// docs/numerics.md 14.2 re-implemented here:
//  - quantizers whose recipe has reduce_amax = 1 hold the scale computed
//    from the GLOBAL amax history (max over ranks, then max over the window),
//    and all ranks hold bit-identical scales (gathered and compared);
//  - quantizers with reduce_amax = 0 hold the scale from their LOCAL history,
//    and ranks differ exactly where their local windows differ.
// Then current scaling with and without reduce_amax: each quantize's scale
// is fp8_max over the global (resp. local) amax of that very tensor.
// Each rank generates every rank's data deterministically, so expectations
// need no communication. Exit status 0 on every rank means success.
#include <mpi.h>
#include <octet/octet.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0;
int g_failures = 0;

#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      ++g_failures;                                                      \
      std::fprintf(stderr, "[rank %d] %s:%d: CHECK(%s) failed: ", g_rank, \
                   __FILE__, __LINE__, #cond);                           \
      std::fprintf(stderr, __VA_ARGS__);                                 \
      std::fprintf(stderr, "\n");                                        \
    }                                                                    \
  } while (0)

#define OK(call)                                                                      \
  do {                                                                                \
    octet_status s_ = (call);                                                         \
    if (s_ != OCTET_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "[rank %d] %s:%d: %s -> %s: %s\n", g_rank, __FILE__,      \
                   __LINE__, #call, octet_status_name(s_), octet_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                   \
    }                                                                                 \
  } while (0)

// The communicator: MPI_Allreduce(MAX) in place over the float array.
struct MpiWorld {
  MPI_Comm comm;
  std::vector<size_t> counts;  // count of every call, for the checks
};

octet_status mpi_allreduce_max(float* values, size_t count, void* user_data) {
  auto* world = static_cast<MpiWorld*>(user_data);
  world->counts.push_back(count);
  if (count > size_t(INT_MAX)) return OCTET_STATUS_INVALID_ARGUMENT;
  int rc = MPI_Allreduce(MPI_IN_PLACE, values, int(count), MPI_FLOAT, MPI_MAX, world->comm);
  return rc == MPI_SUCCESS ? OCTET_STATUS_SUCCESS : OCTET_STATUS_BACKEND_ERROR;
}

constexpr int kHistory = 3;
constexpr int kSteps = 6;
constexpr int kRows = 4, kCols = 8;

// The amax rank `rank` sees for quantizer `j` at `step`: exactly
// representable, and which rank is larger changes from step to step.
float peak(int rank, int step, int j) {
  const int k = (rank * 7 + step * 5 + j * 3) % 13;
  return 0.5f + 0.75f * float(k) + (rank == (step + j) % 2 ? 16.0f * float(step % 3) : 0.0f);
}

// The tensor quantized: one element is +-peak, the others smaller.
std::vector<float> data(int rank, int step, int j) {
  const float p = peak(rank, step, j);
  std::vector<float> x(kRows * kCols);
  uint32_t state = 12345u + uint32_t(rank) * 1000003u + uint32_t(step) * 7919u + uint32_t(j) * 104729u;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = p * (float(state >> 8) / float(1 << 24) - 0.5f) * 0.9f;  // |v| < 0.45 p
  }
  x[size_t((step * 3 + j) % int(x.size()))] = (step + rank) % 2 ? -p : p;
  return x;
}

// numerics.md 14.2, MAX over the window of the last kHistory step amaxes,
// margin 0, interval 1: fp8_max / amax. Scale 1 before any update.
float rule(const std::vector<float>& step_amaxes, float fp8_max) {
  if (step_amaxes.empty()) return 1.0f;
  float amax = 0.0f;
  const size_t n = step_amaxes.size();
  for (size_t i = n - std::min(n, size_t(kHistory)); i < n; ++i) amax = std::max(amax, step_amaxes[i]);
  if (!(amax > 0.0f)) return 1.0f;
  return fp8_max / amax;
}

octet_recipe* make_recipe(int reduce_amax) {
  octet_delayed_scaling_options o;
  OK(octet_delayed_scaling_options_init(&o));
  o.format = OCTET_FORMAT_HYBRID;
  o.amax_history_len = kHistory;
  o.amax_compute_algo = OCTET_AMAX_MAX;
  o.reduce_amax = reduce_amax;
  octet_recipe* r = nullptr;
  OK(octet_recipe_create_delayed(&o, &r));
  return r;
}

struct Tracked {
  octet_quantizer* q = nullptr;
  int32_t role = OCTET_ROLE_INPUT;
  bool reduced = true;
  int32_t dtype() const { return role == OCTET_ROLE_GRADIENT ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3; }  // HYBRID
  float fp8_max() const { return role == OCTET_ROLE_GRADIENT ? 57344.0f : 448.0f; }
  std::vector<float> expected_amaxes;  // per step: global max (reduced) or local
};

// A kRows x kCols tensor through octet::Tensor::create; a failure aborts
// the job as OK does.
octet::Tensor tensor(octet_context* ctx, int32_t dtype, uint32_t usages) {
  try {
    return octet::Tensor::create(ctx, dtype, {kRows, kCols}, usages);
  } catch (const octet::Error& e) {
    std::fprintf(stderr, "[rank %d] %s:%d: octet::Tensor::create -> %s\n", g_rank, __FILE__, __LINE__, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return octet::Tensor();
}

float quantize(octet_context* ctx, Tracked& t, const std::vector<float>& x) {
  octet::Tensor in = tensor(ctx, OCTET_DTYPE_FP32, 0);
  OK(octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * sizeof(float)));
  octet::Tensor out = tensor(ctx, t.dtype(), OCTET_USAGE_ROWWISE);
  OK(octet_quantizer_quantize(ctx, t.q, in.get(), out.get(), nullptr, nullptr));
  float scale_used = 0.0f;
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_SCALE, &scale_used, sizeof(scale_used)));
  return scale_used;
}

octet_quantizer_info info_of(const octet_quantizer* q) {
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  OK(octet_quantizer_get_info(q, &info));
  return info;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    std::fprintf(stderr, "run with at least 2 ranks (mpiexec -np 2); got %d\n", size);
    MPI_Finalize();
    return 1;
  }

  octet_context_options co;
  OK(octet_context_options_init(&co));
  co.backend = "reference";
  octet_context* ctx = nullptr;
  OK(octet_context_create(&co, &ctx));
  MpiWorld world{MPI_COMM_WORLD, {}};
  octet_communicator comm{};
  comm.struct_size = sizeof(comm);
  comm.allreduce_max = mpi_allreduce_max;
  comm.user_data = &world;
  OK(octet_context_set_communicator(ctx, &comm));

  octet_recipe* reduced = make_recipe(1);
  octet_recipe* local = make_recipe(0);
  // Quantizers 0-2 (input, weight, gradient) with reduce_amax = 1, 3-4
  // (input, gradient) with reduce_amax = 0, and 5: no recipe of its own, it
  // follows the scope in effect (an inner scope with the reduced recipe).
  std::vector<Tracked> qs(6);
  const int32_t roles[6] = {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT,
                            OCTET_ROLE_INPUT, OCTET_ROLE_GRADIENT, OCTET_ROLE_WEIGHT};
  for (int j = 0; j < 6; ++j) {
    qs[j].role = roles[j];
    qs[j].reduced = j < 3 || j == 5;
    OK(octet_quantizer_create(j < 3 ? reduced : (j < 5 ? local : nullptr), roles[j], &qs[j].q));
  }

  size_t expected_calls = 0;
  for (int step = 0; step < kSteps; ++step) {
    const bool nested = step % 2 == 1;
    OK(octet_autocast_begin(ctx, local));  // outer scope: its recipe is not used by 0-4
    for (int j = 0; j < 5; ++j) {
      const float used = quantize(ctx, qs[j], data(g_rank, step, j));
      CHECK(used == rule(qs[j].expected_amaxes, qs[j].fp8_max()), "step %d quantizer %d used scale %.9g", step, j,
            double(used));
    }
    if (nested) {
      OK(octet_autocast_begin(ctx, reduced));  // inner scope wins for quantizer 5
      const float used = quantize(ctx, qs[5], data(g_rank, step, 5));
      CHECK(used == rule(qs[5].expected_amaxes, qs[5].fp8_max()), "step %d quantizer 5 used scale %.9g", step,
            double(used));
      OK(octet_autocast_end(ctx));
      CHECK(world.counts.size() == expected_calls, "an inner scope's end must not reduce (step %d)", step);
    }
    OK(octet_autocast_end(ctx));
    ++expected_calls;

    // The test's own expectation of this step's amax per quantizer.
    for (int j = 0; j < 6; ++j) {
      if (j == 5 && !nested) continue;  // not used this step: no update
      float a = peak(g_rank, step, j);
      if (qs[j].reduced)
        for (int r = 0; r < size; ++r) a = std::max(a, peak(r, step, j));
      qs[j].expected_amaxes.push_back(a);
    }
    CHECK(world.counts.size() == expected_calls, "step %d: %zu communicator calls, expected %zu", step,
          world.counts.size(), expected_calls);
    if (!world.counts.empty())
      CHECK(world.counts.back() == size_t(nested ? 4 : 3), "step %d: reduced %zu amaxes", step, world.counts.back());

    // Scales against the rule, and across ranks.
    std::vector<uint32_t> mine(6), all(6 * size_t(size));
    for (int j = 0; j < 6; ++j) {
      octet_quantizer_info info = info_of(qs[j].q);
      const float want = rule(qs[j].expected_amaxes, qs[j].fp8_max());
      CHECK(info.scale == want, "step %d quantizer %d: scale %.9g, expected %.9g", step, j, double(info.scale),
            double(want));
      CHECK(info.scale_inv == 1.0f / want, "step %d quantizer %d: scale_inv %.9g", step, j, double(info.scale_inv));
      CHECK(info.update_count == qs[j].expected_amaxes.size(), "step %d quantizer %d: update_count %llu", step, j,
            (unsigned long long)info.update_count);
      mine[j] = bits(info.scale);
    }
    MPI_Allgather(mine.data(), 6, MPI_UINT32_T, all.data(), 6, MPI_UINT32_T, MPI_COMM_WORLD);
    for (int j = 0; j < 6; ++j) {
      for (int r = 0; r < size; ++r) {
        if (qs[j].reduced) {
          CHECK(all[size_t(r) * 6 + j] == mine[j], "step %d quantizer %d: rank %d holds another scale", step, j, r);
        } else {
          // Local: rank r's scale is the rule over rank r's own amaxes.
          std::vector<float> theirs;
          for (int s = 0; s <= step; ++s) theirs.push_back(peak(r, s, j));
          CHECK(all[size_t(r) * 6 + j] == bits(rule(theirs, qs[j].fp8_max())),
                "step %d quantizer %d: rank %d's local scale", step, j, r);
        }
      }
    }
  }

  // The data was chosen so that the local windows of ranks 0 and 1 differ
  // at the end: reduce_amax = 0 really kept the ranks apart...
  for (int j = 3; j < 5; ++j) {
    std::vector<float> r0, r1;
    for (int s = 0; s < kSteps; ++s) {
      r0.push_back(peak(0, s, j));
      r1.push_back(peak(1, s, j));
    }
    CHECK(rule(r0, qs[j].fp8_max()) != rule(r1, qs[j].fp8_max()), "test data: local scales of quantizer %d agree", j);
    // ...and the reduced scale would differ from the local one on some rank.
    std::vector<float> global;
    for (int s = 0; s < kSteps; ++s) global.push_back(std::max(r0[size_t(s)], r1[size_t(s)]));
    CHECK(rule(global, qs[j].fp8_max()) != rule(g_rank == 0 ? r0 : r1, qs[j].fp8_max()) ||
              rule(global, qs[j].fp8_max()) != rule(g_rank == 0 ? r1 : r0, qs[j].fp8_max()),
          "test data: quantizer %d does not distinguish local from global", j);
  }
  // Also with reduced quantizers, a rank's local amaxes alone would have given
  // another scale (else the identical-scale check proves nothing).
  int distinguishes = 0;
  for (int j = 0; j < 3; ++j) {
    std::vector<float> own;
    for (int s = 0; s < kSteps; ++s) own.push_back(peak(g_rank, s, j));
    if (rule(own, qs[j].fp8_max()) != info_of(qs[j].q).scale) ++distinguishes;
  }
  int any = 0;
  MPI_Allreduce(&distinguishes, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(any > 0, "test data: no reduced quantizer's scale depends on another rank");

  // A scope using only reduce_amax = 0 quantizers makes no communicator call.
  const size_t before = world.counts.size();
  OK(octet_autocast_begin(ctx, local));
  quantize(ctx, qs[3], data(g_rank, kSteps, 3));
  OK(octet_autocast_end(ctx));
  CHECK(world.counts.size() == before, "a scope without reduced quantizers called the communicator");

  // Current scaling with reduce_amax = 1 (docs/recipes.md, "Current scaling
  // across processes"): each quantize all-reduces this tensor's amax, so
  // every rank quantizes with fp8_max / (max over ranks); with 0, its own.
  for (int reduce = 0; reduce <= 1; ++reduce) {
    octet_current_scaling_options cu;
    OK(octet_current_scaling_options_init(&cu));
    cu.format = OCTET_FORMAT_HYBRID;
    cu.reduce_amax = reduce;
    octet_recipe* current = nullptr;
    OK(octet_recipe_create_current(&cu, &current));
    Tracked t;
    t.role = OCTET_ROLE_GRADIENT;
    OK(octet_quantizer_create(current, t.role, &t.q));
    for (int step = 0; step < kSteps; ++step) {
      const size_t calls_before = world.counts.size();
      const float used = quantize(ctx, t, data(g_rank, step, 7));
      float global = 0.0f;
      for (int r = 0; r < size; ++r) global = std::max(global, peak(r, step, 7));
      const float want = t.fp8_max() / (reduce ? global : peak(g_rank, step, 7));
      CHECK(used == want, "current, reduce_amax %d, step %d: scale %.9g, expected %.9g", reduce, step,
            double(used), double(want));
      CHECK(world.counts.size() == calls_before + size_t(reduce), "current, reduce_amax %d: %zu calls", reduce,
            world.counts.size() - calls_before);
      if (reduce) CHECK(world.counts.back() == 1u, "current: reduced %zu amaxes in one call", world.counts.back());
      const uint32_t mine = bits(used);
      std::vector<uint32_t> all(static_cast<size_t>(size));
      MPI_Allgather(&mine, 1, MPI_UINT32_T, all.data(), 1, MPI_UINT32_T, MPI_COMM_WORLD);
      for (int r = 0; r < size; ++r) {
        const uint32_t theirs = bits(t.fp8_max() / (reduce ? global : peak(r, step, 7)));
        CHECK(all[size_t(r)] == theirs, "current, reduce_amax %d, step %d: rank %d's scale", reduce, step, r);
      }
      CHECK(bits(info_of(t.q).amax) == bits(reduce ? global : peak(g_rank, step, 7)),
            "current, reduce_amax %d, step %d: recorded amax %.9g", reduce, step, double(info_of(t.q).amax));
    }
    octet_quantizer_destroy(t.q);
    octet_recipe_destroy(current);
  }
  // The data tells local from global: on some step the ranks' peaks differ.
  bool differ = false;
  for (int step = 0; step < kSteps; ++step) differ = differ || peak(0, step, 7) != peak(1, step, 7);
  CHECK(differ, "test data: the ranks' peaks of tensor 7 never differ");

  for (Tracked& t : qs) octet_quantizer_destroy(t.q);
  octet_recipe_destroy(reduced);
  octet_recipe_destroy(local);
  octet_context_destroy(ctx);

  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %d check(s) failed over %d ranks, %d steps\n", failures ? "FAILED" : "PASSED", failures, size,
                kSteps);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
