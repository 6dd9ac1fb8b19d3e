// octet_plugin.hpp: header-only C++17 helpers for the plugin side of the
// plugin ABI (octet_backend.h). Installed with the plugin headers; a backend
// includes it next to <octet/octet_backend.h> and keeps plain C at the
// boundary: its entry points are the C functions of octet_backend_api, and
// nothing here is exported or crosses the ABI.
//
// What it holds (docs/plugin_sdk.md shows them in use):
//   struct_size   read_struct(): a host struct of any size, read as the
//                 plugin's view (fields past the host's struct_size read as
//                 0); write_struct(): a plugin-side struct written only up
//                 to the struct_size the host offers; OCTET_PLUGIN_HOLDS.
//   Host          the host's services, kept from initialize(), and report():
//                 a status and a message through the host's callback.
//   checks        check_*(): argument checks that report "<entry>: <what>"
//                 naming the argument and the rule and return the status
//                 (OCTET_STATUS_SUCCESS when the argument is fine);
//                 *_problem() give the same verdict without reporting, for
//                 code that throws (raise()).
//   guard()       runs an entry point's body and turns every exception into
//                 a status reported through the host, so no exception leaves
//                 a C entry point: Failure keeps its status, OutOfMemory and
//                 std::bad_alloc become OUT_OF_MEMORY, any other
//                 std::exception BACKEND_ERROR, anything else INTERNAL. The
//                 body runs in the default floating-point mode
//                 (DefaultFloatMode, <octet/octet_float_mode.hpp>), which a
//                 backend also holds on each thread of its own it computes on.
//   api_header()  a table with its header filled; answer_entry(): the body
//                 of octet_backend_entry (the major check).
//   dtypes        dtype sets (kFp8Dtypes, DtypeClass and dtype_set()),
//                 names and element sizes.
//   Capabilities  the dtypes, scaling modes, layouts and flags a backend
//                 declares, in one place: answer() fills the host's caps
//                 (within its struct_size) and declares_*() let the kernels
//                 ask the same table.
//
// No global state: a plugin keeps one Host (usually a namespace-scope object
// in one .cpp) and passes it to the checks and guard(). That keeps two
// backends linked into one program (the reference in liboctet, a test
// plugin built from its sources) from sharing one host's callback.
#ifndef OCTET_OCTET_PLUGIN_HPP
#define OCTET_OCTET_PLUGIN_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "octet_backend.h"
#include "octet_float_mode.hpp"

// True when a struct of `struct_size` bytes (as the other side gave it)
// holds `field` of `type` entirely.
#define OCTET_PLUGIN_HOLDS(struct_size, type, field) \
  (offsetof(type, field) + sizeof(((type*)nullptr)->field) <= (struct_size))

namespace octet {
namespace plugin {

// ---- struct_size in both directions ------------------------------------------

// The host's struct `given` as this plugin's T: min(given->struct_size,
// sizeof(T)) bytes copied, every later field 0 (a host built against an
// older header has not got them; a newer host's extra fields are not read).
// The copy keeps the host's struct_size.
template <typename T>
T read_struct(const T* given) noexcept {
  static_assert(std::is_trivially_copyable<T>::value, "read_struct copies bytes");
  T copy{};
  if (given == nullptr) return copy;
  std::memcpy(&copy, given, std::min(given->struct_size, sizeof(T)));
  return copy;
}

// Writes `filled` into the host's struct `out` only up to the size the host
// offers, min(out->struct_size, sizeof(T)) bytes, and sets out->struct_size
// to the bytes written. A struct_size too small to hold struct_size itself
// gets nothing written. Returns the bytes written.
template <typename T>
std::size_t write_struct(T* out, const T& filled) noexcept {
  static_assert(std::is_trivially_copyable<T>::value, "write_struct copies bytes");
  if (out == nullptr || out->struct_size < sizeof(out->struct_size)) return 0;
  const std::size_t size = std::min(out->struct_size, sizeof(T));
  std::memcpy(static_cast<void*>(out), &filled, size);
  out->struct_size = size;
  return size;
}

// ---- the host's services and reporting ------------------------------------------

class Host {
 public:
  // `label`, when not empty, starts every message the checks and guard()
  // build: "<label> <entry>: <what>" (a string literal: it is not copied).
  explicit Host(const char* label = "") noexcept : label_(label != nullptr ? label : "") {}

