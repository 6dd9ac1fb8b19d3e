// Collectives on tensors (octet_allreduce, octet_allgather,
// octet_reduce_scatter) through liboctet_mpi's communicator, on as many
// ranks as mpiexec starts (ctest: 2 and 4).
//
// Every rank generates every rank's data from a seeded generator, so each
// result is checked against the test's own computation with no
// communication: sums of multiples of 1/8 below 32 in magnitude, which FP32,
// BF16 and FP16 hold exactly whatever the order of the additions, maxima,
// concatenations. Then the error cases: no communicator, a users' ABI 1.6
// communicator, bad communicator fields, mismatched shapes and dtypes, FP8
// reductions, ranks that quantized with different scales, and a
// communicator whose start or wait fails. Exit status 0 on every rank means
// success.
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

// Expects `status` and a message containing `words`.
#define EXPECT_FAIL(call, status, words)                                                                          \
  do {                                                                                                            \
    octet_status s_ = (call);                                                                                     \
    const std::string m_ = octet_last_error_message();                                                            \
    CHECK(s_ == (status) && m_.find(words) != std::string::npos, "%s -> %s (%s), expected %s with \"%s\"", #call, \
          octet_status_name(s_), m_.c_str(), octet_status_name(status), words);                                   \
  } while (0)

// Rank `rank`'s value i of tensor `tag`: k/8 with k in [-64, 64].
float value(int rank, int tag, size_t i) {
  uint32_t s = 2166136261u ^ (uint32_t(rank) * 16777619u) ^ (uint32_t(tag) * 2654435761u) ^ uint32_t(i) * 40503u;
  for (int round = 0; round < 3; ++round) s = s * 1664525u + 1013904223u;
  return float(int((s >> 9) % 129u) - 64) / 8.0f;
}

std::vector<float> values(int rank, int tag, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(rank, tag, i);
  return v;
}

octet::Tensor make(octet_context* ctx, int32_t dtype, std::vector<int64_t> shape, uint32_t usages = 0) {
  return make_tensor(ctx, dtype, shape, usages);
}

size_t numel(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

// Writes FP32 values into a tensor of dtype FP32, BF16 or FP16.
void put(octet_tensor* t, int32_t dtype, const std::vector<float>& v) {
  if (dtype == OCTET_DTYPE_FP32) {
    OK(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
    return;
  }
  std::vector<uint16_t> codes(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    codes[i] = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(v[i]) : octet_fp16_encode(v[i]);
  OK(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, codes.data(), codes.size() * 2));
}

std::vector<float> get(const octet_tensor* t, int32_t dtype, size_t n) {
  std::vector<float> v(n);
  if (dtype == OCTET_DTYPE_FP32) {
    OK(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, v.data(), n * 4));
    return v;
  }
  std::vector<uint16_t> codes(n);
  OK(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, codes.data(), n * 2));
  for (size_t i = 0; i < n; ++i)
    v[i] = dtype == OCTET_DTYPE_BF16 ? octet_bf16_decode(codes[i]) : octet_fp16_decode(codes[i]);
  return v;
}

const int32_t kReducible[3] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};

void test_allreduce(octet_context* ctx) {
  const std::vector<int64_t> shape = {3, 5, 2};
  const size_t n = numel(shape);
  int tag = 100;
  for (int32_t dtype : kReducible) {
    for (int32_t op : {OCTET_REDUCE_SUM, OCTET_REDUCE_MAX}) {
      for (int in_place = 0; in_place <= 1; ++in_place, ++tag) {
        octet::Tensor in_tensor = make(ctx, dtype, shape);
        octet::Tensor out_tensor = in_place ? octet::Tensor() : make(ctx, dtype, shape);
        octet_tensor* in = in_tensor.get();
        octet_tensor* out = in_place ? in : out_tensor.get();
        put(in, dtype, values(g_rank, tag, n));
        OK(octet_allreduce(ctx, in, out, op));
        const std::vector<float> got = get(out, dtype, n);
        for (size_t i = 0; i < n; ++i) {
          float want = op == OCTET_REDUCE_SUM ? 0.0f : -INFINITY;
          for (int r = 0; r < g_size; ++r)
            want = op == OCTET_REDUCE_SUM ? want + value(r, tag, i) : std::max(want, value(r, tag, i));
          CHECK(got[i] == want, "allreduce %s op %d in_place %d [%zu]: %g, expected %g", octet_dtype_name(dtype), op,
                in_place, i, double(got[i]), double(want));
        }
        if (!in_place) {  // the input is left as it was
          const std::vector<float> kept = get(in, dtype, n), mine = values(g_rank, tag, n);
          CHECK(kept == mine, "allreduce %s: the input changed", octet_dtype_name(dtype));
          out_tensor = octet::Tensor();
        }
        in_tensor = octet::Tensor();
      }
    }
  }
}

