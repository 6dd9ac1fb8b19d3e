// The program machinery shared by the tensor-operation fuzzers
// (tests/fuzz) and `octet conformance`: a pool of
// tensors mirrored on several contexts, the calls of octet.h run on each,
// and the checks that the contexts agree. Context 0 is the oracle (the
// reference). Two setups use it:
// - fuzz_tensor_ops: three reference contexts, one per capability profile;
//   every output must be bit-identical;
// - fuzz_backend_vs_reference: the reference and another backend; element-wise
//   outputs must be bit-identical, GEMMs within numerics.md section 8's bound
//   of the exact result (computed here in double, for both contexts), and the
//   backend may answer UNSUPPORTED where the reference works.
#pragma once

#include <octet/octet.h>
#include <octet/octet_math.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_input.hpp"

namespace octet_fuzz {

constexpr int kMaxContexts = 3;

constexpr size_t kPool = 6;
constexpr int kMaxOps = 12;

// A property that did not hold, with what was seen. The fuzz targets abort
// on it (libFuzzer's crash); `octet conformance` reports it.
class PropertyViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const char* what, int op) {
  throw PropertyViolation("op " + std::to_string(op) + ": " + what +
                          " (the library's last message, perhaps from an earlier call: " + octet_last_error_message() +
                          ")");
}

inline bool fp8(int32_t dtype) {
  return dtype == OCTET_DTYPE_E4M3 || dtype == OCTET_DTYPE_E5M2 || dtype == OCTET_DTYPE_E4M3FNUZ ||
         dtype == OCTET_DTYPE_E5M2FNUZ;
}

inline size_t element_bytes(int32_t dtype) { return octet_dtype_size(static_cast<octet_dtype>(dtype)); }

inline float widen(int32_t dtype, const uint8_t* p) {
  if (dtype == OCTET_DTYPE_FP32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == OCTET_DTYPE_BF16 ? octet_bf16_decode(h) : octet_fp16_decode(h);
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// One tensor of the pool as the harness knows it, the same on every context.
struct Slot {
  std::array<octet_tensor*, kMaxContexts> t{};  // null past the program's contexts
  int32_t dtype = 0;
  int64_t rows = 0, cols = 0;
  uint32_t usages = 0;       // of a quantized tensor; 0 for plain ones
  int32_t scaling_mode = 0;
  uint32_t valid = 0;        // quantized: the usages whose codes and scales agree
  std::vector<uint8_t> host; // plain tensors: the values written at creation
  bool quantized() const { return fp8(dtype) && usages != 0; }
};

struct Program {
  // Context 0 is the oracle. bounded: the others are another backend, so
  // GEMMs are held to the error bound and UNSUPPORTED is accepted from them;
  // else every output must be bit-identical.
  Program(std::vector<octet_context*> contexts, bool bounded_gemm) : ctx(std::move(contexts)), bounded(bounded_gemm) {}
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  std::vector<octet_context*> ctx;
  bool bounded;
  std::array<Slot, kPool> pool;
  int op = 0;
  int n() const { return int(ctx.size()); }
  ~Program() {
    for (Slot& s : pool)
      for (octet_tensor* t : s.t) octet_tensor_destroy(t);
    for (octet_context* c : ctx) octet_context_destroy(c);
  }
  // What every context declares (octet_context_get_info): the dtypes and
  // scaling modes a program draws from beyond the ones every backend has.
  bool all_declare(uint32_t dtype_bits, uint32_t modes) const {
    for (octet_context* c : ctx) {
      octet_backend_info info{};
      info.struct_size = sizeof(info);
      if (octet_context_get_info(c, &info) != OCTET_STATUS_SUCCESS) return false;
      if ((info.dtypes & dtype_bits) != dtype_bits || (info.scaling_modes & modes) != modes) return false;
    }
    return true;
  }
  void drop(Slot& s) {
    for (octet_tensor*& t : s.t) {
      octet_tensor_destroy(t);
      t = nullptr;
    }
    s = Slot{};
  }
};

inline octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info i{};
  i.struct_size = sizeof(i);
  if (octet_tensor_get_info(t, &i) != OCTET_STATUS_SUCCESS) fail("octet_tensor_get_info", -1);
  return i;
}

inline std::vector<uint8_t> component(const octet_tensor* t, int32_t which, uint64_t bytes, int op) {
  std::vector<uint8_t> out(bytes);
  if (bytes != 0 && octet_tensor_copy_to_host(t, which, out.data(), out.size()) != OCTET_STATUS_SUCCESS)
    fail("octet_tensor_copy_to_host", op);
  return out;
}

// The [rows, cols] codes of one usage of a quantized tensor, however the
// context stores it.
inline std::vector<uint8_t> logical_codes(const Slot& s, int c, uint32_t usage, int op) {
  const octet_tensor_info i = info_of(s.t[c]);
  const size_t n = size_t(s.rows * s.cols);
  if (usage == OCTET_USAGE_COLUMNWISE && i.has_columnwise_data) {
    std::vector<uint8_t> transposed = component(s.t[c], OCTET_COMPONENT_COLUMNWISE_DATA, i.columnwise_bytes, op);
    std::vector<uint8_t> codes(n);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t k = 0; k < s.cols; ++k) codes[size_t(r * s.cols + k)] = transposed[size_t(k * s.rows + r)];
    return codes;
  }
  return component(s.t[c], OCTET_COMPONENT_DATA, n, op);
}

