// bf16_matmul_tiles (gemm/bf16_matmul_tiles.hpp): tiles of acc shared by OpenMP
// threads, each summed slice by slice on oneDNN's BF16 matmul primitive.
#include "gemm/bf16_matmul_tiles.hpp"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dispatch/parallel_policy.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

namespace octet_cpu {
namespace {

dnnl_engine_t cpu_engine() {
  // One engine for the process: oneDNN's CPU engine holds no device.
  static const dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    return dnnl_engine_create(&e, dnnl_cpu, 0) == dnnl_success ? e : nullptr;
  }();
  return engine;
}

// The shape and layout of one tile's product.
struct Shape {
  int64_t mc, nc, kc, lda, ldb, ldc;
  bool a_k_major, b_k_major, accumulate;
  bool operator==(const Shape& o) const {
    return mc == o.mc && nc == o.nc && kc == o.kc && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
           a_k_major == o.a_k_major && b_k_major == o.b_k_major && accumulate == o.accumulate;
  }
};

// A matmul primitive for one Shape, with its three memory objects (their
// data handles set per call). Owns what it creates.
class Matmul {
 public:
  explicit Matmul(const Shape& s) : shape_(s) { status_ = create(); }
  ~Matmul() {
    for (dnnl_memory_t mem : {src_, weights_, dst_})
      if (mem != nullptr) dnnl_memory_destroy(mem);
    if (primitive_ != nullptr) dnnl_primitive_destroy(primitive_);
    if (pd_ != nullptr) dnnl_primitive_desc_destroy(pd_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  const Shape& shape() const { return shape_; }
  dnnl_status_t status() const { return status_; }
  const char* impl() const {
    const char* name = nullptr;
    if (pd_ == nullptr || dnnl_primitive_desc_query(pd_, dnnl_query_impl_info_str, 0, &name) != dnnl_success) return "";
    return name != nullptr ? name : "";
  }

  // dst (+)= src x weights on `stream`.
  dnnl_status_t run(dnnl_stream_t stream, const uint16_t* a, const uint16_t* b, float* c) {
    if (status_ != dnnl_success) return status_;
    dnnl_status_t st = dnnl_memory_set_data_handle(src_, const_cast<uint16_t*>(a));
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(weights_, const_cast<uint16_t*>(b));
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(dst_, c);
    if (st != dnnl_success) return st;
    const dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}};
    st = dnnl_primitive_execute(primitive_, stream, 3, args);
    return st == dnnl_success ? dnnl_stream_wait(stream) : st;
  }

 private:
  dnnl_status_t create() {
    const Shape& s = shape_;
    dnnl_memory_desc_t a_md, b_md, c_md;
    // src [mc, kc]; weights [kc, nc] (B' block transposed by strides); dst [mc, nc].
    const dnnl_dims_t a_dims = {s.mc, s.kc}, b_dims = {s.kc, s.nc}, c_dims = {s.mc, s.nc};
    const dnnl_dims_t a_strides = {s.a_k_major ? 1 : s.lda, s.a_k_major ? s.lda : 1};
    const dnnl_dims_t b_strides = {s.b_k_major ? s.ldb : 1, s.b_k_major ? 1 : s.ldb};
    const dnnl_dims_t c_strides = {s.ldc, 1};
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, dnnl_bf16, a_strides);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_strides(&b_md, 2, b_dims, dnnl_bf16, b_strides);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_strides);
    dnnl_matmul_desc_t desc;
    if (st == dnnl_success) st = dnnl_matmul_desc_init(&desc, &a_md, &b_md, nullptr, &c_md);
    if (st != dnnl_success) return st;
    dnnl_primitive_attr_t attr = nullptr;
    dnnl_post_ops_t post_ops = nullptr;
    st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success && s.accumulate) {
      st = dnnl_post_ops_create(&post_ops);
      if (st == dnnl_success) st = dnnl_post_ops_append_sum(post_ops, 1.0f);
      if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, post_ops);
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd_, &desc, attr, cpu_engine(), nullptr);
    if (post_ops != nullptr) dnnl_post_ops_destroy(post_ops);
    if (attr != nullptr) dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_success) st = dnnl_primitive_create(&primitive_, pd_);
    if (st == dnnl_success) st = dnnl_memory_create(&src_, &a_md, cpu_engine(), DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&weights_, &b_md, cpu_engine(), DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&dst_, &c_md, cpu_engine(), DNNL_MEMORY_NONE);
    return st;
  }

  Shape shape_;
  dnnl_status_t status_ = dnnl_runtime_error;
  dnnl_primitive_desc_t pd_ = nullptr;
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_t src_ = nullptr, weights_ = nullptr, dst_ = nullptr;
};

// One thread's stream and primitives, for one bf16_matmul_tiles call (a
// GEMM has at most a few distinct tile shapes).
class ThreadMatmuls {
 public:
  ThreadMatmuls() {
    if (cpu_engine() == nullptr ||
        dnnl_stream_create(&stream_, cpu_engine(), dnnl_stream_default_flags) != dnnl_success)
      stream_ = nullptr;
  }
  ~ThreadMatmuls() {
    if (stream_ != nullptr) dnnl_stream_destroy(stream_);
  }
  ThreadMatmuls(const ThreadMatmuls&) = delete;
  ThreadMatmuls& operator=(const ThreadMatmuls&) = delete;