void test_reduce_scatter(octet_context* ctx) {
  const int64_t rows = 3, cols = 4;
  int tag = 200;
  for (int32_t dtype : kReducible) {
    for (int32_t op : {OCTET_REDUCE_SUM, OCTET_REDUCE_MAX}) {
      const size_t n_in = size_t(g_size * rows * cols), n_out = size_t(rows * cols);
      octet::Tensor in = make(ctx, dtype, {g_size * rows, cols});
      octet::Tensor out = make(ctx, dtype, {rows, cols});
      put(in.get(), dtype, values(g_rank, tag, n_in));
      OK(octet_reduce_scatter(ctx, in.get(), out.get(), op));
      const std::vector<float> got = get(out.get(), dtype, n_out);
      for (size_t i = 0; i < n_out; ++i) {
        const size_t at = size_t(g_rank) * n_out + i;  // this rank's rows of every rank's input
        float want = op == OCTET_REDUCE_SUM ? 0.0f : -INFINITY;
        for (int r = 0; r < g_size; ++r)
          want = op == OCTET_REDUCE_SUM ? want + value(r, tag, at) : std::max(want, value(r, tag, at));
        CHECK(got[i] == want, "reduce_scatter %s op %d [%zu]: %g, expected %g", octet_dtype_name(dtype), op, i,
              double(got[i]), double(want));
      }
      in = octet::Tensor();
      out = octet::Tensor();
      ++tag;
    }
  }
}

void test_allgather_plain(octet_context* ctx) {
  const int64_t rows = 2, cols = 3;
  int tag = 300;
  for (int32_t dtype : kReducible) {
    const size_t n = size_t(rows * cols);
    octet::Tensor in = make(ctx, dtype, {rows, 1, cols});
    octet::Tensor out = make(ctx, dtype, {g_size * rows, 1, cols});
    put(in.get(), dtype, values(g_rank, tag, n));
    OK(octet_allgather(ctx, in.get(), out.get()));
    const std::vector<float> got = get(out.get(), dtype, n * size_t(g_size));
    for (int r = 0; r < g_size; ++r)
      for (size_t i = 0; i < n; ++i)
        CHECK(got[size_t(r) * n + i] == value(r, tag, i), "allgather %s: rank %d's element %zu is %g",
              octet_dtype_name(dtype), r, i, double(got[size_t(r) * n + i]));
    in = octet::Tensor();
    out = octet::Tensor();
    ++tag;
  }
  // Plain FP8 codes (usages 0): bytes, every code value.
  const size_t n = 64;
  octet::Tensor in = make(ctx, OCTET_DTYPE_E5M2, {4, 16});
  octet::Tensor out = make(ctx, OCTET_DTYPE_E5M2, {4 * g_size, 16});
  std::vector<uint8_t> codes(n);
  for (size_t i = 0; i < n; ++i) codes[i] = uint8_t(i * 4 + size_t(g_rank));
  OK(octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, codes.data(), n));
  OK(octet_allgather(ctx, in.get(), out.get()));
  std::vector<uint8_t> got(n * size_t(g_size));
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_DATA, got.data(), got.size()));
  for (int r = 0; r < g_size; ++r)
    for (size_t i = 0; i < n; ++i)
      CHECK(got[size_t(r) * n + i] == uint8_t(i * 4 + size_t(r)), "allgather E5M2 codes: rank %d's code %zu", r, i);
  in = octet::Tensor();
  out = octet::Tensor();
}

