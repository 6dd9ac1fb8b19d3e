// The collectives of a liboctet_nccl communicator on a GPU, shared by the
// one-rank test (nccl_gpu_test.cpp) and the N-rank MPI program
// (nccl_mpi_test.cpp). Each rank's data is a function of (rank, index)
// whose values (multiples of 1/8 below 64) FP32, BF16 and FP16 hold
// exactly, and whose sums over ranks they hold exactly in any order; the
// expectations are computed here on the host from that function over all
// ranks, independently of NCCL.
#pragma once

#include <cuda_runtime.h>
#include <octet/octet_nccl.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nccl_test {

// Rank r's element i.
inline float value(int rank, size_t i) { return 0.125f * float((int(i) * 5 + rank * 3) % 17) - 1.0f; }

inline std::vector<uint8_t> encode(const std::vector<float>& v, int32_t dtype) {
  std::vector<uint8_t> bytes(v.size() * (dtype == OCTET_DTYPE_FP32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == OCTET_DTYPE_FP32) {
      std::memcpy(&bytes[4 * i], &v[i], 4);
    } else {
      const uint16_t c = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(v[i]) : octet_fp16_encode(v[i]);
      std::memcpy(&bytes[2 * i], &c, 2);
    }
  }
  return bytes;
}

inline float decode(const std::vector<uint8_t>& bytes, size_t i, int32_t dtype) {
  if (dtype == OCTET_DTYPE_FP32) {
    float f;
    std::memcpy(&f, &bytes[4 * i], 4);
    return f;
  }
  uint16_t c;
  std::memcpy(&c, &bytes[2 * i], 2);
  return dtype == OCTET_DTYPE_BF16 ? octet_bf16_decode(c) : octet_fp16_decode(c);
}

// op over ranks of value(r, i).
inline float reduced(int size, size_t i, int32_t op) {
  float acc = value(0, i);
  for (int r = 1; r < size; ++r) acc = op == OCTET_REDUCE_SUM ? acc + value(r, i) : std::fmax(acc, value(r, i));
  return acc;
}

struct Device {
  void* p = nullptr;
  explicit Device(size_t bytes) { cudaMalloc(&p, bytes); }
  ~Device() { cudaFree(p); }
};

// Runs every entry of `c` (rank `rank` of `size`); appends one line per
// failure to *failures.
inline void run_collectives(const octet_communicator& c, int rank, int size, std::vector<std::string>* failures) {
  auto fail = [&](const std::string& what) { failures->push_back("rank " + std::to_string(rank) + ": " + what); };
  auto call = [&](octet_status st, const char* what) {
    if (st != OCTET_STATUS_SUCCESS) fail(std::string(what) + ": " + octet_nccl_last_error_message());
    return st == OCTET_STATUS_SUCCESS;
  };
  const size_t n = 37;
  // allreduce_max on host floats.
  {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = value(rank, i);
    if (call(c.allreduce_max(v.data(), n, c.user_data), "allreduce_max"))
      for (size_t i = 0; i < n; ++i)
        if (v[i] != reduced(size, i, OCTET_REDUCE_MAX))
          fail("allreduce_max[" + std::to_string(i) + "] = " + std::to_string(v[i]));
  }
  for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    const size_t bytes = dtype == OCTET_DTYPE_FP32 ? 4 : 2;
    const std::string dname = octet_dtype_name(dtype);
    for (int32_t op : {OCTET_REDUCE_SUM, OCTET_REDUCE_MAX}) {
      const std::string what = dname + (op == OCTET_REDUCE_SUM ? " SUM" : " MAX");
      // allreduce, out of place and in place.
      for (bool in_place : {false, true}) {
        std::vector<float> mine(n);
        for (size_t i = 0; i < n; ++i) mine[i] = value(rank, i);
        const std::vector<uint8_t> host = encode(mine, dtype);
        Device send(n * bytes), recv(n * bytes);
        cudaMemcpy(send.p, host.data(), host.size(), cudaMemcpyHostToDevice);
        void* out = in_place ? send.p : recv.p;
        void* request = nullptr;
        if (!call(c.allreduce(send.p, out, n, dtype, op, &request, c.user_data), "allreduce") ||
            !call(c.wait(request, c.user_data), "allreduce wait"))
          continue;
        std::vector<uint8_t> got(n * bytes);
        cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < n; ++i)
          if (decode(got, i, dtype) != reduced(size, i, op))
            fail("allreduce " + what + (in_place ? " in place" : "") + " [" + std::to_string(i) +
                 "] = " + std::to_string(decode(got, i, dtype)) + ", expected " + std::to_string(reduced(size, i, op)));
      }
      // reduce_scatter: rank r gets elements [r * n, (r+1) * n) of the reduction.
      {
        std::vector<float> mine(n * size_t(size));
        for (size_t i = 0; i < mine.size(); ++i) mine[i] = value(rank, i);
        const std::vector<uint8_t> host = encode(mine, dtype);
        Device send(host.size()), recv(n * bytes);
        cudaMemcpy(send.p, host.data(), host.size(), cudaMemcpyHostToDevice);
        void* request = nullptr;
        if (call(c.reduce_scatter(send.p, recv.p, n, dtype, op, &request, c.user_data), "reduce_scatter") &&
            call(c.wait(request, c.user_data), "reduce_scatter wait")) {
          std::vector<uint8_t> got(n * bytes);
          cudaMemcpy(got.data(), recv.p, got.size(), cudaMemcpyDeviceToHost);
          for (size_t i = 0; i < n; ++i) {
            const float want = reduced(size, size_t(rank) * n + i, op);
            if (decode(got, i, dtype) != want)
              fail("reduce_scatter " + what + " [" + std::to_string(i) +
                   "] = " + std::to_string(decode(got, i, dtype)) + ", expected " + std::to_string(want));
          }
        }
      }
    }
  }
  // allgather of bytes (E4M3 codes): rank p's block at p * n.
  {
    std::vector<uint8_t> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = uint8_t(rank * 31 + int(i));
    Device send(n), recv(n * size_t(size));
    cudaMemcpy(send.p, mine.data(), n, cudaMemcpyHostToDevice);
    void* request = nullptr;
    if (call(c.allgather(send.p, recv.p, n, OCTET_DTYPE_E4M3, &request, c.user_data), "allgather") &&
        call(c.wait(request, c.user_data), "allgather wait")) {
      std::vector<uint8_t> got(n * size_t(size));
      cudaMemcpy(got.data(), recv.p, got.size(), cudaMemcpyDeviceToHost);
      for (int p = 0; p < size; ++p)
        for (size_t i = 0; i < n; ++i)
          if (got[size_t(p) * n + i] != uint8_t(p * 31 + int(i)))
            fail("allgather [" + std::to_string(p) + "][" + std::to_string(i) +
                 "] = " + std::to_string(got[size_t(p) * n + i]));
    }
  }
}

}  // namespace nccl_test