// Everything a reader of the slot can see, for the usages that are valid.
inline std::vector<std::vector<uint8_t>> visible(const Slot& s, int c, int op) {
  std::vector<std::vector<uint8_t>> parts;
  const octet_tensor_info i = info_of(s.t[c]);
  if (!s.quantized()) {
    parts.push_back(component(s.t[c], OCTET_COMPONENT_DATA, i.total_bytes, op));
    return parts;
  }
  for (uint32_t usage : {uint32_t(OCTET_USAGE_ROWWISE), uint32_t(OCTET_USAGE_COLUMNWISE)}) {
    if ((s.valid & usage) == 0) continue;
    parts.push_back(logical_codes(s, c, usage, op));
    if (s.scaling_mode != OCTET_SCALING_PER_TENSOR) {
      const bool row = usage == OCTET_USAGE_ROWWISE;
      parts.push_back(component(s.t[c], row ? OCTET_COMPONENT_ROWWISE_SCALE_INV : OCTET_COMPONENT_COLUMNWISE_SCALE_INV,
                                row ? i.rowwise_scale_inv_bytes : i.columnwise_scale_inv_bytes, op));
    }
  }
  if (s.valid != 0) {
    if (s.scaling_mode == OCTET_SCALING_PER_TENSOR) {
      parts.push_back(component(s.t[c], OCTET_COMPONENT_SCALE, 4, op));
      parts.push_back(component(s.t[c], OCTET_COMPONENT_SCALE_INV, 4, op));
    }
    parts.push_back(component(s.t[c], OCTET_COMPONENT_AMAX, 4, op));
  }
  return parts;
}

// After a call wrote a plain tensor (high precision, or FP8 codes from a
// convert): the oracle's values are what later calls are checked against (a
// quantize against the codec, a GEMM against the exact result) and what
// restore() writes back.
inline void refresh_host(Program& p, Slot& s) {
  if (s.quantized()) return;
  s.host.resize(size_t(s.rows * s.cols) * element_bytes(s.dtype));
  if (octet_tensor_copy_to_host(s.t[0], OCTET_COMPONENT_DATA, s.host.data(), s.host.size()) != OCTET_STATUS_SUCCESS)
    fail("octet_tensor_copy_to_host", p.op);
}
// Makes every context hold the host values again (a plain tensor), or marks
// a quantized tensor's codes as not comparable: after a call whose results
// legitimately differ between contexts (computed from undefined codes, or
// refused as UNSUPPORTED by one backend).
inline void restore(Program& p, Slot& s) {
  if (s.quantized()) {
    s.valid = 0;
    return;
  }
  if (s.host.empty()) return;
  for (int c = 0; c < p.n(); ++c)
    if (octet_tensor_copy_from_host(s.t[c], OCTET_COMPONENT_DATA, s.host.data(), s.host.size()) !=
        OCTET_STATUS_SUCCESS)
      fail("octet_tensor_copy_from_host", p.op);
}