  // Keeps a copy of the services given to initialize() (read_struct: a host
  // struct of any size); NULL forgets them.
  void remember(const octet_host_services* services) noexcept {
    services_ = services != nullptr ? read_struct(services) : octet_host_services{};
  }
  const octet_host_services& services() const noexcept { return services_; }
  const char* label() const noexcept { return label_; }

  // Reports `message` with `status` through the host's callback (when it
  // gave one) and returns `status`. A C host's callback never throws; a C++
  // host's may, and that exception then reaches the caller (guard() and
  // report_at() stop it).
  int32_t report(int32_t status, const char* message) const {
    if (services_.report_error != nullptr) services_.report_error(services_.host_data, status, message);
    return status;
  }
  int32_t report(int32_t status, const std::string& message) const { return report(status, message.c_str()); }

  // "<label> <entry>: <what>" (or "<entry>: <what>" without a label).
  std::string message(const char* entry, const std::string& what) const {
    std::string text = label_;
    if (!text.empty()) text += ' ';
    text += entry != nullptr ? entry : "(entry)";
    text += ": ";
    text += what;
    return text;
  }

  // Reports message(entry, what); when building the message fails (memory
  // is short), reports the entry alone; when the callback throws, nothing
  // more. Never throws; returns `status`.
  int32_t report_at(int32_t status, const char* entry, const std::string& what) const noexcept {
    try {
      return report(status, message(entry, what));
    } catch (...) {
      return report_entry(status, entry);
    }
  }
  int32_t report_at(int32_t status, const char* entry, const char* what) const noexcept {
    try {
      return report(status, message(entry, std::string(what != nullptr ? what : "")));
    } catch (...) {
      return report_entry(status, entry);
    }
  }

 private:
  int32_t report_entry(int32_t status, const char* entry) const noexcept {
    try {
      report(status, entry != nullptr ? entry : "(message lost: out of host memory)");
    } catch (...) {
    }
    return status;
  }

  const char* label_;
  octet_host_services services_{};
};

// ---- failures and the exception boundary ------------------------------------------

// A failure a backend throws inside: a status and what went wrong (without
// the "<entry>: " prefix, which guard() adds).
class Failure : public std::exception {
 public:
  Failure() = default;
  Failure(int32_t status, std::string message) : status_(status), message_(std::move(message)) {}
  int32_t status() const noexcept { return status_; }
  const std::string& message() const noexcept { return message_; }
  bool failed() const noexcept { return status_ != OCTET_STATUS_SUCCESS; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int32_t status_ = OCTET_STATUS_SUCCESS;
  std::string message_;
};

// An allocation of `bytes` that failed, in `memory` ("host memory", "device
// memory"): guard() reports OUT_OF_MEMORY "out of <memory> (<bytes> bytes
// asked)". Derives from std::bad_alloc, so code that catches that still does.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::size_t bytes, const char* memory = "memory") noexcept
      : bytes_(bytes), memory_(memory != nullptr ? memory : "memory") {}
  std::size_t bytes() const noexcept { return bytes_; }
  const char* memory() const noexcept { return memory_; }
  const char* what() const noexcept override { return "out of memory"; }

