// What the MPI test programs share: CHECK counts a failure and goes on, so
// every rank reports all it sees before the exit status; OK ends every rank
// (MPI_Abort) when an Octet call the test relies on fails.
#pragma once

#include <mpi.h>
#include <octet/octet.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

inline int g_rank = 0, g_size = 0, g_failures = 0;

#define CHECK(cond, ...)                                                                              \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      ++g_failures;                                                                                   \
      std::fprintf(stderr, "[rank %d] %s:%d: CHECK(%s) failed: ", g_rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                              \
      std::fprintf(stderr, "\n");                                                                     \
    }                                                                                                 \
  } while (0)

#define OK(call)                                                                                 \
  do {                                                                                           \
    octet_status s_ = (call);                                                                    \
    if (s_ != OCTET_STATUS_SUCCESS) {                                                            \
      std::fprintf(stderr, "[rank %d] %s:%d: %s -> %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
                   octet_status_name(s_), octet_last_error_message());                           \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                              \
    }                                                                                            \
  } while (0)

// A tensor through octet::Tensor::create (usages != 0: quantized, in
// scaling_mode, 0 meaning per-tensor); a failure ends every rank as OK does.
inline octet::Tensor make_tensor(octet_context* ctx, int32_t dtype, const std::vector<int64_t>& shape,
                                 uint32_t usages = 0, int32_t scaling_mode = 0) {
  try {
    return octet::Tensor::create(ctx, dtype, shape, usages, scaling_mode);
  } catch (const octet::Error& e) {
    std::fprintf(stderr, "[rank %d] octet::Tensor::create -> %s\n", g_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return octet::Tensor();
}