// Runs one call on every context: the same status everywhere (in a bounded
// program another backend may also answer UNSUPPORTED); on failure a message
// and the output as it was. True when every context succeeded.
template <typename Call>
inline bool run_everywhere(Program& p, const char* name, Slot* output, Call call) {
  std::array<std::vector<std::vector<uint8_t>>, kMaxContexts> before;
  if (output != nullptr)
    for (int c = 0; c < p.n(); ++c) before[c] = visible(*output, c, p.op);
  octet_status status[kMaxContexts];
  for (int c = 0; c < p.n(); ++c) {
    status[c] = call(c);
    if (status[c] != OCTET_STATUS_SUCCESS && octet_last_error_message()[0] == '\0')
      fail("a failed call left no message", p.op);
    if (status[c] != OCTET_STATUS_SUCCESS && output != nullptr && visible(*output, c, p.op) != before[c])
      fail("a failed call changed its output", p.op);
  }
  // OCTET_FUZZ_VERBOSE=1 with -runs=0 over a corpus shows which calls pass.
  static const bool verbose = std::getenv("OCTET_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "call %s: %s %s\n", name, octet_status_name(status[0]),
                 status[0] ? octet_last_error_message() : "");
  bool unsupported = false;
  for (int c = 1; c < p.n(); ++c) {
    if (status[c] == status[0]) continue;
    if (p.bounded && status[c] == OCTET_STATUS_UNSUPPORTED) {
      unsupported = true;  // "fine, but not here": nothing to compare
      continue;
    }
    std::fprintf(stderr, "statuses: %s (context 0) and %s (context %d)\n", octet_status_name(status[0]),
                 octet_status_name(status[c]), c);
    fail("the contexts disagree on the status", p.op);
  }
  if (unsupported && status[0] == OCTET_STATUS_SUCCESS && output != nullptr) restore(p, *output);
  return status[0] == OCTET_STATUS_SUCCESS && !unsupported;
}

inline void check_same_output(Program& p, const Slot& s) {
  const auto first = visible(s, 0, p.op);
  for (int c = 1; c < p.n(); ++c) {
    const auto other = visible(s, c, p.op);
    if (other == first) continue;
    for (size_t part = 0; part < first.size() && part < other.size(); ++part)
      for (size_t i = 0; i < first[part].size() && i < other[part].size(); ++i)
        if (first[part][i] != other[part][i]) {
          std::fprintf(stderr, "tensor %s %lldx%lld usages %u mode %d: part %zu byte %zu: 0x%02x (context 0) vs 0x%02x (context %d)\n",
                       octet_dtype_name(s.dtype), (long long)s.rows, (long long)s.cols, s.usages, s.scaling_mode,
                       part, i, first[part][i], other[part][i], c);
          fail("the contexts disagree on an output", p.op);
        }
    fail("the contexts disagree on an output's size", p.op);
  }
}

const int64_t kExtents[] = {1, 2, 3, 5, 16, 17, 32, 33, 64, 129};

const int32_t kPlainDtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};
const int32_t kModes[] = {OCTET_SCALING_PER_TENSOR, OCTET_SCALING_PER_TENSOR, OCTET_SCALING_MXFP8_1X32,
                          OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_128X128};
// kModes and per-row / per-column (numerics.md section 16), drawn from when
// every context declares both.
const int32_t kModesWithAxiswise[] = {OCTET_SCALING_PER_TENSOR,  OCTET_SCALING_PER_TENSOR,    OCTET_SCALING_MXFP8_1X32,
                                      OCTET_SCALING_BLOCK_1X128, OCTET_SCALING_BLOCK_128X128, OCTET_SCALING_PER_ROW,
                                      OCTET_SCALING_PER_COLUMN};

// Creates the tensor on every context; plain tensors get values (codes for
// plain FP8) from the input. False if the library refused it.
inline bool make(Program& p, Input& in, Slot& s, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages,
                 int32_t mode) {
  p.drop(s);
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.ndim = 2;
  d.shape[0] = rows;
  d.shape[1] = cols;
  d.dtype = dtype;
  d.usages = fp8(dtype) ? usages : 0;
  d.scaling_mode = d.usages ? mode : 0;
  for (int c = 0; c < p.n(); ++c) {
    octet_tensor* sentinel = reinterpret_cast<octet_tensor*>(uintptr_t(0x5a5a));
    octet_tensor* t = sentinel;
    const octet_status st = octet_tensor_create(p.ctx[c], &d, &t);
    if (st != OCTET_STATUS_SUCCESS) {
      // A profile does not change what may be created; another backend may
      // lack a scaling mode (UNSUPPORTED). Either way: a message, the handle
      // left alone, and no half-made slot.
      if (t != sentinel || octet_last_error_message()[0] == '\0' ||
          (c != 0 && !(p.bounded && st == OCTET_STATUS_UNSUPPORTED)))
        fail("octet_tensor_create refused a tensor on one context only, or touched the handle", p.op);
      p.drop(s);
      return false;
    }
    s.t[c] = t;
  }
  s.dtype = d.dtype;
  s.rows = rows;
  s.cols = cols;
  s.usages = d.usages;
  s.scaling_mode = d.scaling_mode;
  const size_t n = size_t(rows * cols);
  if (!fp8(dtype)) {
    s.host.resize(n * element_bytes(dtype));
    for (size_t i = 0; i < n; ++i) {
      const float v = in.value();
      if (dtype == OCTET_DTYPE_FP32) {
        std::memcpy(&s.host[4 * i], &v, 4);
      } else {
        const uint16_t h = dtype == OCTET_DTYPE_BF16 ? octet_bf16_encode(v) : octet_fp16_encode(v);
        std::memcpy(&s.host[2 * i], &h, 2);
      }
    }
  } else if (s.usages == 0) {
    s.host.resize(n);  // plain codes: any byte is a code
    for (uint8_t& b : s.host) b = in.byte();
  }
  if (!s.host.empty())
    for (int c = 0; c < p.n(); ++c)
      if (octet_tensor_copy_from_host(s.t[c], OCTET_COMPONENT_DATA, s.host.data(), s.host.size()) !=
          OCTET_STATUS_SUCCESS)
        fail("octet_tensor_copy_from_host", p.op);
  return true;
}

