// How many OpenMP threads a cpu kernel uses, from the work it has.
//
// A parallel region costs a few microseconds on an idle machine, and when
// the cores are shared with other processes it lasts until its slowest
// thread is scheduled: a region of 20 us of work can then take
// milliseconds. So a kernel splits its work only into shares of at least
// one grain each: small problems (a training step of a narrow model, a
// short decode) run on the calling thread, large ones on every thread.
//
// Every OpenMP region of the cpu backend that does floating-point
// arithmetic (all but the byte transposes and the FNUZ NaN scan) holds an
// octet::DefaultFloatMode (<octet/octet_float_mode.hpp>) first thing, on
// each of its threads: the
// entry point's guard sets the calling thread's mode, but worker threads
// keep the mode they were created with (a program built with -ffast-math
// creates them with flush-to-zero and denormals-are-zero on).
#pragma once

#include <omp.h>
#include <octet/octet_float_mode.hpp>

#include <algorithm>

namespace octet_cpu {

// GEMM work in flops (2 m n k): about 40 us of one core's FP8 rate.
constexpr double kGemmFlopsPerThread = 4.0e6;
// Element-wise work in elements: 128 KiB of FP32, about 15 us of one
// core's bandwidth (PyTorch's CPU kernels go parallel from 32768
// elements; here from two grains, 65536).
constexpr double kElementsPerThread = 32768.0;
// Streamed bytes (decode-shaped GEMMs read their weights once): about
// 25 us of one core's read bandwidth.
constexpr double kStreamBytesPerThread = 256.0 * 1024.0;

// The number of threads for `work` units at `grain` units per thread: 1
// below two grains, at most omp_get_max_threads().
inline int threads_for(double work, double grain) {
  const int most = std::max(1, omp_get_max_threads());
  if (!(work >= 2.0 * grain)) return 1;
  const double shares = work / grain;
  return shares >= static_cast<double>(most) ? most : std::max(1, static_cast<int>(shares));
}

// Whether element-wise work of `elements` elements is worth splitting.
inline bool split_elements(double elements) { return threads_for(elements, kElementsPerThread) > 1; }

// For the scope of one call into a library that threads itself with
// OpenMP (oneDNN's sgemm asks omp_get_max_threads()): limits the calling
// thread's OpenMP team size to `threads`, and gives the old limit back on
// leaving. The limit is this thread's own (an OpenMP internal control
// variable of its data environment), so concurrent callers do not see it.
class OpenMpThreadLimit {
 public:
  explicit OpenMpThreadLimit(int threads) : old_(omp_get_max_threads()) { omp_set_num_threads(std::max(1, threads)); }
  ~OpenMpThreadLimit() { omp_set_num_threads(old_); }
  OpenMpThreadLimit(const OpenMpThreadLimit&) = delete;
  OpenMpThreadLimit& operator=(const OpenMpThreadLimit&) = delete;

 private:
  int old_;
};

}  // namespace octet_cpu