 private:
  std::size_t bytes_;
  const char* memory_;
};

// Throws Failure(status, message) when `problem` failed.
inline void raise(const Failure& problem) {
  if (problem.failed()) throw problem;
}

// Runs `body` (returning an int32_t status, or void for success) so that no
// exception leaves it: each becomes a status reported through `host` as
// "<entry>: <what>". For every C entry point of a C++ backend. The body runs
// in the default floating-point mode (octet_float_mode.hpp) on the calling
// thread.
template <typename Body>
int32_t guard(const Host& host, const char* entry, Body&& body) noexcept {
  const DefaultFloatMode float_mode;
  try {
    if constexpr (std::is_void<decltype(body())>::value) {
      body();
      return OCTET_STATUS_SUCCESS;
    } else {
      return static_cast<int32_t>(body());
    }
  } catch (const Failure& failure) {
    return host.report_at(failure.status(), entry, failure.message());
  } catch (const OutOfMemory& e) {
    try {
      return host.report_at(OCTET_STATUS_OUT_OF_MEMORY, entry,
                            std::string("out of ") + e.memory() + " (" + std::to_string(e.bytes()) + " bytes asked)");
    } catch (...) {
      return host.report_at(OCTET_STATUS_OUT_OF_MEMORY, entry, "out of memory");
    }
  } catch (const std::bad_alloc&) {
    return host.report_at(OCTET_STATUS_OUT_OF_MEMORY, entry, "out of memory");
  } catch (const std::exception& e) {
    return host.report_at(OCTET_STATUS_BACKEND_ERROR, entry, e.what());
  } catch (...) {
    return host.report_at(OCTET_STATUS_INTERNAL, entry, "unexpected exception");
  }
}

// ---- the table and the entry point ------------------------------------------------

// A table with its header filled for this header's plugin ABI: struct_size,
// abi_major, abi_minor, name and version; every entry NULL. A backend sets
// the entries it has.
inline octet_backend_api api_header(const char* name, const char* version) noexcept {
  octet_backend_api api{};
  api.struct_size = sizeof api;
  api.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  api.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  api.name = name;
  api.version = version;
  return api;
}

// The body of octet_backend_entry: INVALID_ARGUMENT for a NULL api_out,
// ABI_MISMATCH for another major (any minor of this major works: fields are
// only appended), else *api_out = api (which must outlive every use).
inline int32_t answer_entry(uint32_t host_abi_major, const octet_backend_api** api_out,
                            const octet_backend_api* api) noexcept {
  if (api_out == nullptr) return OCTET_STATUS_INVALID_ARGUMENT;
  if (host_abi_major != OCTET_PLUGIN_ABI_MAJOR) return OCTET_STATUS_ABI_MISMATCH;
  *api_out = api;
  return OCTET_STATUS_SUCCESS;
}

// ---- dtypes ---------------------------------------------------------------------

constexpr uint32_t dtype_bits(std::initializer_list<int32_t> dtypes) {
  uint32_t bits = 0;
  for (int32_t d : dtypes) bits |= OCTET_DTYPE_BIT(d);
  return bits;
}
inline constexpr uint32_t kHighPrecisionDtypes = dtype_bits({OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16});
inline constexpr uint32_t kOcpFp8Dtypes = dtype_bits({OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2});
inline constexpr uint32_t kFnuzFp8Dtypes = dtype_bits({OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ});
inline constexpr uint32_t kFp8Dtypes = kOcpFp8Dtypes | kFnuzFp8Dtypes;
// Every dtype a matrix view may hold one element a byte or more of.
inline constexpr uint32_t kStoredDtypes = kHighPrecisionDtypes | kFp8Dtypes | OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0);

// The classes of dtypes a kernel's argument accepts, and their sets.
enum class DtypeClass { Any, Fp8, HighPrecision };  // Any: kStoredDtypes
constexpr uint32_t dtype_set(DtypeClass c) {
  return c == DtypeClass::Fp8 ? kFp8Dtypes : c == DtypeClass::HighPrecision ? kHighPrecisionDtypes : kStoredDtypes;
}

inline bool dtype_in(int32_t dtype, uint32_t set) noexcept {
  return dtype > 0 && dtype < 32 && (set & OCTET_DTYPE_BIT(dtype)) != 0;
}

// "fp32", "e4m3fnuz", ...; "invalid" for a value that is not an octet_dtype.
inline const char* dtype_name(int32_t dtype) noexcept {
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      return "fp32";
    case OCTET_DTYPE_BF16:
      return "bf16";
    case OCTET_DTYPE_FP16:
      return "fp16";
    case OCTET_DTYPE_E4M3:
      return "e4m3";
    case OCTET_DTYPE_E5M2:
      return "e5m2";
    case OCTET_DTYPE_E4M3FNUZ:
      return "e4m3fnuz";
    case OCTET_DTYPE_E5M2FNUZ:
      return "e5m2fnuz";
    case OCTET_DTYPE_E8M0:
      return "e8m0";
    case OCTET_DTYPE_E2M1:
      return "e2m1";
    default:
      return "invalid";
  }
}

// Bytes of one element; 0 for E2M1 (two codes per byte) and for a value
// that is not an octet_dtype.
inline std::size_t dtype_size(int32_t dtype) noexcept { return octet_dtype_element_bytes(dtype); }

inline bool is_dtype(int32_t dtype) noexcept { return dtype_size(dtype) != 0 || dtype == OCTET_DTYPE_E2M1; }