// A tensor of any kind: a plain dtype, plain FP8 codes, or a quantized
// tensor of any usages and scaling mode.
inline void create(Program& p, Input& in, Slot& s) {
  const uint8_t kind = in.byte();
  // Extents are often those of a tensor already in the pool, so that
  // operands fit together often enough to matter.
  auto extent = [&]() -> int64_t {
    const uint8_t how = in.byte();
    const Slot& other = p.pool[(how >> 2) % kPool];
    if ((how & 3) != 0 && other.t[0] != nullptr) return (how & 1) ? other.rows : other.cols;
    return in.pick(kExtents);
  };
  const int64_t rows = extent(), cols = extent();
  if (kind % 2 == 0) {
    make(p, in, s, kPlainDtypes[kind / 2 % 3], rows, cols, 0, 0);
  } else {
    // The FNUZ formats (bit 4) where every context declares them.
    static constexpr uint32_t kFnuz = OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ);
    const bool fnuz = (kind & 16) != 0 && p.all_declare(kFnuz, 0);
    const int32_t dtype = (kind & 2) ? (fnuz ? OCTET_DTYPE_E5M2FNUZ : OCTET_DTYPE_E5M2)
                                     : (fnuz ? OCTET_DTYPE_E4M3FNUZ : OCTET_DTYPE_E4M3);
    const uint32_t usages = (kind >> 2) % 4;  // plain codes, rowwise, columnwise, both
    const bool axiswise = p.all_declare(0, OCTET_SCALING_PER_ROW | OCTET_SCALING_PER_COLUMN);
    make(p, in, s, dtype, rows, cols, usages, axiswise ? in.pick(kModesWithAxiswise) : in.pick(kModes));
  }
}

// A per-tensor quantize against the scalar codec, element by element.
inline void check_against_codec(const Program& p, const Slot& x, const Slot& q, uint32_t usages, int32_t saturate) {
  float scale = 0.0f, scale_inv = 0.0f, amax = 0.0f;
  octet_tensor_copy_to_host(q.t[0], OCTET_COMPONENT_SCALE, &scale, 4);
  octet_tensor_copy_to_host(q.t[0], OCTET_COMPONENT_SCALE_INV, &scale_inv, 4);
  octet_tensor_copy_to_host(q.t[0], OCTET_COMPONENT_AMAX, &amax, 4);
  const size_t n = size_t(x.rows * x.cols);
  std::vector<uint8_t> want(n);
  float want_amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float v = widen(x.dtype, &x.host[i * element_bytes(x.dtype)]);
    if (!std::isnan(v) && std::fabs(v) > want_amax) want_amax = std::fabs(v);
    want[i] = octet_fp8_encode(octet_math_mul(v, scale), q.dtype, saturate);
  }
  if (bits_of(scale_inv) != bits_of(1.0f / scale)) fail("quantize: SCALE_INV is not 1/SCALE", p.op);
  if (bits_of(amax) != bits_of(want_amax)) fail("quantize: AMAX is not max |x| with NaN ignored", p.op);
  for (uint32_t usage : {uint32_t(OCTET_USAGE_ROWWISE), uint32_t(OCTET_USAGE_COLUMNWISE)})
    if (usages & usage)
      if (logical_codes(q, 0, usage, p.op) != want) fail("quantize: codes are not fp8(x * scale)", p.op);
}

inline void quantize(Program& p, Input& in, Slot& a, Slot& out) {
  octet_quantize_options o;
  octet_quantize_options_init(&o);
  o.usages = in.byte() % 4;
  o.saturate = in.byte() % 2;
  const uint32_t written = o.usages ? (o.usages & out.usages) : out.usages;
  if (!run_everywhere(p, "quantize", &out, [&](int c) { return octet_quantize(p.ctx[c], a.t[c], out.t[c], &o); }))
    return;
  out.valid = written;
  check_same_output(p, out);
  if (out.scaling_mode == OCTET_SCALING_PER_TENSOR && !fp8(a.dtype)) check_against_codec(p, a, out, written, o.saturate);
}