// A shard quantized with `scale` (written by the caller).
octet::Tensor quantized_shard(octet_context* ctx, const std::vector<float>& x, int64_t rows, int64_t cols, float scale,
                              int32_t dtype = OCTET_DTYPE_E4M3) {
  octet::Tensor hp = make(ctx, OCTET_DTYPE_FP32, {rows, cols});
  OK(octet_tensor_copy_from_host(hp.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4));
  octet::Tensor q = make(ctx, dtype, {rows, cols}, OCTET_USAGE_ROWWISE);
  OK(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale));
  octet_quantize_options o;
  OK(octet_quantize_options_init(&o));
  o.usages = OCTET_USAGE_ROWWISE;
  OK(octet_quantize(ctx, hp.get(), q.get(), &o));
  hp = octet::Tensor();
  return q;
}

// An FP8 all-gather in `dtype` (OCP or FNUZ: the codes travel as bytes).
void test_allgather_quantized_in(octet_context* ctx, int32_t dtype) {
  const int64_t rows = 4, cols = 8;
  const size_t n = size_t(rows * cols);
  const int tag = 400;
  const float scale = 16.0f;  // the same on every rank
  octet::Tensor q = quantized_shard(ctx, values(g_rank, tag, n), rows, cols, scale, dtype);
  octet::Tensor out = make(ctx, dtype, {g_size * rows, cols}, OCTET_USAGE_ROWWISE);
  OK(octet_allgather(ctx, q.get(), out.get()));
  std::vector<uint8_t> codes(n * size_t(g_size));
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_DATA, codes.data(), codes.size()));
  float scalars[3];
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_SCALE, &scalars[0], 4));
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_SCALE_INV, &scalars[1], 4));
  OK(octet_tensor_copy_to_host(out.get(), OCTET_COMPONENT_AMAX, &scalars[2], 4));
  float global_amax = 0.0f;
  for (int r = 0; r < g_size; ++r)
    for (size_t i = 0; i < n; ++i) {
      const float x = value(r, tag, i);
      global_amax = std::max(global_amax, std::fabs(x));
      const uint8_t want = octet_fp8_encode(x * scale, dtype, 1);
      CHECK(codes[size_t(r) * n + i] == want, "quantized allgather: rank %d's code %zu is 0x%02x, expected 0x%02x", r,
            i, codes[size_t(r) * n + i], want);
    }
  CHECK(scalars[0] == scale && scalars[1] == 1.0f / scale, "quantized allgather: scale %g, scale_inv %g",
        double(scalars[0]), double(scalars[1]));
  CHECK(scalars[2] == global_amax, "quantized allgather: AMAX %g, expected the max over ranks %g", double(scalars[2]),
        double(global_amax));
  out = octet::Tensor();
  q = octet::Tensor();
}

void test_allgather_quantized(octet_context* ctx) {
  test_allgather_quantized_in(ctx, OCTET_DTYPE_E4M3);
  test_allgather_quantized_in(ctx, OCTET_DTYPE_E4M3FNUZ);
  const int64_t rows = 4, cols = 8;
  const size_t n = size_t(rows * cols);
  const int tag = 400;

  // Different scales on the ranks: every rank refuses (one allreduce_max
  // told them all), and the output is unchanged.
  octet::Tensor odd = quantized_shard(ctx, values(g_rank, tag, n), rows, cols, 4.0f * float(1 + g_rank % 2));
  octet::Tensor kept = make(ctx, OCTET_DTYPE_E4M3, {g_size * rows, cols}, OCTET_USAGE_ROWWISE);
  std::vector<uint8_t> before(n * size_t(g_size), 0x5a);
  OK(octet_tensor_copy_from_host(kept.get(), OCTET_COMPONENT_DATA, before.data(), before.size()));
  EXPECT_FAIL(octet_allgather(ctx, odd.get(), kept.get()), OCTET_STATUS_INVALID_ARGUMENT, "different scales");
  std::vector<uint8_t> after(before.size());
  OK(octet_tensor_copy_to_host(kept.get(), OCTET_COMPONENT_DATA, after.data(), after.size()));
  CHECK(after == before, "a refused quantized allgather wrote the output");
  kept = octet::Tensor();
  odd = octet::Tensor();
}

