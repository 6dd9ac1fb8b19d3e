// Collectives on tensors through a communicator of one process (users' ABI
// 1.7): the argument checks of octet_allreduce, octet_allgather,
// octet_reduce_scatter, octet_context_set_communicator and the
// communication statistics, with nothing left in flight, in one process
// (so the sanitizer builds, which have no MPI, run them too). Real
// processes: tests/mpi/mpi_collectives_test.cpp.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "test_helpers.hpp"

using namespace octet_test;

namespace {

// One process: each collective copies send to recv; counts starts and waits.
struct Loopback {
  int starts = 0, waits = 0;
};
octet_status lb_max(float*, size_t, void*) { return OCTET_STATUS_SUCCESS; }
octet_status lb_allreduce(const void* send, void* recv, size_t count, int32_t dtype, int32_t, void** request,
                          void* user_data) {
  if (send != recv) std::memmove(recv, send, count * (dtype == OCTET_DTYPE_FP32 ? 4 : 2));
  ++static_cast<Loopback*>(user_data)->starts;
  *request = user_data;
  return OCTET_STATUS_SUCCESS;
}
octet_status lb_allgather(const void* send, void* recv, size_t count, int32_t dtype, void** request, void* user_data) {
  std::memcpy(recv, send, count * (dtype == OCTET_DTYPE_FP32 ? 4 : dtype == OCTET_DTYPE_BF16 ? 2 : 1));
  ++static_cast<Loopback*>(user_data)->starts;
  *request = user_data;
  return OCTET_STATUS_SUCCESS;
}
octet_status lb_wait(void* request, void* user_data) {
  if (request != user_data) return OCTET_STATUS_INTERNAL;  // the request the start gave
  ++static_cast<Loopback*>(user_data)->waits;
  return OCTET_STATUS_SUCCESS;
}

octet_communicator loopback(Loopback* world) {
  octet_communicator c{};
  c.struct_size = sizeof c;
  c.allreduce_max = lb_max;
  c.user_data = world;
  c.rank = 0;
  c.size = 1;
  c.memory_kinds = OCTET_COMM_HOST_MEMORY;
  c.allreduce = lb_allreduce;
  c.allgather = lb_allgather;
  c.wait = lb_wait;
  return c;
}

std::string last() { return octet_last_error_message(); }

}  // namespace

TEST(Collectives, BadArgumentsNameTheArgumentAndSendNothing) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ContextPtr other = make_context("reference", OCTET_PROFILE_NATIVE);
  Loopback world;
  const octet_communicator c = loopback(&world);
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &c), OCTET_STATUS_SUCCESS) << last();
  TensorPtr a = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  TensorPtr b = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  TensorPtr elsewhere = make_tensor(other.get(), OCTET_DTYPE_FP32, {2, 3});

  EXPECT_EQ(octet_allreduce(nullptr, a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_allreduce(ctx.get(), nullptr, b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last().find("input"), std::string::npos) << last();
  EXPECT_EQ(octet_allgather(ctx.get(), a.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last().find("output"), std::string::npos) << last();
  EXPECT_EQ(octet_reduce_scatter(ctx.get(), elsewhere.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_reduce_scatter(ctx.get(), a.get(), b.get(), -1), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last().find("argument 'op' (-1)"), std::string::npos) << last();
  // A destroyed tensor.
  TensorPtr destroyed = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  octet_tensor* gone = destroyed.get();
  destroyed = TensorPtr();  // octet_tensor_destroy
  EXPECT_EQ(octet_allgather(ctx.get(), gone, b.get()), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(world.starts, 0);

  // reduce_scatter is NULL in this communicator.
  EXPECT_EQ(octet_reduce_scatter(ctx.get(), a.get(), b.get(), OCTET_REDUCE_SUM), OCTET_STATUS_UNSUPPORTED);
  EXPECT_NE(last().find("reduce_scatter entry"), std::string::npos) << last();

  // Statistics: NULL, struct_size 0.
  EXPECT_EQ(octet_context_get_communication_stats(ctx.get(), nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  octet_communication_stats zero{};
  EXPECT_EQ(octet_context_get_communication_stats(ctx.get(), &zero), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(octet_context_reset_communication_stats(nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(world.starts, 0);
  EXPECT_EQ(world.waits, 0);
}

TEST(Collectives, OneProcessGivesTheInputBackAndEveryStartIsWaitedOn) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  Loopback world;
  const octet_communicator c = loopback(&world);
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &c), OCTET_STATUS_SUCCESS) << last();
  const std::vector<float> x = {1.5f, -2.0f, 0.25f, 8.0f, -0.5f, 3.0f};
  TensorPtr a = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  TensorPtr b = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  ASSERT_EQ(octet_tensor_copy_from_host(a.get(), OCTET_COMPONENT_DATA, x.data(), 24), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_allreduce(ctx.get(), a.get(), a.get(), OCTET_REDUCE_MAX), OCTET_STATUS_SUCCESS) << last();
  ASSERT_EQ(octet_allgather(ctx.get(), a.get(), b.get()), OCTET_STATUS_SUCCESS) << last();
  std::vector<float> got(6);
  ASSERT_EQ(octet_tensor_copy_to_host(b.get(), OCTET_COMPONENT_DATA, got.data(), 24), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(got, x);
  EXPECT_EQ(world.starts, 2);
  EXPECT_EQ(world.waits, 2);
  octet_communication_stats s{};
  s.struct_size = sizeof s;
  ASSERT_EQ(octet_context_get_communication_stats(ctx.get(), &s), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(s.calls[OCTET_COLLECTIVE_ALLREDUCE], 1u);
  EXPECT_EQ(s.bytes_sent[OCTET_COLLECTIVE_ALLREDUCE], 24u);
  EXPECT_EQ(s.calls[OCTET_COLLECTIVE_ALLGATHER], 1u);
  // A caller built against an older header reads only its prefix.
  octet_communication_stats prefix{};
  prefix.struct_size = offsetof(octet_communication_stats, bytes_sent);
  prefix.bytes_sent[0] = 77;
  ASSERT_EQ(octet_context_get_communication_stats(ctx.get(), &prefix), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(prefix.calls[OCTET_COLLECTIVE_ALLGATHER], 1u);
  EXPECT_EQ(prefix.bytes_sent[0], 77u);
  ASSERT_EQ(octet_context_reset_communication_stats(ctx.get()), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(octet_context_get_communication_stats(ctx.get(), &s), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(s.calls[OCTET_COLLECTIVE_ALLGATHER], 0u);
}

// A users' ABI 1.6 caller's struct is copied as far as it goes: whatever
// follows it in memory is never read as collective entries.
TEST(Collectives, AnOlderStructHasNoCollectivesWhateverFollowsIt) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  Loopback world;
  octet_communicator c = loopback(&world);             // the 1.7 entries set, but...
  c.struct_size = offsetof(octet_communicator, rank);  // ...a 1.6 size
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &c), OCTET_STATUS_SUCCESS) << last();
  TensorPtr a = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  TensorPtr b = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {2, 3});
  EXPECT_EQ(octet_allgather(ctx.get(), a.get(), b.get()), OCTET_STATUS_UNSUPPORTED);
  EXPECT_NE(last().find("allgather entry"), std::string::npos) << last();
  EXPECT_EQ(world.starts, 0);
}