// An operand as the GEMM reads it: A' [rows, k] (A, or A transposed when
// trans), exact values in double, and the scale_inv of each element's k
// block (one block over all of k unless the operand is block-scaled).
struct GemmOperand {
  int64_t rows = 0, k = 0, bk = 0;  // bk: the block extent along k
  std::vector<double> value;        // [rows, k]
  std::vector<float> scale;         // [rows, ceil(k / bk)]
  double at(int64_t r, int64_t kk) const { return value[size_t(r * k + kk)]; }
  float scale_at(int64_t r, int64_t block) const { return scale[size_t(r * ((k + bk - 1) / bk) + block)]; }
};

GemmOperand gemm_operand(const Program& p, const Slot& s, bool trans) {
  GemmOperand g;
  g.rows = trans ? s.cols : s.rows;
  g.k = trans ? s.rows : s.cols;
  g.value.resize(size_t(g.rows * g.k));
  auto put = [&](const std::vector<double>& stored) {  // stored: [s.rows, s.cols]
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t kk = 0; kk < g.k; ++kk)
        g.value[size_t(r * g.k + kk)] = trans ? stored[size_t(kk * s.cols + r)] : stored[size_t(r * s.cols + kk)];
  };
  std::vector<double> stored(size_t(s.rows * s.cols));
  float scale_inv = 1.0f;
  if (!fp8(s.dtype)) {
    for (size_t i = 0; i < stored.size(); ++i) stored[i] = widen(s.dtype, &s.host[i * element_bytes(s.dtype)]);
  } else if (!s.quantized()) {
    for (size_t i = 0; i < stored.size(); ++i) stored[i] = octet_fp8_decode(s.host[i], s.dtype);
  } else if (s.scaling_mode == OCTET_SCALING_PER_TENSOR) {
    const uint32_t usage = (s.valid & OCTET_USAGE_ROWWISE) ? OCTET_USAGE_ROWWISE : OCTET_USAGE_COLUMNWISE;
    const std::vector<uint8_t> codes = logical_codes(s, 0, usage, p.op);
    for (size_t i = 0; i < stored.size(); ++i) stored[i] = octet_fp8_decode(codes[i], s.dtype);
    if (octet_tensor_copy_to_host(s.t[0], OCTET_COMPONENT_SCALE_INV, &scale_inv, 4) != OCTET_STATUS_SUCCESS)
      fail("octet_tensor_copy_to_host (SCALE_INV)", p.op);
  } else {
    // Block-scaled (numerics.md section 12): the K-contiguous copy is the
    // rowwise one used as stored, the columnwise one ([cols, rows], blocked
    // like a rowwise copy of the transpose) used transposed.
    const octet_tensor_info i = info_of(s.t[0]);
    const std::vector<uint8_t> codes =
        component(s.t[0], trans ? OCTET_COMPONENT_COLUMNWISE_DATA : OCTET_COMPONENT_DATA, size_t(g.rows * g.k), p.op);
    for (size_t e = 0; e < codes.size(); ++e) g.value[e] = octet_fp8_decode(codes[e], s.dtype);
    // The copy's block: tensor_info reports the rowwise copy's; a
    // per-row or per-column operand is read with one scale per row of its
    // K-contiguous copy (section 16; a per-column one used as stored is
    // refused before this).
    const bool axiswise = s.scaling_mode == OCTET_SCALING_PER_ROW || s.scaling_mode == OCTET_SCALING_PER_COLUMN;
    const int64_t br = axiswise ? 1 : i.block_rows;
    g.bk = axiswise ? std::max<int64_t>(g.k, 1) : i.block_cols;
    const int64_t grid_cols = (g.k + g.bk - 1) / g.bk;
    const std::vector<uint8_t> grid =
        component(s.t[0], trans ? OCTET_COMPONENT_COLUMNWISE_SCALE_INV : OCTET_COMPONENT_ROWWISE_SCALE_INV,
                  trans ? i.columnwise_scale_inv_bytes : i.rowwise_scale_inv_bytes, p.op);
    g.scale.resize(size_t(g.rows * grid_cols));
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t b = 0; b < grid_cols; ++b) {
        const size_t cell = size_t((r / br) * grid_cols + b);
        float v = 0.0f;
        if (i.scale_inv_dtype == OCTET_DTYPE_E8M0) {
          v = octet_e8m0_decode(grid[cell]);
        } else {
          std::memcpy(&v, &grid[cell * 4], 4);
        }
        g.scale[size_t(r * grid_cols + b)] = v;
      }
    return g;
  }
  put(stored);
  g.bk = std::max<int64_t>(g.k, 1);
  g.scale.assign(size_t(g.rows), scale_inv);
  return g;
}