// The dtypes of `set` for a message: "fp32, bf16 or fp16".
inline std::string dtype_list(uint32_t set) {
  static constexpr int32_t kOrder[] = {OCTET_DTYPE_FP32,     OCTET_DTYPE_BF16, OCTET_DTYPE_FP16,
                                       OCTET_DTYPE_E4M3,     OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ,
                                       OCTET_DTYPE_E5M2FNUZ, OCTET_DTYPE_E8M0, OCTET_DTYPE_E2M1};
  std::string names[sizeof kOrder / sizeof kOrder[0]];
  std::size_t count = 0;
  for (int32_t d : kOrder)
    if (dtype_in(d, set)) names[count++] = dtype_name(d);
  std::string list;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) list += i + 1 == count ? " or " : ", ";
    list += names[i];
  }
  return count == 0 ? std::string("(none)") : list;
}

// ---- argument checks ---------------------------------------------------------------
// Each *_problem() answers Failure() (status SUCCESS) when the argument is
// fine, else the status and the message naming the argument and the rule.
// Each check_*() reports that problem through the host as "<entry>: <what>"
// and returns its status. Messages start from `name` as the caller spells
// the argument ("args->input", "amax_out").

inline Failure not_null_problem(const char* name, const void* pointer) {
  if (pointer != nullptr) return Failure();
  return Failure(OCTET_STATUS_INVALID_ARGUMENT, std::string(name) + " must not be NULL");
}

// A struct the caller sent with `given` bytes where this entry needs
// `required` (the fields it reads); `what`, when set, says what that size is
// ("sizeof(octet_scale_from_amax_args), plugin ABI 1.3").
inline Failure struct_size_problem(const char* name, std::size_t given, std::size_t required,
                                   const char* what = nullptr) {
  if (given >= required) return Failure();
  std::string text =
      std::string(name) + "->struct_size (" + std::to_string(given) + ") must be at least " + std::to_string(required);
  if (what != nullptr) text += std::string(" (") + what + ")";
  return Failure(OCTET_STATUS_INVALID_ARGUMENT, text);
}

// A matrix view: dtype in `accepted` (a value that is not an octet_dtype is
// INVALID_ARGUMENT; a dtype outside `accepted` answers `outside_status`,
// INVALID_ARGUMENT when the operation's rule excludes it, UNSUPPORTED when
// this backend does not store it), rows and cols >= 0, ld >= cols, and data
// set unless the matrix is empty.
inline Failure matrix_problem(const char* name, const octet_matrix_view& view, uint32_t accepted,
                              int32_t outside_status = OCTET_STATUS_INVALID_ARGUMENT) {
  const std::string at = name;
  if (!is_dtype(view.dtype))
    return Failure(OCTET_STATUS_INVALID_ARGUMENT,
                   at + ".dtype (" + std::to_string(view.dtype) + ") is not an octet_dtype");
  if (!dtype_in(view.dtype, accepted))
    return Failure(outside_status, at + ".dtype is " + dtype_name(view.dtype) + " (" + std::to_string(view.dtype) +
                                       ") but must be " + dtype_list(accepted));
  if (view.rows < 0 || view.cols < 0)
    return Failure(OCTET_STATUS_INVALID_ARGUMENT, at + " must have rows >= 0 and cols >= 0 (it has rows " +
                                                      std::to_string(view.rows) + ", cols " +
                                                      std::to_string(view.cols) + ")");
  if (view.ld < view.cols)
    return Failure(OCTET_STATUS_INVALID_ARGUMENT, at + ".ld (" + std::to_string(view.ld) + ") must be >= " + at +
                                                      ".cols (" + std::to_string(view.cols) + "): ld >= cols");
  if (view.data == nullptr && view.rows > 0 && view.cols > 0)
    return Failure(OCTET_STATUS_INVALID_ARGUMENT, at + ".data is NULL but the matrix is not empty");
  return Failure();
}

// `view` is rows x cols; `rule` says why ("the transpose of input").
inline Failure shape_problem(const char* name, const octet_matrix_view& view, int64_t rows, int64_t cols,
                             const std::string& rule) {
  if (view.rows == rows && view.cols == cols) return Failure();
  return Failure(OCTET_STATUS_INVALID_ARGUMENT, std::string(name) + " is " + std::to_string(view.rows) + "x" +
                                                    std::to_string(view.cols) + " but must be " + std::to_string(rows) +
                                                    "x" + std::to_string(cols) + " (" + rule + ")");
}