  dnnl_status_t run(const Shape& s, const uint16_t* a, const uint16_t* b, float* c) {
    if (stream_ == nullptr) return dnnl_runtime_error;
    Matmul* mm = nullptr;
    for (auto& p : matmuls_)
      if (p->shape() == s) mm = p.get();
    if (mm == nullptr) {
      matmuls_.push_back(std::make_unique<Matmul>(s));
      mm = matmuls_.back().get();
    }
    return mm->run(stream_, a, b, c);
  }

 private:
  dnnl_stream_t stream_ = nullptr;
  std::vector<std::unique_ptr<Matmul>> matmuls_;
};

}  // namespace

int32_t bf16_matmul_tiles(const char* kernel, const Bf16TileOperand& a, const Bf16TileOperand& b, int64_t m, int64_t n,
                          int64_t k, float* acc, int64_t ldc) {
  const int64_t tiles_m = (m + kBf16TileM - 1) / kBf16TileM, tiles_n = (n + kBf16TileN - 1) / kBf16TileN;
  const int64_t tiles = tiles_m * tiles_n;
  const int64_t slice = std::min(k, kBf16SliceK);
  const int threads = static_cast<int>(
      std::min<int64_t>(tiles, threads_for(2.0 * double(m) * double(n) * double(k), kGemmFlopsPerThread)));
  // Each block starts on a cache line (32 BF16 values).
  const auto lines = [](int64_t values) { return (values + 31) / 32 * 32; };
  const int64_t a_values = lines(std::min(m, kBf16TileM) * slice), b_values = lines(std::min(n, kBf16TileN) * slice);
  // oneDNN's brgemm matmul takes a dense dst only: each tile is summed in a
  // buffer of its own (FP32, 1 MiB) and copied into acc at the end.
  const int64_t c_values = std::min(m, kBf16TileM) * std::min(n, kBf16TileN);
  const int64_t per_thread = a_values + b_values + 2 * c_values;
  Buffer<uint16_t> buffers(element_count(threads, per_thread));
  dnnl_status_t failure = dnnl_success;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const OpenMpThreadLimit one_thread(1);     // oneDNN runs each call on this thread.
    uint16_t* a_buffer = buffers.get() + static_cast<std::size_t>(omp_get_thread_num()) * per_thread;
    uint16_t* b_buffer = a_buffer + a_values;
    float* c_tile = reinterpret_cast<float*>(b_buffer + b_values);
    ThreadMatmuls matmuls;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t i0 = (t / tiles_n) * kBf16TileM, j0 = (t % tiles_n) * kBf16TileN;
      const int64_t mc = std::min(kBf16TileM, m - i0), nc = std::min(kBf16TileN, n - j0);
      for (int64_t k0 = 0; k0 < k; k0 += slice) {
        const int64_t kc = std::min(slice, k - k0);
        const Bf16Block ab = a(i0, mc, k0, kc, a_buffer);
        const Bf16Block bb = b(j0, nc, k0, kc, b_buffer);
        const Shape s{mc, nc, kc, ab.ld, bb.ld, nc, ab.k_major, bb.k_major, k0 != 0};
        dnnl_status_t st = dnnl_success;
        try {
          st = matmuls.run(s, ab.data, bb.data, c_tile);
        } catch (...) {  // std::bad_alloc from the primitive list
          st = dnnl_out_of_memory;
        }
        if (st != dnnl_success) {
#pragma omp critical(octet_cpu_bf16_matmul_failure)
          failure = st;
        }
      }
      for (int64_t r = 0; r < mc; ++r) std::copy(c_tile + r * nc, c_tile + (r + 1) * nc, acc + (i0 + r) * ldc + j0);
    }
  }
  if (failure == dnnl_out_of_memory) {
    return report(OCTET_STATUS_OUT_OF_MEMORY, std::string(kernel) +
                                                  ": out of host memory inside oneDNN's BF16 matmul (a " +
                                                  std::to_string(kBf16TileM) + " x " + std::to_string(kBf16TileN) +
                                                  " x " + std::to_string(kBf16SliceK) + " tile product)");
  }
  if (failure != dnnl_success) {
    return report(OCTET_STATUS_BACKEND_ERROR, std::string(kernel) + ": oneDNN's BF16 matmul failed with status " +
                                                  std::to_string(static_cast<int>(failure)));
  }
  return OCTET_STATUS_SUCCESS;
}

const char* onednn_bf16_matmul_impl() {
  static const std::string name = [] {
    const OpenMpThreadLimit one_thread(1);
    const Matmul probe(Shape{512, 512, 512, 512, 512, 512, false, false, false});
    return probe.status() == dnnl_success ? std::string(probe.impl()) : std::string();
  }();
  return name.c_str();
}

}  // namespace octet_cpu