// The spacing of dtype's values at magnitude x, and its largest finite value.
inline double ulp_of(int32_t dtype, double x) {
  const int mantissa = dtype == OCTET_DTYPE_FP32 ? 23 : dtype == OCTET_DTYPE_BF16 ? 7 : 10;
  const int min_exponent = dtype == OCTET_DTYPE_FP16 ? -14 : -126;
  const int e = x > 0 ? std::max(std::ilogb(x), min_exponent) : min_exponent;
  return std::ldexp(1.0, e - mantissa);
}
inline double max_finite(int32_t dtype) {
  return dtype == OCTET_DTYPE_FP16 ? 65504.0 : dtype == OCTET_DTYPE_BF16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
}

// numerics.md sections 8 and 12: every context's D against the exact result
// in double, within k * 2^-23 * sum |A'B'| * |scales| plus the rounding of
// the beta and bias terms and of D's dtype (through GELU: its slope, at most
// 1.13, times that, plus the FP32 evaluation of the formula). The scale
// factors are the FP32 values the formulas define: alpha * (sa * sb) for a
// per-tensor GEMM, sa * sb per k block (then alpha) for a block-scaled one,
// so a product of scales that underflows is the contract's, not an error;
// below FP32's normal range each rounding is absolute (2^-150), which the
// bound adds for the k products and sums and the operations after them.
// Elements whose FP32 partial sums may overflow are skipped: there the order
// of the sum decides between a finite result and inf.
inline void check_gemm_bound(Program& p, const Slot& a, const Slot& b, const Slot& out, const Slot* bias,
                             const octet_gemm_options& o, const std::vector<double>& d_old) {
  const GemmOperand ga = gemm_operand(p, a, o.trans_a != 0), gb = gemm_operand(p, b, o.trans_b != 0);
  std::vector<double> biasv;
  if (bias != nullptr) biasv = gemm_operand(p, *bias, false).value;
  const bool block = a.quantized() && a.scaling_mode != OCTET_SCALING_PER_TENSOR;
  const int64_t m = out.rows, n = out.cols, k = ga.k;
  if (ga.rows != m || gb.rows != n || gb.k != k || (block && ga.bk != gb.bk)) fail("GEMM: accepted operands that do not fit", p.op);
  const double unit = std::ldexp(1.0, -23) * double(k + 4);
  std::vector<std::vector<uint8_t>> got(size_t(p.n()));
  for (int c = 0; c < p.n(); ++c)
    got[size_t(c)] = component(out.t[c], OCTET_COMPONENT_DATA, size_t(m * n) * element_bytes(out.dtype), p.op);
  const int64_t blocks = k == 0 ? 0 : (k + ga.bk - 1) / ga.bk;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0, largest_scale = 0, unscaled = 0;
      for (int64_t kb = 0; kb < blocks; ++kb) {
        double partial = 0, partial_magnitude = 0;
        for (int64_t kk = kb * ga.bk; kk < std::min(k, (kb + 1) * ga.bk); ++kk) {
          partial += ga.at(i, kk) * gb.at(j, kk);
          partial_magnitude += std::fabs(ga.at(i, kk) * gb.at(j, kk));
        }
        // Per-tensor: alpha * (sa * sb) over the whole sum; block: sa * sb
        // per block, alpha after.
        const double factor = block ? double(octet_math_mul(ga.scale_at(i, kb), gb.scale_at(j, kb)))
                                    : double(octet_math_mul(o.alpha, octet_math_mul(ga.scale_at(i, 0), gb.scale_at(j, 0))));
        sum += partial * factor;
        magnitude += partial_magnitude * std::fabs(factor);
        unscaled += partial_magnitude;  // the FP32 sums before any scale
        largest_scale = std::max(largest_scale, std::fabs(factor));
      }
      const double alpha = block ? double(o.alpha) : 1.0;
      double value = alpha * sum, extra = 0;
      if (o.beta != 0.0f) {
        value += double(o.beta) * d_old[size_t(i * n + j)];
        extra += std::fabs(double(o.beta) * d_old[size_t(i * n + j)]);
      }
      if (!biasv.empty()) {
        value += biasv[size_t(j)];
        extra += std::fabs(biasv[size_t(j)]);
      }
      double bound = unit * (std::fabs(alpha) * magnitude + extra) +
                     std::ldexp(1.0, -149) * double(k + 4) * (std::fabs(alpha) * largest_scale + 1.0);
      if (o.epilogue == OCTET_EPILOGUE_GELU) {
        const double v = value;
        value = 0.5 * v * (1.0 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
        bound = 1.13 * bound + 32 * std::ldexp(std::fabs(v), -23);
      }
      const size_t at = size_t(i * n + j);
      if (std::isnan(value)) {
        for (int c = 0; c < p.n(); ++c)
          if (!std::isnan(widen(out.dtype, &got[size_t(c)][at * element_bytes(out.dtype)])))
            fail("GEMM: the exact result is NaN but a context's is not", p.op);
        continue;
      }
      if (!(unscaled < 1e38) || !(magnitude < 1e38) || !(std::fabs(alpha) * magnitude + extra < 1e38) ||
          !(std::fabs(value) + bound < max_finite(out.dtype)))
        continue;
      bound += ulp_of(out.dtype, std::fabs(value) + bound);
      for (int c = 0; c < p.n(); ++c) {
        const double r = widen(out.dtype, &got[size_t(c)][at * element_bytes(out.dtype)]);
        if (!(std::fabs(r - value) <= bound)) {
          std::fprintf(stderr, "D[%lld, %lld] on context %d: %.9g, exact %.9g, bound %.3g (m %lld n %lld k %lld%s)\n",
                       (long long)i, (long long)j, c, r, value, bound, (long long)m, (long long)n, (long long)k,
                       block ? ", block-scaled" : "");
          fail("GEMM: a result is outside numerics.md's bound", p.op);
        }
      }
    }
  }
}

