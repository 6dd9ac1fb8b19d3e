// Timeouts of liboctet_mpi's collectives (octet_mpi_world.h), on as many
// ranks as mpiexec starts (ctest: 2 and 4).
//
// The last rank is late: it joins an all-gather and an all-reduce of the
// amaxes only after every other rank's timeout (1 s) has passed. Checked:
//  - on every other rank, octet_allgather and a current-scaling quantize
//    with reduce_amax return BACKEND_ERROR after at least the timeout (and
//    well before the late rank joins plus a margin), with a message naming
//    the collective (octet_mpi_last_error_message: the entry, the MPI call,
//    the timeout); the quantizer is unchanged;
//  - the collectives left in flight complete once the late rank joins
//    (the processes then finish MPI normally);
//  - octet_mpi_communicator_set_timeout refuses a negative or NaN timeout
//    and a struct it did not make; OCTET_MPI_TIMEOUT_SECONDS is read at init
//    (a bad value refused naming it).
#include <mpi.h>
#include <octet/octet.h>
#include <octet/octet_mpi.h>
#include <stdlib.h>

#include "mpi_checks.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr double kTimeout = 1.0;
constexpr double kLateBy = 3.0;  // seconds the last rank waits before joining

octet::Tensor make(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0) {
  return make_tensor(ctx, dtype, {rows, cols}, usages);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void check_timed_out(octet_status s, double waited, const char* what, const char* entry, const char* call) {
  const std::string mpi = octet_mpi_last_error_message();
  CHECK(s == OCTET_STATUS_BACKEND_ERROR, "%s while a rank is late: %s (%s)", what, octet_status_name(s),
        octet_last_error_message());
  CHECK(mpi.find(std::string(entry) + " (" + call) != std::string::npos &&
            mpi.find("did not complete within the timeout of 1 s") != std::string::npos,
        "%s: liboctet_mpi's message does not name %s / %s and the timeout: '%s'", what, entry, call, mpi.c_str());
  CHECK(waited >= kTimeout && waited < kLateBy,
        "%s returned after %.3f s (timeout %.1f s, the late rank joins at %.1f s)", what, waited, kTimeout, kLateBy);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  // The environment variable: a bad value is refused at init, naming it.
  octet_communicator comm;
  setenv("OCTET_MPI_TIMEOUT_SECONDS", "soon", 1);
  octet_status s = octet_mpi_communicator_init(MPI_COMM_WORLD, &comm);
  CHECK(s == OCTET_STATUS_INVALID_ARGUMENT &&
            std::strstr(octet_mpi_last_error_message(), "OCTET_MPI_TIMEOUT_SECONDS") != nullptr,
        "init with OCTET_MPI_TIMEOUT_SECONDS=soon: %s (%s)", octet_status_name(s), octet_mpi_last_error_message());
  setenv("OCTET_MPI_TIMEOUT_SECONDS", "1", 1);
  OK(octet_mpi_communicator_init(MPI_COMM_WORLD, &comm));
  unsetenv("OCTET_MPI_TIMEOUT_SECONDS");

  // set_timeout's arguments.
  CHECK(octet_mpi_communicator_set_timeout(&comm, -1.0) == OCTET_STATUS_INVALID_ARGUMENT, "a negative timeout");
  CHECK(octet_mpi_communicator_set_timeout(&comm, NAN) == OCTET_STATUS_INVALID_ARGUMENT, "a NaN timeout");
  octet_communicator other{};
  CHECK(octet_mpi_communicator_set_timeout(&other, 1.0) == OCTET_STATUS_INVALID_ARGUMENT,
        "a communicator liboctet_mpi did not make");
  CHECK(octet_mpi_communicator_set_timeout(nullptr, 1.0) == OCTET_STATUS_INVALID_ARGUMENT, "a NULL communicator");

  octet_context_options co;
  OK(octet_context_options_init(&co));
  co.backend = "reference";
  octet_context* ctx = nullptr;
  OK(octet_context_create(&co, &ctx));
  OK(octet_context_set_communicator(ctx, &comm));

  const bool late = g_rank == g_size - 1;
  octet::Tensor mine = make(ctx, OCTET_DTYPE_FP32, 2, 4);
  octet::Tensor all = make(ctx, OCTET_DTYPE_FP32, 2 * g_size, 4);
  std::vector<float> v(8, float(g_rank + 1));
  OK(octet_tensor_copy_from_host(mine.get(), OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
  octet_current_scaling_options cs;
  OK(octet_current_scaling_options_init(&cs));
  cs.reduce_amax = 1;
  octet_recipe* recipe = nullptr;
  OK(octet_recipe_create_current(&cs, &recipe));
  octet_quantizer* q = nullptr;
  OK(octet_quantizer_create(recipe, OCTET_ROLE_INPUT, &q));
  octet::Tensor codes = make(ctx, OCTET_DTYPE_E4M3, 2, 4, OCTET_USAGE_ROWWISE);

  // Every rank starts the clock together (setup times differ under load).
  MPI_Barrier(MPI_COMM_WORLD);
  if (late) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kLateBy));
    // Joins both collectives the others gave up on: they complete.
    OK(octet_mpi_communicator_set_timeout(&comm, 0.0));
    OK(octet_allgather(ctx, mine.get(), all.get()));
    OK(octet_quantizer_quantize(ctx, q, mine.get(), codes.get(), nullptr, nullptr));
  } else {
    auto start = std::chrono::steady_clock::now();
    s = octet_allgather(ctx, mine.get(), all.get());
    check_timed_out(s, seconds_since(start), "octet_allgather", "allgather", "MPI_Iallgather");
    octet_quantizer_info before{};
    before.struct_size = sizeof(before);
    OK(octet_quantizer_get_info(q, &before));
    start = std::chrono::steady_clock::now();
    s = octet_quantizer_quantize(ctx, q, mine.get(), codes.get(), nullptr, nullptr);
    check_timed_out(s, seconds_since(start), "a quantize with reduce_amax", "allreduce_max", "MPI_Iallreduce");
    octet_quantizer_info after{};
    after.struct_size = sizeof(after);
    OK(octet_quantizer_get_info(q, &after));
    CHECK(after.scale == before.scale && after.amax == before.amax, "a timed-out quantize changed the quantizer");
  }
  // The collectives left in flight complete once the late rank has joined:
  // a barrier on MPI_COMM_WORLD drives MPI's progress until every rank is
  // here (it cannot finish before the late rank joined both).
  MPI_Barrier(MPI_COMM_WORLD);

  octet_quantizer_destroy(q);
  octet_recipe_destroy(recipe);
  for (octet::Tensor* t : {&mine, &all, &codes}) *t = octet::Tensor();  // before the context
  octet_context_destroy(ctx);
  octet_mpi_communicator_destroy(&comm);

  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %d check(s) failed over %d ranks\n", failures ? "FAILED" : "PASSED", failures, g_size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