void test_statistics(octet_context* ctx) {
  OK(octet_context_reset_communication_stats(ctx));
  octet::Tensor a = make(ctx, OCTET_DTYPE_BF16, {5, 7});
  octet::Tensor g = make(ctx, OCTET_DTYPE_BF16, {5 * g_size, 7});
  put(a.get(), OCTET_DTYPE_BF16, values(g_rank, 500, 35));
  OK(octet_allgather(ctx, a.get(), g.get()));
  OK(octet_allgather(ctx, a.get(), g.get()));
  OK(octet_allreduce(ctx, a.get(), a.get(), OCTET_REDUCE_MAX));
  OK(octet_reduce_scatter(ctx, g.get(), a.get(), OCTET_REDUCE_SUM));
  octet_communication_stats s{};
  s.struct_size = sizeof(s);
  OK(octet_context_get_communication_stats(ctx, &s));
  CHECK(s.calls[OCTET_COLLECTIVE_ALLGATHER] == 2 && s.bytes_sent[OCTET_COLLECTIVE_ALLGATHER] == 2 * 35 * 2,
        "allgather stats: %llu calls, %llu bytes", (unsigned long long)s.calls[OCTET_COLLECTIVE_ALLGATHER],
        (unsigned long long)s.bytes_sent[OCTET_COLLECTIVE_ALLGATHER]);
  CHECK(s.calls[OCTET_COLLECTIVE_ALLREDUCE] == 1 && s.bytes_sent[OCTET_COLLECTIVE_ALLREDUCE] == 70, "allreduce stats");
  CHECK(s.calls[OCTET_COLLECTIVE_REDUCE_SCATTER] == 1 &&
            s.bytes_sent[OCTET_COLLECTIVE_REDUCE_SCATTER] == uint64_t(70 * g_size),
        "reduce_scatter stats");
  CHECK(s.calls[OCTET_COLLECTIVE_AMAX] == 0, "no amax reduction was made");
  a = octet::Tensor();
  g = octet::Tensor();
}

// ---- error cases: each is decided on the calling rank alone ----

octet_status fake_max(float*, size_t, void*) { return OCTET_STATUS_SUCCESS; }
octet_status fake_gather_fails(const void*, void*, size_t, int32_t, void**, void*) {
  return OCTET_STATUS_BACKEND_ERROR;
}
int g_waits = 0;
octet_status fake_gather_ok(const void*, void*, size_t, int32_t, void** request, void*) {
  *request = &g_waits;
  return OCTET_STATUS_SUCCESS;
}
octet_status fake_wait_fails(void* request, void*) {
  ++*static_cast<int*>(request);
  return OCTET_STATUS_UNAVAILABLE;
}