inline void gemm(Program& p, Input& in, Slot& a, Slot& b, Slot& out, Slot* bias, uint8_t flags) {
  octet_gemm_options o;
  octet_gemm_options_init(&o);
  o.trans_a = flags & 1;
  o.trans_b = (flags >> 1) & 1;
  o.epilogue = (flags >> 2) & 1;
  o.saturate_output = (flags >> 3) & 1;
  if (flags & 16) o.alpha = in.value();
  if (flags & 32) o.beta = in.value();
  const bool with_bias = bias != nullptr && bias->t[0] != nullptr && bias != &out;
  // Which stored copy a context reads depends on its profile (a hopper-like
  // one may transpose the rowwise codes on the fly), so the numbers are
  // compared only when every stored usage holds the same values; the status
  // always is.
  const bool defined = (!a.quantized() || a.valid == a.usages) && (!b.quantized() || b.valid == b.usages) &&
                       (!with_bias || !bias->quantized());
  std::vector<double> d_old;
  if (p.bounded && defined && !out.quantized() && !fp8(out.dtype) && out.t[0] != nullptr) {
    d_old.resize(size_t(out.rows * out.cols));
    for (size_t i = 0; i < d_old.size(); ++i) d_old[i] = widen(out.dtype, &out.host[i * element_bytes(out.dtype)]);
  }
  if (!run_everywhere(p, "gemm", defined ? &out : nullptr, [&](int c) {
        o.bias = with_bias ? bias->t[c] : nullptr;
        return octet_gemm(p.ctx[c], a.t[c], b.t[c], out.t[c], &o);
      }))
    return;
  if (!defined) {
    restore(p, out);
    return;
  }
  if (!p.bounded) {
    if (out.quantized()) out.valid = out.usages;
    check_same_output(p, out);
    refresh_host(p, out);
    return;
  }
  // Another backend: results within the bound, then every context takes the
  // oracle's values so that later calls compare like with like. An FP8 D
  // may round differently, so its codes are not compared.
  if (out.quantized()) {
    out.valid = 0;
    return;
  }
  check_gemm_bound(p, a, b, out, with_bias ? bias : nullptr, o, d_old);
  refresh_host(p, out);
  restore(p, out);
}