// `a` and `b` have the same rows and cols; `names` is "input and output".
inline Failure same_shape_problem(const char* names, const octet_matrix_view& a, const octet_matrix_view& b) {
  if (a.rows == b.rows && a.cols == b.cols) return Failure();
  return Failure(OCTET_STATUS_INVALID_ARGUMENT, std::string(names) + " must have the same rows and cols (" +
                                                    std::to_string(a.rows) + "x" + std::to_string(a.cols) + " and " +
                                                    std::to_string(b.rows) + "x" + std::to_string(b.cols) + ")");
}

// Reports `problem` (when it failed) as "<entry>: <what>"; returns its
// status. An exception from building the message or from a C++ host's
// callback reaches the caller: inside guard() it becomes a status.
inline int32_t check(const Host& host, const char* entry, const Failure& problem) {
  return problem.failed() ? host.report(problem.status(), host.message(entry, problem.message()))
                          : OCTET_STATUS_SUCCESS;
}

inline int32_t check_not_null(const Host& host, const char* entry, const char* name, const void* pointer) {
  return check(host, entry, not_null_problem(name, pointer));
}
inline int32_t check_struct_size(const Host& host, const char* entry, const char* name, std::size_t given,
                                 std::size_t required, const char* what = nullptr) {
  return check(host, entry, struct_size_problem(name, given, required, what));
}
inline int32_t check_matrix(const Host& host, const char* entry, const char* name, const octet_matrix_view& view,
                            uint32_t accepted, int32_t outside_status = OCTET_STATUS_INVALID_ARGUMENT) {
  return check(host, entry, matrix_problem(name, view, accepted, outside_status));
}
inline int32_t check_shape(const Host& host, const char* entry, const char* name, const octet_matrix_view& view,
                           int64_t rows, int64_t cols, const std::string& rule) {
  return check(host, entry, shape_problem(name, view, rows, cols, rule));
}
inline int32_t check_same_shape(const Host& host, const char* entry, const char* names, const octet_matrix_view& a,
                                const octet_matrix_view& b) {
  return check(host, entry, same_shape_problem(names, a, b));
}

// ---- capabilities ----------------------------------------------------------------------

// What a backend declares, in one place. `caps` holds the declaration in
// octet_backend_caps' own fields (struct_size is set by answer()); the
// kernels ask declares_*() of the same table, so what initialize() declares
// and what the entries accept cannot drift apart.
class Capabilities {
 public:
  Capabilities() noexcept { caps_.struct_size = sizeof caps_; }
  explicit Capabilities(const octet_backend_caps& declared) noexcept : caps_(declared) {
    caps_.struct_size = sizeof caps_;
  }

  const octet_backend_caps& caps() const noexcept { return caps_; }
  octet_backend_caps& caps() noexcept { return caps_; }

  bool declares_dtype(int32_t dtype) const noexcept { return dtype_in(dtype, caps_.dtypes); }
  bool declares_scaling(uint32_t mode) const noexcept { return mode != 0 && (caps_.scaling_modes & mode) == mode; }
  bool declares_layout(uint32_t layout) const noexcept {
    return layout != 0 && (caps_.fp8_gemm_layouts & layout) == layout;
  }
  // The declared dtypes among `set` (e.g. kOcpFp8Dtypes | kFnuzFp8Dtypes).
  uint32_t dtypes_in(uint32_t set) const noexcept { return caps_.dtypes & set; }

  // Fills the host's caps from the table, within its struct_size
  // (write_struct). OCTET_STATUS_INVALID_ARGUMENT, reported, when caps is
  // NULL or its struct_size cannot hold struct_size.
  int32_t answer(const Host& host, octet_backend_caps* out) const noexcept {
    if (out == nullptr) return host.report_at(OCTET_STATUS_INVALID_ARGUMENT, "initialize", "caps must not be NULL");
    if (write_struct(out, caps_) != 0) return OCTET_STATUS_SUCCESS;
    return host.report_at(OCTET_STATUS_INVALID_ARGUMENT, "initialize",
                          "caps->struct_size is smaller than its own field (at least sizeof(size_t))");
  }

 private:
  octet_backend_caps caps_{};
};

}  // namespace plugin
}  // namespace octet

#endif  // OCTET_OCTET_PLUGIN_HPP