void test_errors(const octet_communicator& mpi) {
  octet_context_options co;
  OK(octet_context_options_init(&co));
  co.backend = "reference";
  octet_context* ctx = nullptr;
  OK(octet_context_create(&co, &ctx));
  octet::Tensor a = make(ctx, OCTET_DTYPE_FP32, {2, 3});
  octet::Tensor b = make(ctx, OCTET_DTYPE_FP32, {2, 3});

  EXPECT_FAIL(octet_allreduce(ctx, a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_UNSUPPORTED,
              "needs a communicator");
  EXPECT_FAIL(octet_allgather(ctx, a.get(), b.get()), OCTET_STATUS_UNSUPPORTED, "needs a communicator");

  // A users' ABI 1.6 struct: allreduce_max only.
  octet_communicator old{};
  old.struct_size = offsetof(octet_communicator, rank);
  old.allreduce_max = fake_max;
  OK(octet_context_set_communicator(ctx, &old));
  EXPECT_FAIL(octet_allreduce(ctx, a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_UNSUPPORTED, "allreduce entry");
  EXPECT_FAIL(octet_reduce_scatter(ctx, a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_UNSUPPORTED,
              "reduce_scatter entry");

  // Bad fields of a 1.7 struct.
  octet_communicator c = mpi;
  c.wait = nullptr;
  EXPECT_FAIL(octet_context_set_communicator(ctx, &c), OCTET_STATUS_INVALID_ARGUMENT, "communicator->wait is NULL");
  c = mpi;
  c.rank = c.size;
  EXPECT_FAIL(octet_context_set_communicator(ctx, &c), OCTET_STATUS_INVALID_ARGUMENT, "communicator->rank");
  c = mpi;
  c.size = 0;
  EXPECT_FAIL(octet_context_set_communicator(ctx, &c), OCTET_STATUS_INVALID_ARGUMENT, "communicator->size");
  c = mpi;
  c.memory_kinds = 0;
  EXPECT_FAIL(octet_context_set_communicator(ctx, &c), OCTET_STATUS_INVALID_ARGUMENT, "memory_kinds");
  c = mpi;
  c.memory_kinds = OCTET_COMM_DEVICE_MEMORY;  // a device-only communicator on a host backend
  OK(octet_context_set_communicator(ctx, &c));
  EXPECT_FAIL(octet_allreduce(ctx, a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_UNSUPPORTED, "host memory");

  OK(octet_context_set_communicator(ctx, &mpi));
  // Shapes, dtypes, ops.
  octet::Tensor wide = make(ctx, OCTET_DTYPE_FP32, {2, 4});
  EXPECT_FAIL(octet_allreduce(ctx, a.get(), wide.get(), OCTET_REDUCE_SUM), OCTET_STATUS_INVALID_ARGUMENT, "shape");
  EXPECT_FAIL(octet_allreduce(ctx, a.get(), b.get(), 7), OCTET_STATUS_INVALID_ARGUMENT, "argument 'op' (7)");
  octet::Tensor gathered_wrong = make(ctx, OCTET_DTYPE_FP32, {2 * g_size + 1, 3});
  EXPECT_FAIL(octet_allgather(ctx, a.get(), gathered_wrong.get()), OCTET_STATUS_INVALID_ARGUMENT,
              "first dimension times");
  octet::Tensor gathered_cols = make(ctx, OCTET_DTYPE_FP32, {2 * g_size, 4});
  EXPECT_FAIL(octet_allgather(ctx, a.get(), gathered_cols.get()), OCTET_STATUS_INVALID_ARGUMENT, "same trailing dims");
  octet::Tensor bf = make(ctx, OCTET_DTYPE_BF16, {2 * g_size, 3});
  EXPECT_FAIL(octet_allgather(ctx, a.get(), bf.get()), OCTET_STATUS_INVALID_ARGUMENT, "does not convert");
  EXPECT_FAIL(octet_reduce_scatter(ctx, bf.get(), a.get(), OCTET_REDUCE_SUM), OCTET_STATUS_INVALID_ARGUMENT,
              "does not convert");
  EXPECT_FAIL(octet_reduce_scatter(ctx, a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_INVALID_ARGUMENT,
              g_size == 1 ? "same tensor" : "first dimension times");
  EXPECT_FAIL(octet_allgather(ctx, a.get(), a.get()), OCTET_STATUS_INVALID_ARGUMENT, "same tensor");
  octet::Tensor q = make(ctx, OCTET_DTYPE_E4M3, {2, 3}, OCTET_USAGE_ROWWISE);
  octet::Tensor q2 = make(ctx, OCTET_DTYPE_E4M3, {2, 3}, OCTET_USAGE_ROWWISE);
  EXPECT_FAIL(octet_allreduce(ctx, q.get(), q2.get(), OCTET_REDUCE_MAX), OCTET_STATUS_INVALID_ARGUMENT,
              "FP8 codes are not summed");
  octet::Tensor codes = make(ctx, OCTET_DTYPE_E4M3, {2 * g_size, 3});
  EXPECT_FAIL(octet_allgather(ctx, q.get(), codes.get()), OCTET_STATUS_INVALID_ARGUMENT, "'output' is plain");
  octet::Tensor both = make(ctx, OCTET_DTYPE_E4M3, {2 * g_size, 3}, OCTET_USAGE_ROWWISE | OCTET_USAGE_COLUMNWISE);
  EXPECT_FAIL(octet_allgather(ctx, q.get(), both.get()), OCTET_STATUS_INVALID_ARGUMENT, "OCTET_USAGE_ROWWISE only");

  // A communicator whose start fails, and one whose wait fails: the status
  // comes back naming the entry; a failed start is never waited on.
  octet_communicator f{};
  f.struct_size = sizeof(f);
  f.allreduce_max = fake_max;
  f.rank = 0;
  f.size = 1;
  f.memory_kinds = OCTET_COMM_HOST_MEMORY;
  f.allgather = fake_gather_fails;
  f.wait = fake_wait_fails;
  OK(octet_context_set_communicator(ctx, &f));
  g_waits = 0;
  EXPECT_FAIL(octet_allgather(ctx, a.get(), b.get()), OCTET_STATUS_BACKEND_ERROR,
              "allgather returned OCTET_STATUS_BACKEND_ERROR");
  CHECK(g_waits == 0, "a failed start was waited on");
  f.allgather = fake_gather_ok;
  OK(octet_context_set_communicator(ctx, &f));
  EXPECT_FAIL(octet_allgather(ctx, a.get(), b.get()), OCTET_STATUS_UNAVAILABLE,
              "wait (for its allgather) returned OCTET_STATUS_UNAVAILABLE");
  CHECK(g_waits == 1, "the started allgather was waited on %d times", g_waits);

  // liboctet_mpi's own argument checks.
  octet_communicator small{};
  CHECK(octet_mpi_communicator_init_sized(MPI_COMM_WORLD, &small, 24) == OCTET_STATUS_INVALID_ARGUMENT &&
            std::string(octet_mpi_last_error_message()).find("struct_size") != std::string::npos,
        "octet_mpi init with a 1.6 struct: %s", octet_mpi_last_error_message());
  CHECK(octet_mpi_communicator_init(MPI_COMM_NULL, &small) == OCTET_STATUS_INVALID_ARGUMENT,
        "octet_mpi init with MPI_COMM_NULL");
  CHECK(octet_mpi_communicator_init_sized(MPI_COMM_WORLD, nullptr, sizeof small) == OCTET_STATUS_INVALID_ARGUMENT,
        "octet_mpi init with NULL");

  for (octet::Tensor* t : {&a, &b, &wide, &gathered_wrong, &gathered_cols, &bf, &q, &q2, &codes, &both})
    *t = octet::Tensor();  // before the context
  octet_context_destroy(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  octet_communicator comm;
  OK(octet_mpi_communicator_init(MPI_COMM_WORLD, &comm));
  CHECK(comm.rank == g_rank && comm.size == g_size, "communicator rank %d size %d", comm.rank, comm.size);
  CHECK(comm.struct_size == sizeof(comm), "struct_size %zu", comm.struct_size);

  octet_context_options co;
  OK(octet_context_options_init(&co));
  co.backend = "reference";
  octet_context* ctx = nullptr;
  OK(octet_context_create(&co, &ctx));
  OK(octet_context_set_communicator(ctx, &comm));

  test_allreduce(ctx);
  test_reduce_scatter(ctx);
  test_allgather_plain(ctx);
  test_allgather_quantized(ctx);
  test_statistics(ctx);
  test_errors(comm);

  // The test data: some ranks differ, so the checks tell a rank's own data
  // from the reduced result.
  CHECK(g_size < 2 || values(0, 100, 30) != values(1, 100, 30), "test data: ranks 0 and 1 hold the same values");

  octet_context_destroy(ctx);
  octet_mpi_communicator_destroy(&comm);
  CHECK(comm.allreduce == nullptr && comm.user_data == nullptr, "destroy leaves the entries set");

  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %d check(s) failed over %d ranks\n", failures ? "FAILED" : "PASSED", failures, g_size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