// A GEMM whose operands fit: M, N, K and the layout drawn first, then each
// operand's kind (plain, plain FP8 codes, or quantized from fresh values
// with any usages and scaling mode) and D's (plain or per-tensor FP8).
// Slots 0-2 hold A, B and D, slot 3 the values quantized, slot 4 the bias.
inline void gemm_scenario(Program& p, Input& in) {
  const int64_t m = in.pick(kExtents), n = in.pick(kExtents), k = in.pick(kExtents);
  const uint8_t flags = in.byte();
  const bool trans_a = flags & 1, trans_b = (flags >> 1) & 1;
  const bool fp8_operands = (in.byte() & 3) != 0;
  Slot* operands[2] = {&p.pool[0], &p.pool[1]};
  const int64_t shapes[2][2] = {{trans_a ? k : m, trans_a ? m : k}, {trans_b ? k : n, trans_b ? n : k}};
  for (int i = 0; i < 2; ++i) {
    const uint8_t kind = in.byte();
    if (!fp8_operands) {
      if (!make(p, in, *operands[i], kPlainDtypes[kind % 3], shapes[i][0], shapes[i][1], 0, 0)) return;
      continue;
    }
    const int32_t dtype = (kind & 1) ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;
    const uint32_t usages = (kind >> 1) % 4;
    if (!make(p, in, *operands[i], dtype, shapes[i][0], shapes[i][1], usages, in.pick(kModes))) return;
    if (usages != 0) {
      if (!make(p, in, p.pool[3], OCTET_DTYPE_FP32, shapes[i][0], shapes[i][1], 0, 0)) return;
      quantize(p, in, p.pool[3], *operands[i]);
    }
  }
  const uint8_t out_kind = in.byte();
  if (out_kind % 4 == 3) {
    const uint32_t usages = 1u + (out_kind >> 2) % 3;
    if (!make(p, in, p.pool[2], (out_kind & 16) ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3, m, n, usages,
              OCTET_SCALING_PER_TENSOR))
      return;
  } else if (!make(p, in, p.pool[2], kPlainDtypes[out_kind % 4], m, n, 0, 0)) {
    return;
  }
  Slot* bias = nullptr;
  if (flags & 64) {
    if (!make(p, in, p.pool[4], kPlainDtypes[(flags >> 7) + (out_kind >> 5) % 2], 1, n, 0, 0)) return;
    bias = &p.pool[4];
  }
  gemm(p, in, *operands[0], *operands[1], p.pool[2], bias, flags);
}

// Runs the program the input describes: up to kMaxOps calls.
inline void run_program(Program& p, Input& in) {
  for (p.op = 0; p.op < kMaxOps && !in.empty(); ++p.op) {
    const uint8_t what = in.byte();
    if (what % 9 == 8) {
      gemm_scenario(p, in);
      continue;
    }
    Slot& a = p.pool[in.byte() % kPool];
    Slot& b = p.pool[in.byte() % kPool];
    Slot& out = p.pool[in.byte() % kPool];
    // Calls whose arguments alias are left open by the ABI: not generated.
    const bool distinct = &a != &out && &b != &out && a.t[0] && out.t[0];
    switch (what % 9) {
      case 0:
        create(p, in, out);
        break;
      case 1: {  // the caller writes a per-tensor scale, any value
        if (!out.quantized() || out.scaling_mode != OCTET_SCALING_PER_TENSOR) break;
        const float scale = in.value();
        if (!run_everywhere(p, "set scale", &out, [&](int c) {
              return octet_tensor_copy_from_host(out.t[c], OCTET_COMPONENT_SCALE, &scale, 4);
            }))
          break;
        out.valid = 0;  // the codes no longer match the scale
        break;
      }
      case 2:
        if (distinct) quantize(p, in, a, out);
        break;
      case 3: {  // dequantize
        if (!distinct) break;
        // Codes that no quantize wrote give unspecified values: the status
        // is still compared, the numbers are not.
        const bool defined = !a.quantized() || a.valid == a.usages;
        if (!run_everywhere(p, "dequantize", defined ? &out : nullptr,
                            [&](int c) { return octet_dequantize(p.ctx[c], a.t[c], out.t[c]); }))
          break;
        if (!defined) {
          restore(p, out);
          break;
        }
        check_same_output(p, out);
        refresh_host(p, out);
        break;
      }
      case 4: {  // convert (plain tensors, raw codes)
        if (!distinct || a.quantized() || out.quantized()) break;
        const int32_t saturate = in.byte() % 2;
        if (!run_everywhere(p, "convert", &out,
                            [&](int c) { return octet_convert(p.ctx[c], a.t[c], out.t[c], saturate); }))
          break;
        check_same_output(p, out);
        refresh_host(p, out);
        break;
      }
      case 5: {  // amax
        if (!a.t[0]) break;
        std::array<float, kMaxContexts> amax{};
        if (!run_everywhere(p, "amax", nullptr, [&](int c) { return octet_amax(p.ctx[c], a.t[c], &amax[c]); }))
          break;
        for (int c = 1; c < p.n(); ++c)
          if (bits_of(amax[size_t(c)]) != bits_of(amax[0])) fail("the contexts disagree on amax", p.op);
        break;
      }
      case 6:
        if (distinct) p.drop(out);
        break;
      default: {  // a GEMM over whatever the pool holds
        if (!distinct || !b.t[0]) break;
        const uint8_t flags = in.byte();
        Slot* bias = (flags & 64) ? &p.pool[in.byte() % kPool] : nullptr;
        gemm(p, in, a, b, out, bias, flags);
        break;
      }
    }
  }
}

}  // namespace octet_fuzz
